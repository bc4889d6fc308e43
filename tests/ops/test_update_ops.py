"""The update operators (``nd.sgd_update``, ``nd.adam_update``, ...) against plain-numpy
references of MXNet's documented rules: dense and row_sparse gradients (lazy and not),
dense and row_sparse weights and states, float32 and float64, ``wd``, ``rescale_grad``,
``clip_gradient``, states updated in place, ``out=`` semantics, the argument checks, and
the same numbers as the optimizer of the same rule."""
import numpy as np
import pytest

import nets
from nets import nd, sym
from nets.base import DTypeError, NetsError, ShapeError, StorageTypeError

ROWS, COLS = 7, 3
TOUCHED = np.array([1, 4, 5])  # the row_sparse gradient's rows


def _clip(x, c):
    return x if c is None or c < 0 else np.clip(x, -c, c)


def _sign(x):
    return np.sign(x)


# -- the references: MXNet's documented rules, on dense numpy rows -----------------------------
# ``ref(w, g, states, a) -> (w, states)`` with ``a`` the attributes (defaults filled in)

def ref_sgd(w, g, s, a):
    return w - a["lr"] * (_clip(a["rescale_grad"] * g, a["clip_gradient"]) + a["wd"] * w), []


def ref_sgd_mom(w, g, s, a):
    mom = a["momentum"] * s[0] - a["lr"] * (_clip(a["rescale_grad"] * g, a["clip_gradient"])
                                           + a["wd"] * w)
    return w + mom, [mom]


def ref_adam(w, g, s, a):
    x = _clip(a["rescale_grad"] * g + a["wd"] * w, a["clip_gradient"])
    mean = a["beta1"] * s[0] + (1 - a["beta1"]) * x
    var = a["beta2"] * s[1] + (1 - a["beta2"]) * x * x
    return w - a["lr"] * mean / (np.sqrt(var) + a["epsilon"]), [mean, var]


def ref_adagrad(w, g, s, a):
    x = _clip(a["rescale_grad"] * g, a["clip_gradient"])
    h = s[0] + x * x
    return w - a["lr"] * (x / np.sqrt(h + a["epsilon"]) + a["wd"] * w), [h]


def ref_ftrl(w, g, s, a):
    lr, l1 = a["lr"], a["lamda1"]
    x = _clip(a["rescale_grad"] * g, a["clip_gradient"])
    z = s[0] + x - (np.sqrt(s[1] + x * x) - np.sqrt(s[1])) * w / lr
    n = s[1] + x * x
    w = np.where(np.abs(z) > l1, (np.sign(z) * l1 - z) / ((a["beta"] + np.sqrt(n)) / lr + a["wd"]),
                 0)
    return w, [z, n]


def ref_signsgd(w, g, s, a):
    x = _clip(a["rescale_grad"] * g, a["clip_gradient"])
    return (1 - a["lr"] * a["wd"]) * w - a["lr"] * _sign(x), []


def ref_signum(w, g, s, a):
    m = a["momentum"]
    mom = m * s[0] - (1 - m) * a["wd"] * w - (1 - m) * _clip(a["rescale_grad"] * g,
                                                          a["clip_gradient"])
    return (1 - a["lr"] * a["wd_lh"]) * w + a["lr"] * _sign(mom), [mom]


def ref_rmsprop(w, g, s, a):
    x = _clip(a["rescale_grad"] * g + a["wd"] * w, a["clip_gradient"])
    n = (1 - a["gamma1"]) * x * x + a["gamma1"] * s[0]
    return _clip(w - a["lr"] * x / np.sqrt(n + a["epsilon"]), a["clip_weights"]), [n]


def ref_rmspropalex(w, g, s, a):
    x = _clip(a["rescale_grad"] * g + a["wd"] * w, a["clip_gradient"])
    n = (1 - a["gamma1"]) * x * x + a["gamma1"] * s[0]
    gm = (1 - a["gamma1"]) * x + a["gamma1"] * s[1]
    delta = a["gamma2"] * s[2] - a["lr"] * x / np.sqrt(n - gm * gm + a["epsilon"])
    return _clip(w + delta, a["clip_weights"]), [n, gm, delta]


def ref_group_adagrad(w, g, s, a):
    x = _clip(a["rescale_grad"] * g, a["clip_gradient"])
    h = s[0] + np.mean(x * x, axis=1, keepdims=True)
    return w - a["lr"] * x / np.sqrt(h + a["epsilon"]), [h]


