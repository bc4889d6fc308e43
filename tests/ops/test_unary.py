"""Unary elementwise operators vs numpy: values, output stype and fallback warnings."""
import math

import numpy as np
import pytest
import scipy.special

import nets
from nets import nd
from nets.base import NetsError
from nets.test_utils import DENSITIES, assert_almost_equal, rand_ndarray
from tests.ops.conftest import dense_result

DTYPES = (np.float32, np.float64)
SHAPE = (5, 4)


def _round_half_away(x):
    return np.copysign(np.floor(np.abs(x.astype(np.float64)) + 0.5), x)


# The oracle, written independently of nets.ops.unary.
ORACLE = {
    "negative": np.negative, "reciprocal": np.reciprocal, "abs": np.abs, "sign": np.sign,
    "round": _round_half_away, "rint": np.rint, "ceil": np.ceil, "floor": np.floor,
    "trunc": np.trunc, "fix": np.fix, "square": np.square, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "cbrt": np.cbrt, "rcbrt": lambda x: 1 / np.cbrt(x),
    "exp": np.exp, "expm1": np.expm1, "log": np.log, "log10": np.log10, "log2": np.log2,
    "log1p": np.log1p, "relu": lambda x: np.where(x < 0, 0, x), "sigmoid": scipy.special.expit,
    "tanh": np.tanh, "softsign": lambda x: x / (1 + np.abs(x)), "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "arcsin": np.arcsin, "arccos": np.arccos, "arctan": np.arctan,
    "sinh": np.sinh, "cosh": np.cosh, "arcsinh": np.arcsinh, "arccosh": np.arccosh,
    "arctanh": np.arctanh, "degrees": np.degrees, "radians": np.radians,
    "erf": np.vectorize(math.erf, otypes=[np.float64]), "erfinv": scipy.special.erfinv,
    "logical_not": lambda x: np.where(x == 0, 1, 0),
}
# f(0) != 0 but finite: dense output, native (no warning)
FILL = {"exp", "sigmoid", "cos", "cosh", "arccos", "logical_not"}
# f(0) not finite: dense fallback with a warning (MXNet's tutorial: nd.log(rsp) falls back)
FALLBACK = {"reciprocal", "rsqrt", "rcbrt", "log", "log10", "log2", "arccosh"}
CASES = [("default", 0.5)] + [(st, d) for st in ("csr", "row_sparse") for d in DENSITIES]
SPECIALS = [-np.inf, -2.0, -1.0, -0.5, -1e-30, 0.5, 1.0, 1.5, 2.5, np.inf, np.nan]


@pytest.fixture(autouse=True)
def _seed():
    nets.random.seed(11)


def expected_storage(name, stype):
    if stype == "default" or name in FILL:
        return "default", False
    return ("default", True) if name in FALLBACK else (stype, False)


def oracle(name, x):
    with np.errstate(all="ignore"):
        return np.asarray(ORACLE[name](x)).astype(x.dtype)


def check(out, want, stype):
    assert out.stype == stype and out.dtype == want.dtype
    assert_almost_equal(out, want, equal_nan=True)
    if stype != "default":
        out.check_format(full_check=True)


def call(fn, falls_back, *args, **kwargs):
    if falls_back:
        with pytest.warns(nets.StorageFallbackWarning, match=fn.__name__):
            return fn(*args, **kwargs)
    return fn(*args, **kwargs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("stype, density", CASES)
@pytest.mark.parametrize("name", ORACLE)
def test_unary_table(name, stype, density, dtype):
    shift = (lambda v: 1.0 + abs(v)) if name == "arccosh" else None  # arccosh: nan below 1
    x = rand_ndarray(SHAPE, stype, density, dtype, modifier_func=shift)
    before = x.asnumpy()
    out_stype, falls_back = expected_storage(name, stype)
    with dense_result(out_stype != stype and not falls_back):
        out = call(getattr(nd, name), falls_back, x)
    check(out, oracle(name, before), out_stype)
    assert np.array_equal(x.asnumpy(), before)  # the input is untouched


@pytest.mark.parametrize("stype", ["default", "csr"])
@pytest.mark.parametrize("name", ORACLE)
def test_special_values_match_numpy(name, stype):
    values = np.array([SPECIALS, SPECIALS[::-1]], dtype=np.float64)
    x = nd.array(values, dtype=values.dtype).tostype(stype)  # stored specials (no zeros among them)
    out_stype, falls_back = expected_storage(name, stype)
    with dense_result(out_stype != stype and not falls_back):
        out = call(getattr(nd, name), falls_back, x)
    check(out, oracle(name, values), out_stype)


def test_round_halves_away_from_zero():
    x = nd.array([-2.5, -1.5, -0.5, 0.49999997, 0.5, 1.5, 2.5])
    assert nd.round(x).asnumpy().tolist() == [-3, -2, -1, 0, 1, 2, 3]
    assert nd.rint(x).asnumpy().tolist() == [-2, -2, -0, 0, 0, 2, 2]


def test_log_of_row_sparse_falls_back_like_mxnet_tutorial():
    x = nd.sparse.row_sparse_array(([[1.0, 2.0]], [1]), shape=(3, 2))
    with pytest.warns(nets.StorageFallbackWarning, match="log.*row_sparse"):
        out = nd.log(x)
    assert out.stype == "default"
    with np.errstate(divide="ignore"):
        assert_almost_equal(out, np.log(x.asnumpy()))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("stype", ["default", "csr", "row_sparse"])
@pytest.mark.parametrize("a_min, a_max", [(0, 1), (-0.5, 0.5), (-0.25, 0), (0.1, 0.5),
                                          (-0.5, -0.1)])
def test_clip(a_min, a_max, stype, dtype):
    x = rand_ndarray(SHAPE, stype, 0.5, dtype)
    want = np.clip(x.asnumpy(), dtype(a_min), dtype(a_max))
    out_stype = stype if a_min <= 0 <= a_max else "default"
    with dense_result(out_stype != stype):
        outs = (nd.clip(x, a_min, a_max), nd.clip(x, a_min=a_min, a_max=a_max),
                x.clip(a_min, a_max))
    for out in outs:
        check(out, want, out_stype)


def test_clip_arguments():
    x = rand_ndarray(SHAPE)
    with pytest.raises(NetsError, match="a_min=1.*a_max=0"):
        nd.clip(x, 1, 0)
    with pytest.raises(TypeError, match="a_max"):
        nd.clip(x, 0)


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_zero_preserving_output_shares_pattern(stype):
    x = rand_ndarray(SHAPE, stype, 0.5)
    out = nd.sqrt(nd.abs(x))
    assert out.stype == stype
    assert np.array_equal(out.indices.asnumpy(), x.indices.asnumpy())


def test_fluent_methods_and_operators():
    x = rand_ndarray(SHAPE, "csr", 0.5, np.float64)
    xn = x.asnumpy()
    assert_almost_equal(x.square().sqrt(), np.abs(xn))
    assert_almost_equal(x.relu(), np.maximum(xn, 0))
    assert_almost_equal(-x, -xn)
    assert_almost_equal(abs(x), np.abs(xn))
    with dense_result(True):
        assert (-x).stype == "csr" and x.sigmoid().stype == "default"


def test_docs_state_storage_rules():
    for name in list(ORACLE) + ["clip"]:
        assert "Storage:" in getattr(nd, name).__doc__
    assert "not finite" in nd.log.__doc__ and "f(0) = 1" in nd.exp.__doc__
