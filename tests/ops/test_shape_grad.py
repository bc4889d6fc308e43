"""Gradients of the shape operators: autograd against float64 central differences."""
import numpy as np
import pytest

import nets
from nets import autograd, nd
from nets.ops import OPS
from nets.test_utils import assert_almost_equal, check_numeric_gradient, rand_ndarray


def r(*shape, stype="default", density=None):
    return rand_ndarray(shape, stype, density=density, dtype=np.float64)


def ids(*values):
    """A constant index array (float, as MXNet passes indices)."""
    return nd.array(values, dtype=np.float64)


# -- reshape / expand_dims / flatten / transpose ---------------------------------------------

@pytest.mark.parametrize("src, spec, reverse", [
    ((2, 3, 4), (4, 0, 2), False), ((2, 3, 4), (-3, -2), False),
    ((2, 3, 4), (2, -4, -1, 3, -2), False), ((4, 3, 2), (-1, 0), True), ((6,), (2, 3), False)])
def test_reshape(src, spec, reverse):
    check_numeric_gradient(lambda x: nd.reshape(x, shape=spec, reverse=reverse), [r(*src)])


@pytest.mark.parametrize("src, axis", [((3,), 0), ((2, 3), 1), ((2, 3), -1), ((2, 1, 3), 3)])
def test_expand_dims(src, axis):
    check_numeric_gradient(lambda x: nd.expand_dims(x, axis=axis), [r(*src)])


@pytest.mark.parametrize("src", [(4,), (2, 3), (2, 3, 2), (2, 1, 2, 2)])
def test_flatten(src):
    check_numeric_gradient(nd.flatten, [r(*src)])


@pytest.mark.parametrize("density", [0.0, 0.5, 1.0])
def test_flatten_row_sparse(density):
    # native row_sparse forward; a dense head gradient gives a dense gradient ...
    x = r(4, 2, 3, stype="row_sparse", density=density)
    check_numeric_gradient(nd.flatten, [x])
    # ... a row_sparse one (here take's embedding gradient) a row_sparse gradient
    check_numeric_gradient(lambda x, i: nd.take(nd.flatten(x), i), [x, ids(3, 0, 3)],
                           grad_stypes=["row_sparse", None])


@pytest.mark.parametrize("src, axes", [
    ((2, 3), None), ((2, 3), ()), ((2, 3, 4), None), ((2, 3, 4), (1, 0, 2)),
    ((2, 3, 4), (2, 0, 1)), ((2, 3, 4), (-1, 0, -2)), ((1, 2, 3, 2), (3, 1, 0, 2))])
def test_transpose(src, axes):
    check_numeric_gradient(lambda x: nd.transpose(x, axes=axes), [r(*src)])


# -- concat / stack / split --------------------------------------------------------------

@pytest.mark.parametrize("shapes, dim", [
    ([(2, 3)], 1), ([(2, 3), (2, 1)], 1), ([(1, 3), (3, 3), (2, 3)], 0),
    ([(2, 2, 3), (2, 1, 3)], -2), ([(2, 2, 1), (2, 2, 3)], 2)])
def test_concat(shapes, dim):
    check_numeric_gradient(lambda *xs: nd.concat(*xs, dim=dim), [r(*s) for s in shapes])


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("density", [0.0, 0.5, 1.0])
def test_concat_row_sparse(dim, density):
    a = r(3, 2, stype="row_sparse", density=density)
    b = r(3 if dim else 2, 3 if dim else 2, stype="row_sparse", density=0.5)
    concat = lambda a, b: nd.concat(a, b, dim=dim)  # noqa: E731
    check_numeric_gradient(concat, [a, b])  # dense head gradient: dense gradients
    # a row_sparse gradient reaching the row_sparse concat is sliced as row_sparse
    check_numeric_gradient(lambda a, b, i: nd.take(concat(a, b), i), [a, b, ids(2, 0, 2, 1)],
                           grad_stypes=["row_sparse", "row_sparse", None])


@pytest.mark.parametrize("n, shape, axis", [
    (1, (3,), 0), (2, (3,), 1), (3, (2, 3), 0), (2, (2, 3), 1), (2, (2, 3), -1), (3, (2, 1), 2)])
def test_stack(n, shape, axis):
    check_numeric_gradient(lambda *xs: nd.stack(*xs, axis=axis), [r(*shape) for _ in range(n)])


