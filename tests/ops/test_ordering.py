"""sort, argsort and topk against numpy on random inputs (ties included), their
gradients (numeric checks; zero for indices and masks) and their symbolic inference."""
import numpy as np
import pytest

from nets import autograd, nd, sym
from nets.base import NetsError, ShapeError
from nets.test_utils import check_numeric_gradient

RNG = np.random.default_rng(7)
SHAPES = [(7,), (3, 5), (2, 3, 4)]
DTYPES = [np.float32, np.float64, np.int32, np.uint8]


def _data(shape, dtype, ties):
    x = RNG.integers(0, 4 if ties else 10**6, size=shape)
    return x.astype(dtype) if np.dtype(dtype).kind in "iu" else (x / 7).astype(dtype)


def _ref_order(x, axis, ascend):
    """Stable order from a pure-Python sort on (value, index) keys."""
    flat = axis is None
    a = x.reshape(-1) if flat else np.moveaxis(x, axis, -1)
    out = np.empty(a.shape, np.int64)
    for idx in np.ndindex(a.shape[:-1]):
        row = [float(v) if ascend else -float(v) for v in a[idx]]
        out[idx] = sorted(range(len(row)), key=lambda i, row=row: (row[i], i))
    return out if flat else np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ties", [False, True])
def test_sort_and_argsort_match_a_stable_reference(shape, dtype, ties):
    x = _data(shape, dtype, ties)
    for axis in [None, 0, -1]:
        for ascend in [True, False]:
            order = _ref_order(x, axis, ascend)
            flat = x.reshape(-1) if axis is None else x
            ax = 0 if axis is None else axis
            got = nd.argsort(nd.array(x, dtype=dtype), axis=axis, is_ascend=ascend)
            assert got.dtype == np.float32
            np.testing.assert_array_equal(got.asnumpy(), order)
            s = nd.sort(nd.array(x, dtype=dtype), axis=axis, is_ascend=ascend)
            assert s.dtype == dtype
            np.testing.assert_array_equal(s.asnumpy(), np.take_along_axis(flat, order, ax))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("ties", [False, True])
def test_topk_every_ret_typ(shape, ties):
    x = _data(shape, np.float32, ties)
    for axis in [None, 0, -1]:
        n = x.size if axis is None else x.shape[axis]
        for k in sorted({1, n // 2 or 1, n}):
            for ascend in [False, True]:
                order = _ref_order(x, axis, ascend)
                ax = 0 if axis is None else axis
                top = np.take(order, np.arange(k), axis=ax)
                flat = x.reshape(-1) if axis is None else x
                a = nd.array(x)
                idx = nd.topk(a, axis=axis, k=k, is_ascend=ascend)
                np.testing.assert_array_equal(idx.asnumpy(), top)
                vals = nd.topk(a, axis=axis, k=k, ret_typ="value", is_ascend=ascend)
                np.testing.assert_array_equal(vals.asnumpy(), np.take_along_axis(flat, top, ax))
                v2, i2 = nd.topk(a, axis=axis, k=k, ret_typ="both", is_ascend=ascend,
                                 dtype="int32")
                assert i2.dtype == np.int32
                np.testing.assert_array_equal(v2.asnumpy(), vals.asnumpy())
                np.testing.assert_array_equal(i2.asnumpy(), top)
                mask = np.zeros(flat.shape, np.float32)
                np.put_along_axis(mask, top, 1, axis=ax)
                got = nd.topk(a, axis=axis, k=k, ret_typ="mask", is_ascend=ascend)
                np.testing.assert_array_equal(got.asnumpy(), mask.reshape(x.shape))


def test_topk_k_below_one_takes_every_element_and_fluent_methods():
    x = nd.array([[3.0, 1.0, 2.0]])
    np.testing.assert_array_equal(nd.topk(x, k=0, ret_typ="value").asnumpy(), [[3, 2, 1]])
    np.testing.assert_array_equal(x.topk(k=2).asnumpy(), [[0, 2]])
    np.testing.assert_array_equal(x.sort().asnumpy(), [[1, 2, 3]])
    np.testing.assert_array_equal(x.argsort(is_ascend=False).asnumpy(), [[0, 2, 1]])


@pytest.mark.parametrize("kwargs, error", [
    ({"k": 4}, ShapeError), ({"axis": 2}, ShapeError), ({"ret_typ": "values"}, NetsError),
    ({"k": 1.5}, NetsError)])
def test_topk_bad_arguments(kwargs, error):
    with pytest.raises(error):
        nd.topk(nd.ones((2, 3)), **kwargs)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_sort_and_topk_value_gradients(axis):
    x = nd.array(RNG.permutation(12).reshape(3, 4).astype(np.float64) / 3)
    check_numeric_gradient(lambda a: nd.sort(a, axis=axis, is_ascend=False), [x])
    check_numeric_gradient(lambda a: nd.topk(a, axis=axis, k=2, ret_typ="value"), [x])
    check_numeric_gradient(lambda a: nd.topk(a, axis=axis, k=2, ret_typ="both")[0], [x])


def test_indices_and_masks_have_zero_gradients():
    x = nd.array([[1.0, 4.0, 2.0]])
    x.attach_grad()
    with autograd.record():
        y = (nd.topk(x, k=2).sum() + nd.topk(x, k=2, ret_typ="mask").sum()
             + nd.argsort(x).sum() + nd.argmax(x, axis=1).sum() + (x * 1).sum())
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [[1, 1, 1]])  # only the (x * 1) term


def test_symbolic_inference_of_topk_both():
    d = sym.Variable("d")
    t = sym.topk(d, k=2, ret_typ="both", dtype="int32", axis=0)
    _, out_types, _ = t.infer_type(d=np.float64)
    assert out_types == [np.float64, np.int32]
    _, out_shapes, _ = t.infer_shape(d=(5, 3))
    assert out_shapes == [(2, 3), (2, 3)]
    ex = t.simple_bind(d=(5, 3))
    ex.arg_dict["d"][:] = np.arange(15.0).reshape(5, 3)
    v, i = ex.forward()
    np.testing.assert_array_equal(v.asnumpy(), [[12, 13, 14], [9, 10, 11]])
    np.testing.assert_array_equal(i.asnumpy(), [[4, 4, 4], [3, 3, 3]])
