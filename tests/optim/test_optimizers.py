"""Every optimizer x weight stype x grad stype x lazy x wd x clip, several steps, checked row
by row against a plain-numpy reference written here (float64); rows a lazy update skips must
keep their value and state bit for bit."""
import math

import numpy as np
import pytest

import nets
from nets import nd
from nets.optim import create
from nets.test_utils import assert_almost_equal

N, COLS = 6, 3
STEP_ROWS = ([1, 3], [3, 4], [1])  # the row_sparse gradient of each step
NEVER = [0, 2, 5]  # rows no step touches
WEIGHT_ROWS = [0, 1, 3, 5]  # a row_sparse weight lacks rows 2 (never touched) and 4 (touched)
STATE_ROWS = [0, 2, 3]  # row_sparse states start with these rows (1 and 4 get inserted)
LR, RESCALE = 0.1, 0.5


def _clip(x, c):
    return x if c is None else np.clip(x, -c, c)


# Reference rules on one float64 row: (w, g, states, lr, wd, t, clip, hp) -> (w, states).
def ref_sgd(w, g, s, lr, wd, t, c, hp):
    x = _clip(RESCALE * g, c)
    if hp.get("momentum", 0.0):
        mom = hp["momentum"] * s[0] - lr * (wd * w + x)
        return w + mom, [mom]
    return w - lr * (wd * w + x), []


def _adam_moments(x, s, hp):
    b1, b2 = hp.get("beta1", 0.9), hp.get("beta2", 0.999)
    return b1 * s[0] + (1 - b1) * x, b2 * s[1] + (1 - b2) * x * x


def _bias_lr(lr, t):
    return lr * math.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)


def ref_adam(w, g, s, lr, wd, t, c, hp):
    m, v = _adam_moments(_clip(RESCALE * g + wd * w, c), s, hp)
    return w - _bias_lr(lr, t) * m / (np.sqrt(v) + 1e-8), [m, v]


def ref_adamw(w, g, s, lr, wd, t, c, hp):
    m, v = _adam_moments(_clip(RESCALE * g, c), s, hp)
    return w - _bias_lr(lr, t) * (m / (np.sqrt(v) + 1e-6) + wd * w), [m, v]


def ref_adagrad(w, g, s, lr, wd, t, c, hp):
    x = _clip(RESCALE * g, c)
    h = s[0] + x * x
    return w - lr * (x / np.sqrt(h + 1e-7) + wd * w), [h]


def ref_rowwise_adagrad(w, g, s, lr, wd, t, c, hp):
    x = _clip(RESCALE * g, c) + wd * w
    h = s[0] + np.mean(x * x)  # one accumulator for the row
    return w - lr * x / (np.sqrt(h) + 1e-7), [h]


def ref_rmsprop(w, g, s, lr, wd, t, c, hp):
    x = _clip(RESCALE * g + wd * w, c)
    n = 0.1 * x * x + 0.9 * s[0]
    if not hp.get("centered"):
        return w - lr * x / np.sqrt(n + 1e-8), [n]
    gm = 0.1 * x + 0.9 * s[1]
    delta = 0.9 * s[2] - lr * x / np.sqrt(n - gm * gm + 1e-8)
    return w + delta, [n, gm, delta]


def ref_ftrl(w, g, s, lr, wd, t, c, hp):
    x = _clip(RESCALE * g, c)
    z = s[0] + x - (np.sqrt(s[1] + x * x) - np.sqrt(s[1])) * w / lr
    n = s[1] + x * x
    w = np.where(np.abs(z) > 0.01, (np.sign(z) * 0.01 - z) / ((1.0 + np.sqrt(n)) / lr + wd), 0)
    return w, [z, n]


