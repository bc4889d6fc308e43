"""Gradients of the unary operators: autograd against float64 central differences on dense
and sparse inputs, the storage type of the gradient, and second derivatives."""
import numpy as np
import pytest

from nets import autograd, nd
from nets.test_utils import assert_almost_equal, check_numeric_gradient, rand_ndarray
from tests.ops.conftest import dense_result

# inputs inside each op's domain, away from kinks, poles and (for the rounding ops) jumps
DOMAIN = {
    "negative": (-2, 2), "reciprocal": (0.5, 2), "abs": (0.2, 2), "sign": (0.2, 2),
    "round": (0.1, 0.4), "rint": (1.1, 1.4), "ceil": (0.1, 0.9), "floor": (1.1, 1.9),
    "trunc": (-1.9, -1.1), "fix": (1.1, 1.9), "square": (-2, 2), "sqrt": (0.5, 2),
    "rsqrt": (0.5, 2), "cbrt": (0.5, 2), "rcbrt": (-2, -0.5), "exp": (-2, 2),
    "expm1": (-2, 2), "log": (0.5, 2), "log10": (0.5, 2), "log2": (0.5, 2),
    "log1p": (-0.5, 2), "relu": (0.2, 2), "sigmoid": (-2, 2), "tanh": (-2, 2),
    "softsign": (-2, 2), "sin": (-2, 2), "cos": (-2, 2), "tan": (-1.2, 1.2),
    "arcsin": (-0.8, 0.8), "arccos": (-0.8, 0.8), "arctan": (-2, 2), "sinh": (-2, 2),
    "cosh": (-2, 2), "arcsinh": (-2, 2), "arccosh": (1.2, 3), "arctanh": (-0.8, 0.8),
    "degrees": (-2, 2), "radians": (-2, 2), "erf": (-2, 2), "erfinv": (-0.8, 0.8),
    "logical_not": (0.2, 2), "gamma": (0.5, 3), "gammaln": (0.5, 3),
}
ZERO_GRAD = {"sign", "round", "rint", "ceil", "floor", "trunc", "fix", "logical_not"}
# f(0) == 0, so a sparse input keeps its storage type, and f' is finite at 0
KEEP = {"negative", "abs", "sign", "round", "rint", "ceil", "floor", "trunc", "fix", "square",
        "expm1", "log1p", "relu", "tanh", "softsign", "sin", "tan", "arcsin", "arctan", "sinh",
        "arcsinh", "arctanh", "degrees", "radians", "erf", "erfinv"}
# ... of which f'(0) == 0 too: the gradient keeps the input's pattern
PATTERN = ZERO_GRAD | {"abs", "square", "relu"}
# f(0) == 0 but a kink or a jump at 0: the head gradient must vanish where x stores nothing
AT_ZERO_KINK = {"abs", "relu", "sign", "ceil", "floor"}
# f(0) finite, not 0: dense output
FILL = {"exp", "sigmoid", "cos", "cosh", "arccos", "logical_not"}


def uniform(shape, name, seed=0):
    low, high = DOMAIN[name]
    x = np.random.default_rng(seed).uniform(low, high, shape)
    if name in ("sign", "abs", "relu", "round"):
        x *= np.where(np.arange(x.size).reshape(shape) % 2, 1, -1)  # both sides of the kink
    return nd.array(x)


def sparse(name, stype, density):
    """A sparse array of DOMAIN[name] values (magnitudes clipped to the domain)."""
    low, high = DOMAIN[name]
    mask = rand_ndarray((4, 3), stype, density=density, dtype=np.float64).asnumpy() != 0
    return nd.array(np.where(mask, uniform((4, 3), name, 1).asnumpy(), 0)).tostype(stype)


def head_grad(x, name):
    """A random head gradient, zero where ``x`` stores nothing when ``f`` has a kink there."""
    g = np.random.default_rng(2).normal(size=x.shape)
    return g * (x.asnumpy() != 0) if name in AT_ZERO_KINK else g


