"""The optimizers registered under MXNet's names ``signum``, ``signsgd`` and
``groupadagrad``, row by row against numpy (dense and lazy row_sparse updates), and
``get_updater`` as MXNet's updater callable ``updater(index, grad, weight)``."""
import numpy as np
import pytest

import nets
from nets import nd
from nets.optim import GroupAdaGrad, RowWiseAdaGrad, Signum, SignSGD, create, get_updater

ROWS, COLS = 6, 4


def _clip(x, c):
    return x if c is None else np.clip(x, -c, c)


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(ROWS, COLS)), [rng.normal(size=(ROWS, COLS)) for _ in range(3)]


def test_mxnets_names_are_registered():
    registry = nets.optim.Optimizer.opt_registry
    assert registry["signum"] is Signum and registry["signsgd"] is SignSGD
    assert registry["groupadagrad"] is GroupAdaGrad
    assert registry["rowwise_adagrad"] is RowWiseAdaGrad  # (a different rule: eps outside)
    assert isinstance(nets.optimizer.create("Signum"), Signum)


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("grad_stype", ["default", "row_sparse"])
def test_signum_row_by_row(grad_stype, lazy):
    lr, momentum, wd, wd_lh, rescale, clip = 0.1, 0.8, 0.01, 0.02, 0.5, 0.7
    opt = create("signum", learning_rate=lr, momentum=momentum, wd=wd, wd_lh=wd_lh,
                 rescale_grad=rescale, clip_gradient=clip, lazy_update=lazy)
    w0, grads = _data()
    rows = [0, 3]
    W = nd.array(w0, dtype="float64")
    w, mom = w0.copy(), np.zeros_like(w0)
    for g in grads:
        if grad_stype == "row_sparse":
            G = nd.sparse.row_sparse_array((g[rows], rows), shape=g.shape, dtype="float64")
            g = np.where(np.isin(np.arange(ROWS), rows)[:, None], g, 0)
        else:
            G = nd.array(g, dtype="float64")
        opt.step(0, W, G)
        sel = rows if grad_stype == "row_sparse" and lazy else slice(None)
        m = momentum * mom[sel] - (1 - momentum) * (wd * w[sel] + _clip(rescale * g[sel], clip))
        mom[sel] = m
        w[sel] = (1 - lr * wd_lh) * w[sel] + lr * np.sign(m)
        np.testing.assert_allclose(W.asnumpy(), w, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(opt.state[0].state.asnumpy(), mom, rtol=1e-12, atol=1e-14)
    if grad_stype == "row_sparse" and lazy:  # the other rows never moved
        others = [1, 2, 4, 5]
        assert np.array_equal(W.asnumpy()[others], w0[others])


@pytest.mark.parametrize("name, kwargs", [("signsgd", {}), ("signum", {"momentum": 0.0})])
def test_signsgd_keeps_no_state_and_decays_decoupled(name, kwargs):
    lr, wd = 0.1, 0.05
    opt = create(name, learning_rate=lr, wd=wd, **kwargs)
    w0, grads = _data(1)
    W = nd.array(w0, dtype="float64")
    opt.step(0, W, nd.array(grads[0], dtype="float64"))
    assert opt.state[0].state is None
    np.testing.assert_allclose(W.asnumpy(), (1 - lr * wd) * w0 - lr * np.sign(grads[0]),
                               rtol=1e-12)


@pytest.mark.parametrize("weight_stype", ["default", "row_sparse"])
@pytest.mark.parametrize("grad_stype", ["default", "row_sparse"])
def test_groupadagrad_row_by_row(grad_stype, weight_stype):
    """MXNet's GroupAdaGrad: one accumulator per row, ``(rows, 1)``, ``eps`` under the
    square root; lazily, only the gradient's rows of the weight and the accumulator."""
    lr, eps, rescale, clip = 0.1, 1e-5, 2.0, 1.5
    opt = create("groupadagrad", learning_rate=lr, rescale_grad=rescale, clip_gradient=clip)
    assert opt.float_stable_eps == eps  # MXNet's default
    w0, grads = _data(2)
    rows = [1, 2, 5]
    W = nd.array(w0, dtype="float64").tostype(weight_stype)
    w, h = w0.copy(), np.zeros((ROWS, 1))
    for g in grads:
        if grad_stype == "row_sparse":
            G = nd.sparse.row_sparse_array((g[rows], rows), shape=g.shape, dtype="float64")
            sel = rows
        else:
            G, sel = nd.array(g, dtype="float64"), slice(None)
        opt.step("w", W, G)
        x = _clip(rescale * g[sel], clip)
        h[sel] += np.mean(x * x, axis=1, keepdims=True)
        w[sel] -= lr * x / np.sqrt(h[sel] + eps)
        np.testing.assert_allclose(W.asnumpy(), w, rtol=1e-12, atol=1e-14)
    state = opt.state["w"].state
    assert state.shape == (ROWS, 1) and state.stype == weight_stype
    np.testing.assert_allclose(state.asnumpy(), h, rtol=1e-12)


def test_rowwise_adagrad_keeps_eps_outside_the_root():
    """The difference from ``groupadagrad``: FBGEMM's ``sqrt(history) + eps``."""
    w0, grads = _data(3)
    out = {}
    for name in ("rowwise_adagrad", "groupadagrad"):
        W = nd.array(w0, dtype="float64")
        create(name, learning_rate=0.1, eps=0.5).step(0, W, nd.array(grads[0], dtype="float64"))
        out[name] = W.asnumpy()
    h = np.mean(grads[0] ** 2, axis=1, keepdims=True)
    np.testing.assert_allclose(out["rowwise_adagrad"], w0 - 0.1 * grads[0] / (np.sqrt(h) + 0.5))
    np.testing.assert_allclose(out["groupadagrad"], w0 - 0.1 * grads[0] / np.sqrt(h + 0.5))


def test_get_updater_is_mxnets_updater_callable():
    opt = create("sgd", learning_rate=0.1, momentum=0.9)
    updater = get_updater(opt)
    assert isinstance(updater, nets.optim.Updater) and updater.optimizer is opt
    w0, grads = _data(4)
    W, reference = nd.array(w0, dtype="float64"), nd.array(w0, dtype="float64")
    other = create("sgd", learning_rate=0.1, momentum=0.9)
    for g in grads:
        G = nd.array(g, dtype="float64")
        updater(3, G, W)  # (index, grad, weight): MXNet's order
        other.step(3, reference, G)
    assert np.array_equal(W.asnumpy(), reference.asnumpy())
    assert set(updater.states) == {3} and updater.states[3] is opt.state[3].state
    # MXNet's aggregated call: lists of indices, gradients and weights
    A, B = nd.array(w0, dtype="float64"), nd.array(w0, dtype="float64")
    updater([5, 6], [nd.array(grads[0], dtype="float64")] * 2, [A, B])
    assert np.array_equal(A.asnumpy(), B.asnumpy()) and set(updater.states) == {3, 5, 6}
    with pytest.raises(nets.NetsError, match="2 indices"):
        updater([5, 6], [nd.array(grads[0], dtype="float64")], [A])
