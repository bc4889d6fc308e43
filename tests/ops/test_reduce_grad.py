"""Numeric gradient checks of the reductions (dense and sparse inputs, axes, keepdims)."""
import numpy as np
import pytest

from nets import autograd, nd
from nets.ops import OPS
from nets.test_utils import assert_almost_equal, check_numeric_gradient, rand_ndarray
from tests.ops.test_nn_grad import check_second_order

AXES = [None, 0, 1, (0, 1), -1]


@pytest.mark.parametrize("op", ["sum", "mean"])
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_mean(op, axis, keepdims):
    x = rand_ndarray((3, 4), dtype="float64")
    check_numeric_gradient(lambda a: getattr(nd, op)(a, axis=axis, keepdims=keepdims), [x])


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "norm"])
def test_3d_and_exclude(op):
    x = nd.array(np.random.default_rng(0).permutation(24).reshape(2, 3, 4) / 7.0 + 0.1,
                 dtype="float64")  # distinct values: no ties for max/min
    kwargs = {"axis": 1} if op == "norm" else {"axis": 1, "exclude": True}
    check_numeric_gradient(lambda a: getattr(nd, op)(a, **kwargs), [x])


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("axis", AXES)
def test_max_min_without_ties(op, axis):
    x = nd.array(np.random.default_rng(1).permutation(12).reshape(3, 4) - 5.5, dtype="float64")
    check_numeric_gradient(lambda a: getattr(nd, op)(a, axis=axis), [x])


@pytest.mark.parametrize("ord_", [1, 2])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_norm(ord_, axis):
    x = nd.array(np.random.default_rng(2).standard_normal((3, 4)) + 0.05, dtype="float64")
    check_numeric_gradient(lambda a: nd.norm(a, ord=ord_, axis=axis), [x])


@pytest.mark.parametrize("axis, keepdims", [(None, False), (0, False), (1, True), (1, False)])
def test_square_sum(axis, keepdims):
    x = rand_ndarray((4, 3), dtype="float64")
    check_numeric_gradient(lambda a: nd.square_sum(a, axis=axis, keepdims=keepdims), [x])


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
@pytest.mark.parametrize("op", ["sum", "mean"])
def test_sparse_inputs(stype, op):
    x = rand_ndarray((4, 5), stype, density=0.5, dtype="float64")
    check_numeric_gradient(lambda a: getattr(nd, op)(a, axis=1), [x])


def test_square_sum_row_sparse_keeps_rows():
    x = rand_ndarray((6, 3), "row_sparse", density=0.5, dtype="float64")
    check_numeric_gradient(lambda a: nd.square_sum(a, axis=1, keepdims=True), [x],
                           grad_stypes=["row_sparse"])


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_argmax_argmin_have_zero_gradient(name, axis):
    """As in MXNet: recorded, the index passes a zero gradient back (never an error), and
    a path through the values beside it still delivers its own gradient."""
    x = nd.array([[1.0, 3.0], [2.0, 0.0]])
    x.attach_grad()
    with autograd.record():
        y = getattr(nd, name)(x, axis=axis) * 2
        z = y.sum() + (x * 3).sum()
    z.backward()
    assert_almost_equal(x.grad, np.full((2, 2), 3.0))
    with autograd.record():
        y = getattr(nd, name)(x, axis=axis)
    y.backward()
    assert x.grad.stype == "default"
    assert_almost_equal(x.grad, np.zeros((2, 2)))


@pytest.mark.parametrize("shape, axes, gshape, scale", [
    ((3, 4), (1,), (3,), 1.0), ((3, 4), (1,), (3, 1), 0.25), ((2, 3, 4), (0, 2), (3,), 0.5),
    ((2, 3), (0, 1), (1,), 1.0), ((2, 3), (), (2, 3), 2.0)])
def test_backward_sum_gradient_is_scaled_sum(shape, axes, gshape, scale):
    fn = OPS["_backward_sum"]
    g = rand_ndarray(gshape, dtype="float64")
    assert_almost_equal(fn(g, shape=shape, axes=axes, scale=scale),
                        np.broadcast_to(g.asnumpy().reshape(
                            [1 if a in axes else d for a, d in enumerate(shape)]) * scale, shape))
    check_numeric_gradient(lambda g: fn(g, shape=shape, axes=axes, scale=scale), [g])


@pytest.mark.parametrize("op", ["sum", "mean"])
def test_sum_mean_second_order(op):
    """The gradient is one operator (``_backward_sum``), recorded under create_graph."""
    x = rand_ndarray((3, 4), dtype="float64")
    check_second_order(lambda a: getattr(nd, op)(a, axis=1) ** 2, x)