@pytest.mark.parametrize("shape, n, axis, squeeze", [
    ((2, 6), 3, 1, False), ((4, 3), 2, 0, False), ((2, 3, 4), 4, -1, False),
    ((2, 3), 1, 1, False), ((3, 2), 3, 0, True), ((2, 3, 2), 3, 1, True), ((2, 2), 2, -1, True),
    ((1, 3), 1, 0, True)])
def test_split(shape, n, axis, squeeze):
    check_numeric_gradient(
        lambda x: nd.split(x, num_outputs=n, axis=axis, squeeze_axis=squeeze), [r(*shape)])


@pytest.mark.parametrize("squeeze", [False, True])
def test_split_unused_outputs_get_zero_gradient(squeeze):
    check_numeric_gradient(
        lambda x: nd.split(x, num_outputs=3, axis=1, squeeze_axis=squeeze)[1], [r(2, 3, 2)])


# -- slicing ------------------------------------------------------------------------

@pytest.mark.parametrize("shape, begin, end, step", [
    ((4, 5), (1, 0), (3, 5), None), ((4, 5), (None, 1), (None, -1), (2, 2)),
    ((4, 5), (3, 4), (None, 0), (-1, -2)), ((4, 5), (-10,), (10,), None),
    ((3, 4, 2), (0, 1), (2, 3), ()), ((3, 4, 2), (2, None, 1), (0, None, 2), (-2, 1, 1)),
    ((5,), (4,), (None,), (-3,)), ((4, 5), (2, 0), (2, 5), None)])
def test_slice(shape, begin, end, step):
    check_numeric_gradient(lambda x: nd.slice(x, begin=begin, end=end, step=step), [r(*shape)])


@pytest.mark.parametrize("shape, axis, begin, end", [
    ((4, 3), 0, 1, 3), ((4, 3), 1, 0, None), ((4, 3), -1, -2, None), ((2, 5, 2), 1, 1, -1),
    ((2, 5, 2), 2, 1, 2)])
def test_slice_axis(shape, axis, begin, end):
    check_numeric_gradient(lambda x: nd.slice_axis(x, axis=axis, begin=begin, end=end),
                           [r(*shape)])


def test_backward_slice_gradient_is_slice():
    # its own vjp (what makes second derivatives of slice right)
    fn = OPS["_backward_slice"]
    check_numeric_gradient(lambda g: fn(g, shape=(5, 4), begin=(4, 1), end=(0, None),
                                        step=(-2, 2)), [r(2, 2)])


# -- take / pick / one_hot ------------------------------------------------------------

@pytest.mark.parametrize("shape, indices, axis, mode", [
    ((4, 3), [1, 3, 1, 1], 0, "clip"),             # repeated indices add up
    ((4, 3), [[0, 2], [2, 2]], 0, "clip"),         # 2-D indices
    ((4, 3), [-2, 5, 1, 3, 9], 0, "clip"),         # clipped ones go to rows 0 and 3
    ((4, 3), [-1, 5, 1, -5], 0, "wrap"),           # wrapped: rows 3, 1, 1, 3
    ((4, 3), [2, 0, 2], 1, "raise"),
    ((2, 3, 2), [[1, 0], [2, -7]], 1, "wrap"),
    ((2, 3, 2), [1, 1, 0], -1, "clip"),
    ((3,), [2, 2, 0, 7], 0, "clip"),
    ((3, 2), [], 0, "clip"),
    ((3, 2), 4, 0, "clip")])                     # 0-d index
def test_take(shape, indices, axis, mode):
    check_numeric_gradient(lambda a, i: nd.take(a, i, axis=axis, mode=mode),
                           [r(*shape), nd.array(np.array(indices, np.float64))],
                           grad_stypes=["default", None])


@pytest.mark.parametrize("density", [0.0, "one_row", 0.5, 1.0])
@pytest.mark.parametrize("indices, mode", [([1, 4, 1, 1], "clip"), ([-1, 6, 3], "wrap"),
                                           ([[0, 2], [2, 3]], "raise")])
def test_take_row_sparse_is_the_embedding_gradient(density, indices, mode):
    # row_sparse over the taken rows (absent rows included), repeats summed
    a = r(5, 2, stype="row_sparse", density=density)
    check_numeric_gradient(lambda a, i: nd.take(a, i, mode=mode), [a, ids(*indices)],
                           grad_stypes=["row_sparse", None])


def test_take_row_sparse_along_another_axis_is_dense():
    a = r(3, 4, stype="row_sparse", density=0.5)
    check_numeric_gradient(lambda a, i: nd.take(a, i, axis=1), [a, ids(3, 0, 3)],
                           grad_stypes=["default", None])


