"""Sparse utility operators against numpy: retain, add_n, zeros_like, ones_like."""
import numpy as np
import pytest

from nets import nd
from nets.base import NetsError, ShapeError, StorageTypeError
from nets.test_utils import DENSITIES, assert_almost_equal, rand_ndarray
from tests.ops.conftest import dense_result, dense_values

DTYPES = ("float32", "float64")


# -- retain ------------------------------------------------------------------------------------

@pytest.mark.parametrize("stype", ["row_sparse"])
@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ids", [[5, 0, 3, 3], [], [7]], ids=["unsorted-repeats", "none", "last"])
def test_retain(stype, density, dtype, ids, no_densify):
    x = rand_ndarray((8, 2, 3), stype, density, dtype)
    want = np.zeros(x.shape, dtype)
    want[ids] = dense_values(x)[ids]
    y = nd.sparse.retain(x, nd.array(ids, dtype="float32"))
    assert y.stype == "row_sparse" and y.dtype == np.dtype(dtype)
    y.check_format(full_check=True)
    assert_almost_equal(dense_values(y), want)
    if stype == "row_sparse":
        assert set(y._indices) == set(x._indices) & set(ids)  # only rows x stores


def test_retain_integer_ids():
    x = rand_ndarray((5, 3), "row_sparse", 1.0)
    y = nd.sparse.retain(x, nd.array([4, 1], dtype="int64"))
    assert list(y._indices) == [1, 4]


@pytest.mark.parametrize("stype", ["default", "csr"])
def test_retain_needs_row_sparse(stype):
    """MXNet's ``sparse.retain`` accepts only row_sparse data: other stypes raise, naming it."""
    x = rand_ndarray((4, 3), stype, 1.0)
    with pytest.raises(StorageTypeError, match=f"retain: data must be row_sparse, got "
                                                    f"stype='{stype}'"):
        nd.sparse.retain(x, nd.array([1]))


@pytest.mark.parametrize("ids, match", [
    ([1, 1.5], r"indices\[1\]=1.5 is not a whole number"),
    ([4, 0], r"indices\[0\]=4.0 is out of range \[0, 4\)"),
    ([0, -2], r"indices\[1\]=-2.0 is out of range"),
])
def test_retain_bad_ids(ids, match):
    with pytest.raises(NetsError, match=match):
        nd.sparse.retain(rand_ndarray((4, 3), "row_sparse"), nd.array(ids))


# -- add_n -------------------------------------------------------------------------------------

@pytest.mark.parametrize("stypes, out_stype", [
    (("row_sparse",), "row_sparse"),
    (("row_sparse", "row_sparse"), "row_sparse"),
    (("row_sparse",) * 3, "row_sparse"),
    (("csr",), "csr"),
    (("csr", "csr"), "csr"),
    (("csr",) * 3, "csr"),
    (("default", "default"), "default"),
    (("default", "row_sparse"), "default"),
    (("csr", "default", "row_sparse"), "default"),
    (("row_sparse", "csr"), "default"),
])
@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_add_n(stypes, out_stype, density, dtype, no_densify):
    xs = [rand_ndarray((6, 4), st, density, dtype) for st in stypes]
    with dense_result(out_stype == "default" and "default" not in stypes):
        y = nd.add_n(*xs)
    assert y.stype == out_stype and y.dtype == np.dtype(dtype)
    if out_stype != "default":
        y.check_format(full_check=True)  # canonical: duplicates summed, indices sorted
    assert_almost_equal(dense_values(y), sum(dense_values(x) for x in xs))


def test_add_n_duplicate_rows_summed_and_dtype_promoted():
    a = nd.sparse.row_sparse_array((np.ones((2, 3), "float32"), [1, 3]), shape=(5, 3))
    b = nd.sparse.row_sparse_array((np.full((2, 3), 2.0), [0, 3]), shape=(5, 3))
    y = nd.ElementWiseSum(a, b, a)
    assert y.dtype == np.float64 and list(y._indices) == [0, 1, 3]
    assert_almost_equal(y._data[:, 0], [2.0, 2.0, 4.0])


@pytest.mark.parametrize("dtype", ["float16", "int32"])
@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_add_n_keeps_other_dtypes(stype, dtype):
    """The merge kernel has no float16 arithmetic: float16 is summed in float32, cast back."""
    xs = [(rand_ndarray((4, 3), stype, 0.5) * 4).astype(dtype) for _ in range(3)]
    y = nd.add_n(*xs)
    assert y.stype == stype and y.dtype == np.dtype(dtype)
    assert_almost_equal(y, sum(x.asnumpy().astype(np.float64) for x in xs), rtol=1e-3)


def test_add_n_csr_entries_summed():
    a = nd.sparse.csr_matrix(np.array([[1.0, 0, 2], [0, 0, 3]]))
    b = nd.sparse.csr_matrix(np.array([[0, 5.0, -2], [4, 0, 0]]))
    y = nd.add_n(a, b)
    assert list(y._indptr) == [0, 3, 5] and list(y._indices) == [0, 1, 2, 0, 2]
    assert_almost_equal(y._data, [1, 5, 0, 4, 3])  # a cancelled entry stays stored


def test_add_n_3d_row_sparse():
    xs = [rand_ndarray((5, 2, 3), "row_sparse", 0.5) for _ in range(2)]
    y = nd.add_n(*xs)
    assert y.stype == "row_sparse"
    assert_almost_equal(y, xs[0].asnumpy() + xs[1].asnumpy())


def test_add_n_errors():
    with pytest.raises(ShapeError, match=r"args\[0\] has shape \(2, 3\) but args\[1\] has "
                                         r"shape \(3, 2\)"):
        nd.add_n(nd.zeros((2, 3), stype="row_sparse"), nd.zeros((3, 2), stype="row_sparse"))
    with pytest.raises(NetsError, match="at least one array"):
        nd.add_n()


# -- zeros_like / ones_like --------------------------------------------------------------------

@pytest.mark.parametrize("stype", ["default", "csr", "row_sparse"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_zeros_like_ones_like(stype, dtype, no_densify):
    x = rand_ndarray((3, 4), stype, 0.5, dtype)
    z = nd.zeros_like(x)
    with dense_result(stype != "default"):
        o = x.ones_like()
    assert z.stype == stype and z.dtype == np.dtype(dtype) and z.shape == x.shape
    assert not dense_values(z).any()
    if stype != "default":
        assert z._data.size == 0  # nothing stored
    assert o.stype == "default" and o.dtype == np.dtype(dtype)
    assert np.array_equal(o._np, np.ones((3, 4)))


# -- values_at: the gradient of a CSR leaf ---------------------------------------------------

@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.parametrize("gstype", ["default", "csr", "row_sparse"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_values_at_samples_the_pattern(gstype, density, dtype):
    """Any gradient sampled at a csr array's stored entries: that pattern exactly (explicit
    zeros kept), the gradient's values there, its dtype."""
    from nets.ops.sparse_ops import values_at
    like = rand_ndarray((6, 5), "csr", density, dtype)
    grad = rand_ndarray((6, 5), gstype, 0.5, dtype)
    got = values_at(grad, like)
    assert got.stype == "csr" and got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got.indptr.asnumpy(), like.indptr.asnumpy())
    np.testing.assert_array_equal(got.indices.asnumpy(), like.indices.asnumpy())
    rows = np.repeat(np.arange(6), np.diff(like.indptr.asnumpy()))
    assert_almost_equal(got.data, grad.asnumpy()[rows, like.indices.asnumpy()])
    if gstype == "csr":
        assert values_at(got, like) is got  # already of the pattern
