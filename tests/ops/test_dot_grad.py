"""Numeric gradient checks of dot, and the row_sparse weight gradient of dot(csr, W)."""
import numpy as np
import pytest

from nets import autograd, nd
from nets.test_utils import check_numeric_gradient, rand_ndarray

FLAGS = [(False, False), (True, False), (False, True), (True, True)]


def _shape(m, n, transposed):
    return (n, m) if transposed else (m, n)


@pytest.mark.parametrize("k", [4, 1])  # 1: an outer product (its own kernel)
@pytest.mark.parametrize("ta, tb", FLAGS)
def test_dense_dense_all_flags(ta, tb, k):
    a = rand_ndarray(_shape(3, k, ta), dtype="float64")
    b = rand_ndarray(_shape(k, 5, tb), dtype="float64")
    check_numeric_gradient(lambda x, y: nd.dot(x, y, transpose_a=ta, transpose_b=tb), [a, b])


@pytest.mark.parametrize("ashape, bshape", [((4,), (4,)), ((2, 3, 4), (4, 5)), ((3, 4), (4, 2, 2)),
                                            ((4,), (4, 3))])
def test_dense_nd_and_1d(ashape, bshape):
    a, b = rand_ndarray(ashape, dtype="float64"), rand_ndarray(bshape, dtype="float64")
    check_numeric_gradient(lambda x, y: nd.dot(x, y), [a, b])


@pytest.mark.parametrize("ta, tb", FLAGS)
@pytest.mark.parametrize("density", [0.0, 0.3, 1.0])
def test_csr_lhs_gives_gradient_for_rhs_only(ta, tb, density):
    a = rand_ndarray(_shape(4, 6, ta), "csr", density=density, dtype="float64")
    b = rand_ndarray(_shape(6, 3, tb), dtype="float64")
    # dB = op(A)^T . g: csr.T . dense -> row_sparse; dense.T . csr -> csr (its touched
    # columns); otherwise dense
    expected = {(False, False): "row_sparse", (False, True): "csr"}.get((ta, tb), "default")
    check_numeric_gradient(lambda x, y: nd.dot(x, y, transpose_a=ta, transpose_b=tb), [a, b],
                           grad_stypes=[None, expected])


@pytest.mark.parametrize("ta", [False, True])
def test_dense_lhs_csr_rhs(ta):
    a = rand_ndarray(_shape(3, 6, ta), dtype="float64")
    b = rand_ndarray((6, 4), "csr", density=0.4, dtype="float64")
    check_numeric_gradient(lambda x, y: nd.dot(x, y, transpose_a=ta), [a, b],
                           grad_stypes=["default", None])


def test_row_sparse_weight_with_csr_batch():
    x = rand_ndarray((5, 8), "csr", density=0.3, dtype="float64")
    w = rand_ndarray((8, 3), "row_sparse", density=1.0, dtype="float64")
    check_numeric_gradient(lambda a, b: nd.dot(a, b), [x, w], grad_stypes=[None, "row_sparse"])


def test_weight_gradient_holds_exactly_the_touched_rows():
    x = nd.sparse.csr_matrix(([1.0, 2.0, 3.0], [7, 2, 7], [0, 2, 3]), shape=(2, 1000))
    w = nd.ones((1000, 4))
    w.attach_grad(stype="row_sparse")
    with autograd.record():
        y = nd.dot(x, w)
    y.backward()
    assert w.grad.stype == "row_sparse"
    assert list(w.grad.indices.asnumpy()) == [2, 7]
    np.testing.assert_allclose(w.grad.asnumpy(), x.asnumpy().T @ np.ones((2, 4)))
