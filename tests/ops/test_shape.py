"""Shape operators against numpy, dense and sparse, with their storage rules."""
import warnings

import numpy as np
import pytest

import nets
from nets import nd
from nets.base import DenseResultWarning, NetsError, ShapeError
from nets.test_utils import DENSITIES, rand_ndarray

DTYPES = (np.float32, np.float64)


def check(out, expected, stype):
    """``out`` has storage ``stype`` (canonical if sparse), ``expected``'s dtype and values."""
    expected = np.asarray(expected)
    assert out.stype == stype
    assert out.dtype == expected.dtype
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out.asnumpy(), expected)
    if stype != "default":
        out.check_format(full_check=True)
        assert out._indices.dtype == np.int64


def dense(shape, dtype=np.float32):
    if shape == ():  # rand_ndarray needs a first axis
        return nd.array(np.array(0.25, dtype), dtype=dtype)
    return rand_ndarray(shape, "default", dtype=dtype)


def fallback(fn):
    with pytest.warns(nets.StorageFallbackWarning):
        return fn()


# -- reshape -------------------------------------------------------------------------

@pytest.mark.parametrize("src, spec, reverse, want", [
    # MXNet's documented examples
    ((2, 3, 4), (4, 0, 2), False, (4, 3, 2)),
    ((2, 3, 4), (2, 0, 0), False, (2, 3, 4)),
    ((2, 3, 4), (6, 1, -1), False, (6, 1, 4)),
    ((2, 3, 4), (3, -1, 8), False, (3, 1, 8)),
    ((2, 3, 4), (-1,), False, (24,)),
    ((2, 3, 4), (-2,), False, (2, 3, 4)),
    ((2, 3, 4), (2, -2), False, (2, 3, 4)),
    ((2, 3, 4), (-2, 1, 1), False, (2, 3, 4, 1, 1)),
    ((2, 3, 4), (-3, 4), False, (6, 4)),
    ((2, 3, 4, 5), (-3, -3), False, (6, 20)),
    ((2, 3, 4), (0, -3), False, (2, 12)),
    ((2, 3, 4), (-3, -2), False, (6, 4)),
    ((2, 3, 4), (-4, 1, 2, -2), False, (1, 2, 3, 4)),
    ((2, 3, 4), (2, -4, -1, 3, -2), False, (2, 1, 3, 4)),
    ((10, 5, 4), (-1, 0), False, (40, 5)),
    ((10, 5, 4), (-1, 0), True, (50, 4)),
    # edge cases
    ((0, 3), (-1, 0), False, (0, 3)),
    ((0, 3), (5, -1), False, (5, 0)),
    ((2, 3, 4), (-1, 6), True, (4, 6)),
    ((), (1, 1), False, (1, 1)),
    ((6,), 6, False, (6,)),
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_reshape(src, spec, reverse, want, dtype):
    x = dense(src, dtype)
    check(nd.reshape(x, shape=spec, reverse=reverse), x.asnumpy().reshape(want), "default")


def test_reshape_fluent_and_alias():
    x = dense((2, 3, 4))
    check(x.reshape(4, -1), x.asnumpy().reshape(4, 6), "default")
    check(x.reshape((0, -1)), x.asnumpy().reshape(2, 12), "default")
    assert nd.Reshape is nd.reshape


@pytest.mark.parametrize("spec, words", [
    ((5, 5), ["(2, 3, 4)", "(5, 5)"]),
    ((-1, -1), ["-1"]),
    ((0, 0, 0, 0), ["no input dimension"]),
    ((-4, -1, -1, 0, 0), ["-4"]),
    ((-4, 5, -1, 0, 0), ["-4"]),
    ((-4, 2), ["-4"]),
    ((-5, 4), ["-5"]),
    ((7, -1), ["-1"]),
    (("a",), ["shape"]),
])
def test_reshape_errors(spec, words):
    with pytest.raises(ShapeError) as e:
        nd.reshape(dense((2, 3, 4)), shape=spec)
    assert all(w in str(e.value) for w in words)


def test_reshape_sparse_falls_back():
    x = rand_ndarray((4, 6), "csr", 0.5)
    check(fallback(lambda: nd.reshape(x, shape=(6, 4))), x.asnumpy().reshape(6, 4), "default")


# -- transpose -----------------------------------------------------------------------

@pytest.mark.parametrize("shape, axes", [
    ((3, 4), None), ((3, 4), ()), ((2, 3, 4), None), ((2, 3, 4), (1, 0, 2)),
    ((2, 3, 4), (2, 0, 1)), ((2, 3, 4), (-1, 0, 1)), ((5,), None), ((), None), ((0, 3), (1, 0)),
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_transpose_dense(shape, axes, dtype):
    x = dense(shape, dtype)
    out = nd.transpose(x, axes=axes)
    check(out, np.transpose(x.asnumpy(), axes or None), "default")
    assert out._np.flags.c_contiguous


@pytest.mark.parametrize("axes", [(0, 0, 1), (0, 1), (0, 1, 3)])
def test_transpose_errors(axes):
    with pytest.raises(ShapeError, match="axes"):
        nd.transpose(dense((2, 3, 4)), axes=axes)


@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_transpose_csr(density, dtype):
    x = rand_ndarray((5, 7), "csr", density, dtype)
    check(nd.transpose(x), x.asnumpy().T, "csr")
    check(x.T, x.asnumpy().T, "csr")
    check(nd.transpose(x, axes=(0, 1)), x.asnumpy(), "csr")


def test_transpose_row_sparse_falls_back():
    x = rand_ndarray((4, 3), "row_sparse", 0.5)
    check(fallback(lambda: nd.transpose(x)), x.asnumpy().T, "default")


# -- concat / stack / split -----------------------------------------------------------------

@pytest.mark.parametrize("shapes, dim", [
    ([(2, 3), (2, 1), (2, 4)], 1), ([(1, 3), (4, 3)], 0), ([(2, 3), (2, 2)], -1),
    ([(2, 2, 3), (2, 2, 1)], 2), ([(3, 2)], 1), ([(0, 2), (3, 2)], 0),
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_concat_dense(shapes, dim, dtype):
    xs = [dense(s, dtype) for s in shapes]
    want = np.concatenate([x.asnumpy() for x in xs], axis=dim)
    check(nd.concat(*xs, dim=dim), want, "default")
    check(nd.concatenate(xs, axis=dim), want, "default")
    assert nd.Concat is nd.concat


def test_concat_errors():
    with pytest.raises(ShapeError, match=r"data\[1\].*\(3, 2\)"):
        nd.concat(dense((2, 2)), dense((3, 2)), dim=1)
    with pytest.raises(ShapeError, match="dim=2"):
        nd.concat(dense((2, 2)), dense((2, 2)), dim=2)
    with pytest.raises(ShapeError, match="at least one"):
        nd.concat()


@pytest.mark.parametrize("dim, shapes", [
    (0, [(3, 5), (4, 5), (1, 5)]), (1, [(4, 2), (4, 5), (4, 1)]), (-1, [(3, 4), (3, 3)]),
])
@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_concat_csr(dim, shapes, density, dtype):
    xs = [rand_ndarray(s, "csr", density, dtype) for s in shapes]
    check(nd.concat(*xs, dim=dim), np.concatenate([x.asnumpy() for x in xs], axis=dim), "csr")


@pytest.mark.parametrize("dim, shapes", [
    (0, [(3, 2, 2), (4, 2, 2)]), (1, [(4, 1, 3), (4, 2, 3), (4, 1, 3)]),
    (2, [(4, 2, 1), (4, 2, 3)]),
])
@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_concat_row_sparse(dim, shapes, density, dtype):
    xs = [rand_ndarray(s, "row_sparse", density, dtype) for s in shapes]
    want = np.concatenate([x.asnumpy() for x in xs], axis=dim)
    check(nd.concat(*xs, dim=dim), want, "row_sparse")


@pytest.mark.parametrize("stypes", [("csr", "default"), ("csr", "row_sparse")])
def test_concat_mixed_falls_back(stypes):
    xs = [rand_ndarray((3, 4), s, 0.5) for s in stypes]
    out = fallback(lambda: nd.concat(*xs, dim=0))
    check(out, np.concatenate([x.asnumpy() for x in xs]), "default")


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("dtype", DTYPES)
def test_stack(axis, dtype):
    xs = [dense((2, 3), dtype) for _ in range(3)]
    check(nd.stack(*xs, axis=axis), np.stack([x.asnumpy() for x in xs], axis=axis), "default")


def test_stack_errors_and_fallback():
    with pytest.raises(ShapeError, match=r"data\[1\]"):
        nd.stack(dense((2, 3)), dense((3, 2)))
    with pytest.raises(ShapeError, match="axis=3"):
        nd.stack(dense((2, 3)), dense((2, 3)), axis=3)
    with pytest.raises(ShapeError, match="at least one"):
        nd.stack()
    xs = [rand_ndarray((3, 4), "csr", 0.5) for _ in range(2)]
    check(fallback(lambda: nd.stack(*xs)), np.stack([x.asnumpy() for x in xs]), "default")


@pytest.mark.parametrize("shape, n, axis, squeeze", [
    ((4, 6), 3, 1, False), ((4, 6), 2, 0, False), ((4, 6), 6, -1, False), ((3, 2), 3, 0, True),
    ((2, 3, 4), 4, 2, True),
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_split(shape, n, axis, squeeze, dtype):
    x = dense(shape, dtype)
    outs = nd.split(x, num_outputs=n, axis=axis, squeeze_axis=squeeze)
    want = np.split(x.asnumpy(), n, axis=axis)
    assert isinstance(outs, list) and len(outs) == n
    for o, w in zip(outs, want):
        check(o, np.squeeze(w, axis) if squeeze else w, "default")


def test_split_one_output_and_fluent():
    x = dense((2, 4))
    check(nd.split(x, 1), x.asnumpy(), "default")
    check(x.split(2)[1], x.asnumpy()[:, 2:], "default")


@pytest.mark.parametrize("kwargs, match", [
    ({"num_outputs": 4}, "does not divide"), ({"num_outputs": 0}, "num_outputs=0"),
    ({"num_outputs": 2, "squeeze_axis": True}, "squeeze_axis"), ({"num_outputs": 2, "axis": 2},
                                                                 "axis=2"),
])
def test_split_errors(kwargs, match):
    with pytest.raises(ShapeError, match=match):
        nd.split(dense((2, 6)), **kwargs)


def test_split_csr_falls_back():
    x = rand_ndarray((4, 6), "csr", 0.5)
    outs = fallback(lambda: nd.split(x, 2, axis=0))
    for o, w in zip(outs, np.split(x.asnumpy(), 2)):
        check(o, w, "default")


# -- slice / slice_axis ------------------------------------------------------------------

def py_key(begin, end, step):
    step = step or (None,) * len(begin)
    return tuple(slice(b, e, s) for b, e, s in zip(begin, end, step))


DENSE_SLICES = [
    ((0, 1), (2, 4), None), ((None, 0), (None, 3), (-1, 2)), ((1,), (3,), None),
    ((-3, -4), (None, -1), None), ((10,), (20,), None), ((None,) * 3, (None,) * 3, (-1, -2, -3)),
    ((3,), (0,), (-1,)), ((0,), (4,), ()), ((), (), None),
]


@pytest.mark.parametrize("begin, end, step", DENSE_SLICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_slice_dense(begin, end, step, dtype):
    x = dense((4, 5, 6), dtype)
    check(nd.slice(x, begin=begin, end=end, step=step), x.asnumpy()[py_key(begin, end, step)],
          "default")


def test_slice_mxnet_examples():
    x = nd.array([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]])
    check(nd.slice(x, begin=(0, 1), end=(2, 4)), np.float32([[2, 3, 4], [6, 7, 8]]), "default")
    check(x.slice(begin=(None, 0), end=(None, 3), step=(-1, 2)),
          np.float32([[9, 11], [5, 7], [1, 3]]), "default")


@pytest.mark.parametrize("kwargs, match", [
    ({"begin": (0,), "end": (1,), "step": (0,)}, "step"),
    ({"begin": (0, 1), "end": (1,)}, "equal lengths"),
    ({"begin": (0,) * 4, "end": (1,) * 4}, "more entries"),
    ({"begin": (0.5,), "end": (1,)}, "begin"),
])
def test_slice_errors(kwargs, match):
    with pytest.raises(ShapeError, match=match):
        nd.slice(dense((2, 3, 4)), **kwargs)


CSR_SLICES = [
    ((1,), (4,), None), ((0, 1), (None, 5), None), ((None, 2), (None, None), (2, 3)),
    ((None, None), (None, None), (-1, -2)), ((5, 0), (1, 7), (-2, 1)), ((-2,), (None,), None),
    ((3, 6), (3, 7), None),
]


@pytest.mark.parametrize("begin, end, step", CSR_SLICES)
@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_slice_csr(begin, end, step, density, dtype):
    x = rand_ndarray((6, 7), "csr", density, dtype)
    out = nd.slice(x, begin=begin, end=end, step=step)
    check(out, x.asnumpy()[py_key(begin, end, step)], "csr")
    assert not np.shares_memory(out._data, x._data)


def test_slice_row_sparse_falls_back():
    x = rand_ndarray((5, 3), "row_sparse", 0.5)
    check(fallback(lambda: nd.slice(x, begin=(1,), end=(4,))), x.asnumpy()[1:4], "default")


AXIS_SLICES = [(0, 1, 3), (1, 0, None), (-1, -3, -1), (1, 2, 2), (0, -10, 10), (2, 1, 5)]


@pytest.mark.parametrize("axis, begin, end", AXIS_SLICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_slice_axis_dense(axis, begin, end, dtype):
    x = dense((4, 5, 6), dtype)
    key = (slice(None),) * (axis % 3) + (slice(begin, end),)
    check(nd.slice_axis(x, axis=axis, begin=begin, end=end), x.asnumpy()[key], "default")


@pytest.mark.parametrize("axis, begin, end", AXIS_SLICES[:5])
@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_slice_axis_csr(axis, begin, end, density, dtype):
    x = rand_ndarray((6, 7), "csr", density, dtype)
    key = (slice(None),) * (axis % 2) + (slice(begin, end),)
    check(x.slice_axis(axis=axis, begin=begin, end=end), x.asnumpy()[key], "csr")


def test_slice_axis_errors():
    with pytest.raises(ShapeError, match="axis=2"):
        nd.slice_axis(dense((2, 3)), axis=2, begin=0, end=1)


# -- take -------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("indices", [[0, 3, 1, 1], [[-1, 7], [2, -6]], [], 2])
@pytest.mark.parametrize("mode", ["clip", "wrap"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_take_dense(axis, indices, mode, dtype):
    a = dense((4, 5), dtype)
    idx = np.array(indices, dtype=np.int64)
    check(nd.take(a, nd.array(idx, dtype="int64"), axis=axis, mode=mode),
          np.take(a.asnumpy(), idx, axis=axis, mode=mode), "default")


def test_take_raise_mode_and_float_indices():
    a = dense((4, 5))
    check(nd.take(a, nd.array([3, 0, 3]), mode="raise"), a.asnumpy()[[3, 0, 3]], "default")
    check(a.take(nd.array([[1.0, 4.0]]), axis=1), a.asnumpy()[:, [[1, 4]]], "default")
    with pytest.raises(NetsError, match=r"indices\[1\]=4 is out of range.*size 4"):
        nd.take(a, nd.array([0, 4]), mode="raise")
    with pytest.raises(NetsError, match="-1"):
        nd.take(a, nd.array([-1]), mode="raise")
    with pytest.raises(NetsError, match="whole numbers.*0.5"):
        nd.take(a, nd.array([0.5]))
    with pytest.raises(NetsError, match="mode='nearest'"):
        nd.take(a, nd.array([0]), mode="nearest")
    with pytest.raises(NetsError, match="empty"):
        nd.take(dense((0, 3)), nd.array([0]))


@pytest.mark.parametrize("axis", [0, 1, -2])
@pytest.mark.parametrize("mode", ["clip", "wrap"])
@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_take_csr(axis, mode, density, dtype):
    a = rand_ndarray((5, 6), "csr", density, dtype)
    idx = np.array([2, 0, 2, 4, -1, 9])
    check(nd.take(a, nd.array(idx), axis=axis, mode=mode),
          np.take(a.asnumpy(), idx, axis=axis, mode=mode), "csr")


def test_take_csr_needs_1d_indices():
    with pytest.raises(ShapeError, match="1-D indices"):
        nd.take(rand_ndarray((5, 6), "csr"), nd.array([[0, 1]]))


@pytest.mark.parametrize("shape, axis", [((6, 3), 0), ((6, 2, 3), 0), ((6, 2, 3), 2),
                                         ((6, 3), -1)])
@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_take_row_sparse(shape, axis, density, dtype):
    a = rand_ndarray(shape, "row_sparse", density, dtype)
    idx = np.array([[0, 5], [3, 3], [1, 2]])
    check(nd.take(a, nd.array(idx), axis=axis),
          np.take(a.asnumpy(), idx, axis=axis, mode="clip"), "default")


@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_take_row_sparse_with_as_many_ids_as_rows_is_no_dense_result(density, dtype):
    """An output of the table's own shape is a gather of the rows asked for, not the table
    densified: no DenseResultWarning."""
    a = rand_ndarray((6, 3), "row_sparse", density, dtype)
    idx = np.random.randint(0, 6, size=6)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DenseResultWarning)
        out = nd.take(a, nd.array(idx, dtype="int64"))
    check(out, a.asnumpy()[idx], "default")


def test_take_sparse_indices_fall_back():
    a, idx = dense((4, 3)), np.array([[0, 3], [2, 1]])
    sparse_idx = nd.array(idx, dtype="int64").tostype("csr")
    check(fallback(lambda: nd.take(a, sparse_idx)), a.asnumpy()[idx], "default")


# -- expand_dims / broadcast_to / flatten -------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("dtype", DTYPES)
def test_expand_dims(axis, dtype):
    x = dense((2, 3), dtype)
    check(nd.expand_dims(x, axis=axis), np.expand_dims(x.asnumpy(), axis), "default")


def test_expand_dims_errors_and_fallback():
    for axis in (3, -4):
        with pytest.raises(ShapeError, match=f"axis={axis}"):
            nd.expand_dims(dense((2, 3)), axis=axis)
    x = rand_ndarray((3, 4), "csr", 0.5)
    check(fallback(lambda: nd.expand_dims(x, 1)), x.asnumpy()[:, None], "default")


@pytest.mark.parametrize("src, shape, want", [
    ((1, 3), (4, 3), (4, 3)), ((2, 1, 3), (2, 5, 3), (2, 5, 3)), ((2, 1), (0, 4), (2, 4)),
    ((3,), (2, 3), (2, 3)), ((1,), (2, 0), (2, 1)), ((2, 3), (2, 3), (2, 3)),
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast_to(src, shape, want, dtype):
    x = dense(src, dtype)
    check(nd.broadcast_to(x, shape=shape), np.broadcast_to(x.asnumpy(), want), "default")


@pytest.mark.parametrize("src, shape", [((2, 3), (4, 3)), ((2,), (3,)), ((2, 3), (3,)),
                                        ((2,), (0, 2)), ((2,), (-1,))])
def test_broadcast_to_errors(src, shape):
    with pytest.raises(ShapeError, match=r"shape=\(") as e:
        nd.broadcast_to(dense(src), shape=shape)
    assert str(src) in str(e.value)


def test_broadcast_to_fallback():
    x = rand_ndarray((1, 3), "row_sparse", 1.0)
    check(fallback(lambda: x.broadcast_to((2, 3))), np.tile(x.asnumpy(), (2, 1)), "default")


@pytest.mark.parametrize("shape, want", [((2, 3, 4), (2, 12)), ((5,), (5, 1)), ((2, 0, 3), (2, 0)),
                                         ((3, 4), (3, 4))])
@pytest.mark.parametrize("dtype", DTYPES)
def test_flatten_dense(shape, want, dtype):
    x = dense(shape, dtype)
    check(nd.flatten(x), x.asnumpy().reshape(want), "default")
    assert nd.Flatten is nd.flatten


def test_flatten_scalar_error():
    with pytest.raises(ShapeError, match="scalar"):
        nd.flatten(nd.array(1.0))


@pytest.mark.parametrize("stype, shape", [("csr", (4, 5)), ("row_sparse", (5, 2, 3)),
                                          ("row_sparse", (5,))])
@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_flatten_sparse(stype, shape, density, dtype):
    x = rand_ndarray(shape, stype, density, dtype)
    out = x.flatten()
    check(out, x.asnumpy().reshape(shape[0], -1), stype)
    assert not np.shares_memory(out._data, x._data)


# -- one_hot / where -------------------------------------------------------------------------

@pytest.mark.parametrize("indices, depth", [([1, 0, 2], 3), ([[1, 0], [3, -1]], 3), ([], 4),
                                            ([0, 1], 0)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_one_hot(indices, depth, dtype):
    idx = np.array(indices, dtype=np.int64)
    want = np.where(idx[..., None] == np.arange(depth), 5, -2).astype(dtype)
    check(nd.one_hot(nd.array(idx, dtype="int64"), depth, on_value=5, off_value=-2, dtype=dtype),
          want, "default")


def test_one_hot_defaults_and_errors():
    check(nd.array([2.0, 0.0]).one_hot(3), np.float32([[0, 0, 1], [1, 0, 0]]), "default")
    with pytest.raises(ShapeError, match="depth=-1"):
        nd.one_hot(nd.array([0]), -1)
    with pytest.raises(NetsError, match="whole numbers"):
        nd.one_hot(nd.array([np.nan]), 2)


@pytest.mark.parametrize("cond_shape", [(3, 4), (3,)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_where_dense(cond_shape, dtype):
    cond = rand_ndarray(cond_shape, "default", 0.5, np.float32)
    x, y = dense((3, 4), dtype), dense((3, 4), dtype)
    c = cond.asnumpy() if len(cond_shape) == 2 else cond.asnumpy()[:, None]
    check(nd.where(cond, x, y), np.where(c != 0, x.asnumpy(), y.asnumpy()), "default")


@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_where_csr_condition(density, dtype):
    cond = rand_ndarray((4, 5), "csr", density, np.float32)
    x, y = dense((4, 5), dtype), dense((4, 5), dtype)
    check(nd.where(cond, x, y), np.where(cond.asnumpy() != 0, x.asnumpy(), y.asnumpy()),
          "default")


def test_where_csr_explicit_zero_reads_y():
    cond = nd.sparse.csr_matrix((np.float32([0, 1]), np.int64([0, 1]), np.int64([0, 2])),
                                shape=(1, 2))
    x, y = nd.array([[1, 2]]), nd.array([[3, 4]])
    check(nd.where(cond, x, y), np.float32([[3, 2]]), "default")


def test_where_errors_and_fallback():
    with pytest.raises(ShapeError, match=r"y has shape \(3, 2\)"):
        nd.where(dense((3, 4)), dense((3, 4)), dense((3, 2)))
    with pytest.raises(ShapeError, match=r"condition has shape \(4,\)"):
        nd.where(dense((4,)), dense((3, 4)), dense((3, 4)))
    x = rand_ndarray((3, 4), "csr", 0.5)
    cond, y = dense((3, 4)), dense((3, 4))
    want = np.where(cond.asnumpy() != 0, x.asnumpy(), y.asnumpy())
    check(fallback(lambda: nd.where(cond, x, y)), want, "default")


# -- every op returns a new array ------------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda x: nd.reshape(x, shape=(4, 3)), lambda x: nd.transpose(x, axes=(0, 1)),
    lambda x: nd.slice(x, begin=(0,), end=(2,)), lambda x: nd.slice_axis(x, 1, 0, None),
    lambda x: nd.split(x, 1), lambda x: nd.expand_dims(x, 0), lambda x: nd.flatten(x),
    lambda x: nd.broadcast_to(x, shape=(3, 4)), lambda x: nd.concat(x), lambda x: nd.stack(x),
    lambda x: nd.take(x, nd.array([0, 1, 2])), lambda x: nd.where(x, x, x),
])
def test_outputs_do_not_share_memory(fn):
    x = dense((3, 4))
    assert not np.shares_memory(fn(x)._np, x._np)


def test_sparse_namespace_exports():
    for name in ("slice", "slice_axis", "concat", "take", "transpose", "where"):
        assert getattr(nd.sparse, name) is getattr(nd, name)


# -- pick ---------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, axis", [((4, 5), 1), ((4, 5), 0), ((2, 3, 4), 1), ((2, 3, 4), -1)])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pick_matches_loop_reference(shape, axis, keepdims, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    ax = axis % len(shape)
    rest = shape[:ax] + shape[ax + 1:]
    idx = rng.integers(0, shape[ax], rest)
    expected = np.empty(rest, dtype)
    for pos in np.ndindex(*rest):
        expected[pos] = x[pos[:ax] + (idx[pos],) + pos[ax:]]
    if keepdims:
        expected = np.expand_dims(expected, ax)
    out = nd.pick(nd.array(x, dtype=x.dtype), nd.array(idx.astype(np.float32)), axis=axis,
                  keepdims=keepdims)
    assert out.dtype == dtype and out.stype == "default"
    np.testing.assert_array_equal(out.asnumpy(), expected)


def test_pick_modes_and_errors():
    x = nd.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    np.testing.assert_array_equal(nd.pick(x, nd.array([5, -1]), axis=1).asnumpy(), [3.0, 4.0])
    np.testing.assert_array_equal(nd.pick(x, nd.array([4, -1]), axis=1, mode="wrap").asnumpy(),
                                  [2.0, 6.0])
    with pytest.raises(NetsError, match=r"indices\[0\]=5 is out of range"):
        nd.pick(x, nd.array([5, 0]), axis=1, mode="raise")
    with pytest.raises(NetsError, match="whole numbers"):
        nd.pick(x, nd.array([0.5, 0]), axis=1)
    with pytest.raises(ShapeError, match="expected"):
        nd.pick(x, nd.array([0, 1, 2]), axis=1)