# name, hyper-parameters, reference rule, kind of each state ('sq' ones stay >= 0; 'row': one
# value per row, >= 0)
CASES = [
    ("sgd", {}, ref_sgd, []),
    ("sgd", {"momentum": 0.9}, ref_sgd, ["lin"]),
    ("adam", {}, ref_adam, ["lin", "sq"]),
    ("adamw", {}, ref_adamw, ["lin", "sq"]),
    ("adagrad", {}, ref_adagrad, ["sq"]),
    ("rowwise_adagrad", {}, ref_rowwise_adagrad, ["row"]),
    ("ftrl", {}, ref_ftrl, ["lin", "sq"]),
    ("rmsprop", {}, ref_rmsprop, ["sq"]),
    ("rmsprop", {"centered": True}, ref_rmsprop, ["sq", "lin", "lin"]),
]
CASE_IDS = ["sgd", "sgd_mom", "adam", "adamw", "adagrad", "rowwise_adagrad", "ftrl", "rmsprop",
            "rmsprop_c"]


def _values(rng, kind, shape):
    return rng.uniform(0.5, 1.0, shape) if kind in ("sq", "row") else rng.uniform(-0.1, 0.1, shape)


def _setup(case, weight_stype, lazy, dtype, wd=0.0, clip=None, **extra):
    name, hp, _, kinds = case
    rng = np.random.default_rng(7)
    opt = create(name, learning_rate=LR, wd=wd, rescale_grad=RESCALE, clip_gradient=clip,
                 lazy_update=lazy, **hp, **extra)
    w0 = rng.uniform(-1, 1, (N, COLS))
    if weight_stype == "row_sparse":
        w0[[2, 4]] = 0
        weight = nd.sparse.row_sparse_array((w0[WEIGHT_ROWS].astype(dtype), WEIGHT_ROWS),
                                            shape=(N, COLS))
    else:
        weight = nd.array(w0, dtype=dtype)
    state = opt.create_state(0, weight)
    states = [] if state is None else list(state) if isinstance(state, tuple) else [state]
    s0 = []
    for s, kind in zip(states, kinds):
        cols = () if kind == "row" else (COLS,)
        assert s.shape == (N,) + cols
        values = np.zeros((N,) + cols)
        values[STATE_ROWS] = _values(rng, kind, (len(STATE_ROWS),) + cols)
        s0.append(values)
        if s.stype == "row_sparse":
            s[:] = nd.sparse.row_sparse_array((values[STATE_ROWS].astype(dtype), STATE_ROWS),
                                              shape=(N,) + cols)
        else:
            s[:] = values.astype(dtype)
    grads = []
    for rows in STEP_ROWS:
        g = np.zeros((N, COLS))
        g[rows] = rng.uniform(-2, 2, (len(rows), COLS))
        grads.append(g)
    return opt, weight, state, states, w0, s0, grads


def _grad(g, rows, stype, dtype):
    if stype == "row_sparse":
        return nd.sparse.row_sparse_array((g[rows].astype(dtype), rows), shape=g.shape)
    return nd.array(g, dtype=dtype)


def _reference(case, w0, s0, grads, grad_stype, lazy, wd, clip):
    _, hp, rule, _ = case
    w, s = w0.copy(), [x.copy() for x in s0]
    for t, (g, rows) in enumerate(zip(grads, STEP_ROWS), start=1):
        touched = rows if grad_stype == "row_sparse" and lazy else range(N)
        for r in touched:
            w[r], new = rule(w[r], g[r], [x[r] for x in s], LR, wd, t, clip, hp)
            for x, v in zip(s, new):
                x[r] = v
    return w, s


