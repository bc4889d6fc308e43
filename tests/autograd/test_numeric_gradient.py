"""``test_utils.check_numeric_gradient``: passes on right gradients, fails on wrong values
or storage types, handles sparse and non-differentiable inputs and several outputs."""
import numpy as np
import pytest

from nets import autograd, nd
from nets.test_utils import check_numeric_gradient, rand_ndarray


def _nd(a):
    return nd.array(np.asarray(a), dtype=np.asarray(a).dtype)


class Mul(autograd.Function):
    def __init__(self, wrong=1.0):
        super().__init__()
        self.wrong = wrong

    def forward(self, x, y):
        self.save_for_backward(x, y)
        return _nd(x.asnumpy() * y.asnumpy())

    def backward(self, g):
        x, y = self.saved_tensors
        return _nd(self.wrong * g.asnumpy() * y.asnumpy()), _nd(g.asnumpy() * x.asnumpy())


class Rows(autograd.Function):
    """``tanh(w[ids])`` with a row_sparse gradient for ``w`` of any stype."""

    def __init__(self, ids, grad_stype="row_sparse"):
        super().__init__()
        self.ids, self.grad_stype = np.asarray(ids, np.int64), grad_stype

    def forward(self, w):
        self.w = w.asnumpy()
        return _nd(np.tanh(self.w[self.ids]))

    def backward(self, g):
        local = g.asnumpy() * (1 - np.tanh(self.w[self.ids]) ** 2)
        dense = np.zeros_like(self.w)
        np.add.at(dense, self.ids, local)
        return _nd(dense).tostype(self.grad_stype)


class CsrDot(autograd.Function):
    """``dot(csr, w)``; like MXNet's sparse dot it gives no gradient for the CSR data."""

    def forward(self, a, w):
        self.a = a.asscipy()
        return _nd(self.a @ w.asnumpy())

    def backward(self, g):
        return None, _nd(self.a.T @ g.asnumpy())


class SplitSquare(autograd.Function):
    """Two outputs: ``x[:, :1] ** 2`` and ``x[:, 1:] * 3``."""

    def forward(self, x):
        self.x = x.asnumpy()
        return _nd(self.x[:, :1] ** 2), _nd(self.x[:, 1:] * 3)

    def backward(self, ga, gb):
        return _nd(np.concatenate([2 * self.x[:, :1] * ga.asnumpy(), 3 * gb.asnumpy()], axis=1))


class TrainScaled(autograd.Function):
    """``2x`` in train mode, ``x`` in predict mode (as Dropout's scaling depends on it)."""

    def forward(self, x):
        self.k = 2.0 if autograd.is_training() else 1.0
        return _nd(x.asnumpy() * self.k)

    def backward(self, g):
        return _nd(g.asnumpy() * self.k)


def test_right_gradients_pass_from_float32_inputs():
    check_numeric_gradient(lambda x, y: Mul()(x, y),
                           [rand_ndarray((3, 4), dtype=np.float32), rand_ndarray((3, 4))])


def test_a_wrong_gradient_fails_naming_the_input():
    with pytest.raises(AssertionError, match=r"inputs\[0\]"):
        check_numeric_gradient(lambda x, y: Mul(wrong=1.01)(x, y),
                               [rand_ndarray((2, 3)), rand_ndarray((2, 3))])


@pytest.mark.parametrize("w_stype", ["default", "row_sparse"])
def test_row_sparse_gradient_and_sparse_input(w_stype):
    w = rand_ndarray((5, 2), w_stype, density=0.5)  # absent rows get perturbed too
    check_numeric_gradient(lambda w: Rows([3, 0, 3])(w), [w], grad_stypes=["row_sparse"])


def test_the_produced_gradient_stype_is_checked():
    w = rand_ndarray((4, 2))
    with pytest.raises(AssertionError, match="'row_sparse' gradient, expected 'default'"):
        check_numeric_gradient(lambda w: Rows([1])(w), [w])
    with pytest.raises(AssertionError, match="'default' gradient, expected 'row_sparse'"):
        check_numeric_gradient(lambda w: Rows([1], grad_stype="default")(w), [w],
                               grad_stypes=["row_sparse"])


def test_non_differentiable_csr_input():
    a, w = rand_ndarray((3, 4), "csr", density=0.5), rand_ndarray((4, 2))
    check_numeric_gradient(lambda a, w: CsrDot()(a, w), [a, w], grad_stypes=[None, "default"])
    with pytest.raises(AssertionError, match=r"inputs\[0\]"):  # its true gradient is not zero
        check_numeric_gradient(lambda a, w: CsrDot()(a, w), [a, w])


def test_several_outputs_with_given_out_grad():
    x = rand_ndarray((3, 3))
    check_numeric_gradient(lambda x: SplitSquare()(x), [x],
                           out_grad=[np.ones((3, 1)), _nd(np.arange(6.0).reshape(3, 2))])


def test_both_evaluations_run_in_train_mode():
    check_numeric_gradient(lambda x: TrainScaled()(x), [rand_ndarray((2, 2))])
