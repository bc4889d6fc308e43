"""Weight decay with row_sparse gradients (wd_mode), gradient clipping edge values, and the
denormal flush of the update kernels."""
import numpy as np
import pytest

import nets
from nets import nd
from nets.optim import FactorScheduler, create
from nets.test_utils import assert_almost_equal

N, COLS, STEPS = 8, 3, 12


def _grads(seed, all_rows_last=True):
    """Random row_sparse gradients (float64); the last one holds every row."""
    rng = np.random.default_rng(seed)
    out = []
    for step in range(STEPS):
        last = all_rows_last and step == STEPS - 1
        rows = np.arange(N) if last else np.sort(rng.choice(N, 3, replace=False))
        out.append((rng.uniform(-1, 1, (len(rows), COLS)), rows))
    return out


def _run(name, grads, w0, **kwargs):
    opt = create(name, **kwargs)
    weight = nd.array(w0, dtype=w0.dtype)
    state = opt.create_state(0, weight)
    for data, rows in grads:
        opt.update(0, weight, nd.sparse.row_sparse_array((data, rows), shape=w0.shape), state)
    return opt, weight


@pytest.mark.parametrize("schedule", [False, True])
@pytest.mark.parametrize("name", ["sgd", "adagrad"])
def test_catchup_equals_dense_decay(name, schedule):
    """Catch-up decay gives a lazy SGD (or AdaGrad) exactly the dense update's weights, also
    while a scheduler changes the learning rate; plain lazy decay does not."""
    w0 = np.random.default_rng(1).uniform(-1, 1, (N, COLS))
    grads = _grads(2)

    def run(**kw):
        sched = FactorScheduler(step=3, factor=0.5, base_lr=0.2) if schedule else None
        return _run(name, grads, w0, learning_rate=0.2, wd=0.1, lr_scheduler=sched, **kw)[1]

    dense = run(lazy_update=False).asnumpy()
    assert_almost_equal(run(wd_mode="catchup").asnumpy(), dense, rtol=1e-12, atol=1e-12)
    assert not np.allclose(run(wd_mode="lazy").asnumpy(), dense)


def test_catch_up_method_brings_every_row_current():
    w0 = np.random.default_rng(3).uniform(-1, 1, (N, COLS))
    grads = _grads(4, all_rows_last=False)
    dense = _run("sgd", grads, w0, learning_rate=0.2, wd=0.1, lazy_update=False)[1].asnumpy()
    for stype in ("default", "row_sparse"):
        opt = create("sgd", learning_rate=0.2, wd=0.1, wd_mode="catchup")
        weight = nd.array(w0, dtype=w0.dtype).tostype(stype)
        for data, rows in grads:
            opt.update(3, weight, nd.sparse.row_sparse_array((data, rows), shape=w0.shape), None)
        assert not np.allclose(weight.asnumpy(), dense)  # some rows still owe decay
        opt.catch_up(3, weight)
        assert_almost_equal(weight.asnumpy(), dense, rtol=1e-12, atol=1e-12)
        opt.catch_up(3, weight)  # nothing more is owed
        assert_almost_equal(weight.asnumpy(), dense, rtol=1e-12, atol=1e-12)


def test_catchup_rejects_lr_wd_of_one():
    opt = create("sgd", learning_rate=1.0, wd=1.0, wd_mode="catchup")
    grad = nd.sparse.row_sparse_array((np.ones((1, 2), np.float32), [0]), shape=(3, 2))
    with pytest.raises(nets.NetsError, match="lr \\* wd < 1"):
        opt.update(0, nd.ones((3, 2)), grad, None)


