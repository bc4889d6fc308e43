"""Initializers: each rule against its definition, name routing, reproducibility."""
import numpy as np
import pytest

import nets
from nets import init, nd


@pytest.mark.parametrize("initializer, check", [
    (init.Zero(), lambda v: np.all(v == 0)),
    (init.One(), lambda v: np.all(v == 1)),
    (init.Constant(2.5), lambda v: np.all(v == 2.5)),
    (init.Uniform(0.5), lambda v: v.min() >= -0.5 and v.max() <= 0.5 and v.std() > 0.2),
    (init.Normal(2.0), lambda v: abs(v.std() - 2.0) < 0.1 and abs(v.mean()) < 0.1),
])
def test_weight_rules(initializer, check):
    arr = nd.zeros((100, 50))
    initializer("fc_weight", arr)
    assert check(arr.asnumpy())


def test_xavier_scale_follows_fans():
    arr = nd.zeros((300, 200))
    init.Xavier(factor_type="in", magnitude=3)("w", arr)
    bound = np.sqrt(3 / 200)
    v = arr.asnumpy()
    assert v.max() <= bound and v.min() >= -bound and v.max() > 0.9 * bound
    g = nd.zeros((300, 200))
    init.Xavier(rnd_type="gaussian", factor_type="out", magnitude=2)("w", g)
    assert abs(g.asnumpy().std() - np.sqrt(2 / 300)) < 0.005


def test_bias_and_gamma_routing():
    b, gamma = nd.ones((5,)), nd.zeros((5,))
    init.Uniform()("dense0_bias", b)
    init.Uniform()("bn_gamma", gamma)
    assert np.all(b.asnumpy() == 0) and np.all(gamma.asnumpy() == 1)


def test_fills_row_sparse_arrays_keeping_stype():
    w = nd.sparse.zeros("row_sparse", (6, 3))
    init.One()("emb_weight", w)
    assert w.stype == "row_sparse" and np.all(w.asnumpy() == 1)


def test_reproducible_after_seed():
    a, b = nd.zeros((4, 4)), nd.zeros((4, 4))
    nets.random.seed(7)
    init.Uniform()("w", a)
    nets.random.seed(7)
    init.Uniform()("w", b)
    assert np.array_equal(a.asnumpy(), b.asnumpy())


def test_create_by_name_and_errors():
    assert isinstance(init.create("zeros"), init.Zero)
    assert isinstance(init.create("ones"), init.One)
    assert init.create("xavier", magnitude=2).magnitude == 2
    with pytest.raises(nets.NetsError, match="'nope'"):
        init.create("nope")
    with pytest.raises(nets.NetsError, match="rnd_type"):
        init.Xavier(rnd_type="bad")
    with pytest.raises(nets.NetsError, match="at least 2 dimensions"):
        init.Xavier()("w", nd.zeros((3,)))
