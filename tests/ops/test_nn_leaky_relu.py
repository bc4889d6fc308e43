"""LeakyReLU (leaky, elu, selu, gelu, prelu) vs a numpy oracle: values, output stype over
stypes x dtypes x densities, fallback for sparse prelu, and numeric gradients."""
import math

import numpy as np
import pytest

import nets
from nets import autograd, nd
from nets.base import NetsError, ShapeError
from nets.test_utils import (DENSITIES, assert_almost_equal, check_numeric_gradient,
                             rand_ndarray)

SELU_ALPHA, SELU_LAMBDA = 1.6732632423543772, 1.0507009873554805
ERF = np.vectorize(math.erf, otypes=[np.float64])
# The oracle, written from MXNet's formulas (leaky_relu-inl.h; gelu in its erf form).
ORACLE = {
    "leaky": lambda x, s: np.where(x > 0, x, s * x),
    "elu": lambda x, s: np.where(x > 0, x, s * (np.exp(np.minimum(x, 0)) - 1)),
    "selu": lambda x, s: SELU_LAMBDA * np.where(x > 0, x, SELU_ALPHA * (np.exp(np.minimum(x, 0))
                                                                        - 1)),
    "gelu": lambda x, s: 0.5 * x * (1 + ERF(x / np.sqrt(2))),
}
CASES = [("default", 0.5)] + [(st, d) for st in ("csr", "row_sparse") for d in DENSITIES]


@pytest.fixture(autouse=True)
def _seed():
    nets.random.seed(5)


@pytest.mark.parametrize("dtype", (np.float32, np.float64))
@pytest.mark.parametrize("stype, density", CASES)
@pytest.mark.parametrize("act_type", sorted(ORACLE))
def test_values_and_storage(act_type, stype, density, dtype):
    x = rand_ndarray((6, 4), stype, density, dtype)
    before = x.asnumpy()
    out = nd.LeakyReLU(x, act_type=act_type, slope=0.3)
    assert out.stype == stype and out.dtype == dtype
    want = ORACLE[act_type](before.astype(np.float64), 0.3).astype(dtype)
    assert_almost_equal(out, want, rtol=1e-5, atol=1e-6)
    if stype != "default":
        out.check_format(full_check=True)
    assert np.array_equal(x.asnumpy(), before)


def prelu_oracle(x, gamma):
    g = gamma.reshape((1, -1) + (1,) * (x.ndim - 2)) if gamma.size > 1 else gamma
    return np.where(x > 0, x, g * x)


@pytest.mark.parametrize("dtype", (np.float32, np.float64))
@pytest.mark.parametrize("shape, gshape", [((5, 3), (3,)), ((2, 3, 4), (3,)), ((5, 3), (1,))])
def test_prelu_values(shape, gshape, dtype):
    x = rand_ndarray(shape, "default", dtype=dtype)
    gamma = nd.array(np.random.default_rng(0).uniform(0.1, 0.5, gshape), dtype=dtype)
    out = nd.LeakyReLU(x, gamma, act_type="prelu")
    assert out.dtype == dtype
    assert_almost_equal(out, prelu_oracle(x.asnumpy(), gamma.asnumpy()))


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_sparse_prelu_falls_back(stype):
    x = rand_ndarray((5, 3), stype, 0.5, np.float64)
    gamma = nd.array([0.1, 0.2, 0.3], dtype=np.float64)
    with pytest.warns(nets.StorageFallbackWarning, match="LeakyReLU"):
        out = nd.LeakyReLU(x, gamma, act_type="prelu")
    assert out.stype == "default"
    assert_almost_equal(out, prelu_oracle(x.asnumpy(), gamma.asnumpy()))


def test_arguments():
    x = nd.ones((2, 3))
    with pytest.raises(NetsError, match="rrelu"):
        nd.LeakyReLU(x, act_type="rrelu")
    with pytest.raises(NetsError, match="gamma"):
        nd.LeakyReLU(x, act_type="prelu")
    # gamma belongs to prelu; the other act_types ignore it
    assert nd.LeakyReLU(-x, nd.ones((3,)), act_type="leaky", slope=0.5).asnumpy().tolist() \
        == [[-0.5] * 3] * 2
    sym = nets.sym.LeakyReLU(nets.sym.var("x"), nets.sym.var("g"), act_type="prelu")
    args, outs, _ = sym.infer_shape(x=(4, 3, 2))
    assert args == [(4, 3, 2), (3,)] and outs == [(4, 3, 2)]
    with pytest.raises(ShapeError, match="gamma"):
        sym.infer_shape(x=(4, 3), g=(2,))


def away_from_kink(shape, seed=0):
    x = np.random.default_rng(seed).uniform(0.2, 2, shape)
    return x * np.where(np.arange(x.size).reshape(shape) % 2, 1, -1)


@pytest.mark.parametrize("act_type", sorted(ORACLE))
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 2)])
def test_numeric_gradient_dense(act_type, shape):
    check_numeric_gradient(lambda x: nd.LeakyReLU(x, act_type=act_type, slope=0.2),
                           [nd.array(away_from_kink(shape))])


@pytest.mark.parametrize("gshape", [(3,), (1,)])
def test_numeric_gradient_prelu(gshape):
    x = nd.array(away_from_kink((4, 3, 2)))
    gamma = nd.array(np.random.default_rng(1).uniform(0.1, 0.5, gshape))
    check_numeric_gradient(lambda x, g: nd.LeakyReLU(x, g, act_type="prelu"), [x, gamma])


@pytest.mark.parametrize("act_type", sorted(ORACLE))
@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_numeric_gradient_sparse(act_type, stype):
    mask = rand_ndarray((4, 3), stype, 0.5, np.float64).asnumpy() != 0
    x = nd.array(np.where(mask, away_from_kink((4, 3)), 0), dtype=np.float64).tostype(stype)
    # a dense head gradient gives a dense gradient (f'(0) is not 0); it vanishes where x
    # stores nothing, since leaky, elu and selu have a kink at 0
    g = np.random.default_rng(2).normal(size=x.shape) * mask
    check_numeric_gradient(lambda x: nd.LeakyReLU(x, act_type=act_type), [x],
                           grad_stypes=["default"], out_grad=g)
    x.attach_grad(stype=stype)
    with autograd.record():
        y = nd.LeakyReLU(x, act_type=act_type)
    assert y.stype == stype
    y.backward(y.copy())  # g = y: stored where x stores
    xv = x.asnumpy()
    eps = 1e-6
    d = (ORACLE[act_type](xv + eps, 0.25) - ORACLE[act_type](xv - eps, 0.25)) / (2 * eps)
    assert x.grad.stype == stype
    assert_almost_equal(x.grad, y.asnumpy() * d * mask, rtol=1e-5, atol=1e-7)
