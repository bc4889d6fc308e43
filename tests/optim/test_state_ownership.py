"""The optimizer owns each parameter's state (``Optimizer.state``, as ``torch.optim``):
``step`` makes it at a parameter's first update; the Trainer, the Module and a store's
updater call ``step`` and hold none of it; MXNet's documented extension - a registered
subclass implementing ``create_state`` and ``update`` with ``_update_count``, ``_get_lr``
and ``_get_wd`` - trains through all three and saves its state."""
import numpy as np
import pytest

import nets
from nets import autograd, nd, sym
from nets.arrays.dense import NDArray
from nets.optim import FactorScheduler, Optimizer, Record, get_updater, register


def _state_arrays(opt):
    """Every array of every state ``opt`` keeps."""
    out = []

    def walk(s):
        if isinstance(s, NDArray):
            out.append(s)
        elif isinstance(s, (tuple, list)):
            for x in s:
                walk(x)

    for record in opt.state.values():
        assert isinstance(record, Record) and record.has_state
        walk(record.state)
    return out


def _holds_no_state(obj, opt):
    """``obj``'s attributes (and the dicts, lists, tuples and sets in them) hold no
    ``Record`` and none of ``opt``'s state arrays: ``opt`` is their only keeper."""
    kept = {id(a) for a in _state_arrays(opt)}
    assert kept, "the optimizer made no state"

    def walk(value, where):
        assert not isinstance(value, Record), where
        assert id(value) not in kept, where
        if isinstance(value, dict):
            for k, v in value.items():
                walk(k, where)
                walk(v, f"{where}[{k!r}]")
        elif isinstance(value, (list, tuple, set, frozenset)):
            for v in value:
                walk(v, where)

    for name, value in vars(obj).items():
        if value is not opt:
            walk(value, f"{type(obj).__name__}.{name}")


def _linear_batches(n=3, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((4, 3)).astype(np.float32),
             rng.standard_normal((4, 2)).astype(np.float32)) for _ in range(n)]


def _dense_net():
    net = nets.layers.Dense(2, in_units=3, prefix="lin_")  # (fixed names: one states file)
    net.initialize(nets.init.Uniform(0.5))
    return net


def _train(net, trainer, batches):
    for x, y in batches:
        with autograd.record():
            loss = ((net(nd.array(x)) - nd.array(y)) ** 2).sum()
        loss.backward()
        trainer.step(x.shape[0])


@pytest.mark.parametrize("kvstore", [None, "local"])
def test_the_trainer_and_its_store_keep_no_state_of_their_own(kvstore):
    net = _dense_net()
    trainer = nets.Trainer(net.collect_params(), "adam", {"learning_rate": 0.1},
                           kvstore=kvstore, update_on_kvstore=True if kvstore else None)
    _train(net, trainer, _linear_batches())
    opt = trainer.optimizer
    assert sorted(opt.state) == [0, 1]  # one record per parameter, keyed by position
    assert all(r.step == 3 and len(r.state) == 2 for r in opt.state.values())
    _holds_no_state(trainer, opt)
    if kvstore:
        store = trainer._kvstore
        _holds_no_state(store, opt)
        updater = store._updater
        assert updater.optimizer is opt
        _holds_no_state(updater, opt)


