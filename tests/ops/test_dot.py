"""dot: every stype combination x transpose flags x dtype x density against numpy."""
import itertools

import numpy as np
import pytest

import nets
from nets import nd
from nets.arrays.base_sparse import BaseSparseNDArray
from nets.ops import dot
from nets.test_utils import DENSITIES, assert_almost_equal, rand_ndarray

STYPES = ("default", "csr", "row_sparse")
FLAGS = list(itertools.product((False, True), repeat=2))
M, K, N = 5, 7, 4

# The storage table of dot's docstring, written out by hand: (lhs, rhs, ta, tb) -> out.
D, C, R = "default", "csr", "row_sparse"
EXPECTED = {
    (D, D): (D, D, D, D), (D, C): (C, D, C, D), (D, R): (D, D, D, D),
    (C, D): (D, D, R, R), (C, C): (C, C, C, C), (C, R): (D, D, R, R),
    (R, D): (R, R, D, D), (R, C): (C, R, C, D), (R, R): (R, R, D, D),
}  # the four entries follow FLAGS: (F, F), (F, T), (T, F), (T, T)


def _refuse_to_densify(self):
    raise AssertionError(f"a {self.stype} operand was densified")


def _operand(shape, transpose, stype, density, dtype):
    shape = shape[::-1] if transpose else shape
    return rand_ndarray(shape, stype, density if stype != "default" else 1.0, dtype)


@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("ta,tb", FLAGS)
@pytest.mark.parametrize("lhs_stype,rhs_stype", list(itertools.product(STYPES, STYPES)))
def test_dot_matches_numpy(lhs_stype, rhs_stype, ta, tb, dtype, density, monkeypatch):
    other = DENSITIES[(DENSITIES.index(density) + 2) % len(DENSITIES)]  # vary the pairings
    a = _operand((M, K), ta, lhs_stype, density, dtype)
    b = _operand((K, N), tb, rhs_stype, other, dtype)
    x, y = a.asnumpy(), b.asnumpy()
    with monkeypatch.context() as m:  # no path may densify a sparse operand
        m.setattr(BaseSparseNDArray, "asnumpy", _refuse_to_densify)
        out = dot(a, b, transpose_a=ta, transpose_b=tb)
    ref = (x.T if ta else x) @ (y.T if tb else y)
    assert out.stype == EXPECTED[lhs_stype, rhs_stype][FLAGS.index((ta, tb))]
    assert out.dtype == np.dtype(dtype) and out.shape == (M, N)
    assert_almost_equal(out, ref)
    if out.stype != "default":
        out.check_format(full_check=True)


@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.parametrize("rows", [1, 2, 7])
def test_csr_dense_shared_between_threads(shared_kernels, rows, density):
    """csr . dense runs in chunks of rows on several threads: same result."""
    x = rand_ndarray((rows, K), "csr", density, "float64")
    w = rand_ndarray((K, N), "default", 1.0, "float64")
    assert_almost_equal(dot(x, w), x.asnumpy() @ w.asnumpy())


@pytest.mark.parametrize("ta,tb", FLAGS)
@pytest.mark.parametrize("lhs_stype,rhs_stype", list(itertools.product(STYPES, STYPES)))
def test_zero_sized_dimensions(lhs_stype, rhs_stype, ta, tb):
    for m, k, n in [(0, 3, 2), (2, 0, 3), (2, 3, 0)]:
        a = _operand((m, k), ta, lhs_stype, 1.0, "float32")
        b = _operand((k, n), tb, rhs_stype, 1.0, "float32")
        out = dot(a, b, transpose_a=ta, transpose_b=tb)
        assert out.shape == (m, n) and out.dtype == np.float32
        assert_almost_equal(out, np.zeros((m, n)))


def test_every_combination_is_native():
    for stypes in itertools.product(STYPES, STYPES):
        assert dot.find_impl(stypes) is not None, stypes


@pytest.mark.parametrize("rhs_stype", ["default", "row_sparse"])
def test_csr_t_keeps_exactly_the_touched_rows(rhs_stype):
    x = nd.sparse.csr_matrix(([1.0, 2.0, 3.0, 4.0], ([0, 0, 2, 3], [7, 2, 7, 5])), shape=(4, 9))
    g = np.arange(12, dtype=np.float32).reshape(4, 3) + 1
    if rhs_stype == "row_sparse":  # rows 0 and 2 stored: column 5 (row 3 only) is untouched
        g[[1, 3]] = 0
        touched = [2, 7]
    else:
        touched = [2, 5, 7]
    rhs = nd.array(g).tostype(rhs_stype)
    out = dot(x, rhs, transpose_a=True)
    assert out.stype == "row_sparse"
    np.testing.assert_array_equal(out.indices.asnumpy(), touched)
    assert_almost_equal(out, x.asnumpy().T @ g)