# name: (operator, reference, states (name, kind), attributes, lazy: "attr"/True/False)
# kinds: "any" (any sign), "pos" (>= 0), "row" (one value per row, >= 0)
CASES = {
    "sgd_update": (nd.sgd_update, ref_sgd, [], {"lr": 0.1, "wd": 0.01}, "attr"),
    "sgd_mom_update": (nd.sgd_mom_update, ref_sgd_mom, [("mom", "any")],
                       {"lr": 0.1, "momentum": 0.9, "wd": 0.01}, "attr"),
    "adam_update": (nd.adam_update, ref_adam, [("mean", "any"), ("var", "pos")],
                    {"lr": 0.05, "beta1": 0.8, "beta2": 0.95, "epsilon": 1e-6, "wd": 0.01},
                    "attr"),
    "adagrad_update": (nd.sparse.adagrad_update, ref_adagrad, [("history", "pos")],
                       {"lr": 0.1, "epsilon": 1e-6, "wd": 0.01}, True),
    "ftrl_update": (nd.ftrl_update, ref_ftrl, [("z", "any"), ("n", "pos")],
                    {"lr": 0.1, "lamda1": 0.01, "beta": 1.0, "wd": 0.01}, True),
    "signsgd_update": (nd.signsgd_update, ref_signsgd, [], {"lr": 0.1, "wd": 0.01}, False),
    "signum_update": (nd.signum_update, ref_signum, [("mom", "any")],
                      {"lr": 0.1, "momentum": 0.9, "wd": 0.01, "wd_lh": 0.02}, False),
    "rmsprop_update": (nd.rmsprop_update, ref_rmsprop, [("n", "pos")],
                       {"lr": 0.05, "gamma1": 0.9, "epsilon": 1e-6, "wd": 0.01,
                        "clip_weights": 1.5}, False),
    "rmspropalex_update": (nd.rmspropalex_update, ref_rmspropalex,
                           [("n", "big"), ("g", "small"), ("delta", "any")],
                           {"lr": 0.05, "gamma1": 0.9, "gamma2": 0.8, "epsilon": 1e-6,
                            "wd": 0.01}, False),
    "group_adagrad_update": (nd.contrib.group_adagrad_update, ref_group_adagrad,
                             [("history", "row")], {"lr": 0.1, "epsilon": 1e-5}, True),
}
NAMES = sorted(CASES)
DTYPES = ["float32", "float64"]


def _full_attrs(op, attrs):
    full = {k: v for k, v in op.attrs.items()}
    full.update(attrs)
    return full


def _operands(name, dtype, seed=0, grad_stype="default", weight_stype="default",
              state_stype="default", rows=TOUCHED):
    """``(weight, grad, states)`` as nets arrays and their numpy values."""
    rng = np.random.default_rng(seed)
    _, _, states, _, _ = CASES[name]
    w = rng.normal(size=(ROWS, COLS)).astype(dtype)
    g = rng.normal(size=(ROWS, COLS)).astype(dtype)
    if grad_stype == "row_sparse":
        keep = np.zeros(ROWS, bool)
        keep[rows] = True
        g[~keep] = 0
    s = []
    for _, kind in states:
        if kind == "row":
            s.append(rng.uniform(0.1, 1.0, size=(ROWS, 1)).astype(dtype))
        elif kind == "pos":
            s.append(rng.uniform(0.1, 1.0, size=(ROWS, COLS)).astype(dtype))
        elif kind == "big":
            s.append(rng.uniform(1.0, 2.0, size=(ROWS, COLS)).astype(dtype))
        elif kind == "small":
            s.append(rng.uniform(-0.3, 0.3, size=(ROWS, COLS)).astype(dtype))
        else:
            s.append(rng.normal(size=(ROWS, COLS)).astype(dtype))
    W = nd.array(w, dtype=dtype).tostype(weight_stype)
    G = nd.array(g, dtype=dtype)
    if grad_stype == "row_sparse":
        G = nd.sparse.row_sparse_array((g[rows], rows), shape=(ROWS, COLS), dtype=dtype)
    S = [nd.array(x, dtype=dtype).tostype(state_stype) for x in s]
    return (W, G, S), (w, g, s)


def _tol(dtype):
    return dict(rtol=2e-5, atol=2e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-13)


