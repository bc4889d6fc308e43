"""Numeric gradient checks of dot, and the row_sparse weight gradient of dot(csr, W)."""
import numpy as np
import pytest

from nets import autograd, nd
from nets.test_utils import (DENSITIES, assert_almost_equal, check_numeric_gradient,
                              rand_ndarray)

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


# -- the gradient of a CSR leaf: w.r.t. its stored values, or dense when declared dense -----

@pytest.mark.parametrize("ta, tb", FLAGS)
@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_csr_leaf_gradient_is_on_its_stored_values(ta, tb, density, dtype):
    """``x.attach_grad()`` on a CSR ``x`` (a csr slot, its own stype): ``x``'s pattern,
    each stored (i, j) holding ``dX[i, j]`` of the dense oracle (as ``torch.sparse.mm``);
    ``attach_grad(stype='default')``: the whole dense ``dX`` (MXNet's symbolic rule)."""
    x = rand_ndarray(_shape(7, 6, ta), "csr", density=density, dtype=dtype)
    w = rand_ndarray(_shape(6, 3, tb), dtype=dtype)
    head = rand_ndarray((7, 3), dtype=dtype)
    X, W, G = x.asnumpy(), w.asnumpy(), head.asnumpy()
    op_w = W.T if tb else W
    dx = (G @ op_w.T).T if ta else G @ op_w.T
    rows = np.repeat(np.arange(X.shape[0]), np.diff(x.indptr.asnumpy()))
    tol = 1e-5 if dtype == "float32" else 1e-12
    for stype in ("csr", "default"):
        x.attach_grad(stype=stype)
        with autograd.record():
            y = nd.dot(x, w, transpose_a=ta, transpose_b=tb)
        y.backward(head)
        got = x.grad
        assert got.stype == stype and got.dtype == np.dtype(dtype)
        if stype == "csr":
            np.testing.assert_array_equal(got.indptr.asnumpy(), x.indptr.asnumpy())
            np.testing.assert_array_equal(got.indices.asnumpy(), x.indices.asnumpy())
            assert_almost_equal(got.data, dx[rows, x.indices.asnumpy()], rtol=tol, atol=tol)
        else:
            assert_almost_equal(got, dx, rtol=tol, atol=tol)


@pytest.mark.parametrize("ta, tb", FLAGS)
def test_csr_leaf_numeric_gradient(ta, tb):
    """Central differences of the stored values (``check_numeric_gradient`` perturbs only
    those of a csr input with a csr gradient) for both operands, with ``autograd.grad``."""
    x = rand_ndarray(_shape(4, 6, ta), "csr", density=0.4, dtype="float64")
    w = rand_ndarray(_shape(6, 3, tb), dtype="float64")
    expected = {(False, False): "row_sparse", (False, True): "csr"}.get((ta, tb), "default")
    check_numeric_gradient(lambda a, b: nd.dot(a, b, transpose_a=ta, transpose_b=tb), [x, w],
                           grad_stypes=["csr", expected])


def test_csr_leaf_gradient_merges_contributions_onto_its_pattern():
    """Two uses of a CSR leaf (``dot`` and an element-wise op): the sum of both gradients,
    sampled at the leaf's pattern; a use with a sparse ``rhs`` goes through the same
    sampling of the dense gradient."""
    x = nd.sparse.csr_matrix(([1.0, 2.0, 3.0], [1, 4, 1], [0, 2, 2, 3]), shape=(3, 5),
                             dtype="float64")
    w = rand_ndarray((5, 2), dtype="float64")
    wr = rand_ndarray((5, 2), "row_sparse", density=0.6, dtype="float64")
    x.attach_grad()
    with autograd.record():
        y = nd.dot(x, w).sum() + (x * 3).sum() + nd.dot(x, wr).sum()
    y.backward()
    dense = np.ones((3, 2)) @ w.asnumpy().T + 3 + np.ones((3, 2)) @ wr.asnumpy().T
    X = x.asnumpy()
    assert x.grad.stype == "csr" and x.grad.nnz == 3
    assert_almost_equal(x.grad, dense * (X != 0))


def test_csr_leaf_with_no_gradient_path_gets_zeros_on_its_pattern():
    x = rand_ndarray((3, 4), "csr", density=0.5, dtype="float64")
    x.attach_grad()
    with autograd.record():
        y = nd.zeros_like(x)
    y.backward()
    assert x.grad.stype == "csr" and x.grad.nnz == x.nnz
    assert_almost_equal(x.grad, np.zeros((3, 4)))