def test_take_row_sparse_gradient_holds_the_unique_rows():
    w = nd.zeros((6, 2), stype="row_sparse", dtype=np.float64)
    w.attach_grad(stype="row_sparse")
    with autograd.record():
        y = nd.take(w, ids(4, 1, 4, 4))
    y.backward(nd.array(np.arange(8.0).reshape(4, 2), dtype=np.float64))
    assert w.grad.stype == "row_sparse"
    np.testing.assert_array_equal(w.grad.indices.asnumpy(), [1, 4])
    np.testing.assert_array_equal(w.grad.data.asnumpy(), [[2, 3], [0 + 4 + 6, 1 + 5 + 7]])


@pytest.mark.parametrize("stype", ["default", "row_sparse"])
def test_backward_take_gradient_is_take(stype):
    fn = OPS["_backward_take"]
    check_numeric_gradient(lambda g, i: fn(g, i, shape=(4, 2), axis=0, mode="wrap",
                                           stype=stype), [r(3, 2), ids(1, -3, 2)],
                           grad_stypes=["default", None])


@pytest.mark.parametrize("shape, index, axis, keepdims, mode", [
    ((3, 4), [1, 3, 1], -1, False, "clip"),
    ((3, 4), [[2], [2], [0]], 1, True, "clip"),
    ((3, 4), [0, 2, 2, 2], 0, False, "raise"),
    ((3, 4), [-1, 7, 1, 3], 0, True, "clip"),        # clipped to 0 and 2
    ((3, 4), [-1, 5, 9], 1, False, "wrap"),          # wrapped to 3, 1, 1
    ((2, 3, 2), [[2, 0], [1, 1]], 1, False, "clip"),
    ((4,), 3, 0, False, "clip")])
def test_pick(shape, index, axis, keepdims, mode):
    check_numeric_gradient(lambda x, i: nd.pick(x, i, axis=axis, keepdims=keepdims, mode=mode),
                           [r(*shape), nd.array(np.array(index, np.float64))],
                           grad_stypes=["default", None])


def test_one_hot_indices_get_no_gradient():
    i, x, y = ids(0, 2, 1), r(3, 3), r(3, 3)
    check_numeric_gradient(lambda i, x, y: nd.where(nd.one_hot(i, depth=3), x, y), [i, x, y],
                           grad_stypes=[None, "default", "default"])
    i.attach_grad()
    with autograd.record():
        z = nd.one_hot(i, depth=3)
    z.backward()
    np.testing.assert_array_equal(i.grad.asnumpy(), np.zeros(3))


# -- broadcast_to / where ---------------------------------------------------------------

@pytest.mark.parametrize("src, shape", [
    ((3, 1), (3, 4)), ((1, 2), (3, 2)), ((2, 1, 3), (2, 4, 3)), ((3,), (2, 3)),
    ((1,), (2, 1, 3)), ((2, 1), (0, 3)), ((2, 3), (2, 3)), ((1, 1), (2, 2))])
def test_broadcast_to(src, shape):
    check_numeric_gradient(lambda x: nd.broadcast_to(x, shape=shape), [r(*src)])


def test_broadcast_to_second_order():
    """broadcast_to's vjp sums with an operator, so create_graph differentiates it again:
    y = broadcast_to(x)**2 with head v gives g_i = 2 x_i sum_j v_ij, d<u, g>/dx = 2 u sum_j v."""
    gen = nets.test_utils.generator()
    x, v, u = (nd.array(gen.normal(size=s), dtype=np.float64) for s in ((3, 1), (3, 4), (3, 1)))
    x.attach_grad()
    with autograd.record():
        g = autograd.grad(nd.broadcast_to(x, shape=(3, 4)) ** 2, x, v, create_graph=True)
    g.backward(u)
    want = 2 * u.asnumpy() * v.asnumpy().sum(axis=1, keepdims=True)
    np.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-12)


@pytest.mark.parametrize("shape, cond_shape", [((3, 4), (3, 4)), ((3, 2, 2), (3,)), ((4,), (4,))])
def test_where(shape, cond_shape):
    cond = nd.array(nets.test_utils.generator().integers(-1, 2, cond_shape), dtype=np.float64)
    check_numeric_gradient(nd.where, [cond, r(*shape), r(*shape)],
                           grad_stypes=[None, "default", "default"])


@pytest.mark.parametrize("density", [0.0, 0.5, 1.0])
def test_where_csr_condition(density):
    cond = r(3, 4, stype="csr", density=density)
    check_numeric_gradient(nd.where, [cond, r(3, 4), r(3, 4)],
                           grad_stypes=[None, "default", "default"])