def test_the_module_keeps_no_state_of_its_own():
    data = sym.var("data")
    out = sym.LinearRegressionOutput(sym.FullyConnected(data, num_hidden=2, name="fc"),
                                     name="lro")
    mod = nets.mod.Module(out, label_names=["lro_label"])
    mod.bind(data_shapes=[("data", (4, 3))], label_shapes=[("lro_label", (4, 2))])
    mod.init_params()
    mod.init_optimizer(kvstore=None, optimizer="sgd",
                       optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    for x, y in _linear_batches():
        mod.forward_backward(nets.data.DataBatch([nd.array(x)], [nd.array(y)]))
        mod.update()
    opt = mod.optimizer
    assert sorted(opt.state) == [0, 1] and all(r.step == 3 for r in opt.state.values())
    _holds_no_state(mod, opt)


def test_an_updater_is_the_optimizer_s_step():
    """MXNet's ``get_updater(opt)(index, grad, weight)``: the state lives in ``opt.state``
    (``updater.states`` shows it), and the update is ``opt.step``'s."""
    opt = nets.optim.create("sgd", learning_rate=0.1, momentum=0.5)
    updater = get_updater(opt)
    w, ref = nd.ones((2, 3)), np.ones((2, 3), np.float32)
    mom = np.zeros_like(ref)
    for g in (1.0, -2.0):
        updater("w", nd.full((2, 3), g), w)
        mom = 0.5 * mom - 0.1 * g
        ref = ref + mom
    np.testing.assert_allclose(w.asnumpy(), ref, rtol=1e-6)
    assert set(updater.states) == {"w"} and updater.states["w"] is opt.state["w"].state
    np.testing.assert_allclose(updater.states["w"].asnumpy(), mom, rtol=1e-6)
    _holds_no_state(updater, opt)


@register
class DocumentedMomentumSGD(Optimizer):
    """MXNet's documented way to write an optimizer: ``create_state`` and ``update``."""

    def __init__(self, momentum=0.0, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum

    def create_state(self, index, weight):
        return nd.zeros(weight.shape, weight.context, dtype=weight.dtype)

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        grad = grad * self.rescale_grad
        if self.clip_gradient is not None:
            grad = nd.clip(grad, -self.clip_gradient, self.clip_gradient)
        state[:] = self.momentum * state - lr * (grad + wd * weight)
        weight[:] += state


def _documented(**kwargs):
    schedule = FactorScheduler(step=2, factor=0.5, base_lr=0.2)
    return nets.optim.create("documentedmomentumsgd", momentum=0.9, wd=0.01,
                             lr_scheduler=schedule, **kwargs)


def _numpy_momentum_sgd(w, mom, grad, n, lr_mult, wd_mult, rescale):
    """Update ``n`` of the documented optimizer, plain numpy on the whole (dense) arrays:
    the rate is the schedule's at ``num_update = n``, times the multipliers."""
    lr = FactorScheduler(step=2, factor=0.5, base_lr=0.2)(n) * lr_mult
    mom[:] = 0.9 * mom - lr * (grad * rescale + 0.01 * wd_mult * w)
    w += mom


def test_a_documented_mxnet_optimizer_trains_through_step_with_its_state_kept():
    opt = _documented()
    opt.set_lr_mult({"w": 0.5})
    rng = np.random.default_rng(1)
    w0 = rng.standard_normal((4, 3)).astype(np.float32)
    weight, ref, mom = nd.array(w0), w0.copy(), np.zeros_like(w0)
    for n in range(1, 6):
        g = rng.standard_normal((4, 3)).astype(np.float32)
        opt.step("w", weight, nd.array(g))
        _numpy_momentum_sgd(ref, mom, g, n, 0.5, 1.0, 1.0)
        for row in range(4):
            np.testing.assert_allclose(weight.asnumpy()[row], ref[row], rtol=1e-5, atol=1e-6)
    assert opt.state["w"].step == 5 and opt.num_update == 5
    np.testing.assert_allclose(opt.state["w"].state.asnumpy(), mom, rtol=1e-5, atol=1e-6)
    rsp = nd.sparse.row_sparse_array((np.ones((1, 3), np.float32), [1]), shape=(4, 3))
    assert opt.changed_rows(rsp) is None  # its own update may write any row


@pytest.mark.parametrize("kvstore", [None, "local"])
def test_a_documented_mxnet_optimizer_trains_through_the_trainer_and_the_store(tmp_path,
                                                                             kvstore):
    """Through ``Trainer.step`` (the store running it when ``kvstore='local'``), with the
    parameters' multipliers and the schedule fed by ``_update_count``; its states save and
    load into a new Trainer that continues identically."""
    batches = _linear_batches(5, seed=2)
    net = _dense_net()
    net.weight.lr_mult, net.bias.wd_mult = 2.0, 0.0
    start = [p.data().asnumpy().copy() for p in (net.weight, net.bias)]
    trainer = nets.Trainer(net.collect_params(), _documented(), kvstore=kvstore,
                           update_on_kvstore=True if kvstore else None)
    ref = [a.copy() for a in start]
    moms = [np.zeros_like(a) for a in start]
    for n, (x, y) in enumerate(batches[:3], start=1):
        _train(net, trainer, [(x, y)])
        err = 2 * (x @ ref[0].T + ref[1] - y)  # d loss / d output
        grads = [err.T @ x, err.sum(axis=0)]
        for a, mom, g, lr_mult, wd_mult in zip(ref, moms, grads, (2.0, 1.0), (1.0, 0.0)):
            _numpy_momentum_sgd(a, mom, g, n, lr_mult, wd_mult, 1.0 / x.shape[0])
        for p, a in zip((net.weight, net.bias), ref):
            for row in range(a.shape[0]):
                np.testing.assert_allclose(p.data().asnumpy()[row], a[row], rtol=1e-4,
                                           atol=1e-5)
    _holds_no_state(trainer, trainer.optimizer)
    path = str(tmp_path / "states.npz")
    trainer.save_states(path)
    copy = _dense_net()
    for p, q in zip((net.weight, net.bias), (copy.weight, copy.bias)):
        q.set_data(p.data().copy())
        q.lr_mult, q.wd_mult = p.lr_mult, p.wd_mult
    resumed = nets.Trainer(copy.collect_params(), _documented())
    resumed.load_states(path)
    assert {i: r.step for i, r in resumed.optimizer.state.items()} == {0: 3, 1: 3}
    _train(net, trainer, batches[3:])
    _train(copy, resumed, batches[3:])
    for p, q in zip((net.weight, net.bias), (copy.weight, copy.bias)):
        np.testing.assert_allclose(p.data().asnumpy(), q.data().asnumpy(), rtol=1e-6)


@pytest.mark.parametrize("keys", [[3, 5, 7], ["a", "b", "c"]])
def test_a_store_saves_and_loads_the_state_of_keys_of_either_type(tmp_path, keys):
    """MXNet's store tests key its values 3, 5, 7 or by strings: the optimizer's state of
    each key goes through ``save_optimizer_states``/``load_optimizer_states`` and a new
    store continues as the first (Adam's moments and per-key counts)."""
    def store(values):
        kv = nets.kv.create("local")
        kv.set_optimizer(nets.optim.Adam(learning_rate=0.05))
        kv.init(keys, values)
        return kv

    rng = np.random.default_rng(4)
    grads = [[nd.array(rng.standard_normal((3, 2)).astype(np.float32)) for _ in keys]
             for _ in range(4)]
    a = store([nd.ones((3, 2)) for _ in keys])
    for n, g in enumerate(grads[:2]):
        a.push(keys[:n + 2], g[:n + 2])  # the last key is updated once, the others twice
    path = str(tmp_path / "store.npz")
    a.save_optimizer_states(path)
    outs = [nd.zeros((3, 2)) for _ in keys]
    a.pull(keys, out=outs)
    b = store(outs)
    b.load_optimizer_states(path)
    opt_a, opt_b = a._updater.optimizer, b._updater.optimizer
    assert list(opt_b.state) == list(opt_a.state) == keys
    assert [opt_b.state[k].step for k in keys] == [2, 2, 1]
    for g in grads[2:]:
        a.push(keys, g)
        b.push(keys, g)
    for k in keys:
        x, y = nd.zeros((3, 2)), nd.zeros((3, 2))
        a.pull(k, out=x)
        b.pull(k, out=y)
        np.testing.assert_array_equal(x.asnumpy(), y.asnumpy())