def test_dense_times_csr_stores_the_csr_columns():
    w = nd.array(np.arange(1, 7, dtype=np.float32).reshape(2, 3))
    x = nd.sparse.csr_matrix(([1.0, 2.0], ([0, 2], [4, 1])), shape=(3, 6))
    out = dot(w, x)
    assert out.stype == "csr"
    np.testing.assert_array_equal(out.indptr.asnumpy(), [0, 2, 4])
    np.testing.assert_array_equal(out.indices.asnumpy(), [1, 4, 1, 4])
    assert_almost_equal(out, w.asnumpy() @ x.asnumpy())


@pytest.mark.parametrize("a_shape,b_shape,ta,tb,axes", [
    ((2, 3, 4), (4, 5, 6), False, False, (-1, 0)),
    ((4, 2, 3), (4, 5), True, False, (0, 0)),
    ((2, 3, 4), (5, 6, 4), False, True, (-1, -1)),
    ((4, 2), (3, 4), True, True, (0, -1)),
    ((3, 0), (0, 2), False, False, (-1, 0)),
    ((0, 3), (2, 0), True, True, (0, -1)),
])
def test_dense_nd_follows_mxnet(a_shape, b_shape, ta, tb, axes):
    a, b = rand_ndarray(a_shape, dtype="float64"), rand_ndarray(b_shape, dtype="float64")
    ref = np.tensordot(a.asnumpy(), b.asnumpy(), axes=axes)
    assert_almost_equal(dot(a, b, transpose_a=ta, transpose_b=tb), ref)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32"])
@pytest.mark.parametrize("ta,tb", FLAGS)
@pytest.mark.parametrize("m,n", [(6, 5), (1, 1), (0, 3)])
def test_contracted_size_one_is_an_outer_product(m, n, ta, tb, dtype):
    """(m, 1) . (1, n): the float path is a numba outer product (numpy's matmul is slow
    there); every dtype gives numpy's values exactly (one rounding per entry)."""
    a = nd.array(np.arange(1, m + 1).reshape((1, m) if ta else (m, 1)), dtype=dtype)
    b = nd.array((np.arange(n) - 2.5).reshape((n, 1) if tb else (1, n)), dtype=dtype)
    out = dot(a, b, transpose_a=ta, transpose_b=tb)
    x, y = a.asnumpy(), b.asnumpy()
    ref = (x.T if ta else x) @ (y.T if tb else y)
    assert out.dtype == np.dtype(dtype) and out.shape == (m, n)
    np.testing.assert_array_equal(out.asnumpy(), ref)


def test_dense_1d():
    v, w = nd.array([1.0, 2.0, 3.0]), nd.array(np.arange(6.0).reshape(3, 2), dtype="float32")
    assert dot(v, v).shape == (1,) and dot(v, v).asscalar() == 14.0  # MXNet: shape (1,)
    assert_almost_equal(dot(v, w), v.asnumpy() @ w.asnumpy())
    assert_almost_equal(dot(w, v[:2]), w.asnumpy() @ v.asnumpy()[:2])
    assert_almost_equal(dot(v, v, transpose_a=True, transpose_b=True), [14.0])


@pytest.mark.parametrize("lhs,rhs,ta,tb", [
    (((3, 4), "csr"), ((3, 2), "default"), False, False),
    (((3, 4), "csr"), ((3, 2), "default"), False, True),
    (((4, 3), "default"), ((4, 2), "row_sparse"), False, False),
    (((4, 3), "row_sparse"), ((4, 2), "csr"), True, True),
    (((3, 4), "default"), ((5, 2), "default"), False, False),
])
def test_shape_mismatch_names_both_operands(lhs, rhs, ta, tb):
    lhs, rhs = rand_ndarray(*lhs), rand_ndarray(*rhs)
    with pytest.raises(nets.base.ShapeError) as e:
        dot(lhs, rhs, transpose_a=ta, transpose_b=tb)
    msg = str(e.value)
    assert str(lhs.shape) in msg and str(rhs.shape) in msg
    assert f"transpose_a={ta}" in msg and f"transpose_b={tb}" in msg


def test_sparse_needs_2d_and_matching_dtypes():
    x = rand_ndarray((3, 4), "csr")
    with pytest.raises(nets.base.ShapeError, match="2-D"):
        dot(x, nd.ones((4,)))
    with pytest.raises(nets.base.ShapeError, match="2-D"):
        dot(rand_ndarray((3, 4, 2), "row_sparse"), nd.ones((4, 2)))
    with pytest.raises(nets.base.DTypeError, match="float64"):
        dot(x, nd.ones((4, 2), dtype="float64"))
