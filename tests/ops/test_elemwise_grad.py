"""Gradients of the elementwise binary operators: autograd against float64 central
differences (``check_numeric_gradient``), over broadcast shapes, scalars on either side,
the Python operators and the native sparse paths."""
import numpy as np
import pytest

from nets import autograd, nd
from nets.test_utils import assert_almost_equal, check_numeric_gradient, rand_ndarray
from tests.ops.conftest import dense_result

SHAPES = [((3, 4), (3, 4)), ((3, 4), (1, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)),
          ((4,), (2, 3, 4))]
# operands away from kinks and domain edges: positive divisors and bases, no ties
DOMAINS = {"add": (-2, 2), "sub": (-2, 2), "mul": (-2, 2), "div": (0.5, 2),
           "mod": (1.1, 1.9), "power": (0.5, 2), "maximum": (-2, 2), "minimum": (-2, 2)}
COMPARISONS = ["equal", "not_equal", "greater", "greater_equal", "lesser", "lesser_equal"]


def uniform(shape, low=-2.0, high=2.0, seed=0):
    return nd.array(np.random.default_rng(seed).uniform(low, high, shape))


def sparse(shape, stype, density, seed=0):
    """A float64 sparse array whose stored values are >= 0.5 in magnitude (no ties with 0)."""
    x = rand_ndarray(shape, stype, density=density, dtype=np.float64).asnumpy()
    x = np.where(x != 0, np.sign(x) * (0.5 + np.abs(x)), 0)
    return nd.array(x).tostype(stype)


@pytest.mark.parametrize("stem", sorted(DOMAINS))
@pytest.mark.parametrize("lshape, rshape", SHAPES)
def test_broadcast(stem, lshape, rshape):
    low, high = DOMAINS[stem]
    lhs, rhs = uniform(lshape, low, high, 1), uniform(rshape, low, high, 2)
    if stem == "mod":
        lhs = uniform(lshape, 0.1, 5.0, 1)  # lhs / rhs away from whole numbers is likely
    check_numeric_gradient(getattr(nd, f"broadcast_{stem}"), [lhs, rhs])


@pytest.mark.parametrize("stem", ["add", "sub", "mul", "div"])
def test_elemwise_same_shape(stem):
    lhs, rhs = uniform((3, 4), 0.5, 2, 1), uniform((3, 4), -2, -0.5, 2)
    check_numeric_gradient(getattr(nd, f"elemwise_{stem}"), [lhs, rhs])


@pytest.mark.parametrize("name", COMPARISONS)
@pytest.mark.parametrize("lshape, rshape", SHAPES[:3])
def test_comparisons_have_zero_gradient(name, lshape, rshape):
    lhs, rhs = uniform(lshape, seed=1), uniform(rshape, seed=2)
    check_numeric_gradient(getattr(nd, name), [lhs, rhs])
    check_numeric_gradient(lambda x: getattr(nd, name)(x, 0.3), [lhs])
    check_numeric_gradient(lambda x: getattr(nd, name)(0.3, x), [lhs])


@pytest.mark.parametrize("fn, low, high", [
    (lambda x: x + 2, -2, 2), (lambda x: 2 + x, -2, 2), (lambda x: x - 2, -2, 2),
    (lambda x: 2 - x, -2, 2), (lambda x: x * 3, -2, 2), (lambda x: 3 * x, -2, 2),
    (lambda x: x / 3, -2, 2), (lambda x: 3 / x, 0.5, 2), (lambda x: x % 1.5, 0.1, 1.4),
    (lambda x: 5 % x, 1.3, 1.6), (lambda x: x ** 3, -2, 2), (lambda x: x ** 0.5, 0.5, 2),
    (lambda x: x ** -1.5, 0.5, 2), (lambda x: 3 ** x, -2, 2), (lambda x: 0.5 ** x, -2, 2),
    (lambda x: nd.maximum(x, 0.3), -2, 2), (lambda x: nd.maximum(0.3, x), -2, 2),
    (lambda x: nd.minimum(x, 0.3), -2, 2), (lambda x: nd.minimum(0.3, x), -2, 2),
    (lambda x: -x, -2, 2), (lambda x: abs(x), 0.5, 2)])
