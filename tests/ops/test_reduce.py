"""Reductions against a numpy oracle: op x stype x axis x keepdims x dtype x density."""
import numpy as np
import pytest

import nets
from nets import nd
from nets.base import NetsError, ShapeError
from nets.arrays.dense import NDArray
from nets.test_utils import DENSITIES, assert_almost_equal, rand_ndarray
from tests.ops.conftest import dense_result


def _sq(a):
    return a * a


# name: (call on nets, numpy oracle over float64 values)
OPS = {
    "sum": (nd.sum, np.sum),
    "mean": (nd.mean, np.mean),
    "max": (nd.max, np.max),
    "min": (nd.min, np.min),
    "norm1": (lambda x, **kw: nd.norm(x, ord=1, **kw),
              lambda a, **kw: np.sum(np.abs(a), **kw)),
    "norm2": (lambda x, **kw: nd.norm(x, **kw),
              lambda a, **kw: np.sqrt(np.sum(_sq(a), **kw))),
    "square_sum": (nd.square_sum, lambda a, **kw: np.sum(_sq(a), **kw)),
}
CASES = ([(st, (5, 4), ax) for st in ("default", "csr", "row_sparse")
          for ax in (None, 0, 1, -1, (0, 1))]
         + [(st, (4, 3, 2), ax) for st in ("default", "row_sparse")
            for ax in (None, 0, 2, -2, (1, 2), (0, 2))]
         + [(st, (6,), ax) for st in ("default", "row_sparse") for ax in (None, 0)])


def _oracle(fn, a, axis, keepdims):
    out = np.asarray(fn(a, axis=axis, keepdims=keepdims))
    return out.reshape(1) if out.ndim == 0 else out  # MXNet 1.x: a full reduction is (1,)


