"""Saving and loading optimizer states (``nets.optim.states``): each parameter's state arrays
and its record (update count, catch-up decay) survive a round trip."""
import json

import numpy as np
import pytest

import nets
from nets import nd
from nets.optim import create
from nets.optim.states import load_states, save_states
from nets.test_utils import assert_almost_equal

N, COLS, LR, WD = 6, 2, 0.2, 0.1
STEPS = [([1, 4], 1.0), ([0], -0.5), ([4, 5], 2.0), ([1], 0.25), ([2, 3], -1.0)]


def _grad(rows, value):
    data = np.full((len(rows), COLS), value)
    return nd.sparse.row_sparse_array((data, rows), shape=(N, COLS))


def test_catchup_records_survive_a_round_trip(tmp_path):
    """Lazy SGD with catch-up decay, saved after two steps and resumed in a new optimizer,
    ends (after ``catch_up``) at plain-numpy dense SGD with weight decay."""
    w0 = np.random.default_rng(0).uniform(-1, 1, (N, COLS))
    weight = nd.array(w0, dtype=w0.dtype)
    first = create("sgd", learning_rate=LR, wd=WD, wd_mode="catchup")
    for rows, value in STEPS[:2]:
        first.update(0, weight, _grad(rows, value), None)
    path = str(tmp_path / "states.npz")
    save_states(path, first, ["w"], [None])
    second = create("sgd", learning_rate=LR, wd=WD, wd_mode="catchup")
    assert load_states(path, second, ["w"], [weight]) == [None]
    assert second.records[0].step == 2 and second.num_update == 2
    for rows, value in STEPS[2:]:
        second.update(0, weight, _grad(rows, value), None)
    second.catch_up(0, weight)
    expected = w0.copy()
    for rows, value in STEPS:
        g = np.zeros((N, COLS))
        g[rows] = value
        expected -= LR * (WD * expected + g)
    assert_almost_equal(weight.asnumpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("weight_stype", ["default", "row_sparse"])
def test_states_and_step_counts_round_trip(tmp_path, weight_stype):
    """Adam's moments keep their storage type and values, and its per-parameter step count
    (the bias correction's t) continues where it stopped."""
    w0 = np.ones((N, COLS))
    weights = [nd.array(w0, dtype=w0.dtype).tostype(weight_stype), nd.array(w0, dtype=w0.dtype)]
    opt = create("adam", learning_rate=0.1)
    states = [opt.create_state(i, w) for i, w in enumerate(weights)]
    for rows, value in STEPS[:3]:
        opt.update(0, weights[0], _grad(rows, value), states[0])
    opt.update(1, weights[1], _grad([2], 1.0), states[1])
    path = str(tmp_path / "adam.npz")
    save_states(path, opt, ["a", "b"], states)
    fresh = create("adam", learning_rate=0.1)
    loaded = load_states(path, fresh, ["a", "b"], weights)
    assert {i: r.step for i, r in fresh.records.items()} == {0: 3, 1: 1}
    assert fresh.num_update == 3
    for saved, back in zip(states, loaded):
        for s, b in zip(saved, back):
            assert b.stype == s.stype
            assert np.array_equal(b.asnumpy(), s.asnumpy())
    # the next update of parameter 1, on a row never touched: t = 2 (plain-numpy Adam)
    fresh.update(1, weights[1], _grad([0], 1.0), loaded[1])
    m, v = 0.1 * 1.0, 0.001 * 1.0
    lr_t = 0.1 * np.sqrt(1 - 0.999 ** 2) / (1 - 0.9 ** 2)
    assert_almost_equal(weights[1].asnumpy()[0], 1 - lr_t * m / (np.sqrt(v) + 1e-8) * np.ones(COLS),
                        rtol=1e-6)


def _rewrite_config(path, change):
    """Apply ``change`` to the optimizer config inside a saved file."""
    with np.load(path, allow_pickle=False) as npz:
        files = {k: npz[k] for k in npz.files}
    header = json.loads(files["__nets_config__"].tobytes().decode())
    change(header["config"])
    files["__nets_config__"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    with open(path, "wb") as f:
        np.savez(f, **files)


def test_a_file_that_does_not_match_raises(tmp_path):
    opt = create("adam")
    weight = nd.ones((N, COLS), dtype=np.float64)
    state = opt.create_state(0, weight)
    opt.update(0, weight, _grad([1], 1.0), state)
    path = str(tmp_path / "s.npz")
    save_states(path, opt, ["w"], [state])
    with pytest.raises(nets.NetsError, match="parameters"):
        load_states(path, create("adam"), ["v"], [weight])
    with pytest.raises(nets.NetsError, match="optimizer"):
        load_states(path, create("sgd"), ["w"], [weight])
    _rewrite_config(path, lambda c: c["records"]["w"].update(state=["array", "array", "array"]))
    with pytest.raises(nets.NetsError, match="do not match their layout"):
        load_states(path, create("adam"), ["w"], [weight])
    _rewrite_config(path, lambda c: c["records"]["w"].update(state="arrays"))
    with pytest.raises(nets.NetsError, match="do not match their layout"):
        load_states(path, create("adam"), ["w"], [weight])
    _rewrite_config(path, lambda c: c["records"]["w"].update(state=["array"], step="many"))
    with pytest.raises(nets.NetsError, match="do not match their layout"):
        load_states(path, create("adam"), ["w"], [weight])


@pytest.mark.parametrize("weight_stype", ["default", "row_sparse"])
def test_rowwise_adagrad_state_round_trips_and_continues(tmp_path, weight_stype):
    """Row-wise AdaGrad's (rows,) accumulator keeps its storage type and values through
    save/load, and the resumed optimizer continues exactly as the one that was not saved."""
    w0 = np.random.default_rng(1).uniform(-1, 1, (N, COLS))
    weights = [nd.array(w0, dtype=w0.dtype).tostype(weight_stype) for _ in range(2)]
    opts = [create("rowwise_adagrad", learning_rate=LR, wd=WD) for _ in range(2)]
    states = [o.create_state(0, w) for o, w in zip(opts, weights)]
    assert states[0].shape == (N,) and states[0].stype == weight_stype
    for rows, value in STEPS[:3]:
        for o, w, s in zip(opts, weights, states):
            o.update(0, w, _grad(rows, value), s)
    path = str(tmp_path / "rowwise.npz")
    save_states(path, opts[1], ["w"], [states[1]])
    resumed = create("rowwise_adagrad", learning_rate=LR, wd=WD)
    (loaded,) = load_states(path, resumed, ["w"], [weights[1]])
    assert loaded.stype == states[1].stype and np.array_equal(loaded.asnumpy(),
                                                               states[1].asnumpy())
    for rows, value in STEPS[3:]:
        opts[0].update(0, weights[0], _grad(rows, value), states[0])
        resumed.update(0, weights[1], _grad(rows, value), loaded)
    assert np.array_equal(weights[0].asnumpy(), weights[1].asnumpy())
    assert np.array_equal(states[0].asnumpy(), loaded.asnumpy())