@pytest.mark.parametrize("clip", [None, 0.3])
@pytest.mark.parametrize("wd", [0.0, 0.1])
@pytest.mark.parametrize("lazy", [True, False])
@pytest.mark.parametrize("grad_stype", ["default", "row_sparse"])
@pytest.mark.parametrize("weight_stype", ["default", "row_sparse"])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_matches_reference(case, weight_stype, grad_stype, lazy, wd, clip):
    dtype = np.float32
    opt, weight, state, states, w0, s0, grads = _setup(case, weight_stype, lazy, dtype, wd, clip)
    w_start = weight.asnumpy()
    s_start = [s.asnumpy() for s in states]
    stypes = [weight.stype] + [s.stype for s in states]
    for g, rows in zip(grads, STEP_ROWS):
        opt.update(0, weight, _grad(g, rows, grad_stype, dtype), state)
    w_ref, s_ref = _reference(case, w0, s0, grads, grad_stype, lazy, wd, clip)
    assert [weight.stype] + [s.stype for s in states] == stypes
    assert_almost_equal(weight.asnumpy(), w_ref, rtol=1e-5, atol=1e-6)
    for s, ref in zip(states, s_ref):
        assert_almost_equal(s.asnumpy(), ref, rtol=1e-5, atol=1e-6)
    if grad_stype == "row_sparse" and lazy:  # skipped rows: untouched, bit for bit
        assert np.array_equal(weight.asnumpy()[NEVER], w_start[NEVER])
        for s, start in zip(states, s_start):
            assert np.array_equal(s.asnumpy()[NEVER], start[NEVER])
    if weight_stype == "row_sparse":  # a lazy update inserts the missing row 4 only
        lazy_rows = grad_stype == "row_sparse" and lazy
        assert weight._indices.tolist() == ([0, 1, 3, 4, 5] if lazy_rows else list(range(N)))


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("weight_stype", ["default", "row_sparse"])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_float64_matches_reference(case, weight_stype, threads, request):
    """Lazy float64 updates, also shared between 3 threads (however few the rows)."""
    if threads > 1:
        request.getfixturevalue("shared_kernels")
    opt, weight, state, states, w0, s0, grads = _setup(case, weight_stype, True, np.float64,
                                                       0.1, 0.3)
    for g, rows in zip(grads, STEP_ROWS):
        opt.update(0, weight, _grad(g, rows, "row_sparse", np.float64), state)
    w_ref, s_ref = _reference(case, w0, s0, grads, "row_sparse", True, 0.1, 0.3)
    assert weight.dtype == np.float64
    assert_almost_equal(weight.asnumpy(), w_ref, rtol=1e-12, atol=1e-12)
    for s, ref in zip(states, s_ref):
        assert_almost_equal(s.asnumpy(), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("weight_stype", ["default", "row_sparse"])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_lazy_with_every_row_equals_dense(case, weight_stype):
    """A row_sparse gradient holding every row, lazy or not, updates exactly as a dense one."""
    runs = []
    for grad_stype, lazy in (("default", True), ("row_sparse", True), ("row_sparse", False)):
        opt, weight, state, states, _, _, grads = _setup(case, weight_stype, lazy, np.float32,
                                                         0.1, 0.3)
        for g in grads:
            g = g + 0.5  # every row non-zero
            opt.update(0, weight, _grad(g, list(range(N)), grad_stype, np.float32), state)
        runs.append([weight.asnumpy()] + [s.asnumpy() for s in states])
    for run in runs[1:]:
        for a, b in zip(run, runs[0]):
            assert np.array_equal(a, b)


@pytest.mark.parametrize("state_stype", ["default", "row_sparse"])
def test_a_gradient_listing_every_row_selects_the_dense_pass(state_stype):
    """Its selection is every row (no index lines: the dense kernels' single pass), and a
    row_sparse state of an earlier lazy step grows to every row once, keeping its values."""
    from nets.optim.optimizer import RowSelection
    w = nd.ones((6, 2))
    state = nd.zeros((6, 2), stype=state_stype)
    if state_stype == "row_sparse":
        state.insert_rows([1, 4])
        state.data[:] = 3.0
    grad = nd.sparse.row_sparse_array((np.ones((6, 2), np.float32), np.arange(6)), shape=(6, 2))
    rows = RowSelection(w, grad, [state], lazy_update=True)
    assert rows.ids is None and rows.count == 6 and rows.pos.shape == (0, 0)
    want = np.zeros((6, 2), np.float32)
    if state_stype == "row_sparse":
        want[[1, 4]] = 3.0
        assert state.indices.asnumpy().tolist() == list(range(6))
    assert np.array_equal(state.asnumpy(), want)


def test_mxnet_row_sparse_tutorial():
    """MXNet's "RowSparseNDArray - NDArray for Sparse Gradient Updates" SGD example."""
    weight = nd.ones((4, 2)).tostype("row_sparse")
    grad = nd.sparse.row_sparse_array(([[1, 2], [4, 5]], [1, 2]), shape=(4, 2))
    sgd = nets.optim.SGD(learning_rate=0.01, momentum=0.01)
    momentum = sgd.create_state(0, weight)
    assert momentum.stype == "row_sparse"
    sgd.update(0, weight, grad, momentum)
    assert weight.stype == "row_sparse"
    assert_almost_equal(weight.asnumpy(), [[1, 1], [0.99, 0.98], [0.96, 0.95], [1, 1]])
    assert_almost_equal(momentum.asnumpy(), [[0, 0], [-0.01, -0.02], [-0.04, -0.05], [0, 0]])


@pytest.mark.parametrize("shape", [(5,), (4, 2, 3)])
def test_other_ranks(shape):
    """1-D and 3-D weights update as (rows, rest) views."""
    rng = np.random.default_rng(0)
    w0 = rng.uniform(-1, 1, shape).astype(np.float32)
    g = rng.uniform(-1, 1, shape).astype(np.float32)
    rows = [1, 3]
    opt = create("sgd", learning_rate=0.5, momentum=0.5)
    for stype in ("default", "row_sparse"):
        weight = nd.array(w0).tostype(stype) if stype != "default" else nd.array(w0)
        state = opt.create_state(0, weight)
        grad = nd.sparse.row_sparse_array((g[rows], rows), shape=shape)
        opt.update(0, weight, grad, state)
        expected = w0.copy()
        expected[rows] = w0[rows] - 0.5 * g[rows]
        assert_almost_equal(weight.asnumpy(), expected)


@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (4, 2, 3)])
@pytest.mark.parametrize("contiguous", [True, False])
def test_dense_gradient_any_rank(shape, contiguous):
    """A dense gradient of any rank (C-contiguous or not) updates every element, on the
    first update and on later ones."""
    rng = np.random.default_rng(1)
    w0 = rng.uniform(-1, 1, shape).astype(np.float32)
    opt = create("sgd", learning_rate=0.5, momentum=0.5)
    weight = nd.array(w0)
    state = opt.create_state(0, weight)
    expected, mom = w0.astype(np.float64), np.zeros(shape)
    for _ in range(3):
        g = rng.uniform(-1, 1, shape).astype(np.float32)
        given = g if contiguous or g.ndim < 2 else np.asfortranarray(g)
        assert given.flags.c_contiguous == (contiguous or g.ndim < 2)
        opt.update(0, weight, nd.NDArray(given), state)
        mom = 0.5 * mom - 0.5 * g
        expected = expected + mom
        assert_almost_equal(weight.asnumpy(), expected, rtol=1e-5, atol=1e-6)