def _check(op, x, axis, keepdims, stype="default", exclude=False):
    """Values, shape, dtype and stype of ``op(x)`` against numpy; row indices if row_sparse."""
    call, fn = OPS[op]
    y = call(x, axis=axis, keepdims=keepdims, **({"exclude": True} if exclude else {}))
    if exclude:
        axis = tuple(a for a in range(x.ndim) if a not in np.atleast_1d(axis) % x.ndim)
    expect = _oracle(fn, x.asnumpy().astype(np.float64), axis, keepdims)
    assert (y.stype, y.dtype) == (stype, x.dtype)
    assert_almost_equal(y, expect, names=(f"{op}({x.stype})", "numpy"))
    if stype == "row_sparse":
        np.testing.assert_array_equal(y.indices.asnumpy(), x.indices.asnumpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("stype,shape,axis", CASES)
@pytest.mark.parametrize("op", list(OPS))
def test_reduce_matches_numpy(op, stype, shape, axis, dtype):
    for density in DENSITIES:
        x = rand_ndarray(shape, stype, density, dtype)
        for keepdims in (False, True):
            # the documented table: square_sum(row_sparse) keeps rows for positive axes
            rows_kept = (op, stype) == ("square_sum", "row_sparse") and keepdims and \
                axis is not None and np.all(np.atleast_1d(axis) > 0)
            _check(op, x, axis, keepdims, "row_sparse" if rows_kept else "default")


@pytest.mark.parametrize("stype,shape,axis", [
    ("default", (5, 4), 0), ("csr", (5, 4), 0), ("csr", (5, 4), -1), ("csr", (5, 4), (0, 1)),
    ("row_sparse", (4, 3, 2), 0), ("row_sparse", (4, 3, 2), (1, 2)), ("row_sparse", (5, 4), 1)])
@pytest.mark.parametrize("op", ["sum", "max", "min", "square_sum"])
def test_exclude_reduces_the_other_axes(op, stype, shape, axis):
    for density in DENSITIES:
        x = rand_ndarray(shape, stype, density)
        for keepdims in (False, True):
            rows_kept = (op, stype) == ("square_sum", "row_sparse") and keepdims and \
                0 in np.atleast_1d(axis)
            with dense_result(stype != "default" and len(np.atleast_1d(axis)) == len(shape)):
                _check(op, x, axis, keepdims, "row_sparse" if rows_kept else "default", True)


def test_square_sum_storage_inference_table():
    infer = nd.square_sum.infer_stype
    assert infer("row_sparse", axis=1, keepdims=True) == ("row_sparse",)
    assert infer("row_sparse", axis=(1, 2), keepdims=True) == ("row_sparse",)
    assert infer("row_sparse", axis=0, keepdims=True, exclude=True) == ("row_sparse",)
    for kw in ({"axis": 1}, {"axis": 0, "keepdims": True}, {"axis": -1, "keepdims": True},
               {"keepdims": True}, {"axis": 1, "keepdims": True, "exclude": True}):
        assert infer("row_sparse", **kw) == ("default",), kw
    for st in ("default", "csr"):
        assert infer(st, axis=1, keepdims=True) == ("default",)
    for op in (nd.sum, nd.mean, nd.max, nd.min, nd.norm, nd.argmax):
        assert op.infer_stype("row_sparse", axis=1, keepdims=True) == ("default",)


def test_sparse_max_min_count_implicit_zeros():
    # row 0: all stored and negative; row 1: one stored negative value; row 2: empty;
    # column 3 holds only an explicit stored zero besides implicit ones.
    a = np.array([[-3., -1., -2., -4.], [0., -5., 0., 0.], [0., 0., 0., 0.]], np.float32)
    x = nd.sparse.csr_matrix((a[a != 0], np.nonzero(a)[1], [0, 4, 5, 5]), shape=a.shape)
    for st in ("csr", "row_sparse"):
        y = x.tostype(st)
        assert_almost_equal(nd.max(y, axis=1), [-1., 0., 0.])
        assert_almost_equal(nd.min(y, axis=1), [-4., -5., 0.])
        assert_almost_equal(nd.max(y, axis=0), [0., 0., 0., 0.])
        assert_almost_equal(nd.max(y), [0.])
        assert_almost_equal(nd.max(y[0:1] if st == "csr" else nd.array(a[:1]).tostype(st)),
                            [-1.])


def test_nan_propagates_like_numpy():
    a = np.array([[1., np.nan, 0.], [0., 0., 2.]], np.float32)
    for st in ("default", "csr", "row_sparse"):
        x = nd.array(a).tostype(st)
        for op in (nd.max, nd.min, nd.sum):
            for axis in (None, 0, 1):
                assert_almost_equal(op(x, axis=axis), _oracle(
                    {nd.max: np.max, nd.min: np.min, nd.sum: np.sum}[op], a, axis, False),
                    equal_nan=True)


@pytest.mark.parametrize("fn,oracle", [(nd.argmax, np.argmax), (nd.argmin, np.argmin)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_argmax_argmin_dense(fn, oracle, dtype):
    x = rand_ndarray((4, 5, 3), "default", 0.5, dtype)
    a = x.asnumpy()
    for axis in (0, 1, -1):
        for keepdims in (False, True):
            y = fn(x, axis=axis, keepdims=keepdims)
            assert y.dtype == dtype  # float indices, as in MXNet
            assert_almost_equal(y, oracle(a, axis=axis, keepdims=keepdims))
    assert_almost_equal(fn(x), [oracle(a)])
    assert fn(x, keepdims=True).shape == (1, 1, 1)
    assert_almost_equal(fn(nd.array(a[0, 0])), [oracle(a[0, 0])])


def test_argmax_index_dtype_holds_large_indices():
    y = nd.argmax(nd.array(np.arange(4000, dtype=np.float16)))
    assert y.dtype == np.float32 and y.asscalar() == 3999


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_argmax_sparse_falls_back_with_warning(stype):
    x = rand_ndarray((5, 4), stype, 0.5)
    with pytest.warns(nets.StorageFallbackWarning, match="argmax"):
        y = nd.argmax(x, axis=1)
    assert y.stype == "default"
    assert_almost_equal(y, np.argmax(x.asnumpy(), axis=1))


def test_fluent_methods_and_out_dtype():
    x = rand_ndarray((5, 4), "csr", 0.5)
    a = x.asnumpy()
    assert_almost_equal(x.sum(axis=0), a.sum(axis=0))
    assert_almost_equal(x.mean(), [a.mean()])
    assert_almost_equal(x.max(1), a.max(axis=1))
    assert_almost_equal(x.norm(), [np.linalg.norm(a)])
    y = nd.norm(x, out_dtype="float64", axis=1)
    assert y.dtype == np.float64
    assert_almost_equal(y, np.linalg.norm(a.astype(np.float64), axis=1), rtol=1e-6)


def test_empty_and_degenerate_shapes():
    for st in ("default", "csr", "row_sparse"):
        x = nd.zeros((0, 3), stype=st)
        assert_almost_equal(nd.sum(x, axis=0), np.zeros(3))
        assert_almost_equal(nd.sum(x), [0.])
        with pytest.raises(ShapeError, match="axis 0 of size 0"):
            nd.max(x, axis=0)
        assert nd.max(x, axis=1).shape == (0,)
    assert_almost_equal(nd.sum(nd.array(np.float32(2.5))), [2.5])  # 0-d input


@pytest.mark.parametrize("stype", ["default", "csr", "row_sparse"])
def test_bad_arguments_name_the_value(stype):
    x = rand_ndarray((3, 4), stype, 0.5)
    with pytest.raises(ShapeError, match=r"axis=2 is out of range"):
        nd.sum(x, axis=2)
    with pytest.raises(ShapeError, match=r"axis=\(1, -1\) names an axis twice"):
        nd.max(x, axis=(1, -1))
    with pytest.raises(ShapeError, match=r"axis=1.5"):
        nd.mean(x, axis=1.5)
    with pytest.raises(NetsError, match="ord=3"):
        nd.norm(x, ord=3)
    with pytest.raises(ShapeError, match=r"axis=\(0, 1\) must be an int"):
        nd.argmax(x.tostype("default"), axis=(0, 1))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("shape, axis", [
    ((1000, 32), 1), ((7, 128), -1), ((7, 129), 1), ((3, 4, 5), (1, 2)), ((3, 4, 5), 2),
    ((3, 4, 5), (0, 2)), ((5, 1), 1), ((0, 8), 1), ((2, 3), None),
    ((2048, 128), 1), ((2049, 128), 1)])  # 2^18 values: the row-sum kernel; one row more: BLAS
@pytest.mark.parametrize("op", ["sum", "mean"])
def test_sum_mean_over_trailing_axes(op, shape, axis, dtype):
    """Short trailing rows (the row-sum kernel, or one matrix-vector product when large) and
    everything else agree with numpy; integer sums stay exact."""
    rng = np.random.default_rng(0)
    integer = np.dtype(dtype).kind == "i"
    a = (rng.integers(-2 ** 20, 2 ** 20, shape) if integer else rng.normal(size=shape))
    a = a.astype(dtype) * (2 ** 30 if dtype == np.int64 else 1)
    y = getattr(nd, op)(nd.array(a, dtype=dtype), axis=axis)
    assert y.dtype == dtype
    if integer and op == "sum":
        np.testing.assert_array_equal(y.asnumpy(), _oracle(np.sum, a, axis, False))
    else:  # an integer mean is truncated to the input dtype
        assert_almost_equal(y, _oracle(getattr(np, op), a.astype(np.float64), axis, False),
                            **({"rtol": 0, "atol": 1} if integer else {}))


def test_sum_of_a_non_contiguous_array():
    a = np.random.default_rng(0).normal(size=(6, 8)).astype(np.float32)
    assert_almost_equal(nd.sum(NDArray(a[:, ::2]), axis=1), a[:, ::2].sum(axis=1))


def test_long_float32_rows_keep_pairwise_accuracy():
    """A sequential float32 sum of 10^6 values in [0, 1) is off by ~1e-4; numpy's pairwise
    summation (and nets') by ~1e-8."""
    a = np.random.default_rng(0).random((2, 10 ** 6)).astype(np.float32)
    exact = a.astype(np.float64).sum(axis=1)
    for y in (nd.sum(nd.array(a), axis=1), nd.mean(nd.array(a), axis=1) * a.shape[1]):
        assert np.max(np.abs(y.asnumpy() / exact - 1)) < 1e-6
