"""Saving and loading an optimizer's state (``nets.optim.save_states``/``load_states``): each
key's state arrays and its record (update count, catch-up decay) survive a round trip, for
keys of either of MXNet's types (int, str), in a file read without pickle."""
import json

import numpy as np
import pytest

import nets
from nets import nd
from nets.optim import create, load_states, save_states
from nets.test_utils import assert_almost_equal

N, COLS, LR, WD = 6, 2, 0.2, 0.1
STEPS = [([1, 4], 1.0), ([0], -0.5), ([4, 5], 2.0), ([1], 0.25), ([2, 3], -1.0)]


class _Param:
    def __init__(self, name):
        self.name, self.lr_mult, self.wd_mult = name, 1.0, 1.0


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
        first.update(0, weight, _grad(rows, value), None)  # MXNet's: the caller's state
    path = str(tmp_path / "states.npz")
    save_states(path, first)
    second = create("sgd", learning_rate=LR, wd=WD, wd_mode="catchup")
    load_states(path, second, {0: weight})
    assert second.state[0].step == 2 and second.num_update == 2
    assert not second.state[0].has_state  # (an update given its state made none here)
    for rows, value in STEPS[2:]:
        second.step(0, weight, _grad(rows, value))
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
    params = {0: _Param("a"), 1: _Param("b")}
    opt = create("adam", learning_rate=0.1, param_dict=params)
    for rows, value in STEPS[:3]:
        opt.step(0, weights[0], _grad(rows, value))
    opt.step(1, weights[1], _grad([2], 1.0))
    path = str(tmp_path / "adam.npz")
    save_states(path, opt)
    fresh = create("adam", learning_rate=0.1, param_dict=params)
    load_states(path, fresh, dict(enumerate(weights)))
    assert {i: r.step for i, r in fresh.state.items()} == {0: 3, 1: 1}
    assert fresh.num_update == 3
    for i in (0, 1):
        for s, b in zip(opt.state[i].state, fresh.state[i].state):
            assert b.stype == s.stype and b is not s
            assert np.array_equal(b.asnumpy(), s.asnumpy())
    # the next update of parameter 1, on a row never touched: t = 2 (plain-numpy Adam)
    fresh.step(1, weights[1], _grad([0], 1.0))
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
    opt = create("adam", param_dict={0: _Param("w")})
    weight = nd.ones((N, COLS), dtype=np.float64)
    opt.step(0, weight, _grad([1], 1.0))
    path = str(tmp_path / "s.npz")
    save_states(path, opt)
    weights = {0: weight}
    with pytest.raises(nets.NetsError, match="parameters"):
        load_states(path, create("adam", param_dict={0: _Param("v")}), weights)
    with pytest.raises(nets.NetsError, match="parameters"):  # a parameter the file lacks
        load_states(path, create("adam", param_dict={0: _Param("w"), 1: _Param("b")}),
                    weights)
    with pytest.raises(nets.NetsError, match="optimizer"):
        load_states(path, create("sgd"), weights)
    with pytest.raises(nets.NetsError, match="no weight for key 0"):
        load_states(path, create("adam"), {})
    unchanged = create("adam")
    _rewrite_config(path, lambda c: c["records"]["w"].update(state=["array", "array", "array"]))
    with pytest.raises(nets.NetsError, match="do not match their layout"):
        load_states(path, unchanged, weights)
    _rewrite_config(path, lambda c: c["records"]["w"].update(state="arrays"))
    with pytest.raises(nets.NetsError, match="do not match their layout"):
        load_states(path, unchanged, weights)
    _rewrite_config(path, lambda c: c["records"]["w"].update(state=["array"], step="many"))
    with pytest.raises(nets.NetsError, match="do not match their layout"):
        load_states(path, unchanged, weights)
    for keys in ([0, 0], [0.5], [True], "0"):
        _rewrite_config(path, lambda c, keys=keys: c.update(keys=keys))
        with pytest.raises(nets.NetsError, match="'keys' must be"):
            load_states(path, unchanged, weights)
    assert unchanged.state == {} and unchanged.num_update == 0