def test_scalar_ops_and_python_operators(fn, low, high):
    check_numeric_gradient(fn, [uniform((3, 4), low, high)])


@pytest.mark.parametrize("fn", [lambda x, y: x * y, lambda x, y: x / y, lambda x, y: x - y,
                                lambda x, y: x + y, lambda x, y: x ** y, lambda x, y: x % y])
def test_python_operators_on_arrays(fn):
    check_numeric_gradient(fn, [uniform((2, 3), 1.1, 1.9, 1), uniform((3,), 0.5, 1.0, 2)])


def test_ties_give_lhs_the_gradient():
    x, y = nd.array([1.0, 2.0, 3.0]), nd.array([1.0, 1.0, 3.0])
    for name, want_x in (("maximum", [1, 1, 1]), ("minimum", [1, 0, 1])):
        x.attach_grad()
        y.attach_grad()
        with autograd.record():
            z = getattr(nd, name)(x, y)
        z.backward()
        assert_almost_equal(x.grad, np.array(want_x, np.float32))
        assert_almost_equal(y.grad, 1 - np.array(want_x, np.float32))


# -- sparse operands on their native paths ----------------------------------------------------

IDX = nd.array([3.0, 0.0, 3.0])  # take's gradient: a row_sparse gradient reaching the op


@pytest.mark.parametrize("density", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("fn, grad_stype, sparse_out", [
    (lambda x: x * 2, "default", True), (lambda x: 2 * x, "default", True),
    (lambda x: x / 4, "default", True), (lambda x: -x, "default", True),
    (lambda x: x ** 2, "row_sparse", True),  # 2 x is zero where x stores nothing
    (lambda x: x + 1, "default", False), (lambda x: 1 - x, "default", False),
    (lambda x: nd.maximum(x, -0.25), "default", False)])
def test_scalar_ops_on_row_sparse(fn, grad_stype, sparse_out, density):
    x = sparse((4, 3), "row_sparse", density)
    with dense_result(fn(nd.zeros((1,))).asnumpy()[0] != 0):  # f(0) != 0 fills every entry
        check_numeric_gradient(fn, [x], grad_stypes=[grad_stype])  # a dense head gradient
    if sparse_out:  # a row_sparse gradient reaching the op stays row_sparse
        check_numeric_gradient(lambda x, i: nd.take(fn(x), i), [x, IDX],
                               grad_stypes=["row_sparse", None])


@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_scalar_ops_on_sparse_dense_gradient(stype):
    x = sparse((4, 3), stype, 0.5)
    check_numeric_gradient(lambda x: x * 3, [x])
    check_numeric_gradient(lambda x: x ** 3, [x], grad_stypes=[stype])  # 3 x^2 keeps zeros


@pytest.mark.parametrize("name", ["broadcast_add", "broadcast_sub", "elemwise_add",
                                  "elemwise_sub", "broadcast_mul", "elemwise_mul"])
@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_sparse_sparse(name, stype):
    a, b = sparse((4, 3), stype, 0.5, 1), sparse((4, 3), stype, 0.5, 2)
    f = getattr(nd, name)
    # d(a * b)/da = b: zero where b stores nothing, so it keeps b's pattern
    st = stype if "mul" in name else "default"
    check_numeric_gradient(f, [a, b], grad_stypes=[st, st])
    if stype == "row_sparse":
        check_numeric_gradient(lambda a, b, i: nd.take(f(a, b), i), [a, b, IDX],
                               grad_stypes=["row_sparse", "row_sparse", None])


@pytest.mark.parametrize("name", ["maximum", "minimum"])
@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_sparse_maximum_minimum(name, stype):
    # lhs stores everything: no ties at zeros stored in neither operand
    a, b = sparse((4, 3), stype, 1.0, 1), sparse((4, 3), stype, 0.5, 2)
    # the lhs wins ties, so its derivative is dense; the rhs's keeps the union pattern
    check_numeric_gradient(getattr(nd, name), [a, b], grad_stypes=["default", stype])


@pytest.mark.parametrize("name, want", [("broadcast_mul", "csr"), ("broadcast_add", "default"),
                                        ("broadcast_sub", "default"),
                                        ("broadcast_maximum", "default"),
                                        ("broadcast_div", "csr")])
@pytest.mark.parametrize("rshape", [(4, 3), (1, 3), (3,)])
def test_csr_constant_with_dense(name, want, rshape):
    c, w = sparse((4, 3), "csr", 0.5), uniform(rshape, 0.5, 2)
    if name == "broadcast_div":  # csr / dense keeps csr: w's gradient -g * y / w is too
        check_numeric_gradient(getattr(nd, name), [c, w],
                               grad_stypes=[None, want if rshape == (4, 3) else "default"])
        return
    # w's gradient is g * csr for multiply (csr until broadcasting sums it)
    with dense_result(want == "default" and rshape != (4, 3)):
        check_numeric_gradient(getattr(nd, name), [c, w],
                               grad_stypes=[None, want if rshape == (4, 3) else "default"])
    with dense_result(want == "default" and rshape != (4, 3)):
        check_numeric_gradient(getattr(nd, name), [w, c],
                               grad_stypes=[want if rshape == (4, 3) else "default", None])


@pytest.mark.parametrize("name", ["broadcast_mul", "broadcast_add", "broadcast_div",
                                  "broadcast_power", "broadcast_minimum"])
def test_row_sparse_with_dense_both_differentiable(name):
    x, w = sparse((4, 3), "row_sparse", 0.5), uniform((1, 3), 0.5, 2)
    if name == "broadcast_power":  # positive base, dense output: the rsp enters densified
        x = nd.array(np.abs(x.asnumpy()) + 0.5).tostype("row_sparse")
    # a dense head gradient: rsp * dense gives x the dense g * w, w a reduced g * x
    with dense_result(name in ("broadcast_add", "broadcast_power", "broadcast_minimum")):
        check_numeric_gradient(getattr(nd, name), [x, w])


# -- second derivatives ---------------------------------------------------------------------

def test_second_derivative_through_broadcast():
    rng = np.random.default_rng(3)
    x, b = nd.array(rng.normal(size=(3, 4))), nd.array(rng.normal(size=(1, 4)))
    h, o = rng.normal(size=(3, 4)), rng.normal(size=(1, 4))
    x.attach_grad()
    b.attach_grad()
    with autograd.record():
        z = x * b
        gb = autograd.grad(z, [b], head_grads=nd.array(h), create_graph=True)[0]
    assert_almost_equal(gb, np.sum(h * x.asnumpy(), axis=0, keepdims=True))
    gb.backward(nd.array(o))
    assert_almost_equal(x.grad, h * o)


@pytest.mark.parametrize("fn, d2", [
    (lambda x: x ** 3, lambda x: 6 * x), (lambda x: 2 ** x, lambda x: np.log(2) ** 2 * 2 ** x),
    (lambda x: 1 / x, lambda x: 2 / x ** 3), (lambda x: x * x, lambda x: 2 + 0 * x)])
def test_second_derivatives(fn, d2):
    xv = np.array([0.5, 1.2, 1.7])
    x = nd.array(xv)
    x.attach_grad()
    with autograd.record():
        dy = autograd.grad(fn(x), [x], create_graph=True)[0]
    dy.backward()
    assert_almost_equal(x.grad, d2(xv), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("vshape", [(1, 3), (3,), (4, 1)])
@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
@pytest.mark.parametrize("name", ["broadcast_mul", "broadcast_div"])
def test_sparse_scaled_by_a_vector_both_differentiable(name, stype, vshape):
    """Both operands' gradients against central differences: a csr leaf's w.r.t. its
    stored values (its pattern), a row_sparse one's over its dense equivalent; the
    vector's summed over the broadcast axes, dense."""
    x, v = sparse((4, 3), stype, 0.5), uniform(vshape, 0.5, 2)
    # (a dense head: the row_sparse operand's gradient g * d(x op v)/dx comes out dense)
    check_numeric_gradient(getattr(nd, name), [x, v],
                           grad_stypes=["csr" if stype == "csr" else "default", "default"])