def test_tables_cover_every_unary_op():
    from nets.ops import unary
    assert set(DOMAIN) == {row[0] for row in unary._UNARY}


@pytest.mark.parametrize("name", sorted(DOMAIN))
@pytest.mark.parametrize("shape", [(3, 4), (2, 1, 3)])
def test_dense(name, shape):
    check_numeric_gradient(getattr(nd, name), [uniform(shape, name)])


@pytest.mark.parametrize("name", sorted(KEEP | FILL))
@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
@pytest.mark.parametrize("density", [0.0, 0.5, 1.0])
def test_sparse(name, stype, density):
    x = sparse(name, stype, density)
    want = stype if name in PATTERN else "default"
    with dense_result(name in FILL):
        check_numeric_gradient(getattr(nd, name), [x], grad_stypes=[want],
                               out_grad=head_grad(x, name))


@pytest.mark.parametrize("name", sorted(KEEP))
def test_row_sparse_head_gradient_stays_row_sparse(name):
    # take(row_sparse, ids) sends a row_sparse gradient into the op
    x, ids = sparse(name, "row_sparse", 0.5), nd.array([3.0, 0.0, 3.0])
    check_numeric_gradient(lambda x, i: nd.take(getattr(nd, name)(x), i), [x, ids],
                           grad_stypes=["row_sparse", None],
                           out_grad=head_grad(nd.take(x, ids), name))


@pytest.mark.parametrize("a_min, a_max", [(-0.5, 0.5), (0.0, 1.0), (-1.0, -0.2), (0.3, 3.0)])
def test_clip(a_min, a_max):
    x = nd.array(np.random.default_rng(0).uniform(-2, 2, (4, 5)))
    x = nd.array(np.where(np.isclose(x.asnumpy(), a_min, atol=1e-2)
                          | np.isclose(x.asnumpy(), a_max, atol=1e-2), 1.5, x.asnumpy()))
    check_numeric_gradient(lambda x: nd.clip(x, a_min, a_max), [x])


@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_clip_sparse(stype):
    x = sparse("sin", stype, 0.5)  # values in (-2, 2), none near the bounds
    # 0 lies inside the bounds: the gradient passes where x stores nothing
    check_numeric_gradient(lambda x: nd.clip(x, -0.5, 0.5), [x])
    # 0 is a bound: the gradient is g there (MXNet passes it at the bounds)
    xs = nd.array(x.asnumpy() ** 2).tostype(stype)
    want = (xs.asnumpy() <= 1.0).astype(np.float64)
    xs.attach_grad(stype="default")
    with autograd.record():
        y = nd.clip(xs, 0.0, 1.0)
    y.backward()
    assert_almost_equal(xs.grad, want)
    xs.attach_grad()  # its own stype: a csr leaf's gradient is w.r.t. its stored values
    with autograd.record():
        y = nd.clip(xs, 0.0, 1.0)
    y.backward()
    assert xs.grad.stype == stype
    assert_almost_equal(xs.grad, want * (xs.asnumpy() != 0) if stype == "csr" else want)


@pytest.mark.parametrize("name, d2", [
    ("exp", np.exp), ("tanh", lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2)),
    ("sigmoid", lambda x: (s := 1 / (1 + np.exp(-x))) * (1 - s) * (1 - 2 * s)),
    ("sqrt", lambda x: -0.25 * x ** -1.5), ("sin", lambda x: -np.sin(x)),
    ("log", lambda x: -1 / x ** 2), ("reciprocal", lambda x: 2 / x ** 3),
    ("arctan", lambda x: -2 * x / (1 + x * x) ** 2)])
def test_second_derivatives(name, d2):
    # derivatives written with the output y still lead back to x under create_graph
    xv = np.array([0.6, 1.1, 1.7])
    x = nd.array(xv)
    x.attach_grad()
    with autograd.record():
        dy = autograd.grad(getattr(nd, name)(x), [x], create_graph=True)[0]
    dy.backward()
    assert_almost_equal(x.grad, d2(xv), rtol=1e-5, atol=1e-6)