def test_rowwise_adagrad_keeps_one_value_per_row_and_trains_an_embedding():
    """Through a Trainer: an ``Embedding(sparse_grad=True)`` table updated by
    'rowwise_adagrad' keeps a (rows,) state and touches only the looked-up rows."""
    from nets import autograd, layers
    emb = layers.Embedding(10, 4, sparse_grad=True)
    emb.initialize(nets.init.Uniform(0.1))
    trainer = nets.Trainer(emb.collect_params(), "rowwise_adagrad", {"learning_rate": 0.5})
    before = emb.weight.data().asnumpy()
    ids = nd.array([1, 7, 7])
    with autograd.record():
        loss = (emb(ids) ** 2).sum()
    loss.backward()
    trainer.step(1)
    after = emb.weight.data().asnumpy()
    state = trainer.optimizer.state[0].state
    assert state.shape == (10,)
    changed = np.flatnonzero(np.any(after != before, axis=1))
    assert changed.tolist() == [1, 7]
    # plain numpy: g = 2 w per lookup (row 7 twice), history = mean(g^2), w -= lr g / sqrt(h)
    g = 2 * before[[1, 7]] * np.array([[1], [2]])
    h = np.mean(g * g, axis=1, keepdims=True)
    assert_almost_equal(after[[1, 7]], before[[1, 7]] - 0.5 * g / (np.sqrt(h) + 1e-7),
                        rtol=1e-5, atol=1e-6)
    assert_almost_equal(state.asnumpy()[[1, 7]], h[:, 0], rtol=1e-5)
    assert not state.asnumpy()[[0, 2, 3, 4, 5, 6, 8, 9]].any()