@pytest.mark.parametrize("name", ["sgd", "adagrad"])
def test_dense_wd_mode_equals_dense_update(name):
    w0 = np.random.default_rng(5).uniform(-1, 1, (N, COLS))
    grads = _grads(6, all_rows_last=False)
    dense = _run(name, grads, w0, learning_rate=0.2, wd=0.1, lazy_update=False)[1].asnumpy()
    mode = _run(name, grads, w0, learning_rate=0.2, wd=0.1, wd_mode="dense")[1].asnumpy()
    assert_almost_equal(mode, dense, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("weight_stype", ["default", "row_sparse"])
def test_dense_wd_mode_decays_skipped_rows_only(weight_stype):
    """Adam with wd_mode='dense': skipped rows get the plain decay, their moments stay."""
    w0 = np.random.default_rng(8).uniform(-1, 1, (N, COLS)).astype(np.float32)
    weight = nd.array(w0, dtype=w0.dtype).tostype(weight_stype)
    opt = create("adam", learning_rate=0.1, wd=0.2, wd_mode="dense")
    mean, var = opt.create_state(0, weight)
    rows = [2, 5]
    grad = nd.sparse.row_sparse_array((np.ones((2, COLS), np.float32), rows), shape=(N, COLS))
    opt.update(0, weight, grad, (mean, var))
    skipped = [r for r in range(N) if r not in rows]
    assert_almost_equal(weight.asnumpy()[skipped], w0[skipped] * (1 - 0.1 * 0.2), rtol=1e-6)
    assert not np.allclose(weight.asnumpy()[rows], w0[rows] * (1 - 0.1 * 0.2))
    assert np.array_equal(mean.asnumpy()[skipped], np.zeros((len(skipped), COLS)))
    assert weight.stype == weight_stype


def test_wd_mode_validation():
    with pytest.raises(nets.NetsError, match="wd_mode='sometimes'"):
        create("sgd", wd_mode="sometimes")
    with pytest.raises(nets.NetsError, match="FTRL"):
        create("ftrl", wd_mode="catchup")


def test_clip_gradient_zero_clips_and_negative_raises():
    """clip_gradient=0 zeroes the gradient (MXNet ignored 0): only weight decay remains."""
    opt = create("sgd", learning_rate=0.5, wd=0.1, clip_gradient=0)
    weight = nd.ones((2, 2))
    opt.update(0, weight, nd.full((2, 2), 3.0), None)
    assert_almost_equal(weight.asnumpy(), np.full((2, 2), 1 - 0.5 * 0.1))
    for bad in (-1.0, "big"):
        with pytest.raises(nets.NetsError, match="clip_gradient"):
            create("adam", clip_gradient=bad)
    with pytest.raises(nets.NetsError, match="clip_gradient=-2"):
        opt.clip_gradient = -2


def test_rmsprop_clip_weights_zero_clips_and_negative_raises():
    """clip_weights=0 pins the weight at 0; a negative bound is an error (the kernels take
    ``inf`` for no clipping, so a negative one would not mean 'off')."""
    opt = create("rmsprop", learning_rate=0.5, clip_weights=0)
    weight = nd.ones((2, 2))
    opt.update(0, weight, nd.full((2, 2), 3.0), opt.create_state(0, weight))
    assert_almost_equal(weight.asnumpy(), np.zeros((2, 2)))
    with pytest.raises(nets.NetsError, match="clip_weights=-1"):
        create("rmsprop", clip_weights=-1)


def test_rescale_before_clip():
    """MXNet's order: the gradient is rescaled, then clipped."""
    opt = create("sgd", learning_rate=1.0, rescale_grad=0.1, clip_gradient=0.5)
    weight = nd.zeros((1, 2))
    opt.update(0, weight, nd.array([[2.0, 20.0]]), None)
    assert_almost_equal(weight.asnumpy(), [[-0.2, -0.5]])


@pytest.mark.parametrize("name, kwargs", [("sgd", {"momentum": 0.9}), ("adam", {}),
                                          ("rmsprop", {"centered": True})])
def test_dense_kernels_flush_denormal_states(name, kwargs):
    """States decaying below ~1e-30 become exact zeros; larger ones keep decaying."""
    opt = create(name, learning_rate=0.01, **kwargs)
    weight = nd.ones((2, 3))
    state = opt.create_state(0, weight)
    states = state if isinstance(state, tuple) else (state,)
    for s in states:
        s[:] = np.array([[1e-36] * 3, [1e-20] * 3], np.float32)
    opt.update(0, weight, nd.zeros((2, 3)), state)
    for s in states:
        assert np.array_equal(s.asnumpy()[0], np.zeros(3))
        assert np.all(np.abs(s.asnumpy()[1]) > 1e-30)