def _expected(name, w, g, s, attrs, rows=None):
    """The reference on every row, or only on ``rows`` (the others as given)."""
    op, ref, _, _, _ = CASES[name]
    a = _full_attrs(op, attrs)
    w64, g64, s64 = w.astype(np.float64), g.astype(np.float64), [x.astype(np.float64) for x in s]
    if rows is None:
        return ref(w64, g64, s64, a)
    new_w, new_s = ref(w64[rows], g64[rows], [x[rows] for x in s64], a)
    out_w, out_s = w64.copy(), [x.copy() for x in s64]
    out_w[rows] = new_w
    for x, y in zip(out_s, new_s):
        x[rows] = y
    return out_w, out_s


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", NAMES)
def test_dense_update_follows_the_rule(name, dtype):
    op, _, _, attrs, _ = CASES[name]
    (W, G, S), (w, g, s) = _operands(name, dtype)
    out = op(W, G, *S, out=W, **attrs)
    assert out is W and W.dtype == np.dtype(dtype)
    want_w, want_s = _expected(name, w, g, s, attrs)
    np.testing.assert_allclose(W.asnumpy(), want_w, **_tol(dtype))
    for got, want in zip(S, want_s):  # the states, in place
        np.testing.assert_allclose(got.asnumpy(), want, **_tol(dtype))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("rescale, clip", [(0.5, None), (2.0, 0.3), (1.0, 0.0), (1.0, -1.0)])
def test_rescale_and_clip(name, rescale, clip):
    op, _, _, attrs, _ = CASES[name]
    attrs = dict(attrs, rescale_grad=rescale, clip_gradient=clip)
    (W, G, S), (w, g, s) = _operands(name, "float64", seed=1)
    op(W, G, *S, out=W, **attrs)
    want_w, want_s = _expected(name, w, g, s, attrs)
    np.testing.assert_allclose(W.asnumpy(), want_w, **_tol("float64"))
    for got, want in zip(S, want_s):
        np.testing.assert_allclose(got.asnumpy(), want, **_tol("float64"))


