"""``_mul_sum``, the sum of a product as one operator (what a hybridized graph fuses
``sum(broadcast_mul(a, b))`` into): values equal to the two operators' bit for bit and to a
float64 numpy oracle, gradients equal to the two operators' bit for bit, numeric gradients
and second order."""
import numpy as np
import pytest

from nets import autograd, nd
from nets.ops.reduce import _mul_sum
from nets.test_utils import assert_almost_equal, check_numeric_gradient
from tests.ops.test_nn_grad import check_second_order

# lhs shape, rhs shape, axis, keepdims, exclude (broadcasting either way included)
CASES = [
    ((6, 4), (6, 4), 1, False, False),   # a batch of dot products (matrix factorization)
    ((300, 37), (300, 37), 1, False, False),  # rows spanning several SIMD vectors and a tail
    ((6, 4), (6, 4), -1, True, False),
    ((6, 4), (6, 4), None, False, False),
    ((6, 4), (6, 4), 0, False, False),
    ((6, 4), (6, 4), 1, False, True),    # exclude: reduce axis 0
    ((6, 4), (1, 4), 1, False, False),   # rhs broadcast along the batch
    ((6, 4), (1, 4), 0, True, False),    # both gk and rhs broadcast along lhs's axis 0
    ((6, 1), (6, 4), 1, False, False),   # lhs broadcast along the reduced axis
    ((4,), (3, 4), (0, 1), False, False),  # lhs with fewer axes
    ((2, 3, 4), (2, 3, 4), (0, 2), False, False),
    ((2, 3, 4), (3, 1), 2, True, False),
    ((0, 4), (0, 4), 1, False, False),   # empty batch
]


def _pair(lshape, rshape, dtypes=("float32", "float32"), seed=0):
    rng = np.random.default_rng(seed)

    def draw(shape, dtype):
        if np.dtype(dtype).kind == "i":
            return nd.array(rng.integers(-3, 4, shape), dtype=dtype)
        return nd.array(rng.standard_normal(shape), dtype=dtype)
    return draw(lshape, dtypes[0]), draw(rshape, dtypes[1])


def _oracle(a, b, axis, keepdims, exclude):
    """numpy in float64: the sum of the product over ``axis`` (None: every axis, also with
    ``exclude``), or over the other axes with ``exclude``; a full reduction is ``(1,)``."""
    p = a.asnumpy().astype(np.float64) * b.asnumpy().astype(np.float64)
    axes = tuple(range(p.ndim)) if axis is None else tuple(np.atleast_1d(axis) % p.ndim)
    if exclude and axis is not None:
        axes = tuple(k for k in range(p.ndim) if k not in axes)
    out = np.sum(p, axis=axes, keepdims=keepdims)
    return out.reshape(1) if out.ndim == 0 else out


def _unfused(a, b, **attrs):
    return nd.sum(nd.broadcast_mul(a, b), **attrs)


@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("float64", "float64"),
                                    ("float32", "float64"), ("int32", "int32")])
@pytest.mark.parametrize("lshape, rshape, axis, keepdims, exclude", CASES)
def test_values_equal_sum_of_broadcast_mul(lshape, rshape, axis, keepdims, exclude, dtypes):
    a, b = _pair(lshape, rshape, dtypes)
    attrs = {"axis": axis, "keepdims": keepdims, "exclude": exclude}
    y = _mul_sum(a, b, **attrs)
    ref = _unfused(a, b, **attrs)
    assert (y.stype, y.dtype, y.shape) == ("default", ref.dtype, ref.shape)
    assert np.array_equal(y.asnumpy(), ref.asnumpy())
    assert_almost_equal(y, _oracle(a, b, **attrs))  # (tolerances of y's dtype)


def _grads(fn, a, b, head):
    a, b = a.copy(), b.copy()
    a.attach_grad()
    b.attach_grad()
    with autograd.record():
        y = fn(a, b)
    y.backward(head)
    return a.grad.asnumpy(), b.grad.asnumpy()


@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("float64", "float64"),
                                    ("float32", "float64")])
@pytest.mark.parametrize("lshape, rshape, axis, keepdims, exclude", CASES)
def test_gradients_equal_the_two_operators(lshape, rshape, axis, keepdims, exclude, dtypes):
    a, b = _pair(lshape, rshape, dtypes, seed=1)
    attrs = {"axis": axis, "keepdims": keepdims, "exclude": exclude}
    y = _unfused(a, b, **attrs)
    head = nd.array(np.random.default_rng(2).standard_normal(y.shape), dtype=y.dtype)
    fused = _grads(lambda x, z: _mul_sum(x, z, **attrs), a, b, head)
    for got, want in zip(fused, _grads(lambda x, z: _unfused(x, z, **attrs), a, b, head)):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got, want)


@pytest.mark.parametrize("lshape, rshape, axis, keepdims, exclude", CASES[:-1])
def test_numeric_gradient(lshape, rshape, axis, keepdims, exclude):
    a, b = _pair(lshape, rshape, ("float64", "float64"), seed=3)
    check_numeric_gradient(
        lambda x, z: _mul_sum(x, z, axis=axis, keepdims=keepdims, exclude=exclude), [a, b])


@pytest.mark.parametrize("lshape, rshape, axis", [((3, 4), (3, 4), 1), ((3, 4), (1, 4), 0)])
def test_second_order(lshape, rshape, axis):
    """Under create_graph the gradient is built of operators: differentiable again (here
    through a square, so that the second derivative is not zero)."""
    a, b = _pair(lshape, rshape, ("float64", "float64"), seed=4)
    check_second_order(lambda x: _mul_sum(x * x, b, axis=axis), a)
    check_second_order(lambda z: _mul_sum(a, z * z, axis=axis), b)


def test_one_operand_a_constant_gets_no_gradient():
    a, b = _pair((3, 4), (3, 4))
    a.attach_grad()
    with autograd.record():
        y = _mul_sum(a, b, axis=1)
    y.backward()
    assert np.array_equal(a.grad.asnumpy(), np.broadcast_to(b.asnumpy(), (3, 4)))
