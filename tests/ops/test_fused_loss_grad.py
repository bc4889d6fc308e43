"""The fused loss operators ``_sigmoid_bce`` and ``_l2_loss``: values against numpy
formulas, gradients for ``pred`` and ``label`` against float64 central differences, a
constant label, and the hybridized (symbolic) losses that call them."""
import warnings

import numpy as np
import pytest

from nets.base import ShapeError
from nets import autograd, loss, nd
from nets.ops.nn import _l2_loss, _sigmoid_bce
from nets.test_utils import assert_almost_equal, check_numeric_gradient

SHAPES = [(5,), (3, 4), (2, 3, 2)]
EPS = 1e-12


def _ref_bce(x, y, from_sigmoid):
    if from_sigmoid:
        return -(y * np.log(x + EPS) + (1 - y) * np.log(1 - x + EPS))
    return np.log(1 + np.exp(x)) - x * y


def _inputs(shape, from_sigmoid, dtype="float64"):
    rng = np.random.default_rng(len(shape))
    x = rng.uniform(0.1, 0.9, shape) if from_sigmoid else rng.normal(0, 2, shape)
    y = rng.uniform(0, 1, shape)  # soft labels: the label gradient is exercised everywhere
    return nd.array(x, dtype=dtype), nd.array(y, dtype=dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("from_sigmoid", [False, True])
def test_values(shape, from_sigmoid, dtype):
    x, y = _inputs(shape, from_sigmoid, dtype)
    out = _sigmoid_bce(x, y, from_sigmoid=from_sigmoid)
    assert out.dtype == np.dtype(dtype) and out.stype == "default"
    rtol = 1e-5 if dtype == "float32" else 1e-10
    assert_almost_equal(out, _ref_bce(x.asnumpy(), y.asnumpy(), from_sigmoid), rtol=rtol)
    out = _l2_loss(x, y)
    assert out.dtype == np.dtype(dtype)
    assert_almost_equal(out, 0.5 * (x.asnumpy() - y.asnumpy()) ** 2, rtol=rtol)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("from_sigmoid", [False, True])
def test_sigmoid_bce_gradient(shape, from_sigmoid):
    check_numeric_gradient(lambda p, t: _sigmoid_bce(p, t, from_sigmoid=from_sigmoid),
                           _inputs(shape, from_sigmoid))


@pytest.mark.parametrize("shape", SHAPES)
def test_l2_loss_gradient(shape):
    check_numeric_gradient(_l2_loss, _inputs(shape, False))


def test_large_logits_are_stable_without_warnings():
    x = nd.array([-800.0, -40.0, 0.0, 40.0, 800.0], dtype="float64")
    y = nd.array([1.0, 0.0, 1.0, 1.0, 0.0], dtype="float64")
    x.attach_grad()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with autograd.record():
            out = _sigmoid_bce(x, y)
        out.backward()
    assert_almost_equal(out, [800.0, 0.0, np.log(2), 0.0, 800.0], atol=1e-12)
    assert_almost_equal(x.grad, [-1.0, 0.0, -0.5, 0.0, 1.0], atol=1e-12)


@pytest.mark.parametrize("op", [_sigmoid_bce, _l2_loss])
def test_constant_label_gets_no_gradient(op):
    x, y = _inputs((3, 4), False)
    x.attach_grad()
    with autograd.record():
        out = op(x, y)
    out.backward()
    assert y.grad is None
    ref = (1 / (1 + np.exp(-x.asnumpy())) if op is _sigmoid_bce else x.asnumpy()) - y.asnumpy()
    assert_almost_equal(x.grad, ref, rtol=1e-10)


@pytest.mark.parametrize("op", [_sigmoid_bce, _l2_loss])
def test_shape_mismatch_raises(op):
    with pytest.raises(ShapeError, match="label has shape"):
        op(nd.zeros((2, 3)), nd.zeros((3, 2)))


@pytest.mark.parametrize("block", [loss.L2Loss(weight=2.0),
                                   loss.SigmoidBinaryCrossEntropyLoss(from_sigmoid=True)])
def test_hybridized_loss_matches_imperative(block):
    x, y = _inputs((4, 1), True, "float32")
    w = nd.array([[1.0], [0.0], [2.0], [0.5]])
    ref = block(x, y.reshape((4,)), w)
    block.hybridize()
    assert_almost_equal(block(x, y.reshape((4,)), w), ref, rtol=1e-6)


@pytest.mark.parametrize("op", [_sigmoid_bce, _l2_loss])
@pytest.mark.parametrize("label_shape", [(4,), (4, 1)])
def test_output_shape_attribute(op, label_shape):
    """``shape`` gives the loss of ``(batch, 1)`` predictions as ``(batch,)``; the label
    may have either shape; values and both gradients are the elementwise ones."""
    x, y = _inputs((4, 1), False)
    y = y.reshape(label_shape)
    out = op(x, y, shape=(4,))
    assert out.shape == (4,)
    assert_almost_equal(out, op(x, y.reshape((4, 1))).asnumpy().reshape(4), rtol=0, atol=0)
    check_numeric_gradient(lambda p, t: op(p, t, shape=(4,)), [x, y])


@pytest.mark.parametrize("op", [_sigmoid_bce, _l2_loss])
def test_output_shape_errors(op):
    x, y = _inputs((4, 1), False)
    with pytest.raises(ShapeError, match=r"shape=\(3,\) does not hold the 4 values"):
        op(x, y, shape=(3,))
    with pytest.raises(ShapeError, match=r"label has shape \(2, 2\).*or label the output's"):
        op(x, y.reshape((2, 2)), shape=(4,))


@pytest.mark.parametrize("block, nodes", [(loss.L2Loss(), 1), (loss.L2Loss(weight=2.0), 4),
                                          (loss.SigmoidBCELoss(), 1)])
def test_batch_by_1_loss_is_one_node(block, nodes):
    """A ``(batch, 1)`` prediction's loss with nothing to scale is the fused operator alone
    (its output already ``(batch,)``); with a weight, the label's reshape, the scaling and
    the final reshape come back."""
    x, y = _inputs((4, 1), False, "float32")
    ref = block(x, y.reshape((4,)))
    block.hybridize()
    out = block(x, y.reshape((4,)))
    assert out.shape == (4,)
    assert_almost_equal(out, ref, rtol=1e-6)
    program = next(iter(block._cached.values()))[0]
    assert len(program.steps) == nodes