def _lazy_by_default(name):
    return CASES[name][4] in ("attr", True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("storage", ["default", "row_sparse"])
@pytest.mark.parametrize("name", NAMES)
def test_row_sparse_gradient(name, storage, dtype):
    """A lazy update (the default where MXNet's is) touches only the gradient's rows of the
    weight and of every state: the others keep their bits; a standard one is the dense rule
    with the absent rows' gradient 0. Weight and states dense or row_sparse."""
    op, _, _, attrs, lazy = CASES[name]
    (W, G, S), (w, g, s) = _operands(name, dtype, seed=2, grad_stype="row_sparse",
                                     weight_stype=storage, state_stype=storage)
    op(W, G, *S, out=W, **attrs)
    assert W.stype == storage and all(x.stype == storage for x in S)
    rows = TOUCHED if _lazy_by_default(name) else None
    want_w, want_s = _expected(name, w, g, s, attrs, rows)
    np.testing.assert_allclose(W.asnumpy(), want_w, **_tol(dtype))
    for got, want in zip(S, want_s):
        np.testing.assert_allclose(got.asnumpy(), want, **_tol(dtype))
    if rows is not None:
        others = np.setdiff1d(np.arange(ROWS), TOUCHED)
        assert np.array_equal(W.asnumpy()[others], w[others])  # untouched, bit for bit
        for got, x in zip(S, s):
            assert np.array_equal(got.asnumpy()[others], x[others])


@pytest.mark.parametrize("name", [n for n in NAMES if CASES[n][4] == "attr"])
def test_lazy_update_false_is_the_standard_update(name):
    op, _, _, attrs, _ = CASES[name]
    (W, G, S), (w, g, s) = _operands(name, "float64", seed=3, grad_stype="row_sparse")
    op(W, G, *S, out=W, lazy_update=False, **attrs)
    want_w, want_s = _expected(name, w, g, s, attrs)
    np.testing.assert_allclose(W.asnumpy(), want_w, **_tol("float64"))
    for got, want in zip(S, want_s):
        np.testing.assert_allclose(got.asnumpy(), want, **_tol("float64"))
    assert not np.array_equal(W.asnumpy()[0], w[0])  # (wd: an untouched row decays)


def test_row_sparse_weight_and_states_gain_the_rows_a_lazy_update_writes():
    w = nd.sparse.row_sparse_array((np.ones((1, 2), np.float32), [0]), shape=(4, 2))
    mean = nd.sparse.zeros("row_sparse", (4, 2))
    var = nd.sparse.zeros("row_sparse", (4, 2))
    g = nd.sparse.row_sparse_array((np.full((1, 2), 0.5, np.float32), [2]), shape=(4, 2))
    nd.sparse.adam_update(w, g, mean, var, out=w, lr=0.1, lazy_update=True)
    assert list(w.indices.asnumpy()) == [0, 2]
    assert np.array_equal(w.asnumpy()[0], [1, 1])  # untouched
    assert np.all(w.asnumpy()[2] < 0) and np.all(var.asnumpy()[2] > 0)
    assert 2 in list(mean.indices.asnumpy())


@pytest.mark.parametrize("name", NAMES)
def test_without_out_the_weight_stays_and_the_states_update(name):
    """MXNet's rule: ``out=weight`` updates in place; without ``out`` the result is a new
    array and the weight is unchanged, the states (mutated inputs) updated all the same."""
    op, _, _, attrs, _ = CASES[name]
    (W, G, S), (w, g, s) = _operands(name, "float64", seed=4)
    result = op(W, G, *S, **attrs)
    assert result is not W and np.array_equal(W.asnumpy(), w)
    want_w, want_s = _expected(name, w, g, s, attrs)
    np.testing.assert_allclose(result.asnumpy(), want_w, **_tol("float64"))
    for got, want in zip(S, want_s):
        np.testing.assert_allclose(got.asnumpy(), want, **_tol("float64"))


def test_out_must_be_the_weight():
    (W, G, S), _ = _operands("sgd_mom_update", "float32")
    with pytest.raises(NetsError, match="sgd_mom_update: out must be the weight"):
        nd.sgd_mom_update(W, G, *S, out=W.copy(), lr=0.1)


@pytest.mark.parametrize("name, arg, value", [
    ("sgd_update", "lr", float("nan")), ("sgd_update", "lr", -0.1),
    ("sgd_update", "wd", -1.0), ("sgd_update", "rescale_grad", float("inf")),
    ("sgd_update", "clip_gradient", float("nan")), ("sgd_update", "lazy_update", "yes"),
    ("sgd_mom_update", "momentum", 1.0), ("adam_update", "beta1", 1.0),
    ("adam_update", "beta2", -0.5), ("adam_update", "epsilon", 0.0),
    ("adagrad_update", "epsilon", -1.0), ("ftrl_update", "lr", 0.0),
    ("ftrl_update", "lamda1", -0.1), ("signum_update", "wd_lh", float("nan")),
    ("rmsprop_update", "gamma1", 1.0), ("rmsprop_update", "clip_weights", float("inf")),
    ("rmspropalex_update", "gamma2", 1.5), ("group_adagrad_update", "epsilon", 0.0),
])
def test_bad_attributes_raise_naming_the_argument(name, arg, value):
    op, _, _, attrs, _ = CASES[name]
    (W, G, S), (w, _, s) = _operands(name, "float32")
    with pytest.raises(NetsError, match=f"{op.name}: {arg}="):
        op(W, G, *S, out=W, **dict(attrs, **{arg: value}))
    assert np.array_equal(W.asnumpy(), w)  # nothing changed
    assert all(np.array_equal(x.asnumpy(), y) for x, y in zip(S, s))


def test_bad_operands_raise_naming_the_argument():
    (W, G, (mean, var)), _ = _operands("adam_update", "float32")
    with pytest.raises(ShapeError, match="adam_update: var has shape"):
        nd.adam_update(W, G, mean, nd.zeros((ROWS, 2)), out=W, lr=0.1)
    with pytest.raises(DTypeError, match="adam_update: mean has dtype float64"):
        nd.adam_update(W, G, mean.astype("float64"), var, out=W, lr=0.1)
    with pytest.raises(StorageTypeError, match="adam_update: grad has stype 'csr'"):
        nd.adam_update(W, G.tostype("csr"), mean, var, out=W, lr=0.1)
    with pytest.raises(NetsError, match="adam_update: var must be a nets array"):
        nd.adam_update(W, G, mean, var.asnumpy(), out=W, lr=0.1)
    with pytest.raises(DTypeError, match="sgd_update: weight has dtype float16"):
        nd.sgd_update(W.astype("float16"), G.astype("float16"), lr=0.1)
    with pytest.raises(ShapeError, match="_contrib_group_adagrad_update: history has shape"):
        nd.contrib.group_adagrad_update(W, G, nd.zeros((ROWS, 2)), out=W, lr=0.1)
    with pytest.raises(TypeError, match="lr"):  # required, as in MXNet
        nd.sgd_update(W, G)


def test_group_adagrad_takes_a_one_dimensional_history_too():
    (W, G, S), (w, g, s) = _operands("group_adagrad_update", "float64")
    h = nd.array(s[0][:, 0], dtype="float64")
    nd.contrib.group_adagrad_update(W, G, h, out=W, lr=0.1)
    want_w, want_s = _expected("group_adagrad_update", w, g, s, {"lr": 0.1})
    np.testing.assert_allclose(W.asnumpy(), want_w, rtol=1e-12)
    np.testing.assert_allclose(h.asnumpy(), want_s[0][:, 0], rtol=1e-12)


def test_positional_attributes_follow_mxnets_order():
    (W, G, S), (w, g, s) = _operands("sgd_mom_update", "float64")
    nd.sgd_mom_update(W, G, S[0], 0.1, 0.9, 0.01, out=W)  # lr, momentum, wd
    want_w, _ = _expected("sgd_mom_update", w, g, s, {"lr": 0.1, "momentum": 0.9, "wd": 0.01})
    np.testing.assert_allclose(W.asnumpy(), want_w, rtol=1e-12)


@pytest.mark.parametrize("optimizer, kwargs, op, attrs", [
    ("sgd", {"momentum": 0.9}, "sgd_mom_update", {"momentum": 0.9}),
    ("sgd", {}, "sgd_update", {}),
    ("adagrad", {"eps": 1e-6}, "adagrad_update", {"epsilon": 1e-6}),
    ("ftrl", {"lamda1": 0.01, "beta": 1.0}, "ftrl_update", {"lamda1": 0.01, "beta": 1.0}),
    ("signum", {"momentum": 0.9, "wd_lh": 0.02}, "signum_update", {"momentum": 0.9,
                                                                   "wd_lh": 0.02}),
    ("signsgd", {}, "signsgd_update", {}),
    ("rmsprop", {"gamma1": 0.9, "epsilon": 1e-6}, "rmsprop_update", {"gamma1": 0.9,
                                                                     "epsilon": 1e-6}),
    ("rmsprop", {"gamma1": 0.9, "gamma2": 0.8, "epsilon": 1e-6, "centered": True},
     "rmspropalex_update", {"gamma1": 0.9, "gamma2": 0.8, "epsilon": 1e-6}),
    ("groupadagrad", {"eps": 1e-5}, "group_adagrad_update", {"epsilon": 1e-5}),
])
@pytest.mark.parametrize("grad_stype", ["default", "row_sparse"])
def test_the_optimizer_and_the_operator_give_the_same_bits(optimizer, kwargs, op, attrs,
                                                            grad_stype):
    """One rule, two callers: ``Optimizer.step`` and the operator end with the same bits
    over three steps (lazy for both where the operator is lazy)."""
    _, _, _, _, lazy = CASES[op]
    wd = 0.0 if op == "group_adagrad_update" else 0.01
    opt = nets.optim.create(optimizer, learning_rate=0.1, wd=wd, rescale_grad=0.5,
                            clip_gradient=0.8, lazy_update=lazy is not False, **kwargs)
    (W, G, S), _ = _operands(op, "float32", seed=5, grad_stype=grad_stype)
    W2 = W.copy()
    S = [x * 0 for x in S]
    extra = {} if op == "group_adagrad_update" else {"wd": wd}
    for _ in range(3):
        opt.step(0, W2, G)
        CASES[op][0](W, G, *S, out=W, lr=0.1, rescale_grad=0.5, clip_gradient=0.8,
                     **extra, **attrs)
    assert np.array_equal(W.asnumpy(), W2.asnumpy())
    state = opt.state[0].state
    state = [] if state is None else list(state) if isinstance(state, tuple) else [state]
    for a, b in zip(S, state):
        assert np.array_equal(a.asnumpy().ravel(), b.asnumpy().ravel())


def test_the_names_mxnet_programs_use():
    for name in ("sgd_update", "sgd_mom_update", "adam_update", "ftrl_update",
                 "signsgd_update", "signum_update", "rmsprop_update", "rmspropalex_update"):
        assert getattr(nd, name) is getattr(nd.sparse, name) is getattr(nets.ops, name)
    assert nd.sparse.adagrad_update is nd._internal._sparse_adagrad_update
    assert nd.contrib.group_adagrad_update is nd._internal._contrib_group_adagrad_update
    assert nets.ndarray.sparse.adam_update is nd.adam_update


def test_a_graph_lists_the_states_as_auxiliary_and_infers_shapes():
    w, g, m, v = (sym.var(n) for n in ("w", "g", "m", "v"))
    node = sym.adam_update(w, g, m, v, lr=0.1)
    assert node.list_auxiliary_states() == ["m", "v"]
    args, outs, aux = node.infer_shape(w=(5, 2))
    assert outs == [(5, 2)] and aux == [(5, 2), (5, 2)]
    h = sym.var("h")
    _, outs, aux = sym._internal._contrib_group_adagrad_update(w, g, h, lr=0.1).infer_shape(
        g=(5, 2))
    assert outs == [(5, 2)] and aux == [(5, 1)]