@pytest.mark.parametrize("fn", [lambda x: nd.broadcast_to(x, shape=(2, 3)),
                                lambda x: nd.reshape(x, shape=(1, 1)),
                                lambda x: nd.expand_dims(x, axis=0)])
def test_scalar_input(fn):
    # through autograd.grad: backward() cannot write a 0-d .grad yet (buf[:] on a 0-d array)
    x = nd.array(0.5, dtype=np.float64)
    x.attach_grad()
    with autograd.record():
        y = fn(x)
    h = r(*y.shape)
    g = autograd.grad(y, x, h)
    assert g.shape == () and np.isclose(g.asnumpy(), h.asnumpy().sum(), rtol=1e-12)


# -- storage rules of the gradients -------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda x: nd.transpose(x), lambda x: nd.flatten(x),
    lambda x: nd.slice(x, begin=(1, 0), end=(3, 2)),
    lambda x: nd.slice_axis(x, axis=1, begin=1, end=3),
    lambda x: nd.concat(x, x, dim=0), lambda x: nd.take(x, ids(0, 2)),
    lambda x: nd.take(x, ids(1), axis=1)])
def test_csr_inputs_get_their_gradient(fn):
    """A csr input of a shape operator is differentiated as MXNet's dense fallback does it:
    a dense gradient buffer gets the full gradient, a csr one the gradient at the input's
    stored entries (both checked against central differences); a csr input that is not
    differentiated leaves the other inputs' gradients as they are."""
    x = r(3, 4, stype="csr", density=0.5)
    check_numeric_gradient(fn, [x], grad_stypes=["default"])
    check_numeric_gradient(fn, [x], grad_stypes=["csr"])
    x.attach_grad(grad_req="null")
    w = r(*fn(x).shape)
    w.attach_grad()
    with autograd.record():
        z = fn(x) * w
    z.backward()
    assert_almost_equal(w.grad, fn(x).asnumpy())


def _rsp_head(shape):
    return r(*shape, stype="row_sparse", density=0.5)


@pytest.mark.parametrize("fn, shapes", [
    (nd.flatten, [(4, 2, 2)]),
    (lambda a, b: nd.concat(a, b, dim=1), [(4, 3), (4, 1)]),
    (lambda a, b: nd.concat(a, b, dim=0), [(2, 3), (3, 3)]),
    (lambda x: nd.split(x, num_outputs=2, axis=1), [(4, 6)])])
def test_row_sparse_head_gradients_stay_row_sparse(fn, shapes):
    xs = [r(*s) for s in shapes]
    for x in xs:
        x.attach_grad()
    with autograd.record():
        y = fn(*xs)
    ys = y if isinstance(y, list) else [y]
    heads = [r(*o.shape, stype="row_sparse", density=0.5) for o in ys]
    got = autograd.grad(ys, xs, heads, retain_graph=True)
    # (checked above)
    want = autograd.grad(ys, xs, [nd.array(h.asnumpy(), dtype=h.dtype) for h in heads])
    for g, w in zip(got, want):
        assert g.stype == "row_sparse"
        g.check_format(full_check=True)
        np.testing.assert_array_equal(g.asnumpy(), w.asnumpy())


@pytest.mark.parametrize("fn", [
    lambda x: nd.slice(x, begin=(3, 0), end=(0, 3), step=(-2, 2)),
    lambda x: nd.slice_axis(x, axis=1, begin=1, end=None),
    lambda x: nd.take(x, ids(3, 0, 3), mode="wrap"),
    lambda x: nd.take(x, ids(2, 2), axis=1),
    lambda x: nd.transpose(x), lambda x: nd.flatten(nd.expand_dims(x, axis=1)),
    lambda x: nd.split(x, num_outputs=3, axis=1, squeeze_axis=True)[2],
    lambda x: nd.concat(nd.zeros((2, 3), dtype=np.float64), x, dim=0),
    lambda x: nd.stack(nd.zeros((4, 3), dtype=np.float64), x, axis=1)])
def test_gradients_are_differentiable(fn):
    # With create_graph the vjp is recorded: the gradient J^T h is linear in the head
    # gradient h, and differentiating <J^T h, q> with respect to h gives J q = fn(q).
    x, q = r(4, 3), r(4, 3)
    x.attach_grad()
    with autograd.record():
        y = fn(x)
    h = r(*y.shape)
    h.attach_grad()
    gx = autograd.grad(y, x, h, create_graph=True)
    gx.backward(q)
    np.testing.assert_allclose(h.grad.asnumpy(), fn(q).asnumpy(), rtol=1e-12)