def test_a_lazy_selection_serves_later_row_sparse_gradients():
    """The selection a lazy update of a dense weight and state made serves the next updates
    by other row_sparse gradients (their rows, every row, none, a subset again), and a new
    one is made for another weight array: each update as the numpy rule gives."""
    rng = np.random.default_rng(3)
    w0 = rng.uniform(-1, 1, (N, COLS)).astype(np.float32)
    opt = create("sgd", learning_rate=0.5, momentum=0.5)
    weight = nd.array(w0)
    state = opt.create_state(0, weight)
    w, mom = w0.astype(np.float64), np.zeros((N, COLS))
    for step, rows in enumerate(([1, 3], [0, 4], list(range(N)), [], [2, 5], [5])):
        if step == 4:  # another weight array: its selection is made anew
            weight = nd.array(weight.asnumpy())
        g = rng.uniform(-1, 1, (len(rows), COLS)).astype(np.float32)
        opt.update(0, weight, nd.sparse.row_sparse_array((g, rows), shape=(N, COLS)), state)
        mom[rows] = 0.5 * mom[rows] - 0.5 * g
        w[rows] += mom[rows]
        kept = opt.state[0].rows
        assert kept is not None and kept.count == len(rows) and kept.weight is weight.values
        assert_almost_equal(weight.asnumpy(), w, rtol=1e-5, atol=1e-6)
        assert_almost_equal(state.asnumpy(), mom, rtol=1e-5, atol=1e-6)


def test_a_kept_selection_serves_only_the_state_object_it_checked():
    """A dense update's kept selection stands for the check of the state object it was
    made with: a list state (whose items may change) is checked and selected anew at each
    update, so the array now in the list is the one updated; a tuple state made when
    RMSProp was not centered lacks the states a centered update reads, which raises
    rather than reuse the selection."""
    rng = np.random.default_rng(4)
    opt = create("sgd", learning_rate=0.5, momentum=0.5)
    weight, grad = nd.array(rng.uniform(-1, 1, (N, COLS))), nd.array(np.ones((N, COLS)))
    first, second = nd.zeros((N, COLS)), nd.zeros((N, COLS))
    state = [first]
    opt.update(0, weight, grad, state)
    assert_almost_equal(first.asnumpy(), np.full((N, COLS), -0.5))
    state[0] = second  # the same list, another momentum array
    opt.update(0, weight, grad, state)
    assert_almost_equal(second.asnumpy(), np.full((N, COLS), -0.5))
    assert_almost_equal(first.asnumpy(), np.full((N, COLS), -0.5))  # not updated again

    opt = create("rmsprop", learning_rate=0.1)
    state = opt.create_state(0, weight)
    opt.update(0, weight, grad, state)
    assert opt.state[0].rows is not None
    opt.centered = True
    with pytest.raises(nets.NetsError, match="no state 1"):
        opt.update(0, weight, grad, state)