@pytest.mark.parametrize("weight_stype", ["default", "row_sparse"])
def test_rowwise_adagrad_state_round_trips_and_continues(tmp_path, weight_stype):
    """Row-wise AdaGrad's (rows,) accumulator keeps its storage type and values through
    save/load, and the resumed optimizer continues exactly as the one that was not saved."""
    w0 = np.random.default_rng(1).uniform(-1, 1, (N, COLS))
    weights = [nd.array(w0, dtype=w0.dtype).tostype(weight_stype) for _ in range(2)]
    opts = [create("rowwise_adagrad", learning_rate=LR, wd=WD) for _ in range(2)]
    for rows, value in STEPS[:3]:
        for o, w in zip(opts, weights):
            o.step(0, w, _grad(rows, value))
    saved = opts[1].state[0].state
    assert saved.shape == (N,) and saved.stype == weight_stype
    path = str(tmp_path / "rowwise.npz")
    save_states(path, opts[1])
    resumed = create("rowwise_adagrad", learning_rate=LR, wd=WD)
    load_states(path, resumed, {0: weights[1]})
    loaded = resumed.state[0].state
    assert loaded.stype == saved.stype and np.array_equal(loaded.asnumpy(), saved.asnumpy())
    for rows, value in STEPS[3:]:
        opts[0].step(0, weights[0], _grad(rows, value))
        resumed.step(0, weights[1], _grad(rows, value))
    assert np.array_equal(weights[0].asnumpy(), weights[1].asnumpy())
    assert np.array_equal(opts[0].state[0].state.asnumpy(), loaded.asnumpy())


@pytest.mark.parametrize("keys", [[3, 5, 7], ["w", "b", "emb"], [3, "w", 0]])
def test_keys_of_mxnet_s_types_round_trip_in_a_file_without_pickle(tmp_path, keys):
    """A store's keys (MXNet's tests use 3, 5, 7 and strings) come back with their types:
    each key's momentum and count continue where they stopped (plain-numpy SGD), and the
    file is arrays plus JSON, read with ``allow_pickle=False``."""
    rng = np.random.default_rng(3)
    w0 = {k: rng.uniform(-1, 1, (N, COLS)) for k in keys}
    weights = {k: nd.array(w, dtype=w.dtype) for k, w in w0.items()}
    opt = create("sgd", learning_rate=LR, momentum=0.9)
    grads = [(rows, value) for rows, value in STEPS]
    ref = {k: (w.copy(), np.zeros_like(w)) for k, w in w0.items()}

    def numpy_sgd(k, rows, value):
        w, mom = ref[k]
        mom[rows] = 0.9 * mom[rows] - LR * value  # lazy: only the gradient's rows
        w[rows] += mom[rows]

    for n, k in enumerate(keys):
        for rows, value in grads[:n + 1]:
            opt.step(k, weights[k], _grad(rows, value))
            numpy_sgd(k, rows, value)
    path = str(tmp_path / "keys.npz")
    save_states(path, opt)
    with np.load(path, allow_pickle=False) as npz:
        assert all(npz[f].dtype != object for f in npz.files)
        header = json.loads(npz["__nets_config__"].tobytes().decode())
    assert header["config"]["keys"] == keys
    resumed = create("sgd", learning_rate=LR, momentum=0.9)
    load_states(path, resumed, weights)
    assert list(resumed.state) == keys
    assert {k: r.step for k, r in resumed.state.items()} == {k: n + 1 for n, k in
                                                             enumerate(keys)}
    for k in keys:
        for rows, value in grads[3:]:
            resumed.step(k, weights[k], _grad(rows, value))
            numpy_sgd(k, rows, value)
        assert_almost_equal(weights[k].asnumpy(), ref[k][0], rtol=1e-12, atol=1e-12)
        assert_almost_equal(resumed.state[k].state.asnumpy(), ref[k][1], rtol=1e-12,
                            atol=1e-12)


def test_keys_a_file_cannot_hold_are_refused(tmp_path):
    opt = create("sgd", momentum=0.9)
    opt.step((1, 2), nd.ones((2, 2)), nd.ones((2, 2)))
    with pytest.raises(nets.NetsError, match=r"keys must be ints or strs, got \(1, 2\)"):
        save_states(str(tmp_path / "s.npz"), opt)
    opt = create("sgd", momentum=0.9, param_dict={0: _Param("w"), 1: _Param("w")})
    with pytest.raises(nets.NetsError, match=r"names \['w'\] twice"):
        save_states(str(tmp_path / "s.npz"), opt)
    opt = create("sgd", momentum=0.9)  # (an int and a str key that read alike)
    for key in (3, "3"):
        opt.step(key, nd.ones((2, 2)), nd.ones((2, 2)))
    with pytest.raises(nets.NetsError, match=r"names \['3'\] twice"):
        save_states(str(tmp_path / "s.npz"), opt)
