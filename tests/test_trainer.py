"""Trainer: rescaling, multipliers, stale gradients (dense and row_sparse alike), grad_req
'add', state save/load, and the MXNet sparse linear-regression result."""
import contextlib

import numpy as np
import pytest

import nets
from nets import autograd, nd
from nets import layers as L
from nets.test_utils import rand_ndarray
from nets.base import NetsError
from nets.trainer import StaleGradientError


def _net(grad_stype="row_sparse", in_units=20):
    net = L.Sequential()
    net.add(L.FullyConnectedSparse(in_units, 3, weight_grad_stype=grad_stype),
            L.Dense(1, in_units=3))
    net.initialize(init=nets.init.Normal(0.3))
    return net


def _backward(net, x):
    with autograd.record():
        out = net(x)
        loss = out * out
    loss.backward()


def _snapshot(net):
    return [p.data().asnumpy().copy() for p in net.collect_params().values()]


def test_step_rescales_by_batch_size_like_plain_sgd():
    net = _net(grad_stype="default")
    x = rand_ndarray((4, 20), "csr", density=0.3)
    before = _snapshot(net)
    _backward(net, x)
    grads = [p.grad().asnumpy().copy() for p in net.collect_params().values()]
    nets.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5}).step(4)
    for b, g, a in zip(before, grads, _snapshot(net)):
        np.testing.assert_allclose(a, b - 0.5 * g / 4, rtol=1e-5, atol=1e-7)


def test_lr_and_wd_multipliers():
    net = _net(grad_stype="default")
    net[1].weight.lr_mult = 0.0  # frozen by its multiplier
    net[0].bias.wd_mult = 0.0
    before = _snapshot(net)
    _backward(net, rand_ndarray((4, 20), "csr", density=0.3))
    nets.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "wd": 0.1}).step(1)
    after = _snapshot(net)
    assert np.array_equal(after[2], before[2])  # 1.weight: lr_mult 0
    assert not np.array_equal(after[0], before[0])


def _params(grad_stype, grad_req="write"):
    """Two (4, 2) parameters of ones; ``_lookup`` uses only the first."""
    ps = [nets.layers.Parameter(name, shape=(4, 2), grad_stype=grad_stype, grad_req=grad_req)
          for name in ("used", "unused")]
    for p in ps:
        p.initialize(init=nets.init.One())
    return ps


def _lookup(p, ids):
    """backward of ``sum(p[ids])``: p's gradient counts each row's ids (row_sparse when
    p's grad_stype is)."""
    with autograd.record():
        y = nd.Embedding(nd.array(ids), p.data(), input_dim=4, output_dim=2,
                         sparse_grad=p.grad_stype == "row_sparse").sum()
    y.backward()


def _counts(ids):
    return np.bincount(ids, minlength=4)[:, None] * np.ones((1, 2))


@pytest.mark.parametrize("grad_stype", ["default", "row_sparse"])
def test_a_stale_gradient_raises_before_any_update_and_ignore_stale_grad_skips_it(grad_stype):
    used, unused = ps = _params(grad_stype)
    trainer = nets.Trainer(ps, "sgd", {"learning_rate": 0.1})
    _lookup(used, [0, 2, 2])
    with pytest.raises(StaleGradientError, match=r"Parameter 'unused' is stale.*"
                                                 r"ignore_stale_grad=True") as err:
        trainer.step(2)
    assert isinstance(err.value, nets.NetsError) and isinstance(err.value, UserWarning)
    for p in ps:  # checked before updating: nothing changed, not even the fresh one
        np.testing.assert_array_equal(p.data().asnumpy(), np.ones((4, 2)))
    trainer.step(2, ignore_stale_grad=True)  # updates the fresh one only (plain SGD)
    np.testing.assert_allclose(used.data().asnumpy(), 1 - 0.1 * _counts([0, 2, 2]) / 2)
    np.testing.assert_array_equal(unused.data().asnumpy(), np.ones((4, 2)))
    with pytest.raises(StaleGradientError, match="Parameter 'used' is stale"):
        trainer.step(2)  # its gradient was used by that step
    trainer.step(2, ignore_stale_grad=True)  # nothing fresh: nothing changes
    np.testing.assert_allclose(used.data().asnumpy(), 1 - 0.1 * _counts([0, 2, 2]) / 2)


@pytest.mark.parametrize("grad_stype", ["default", "row_sparse"])
def test_a_step_keeps_the_gradient_and_makes_it_stale_whatever_its_stype(grad_stype):
    used, unused = _params(grad_stype)
    trainer = nets.Trainer([used], "sgd", {"learning_rate": 0.1})
    _lookup(used, [1, 3])
    grad = used.grad()
    assert grad.stype == grad_stype and autograd.grad_slot(used.data()).fresh
    trainer.step(1)
    assert used.grad() is grad and grad.stype == grad_stype  # kept, not cleared
    np.testing.assert_array_equal(grad.asnumpy(), _counts([1, 3]))
    assert not autograd.grad_slot(used.data()).fresh
    _lookup(used, [2])  # grad_req='write': the next backward overwrites it, fresh again
    np.testing.assert_array_equal(grad.asnumpy(), _counts([2]))
    trainer.step(1)
    expected = 1 - 0.1 * (_counts([1, 3]) + _counts([2]))
    np.testing.assert_allclose(used.data().asnumpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("grad_stype", ["default", "row_sparse"])
def test_grad_req_add_accumulates_across_steps_until_zero_grad(grad_stype):
    used, _ = _params(grad_stype, grad_req="add")
    trainer = nets.Trainer([used], "sgd", {"learning_rate": 0.1})
    _lookup(used, [0])
    trainer.step(1)
    _lookup(used, [3])
    np.testing.assert_array_equal(used.grad().asnumpy(), _counts([0, 3]))  # as MXNet
    trainer.step(1)
    np.testing.assert_allclose(used.data().asnumpy(),
                               1 - 0.1 * (_counts([0]) + _counts([0, 3])), rtol=1e-6)
    used.zero_grad()
    assert not used.grad().asnumpy().any() and used.grad().stype == grad_stype
    with pytest.raises(StaleGradientError):
        trainer.step(1)  # zero_grad is no backward: the gradient stays stale


def test_untouched_rows_of_a_row_sparse_gradient_keep_their_values():
    net = _net()
    x = nd.sparse.csr_matrix(([1.0, 2.0], [3, 11], [0, 1, 2]), shape=(2, 20))
    before = net[0].weight.data().asnumpy().copy()
    _backward(net, x)
    assert list(net[0].weight.grad().indices.asnumpy()) == [3, 11]
    nets.Trainer(net.collect_params(), "adam", {"learning_rate": 0.1}).step(2)
    after = net[0].weight.data().asnumpy()
    untouched = np.setdiff1d(np.arange(20), [3, 11])
    assert np.array_equal(after[untouched], before[untouched])
    assert not np.array_equal(after[[3, 11]], before[[3, 11]])


def test_grad_req_add_accumulates_until_zero_grad():
    net = _net()
    net.collect_params().setattr("grad_req", "add")
    a = nd.sparse.csr_matrix(([1.0], [2], [0, 1]), shape=(1, 20))
    b = nd.sparse.csr_matrix(([1.0], [5], [0, 1]), shape=(1, 20))
    _backward(net, a)
    _backward(net, b)
    g = net[0].weight.grad()
    assert g.stype == "row_sparse" and list(g.indices.asnumpy()) == [2, 5]
    net.zero_grad()
    assert net[0].weight.grad().indices.size == 0


def test_learning_rate_and_optimizer_instance():
    net = _net()
    opt = nets.optim.SGD(learning_rate=0.3, momentum=0.9)
    trainer = nets.Trainer(net.collect_params(), opt)
    assert trainer.learning_rate == 0.3
    trainer.set_learning_rate(0.05)
    assert trainer.learning_rate == 0.05 and trainer.optimizer is opt
    with pytest.raises(nets.NetsError, match="optimizer_params"):
        nets.Trainer(net.collect_params(), opt, {"learning_rate": 1.0})
    with pytest.raises(nets.NetsError, match="Parameters"):
        nets.Trainer([1, 2], "sgd")


@pytest.mark.parametrize("optimizer", ["sgd", "adam", "adagrad", "rmsprop", "ftrl"])
def test_save_load_states_resumes_exactly(tmp_path, optimizer):
    params = {"learning_rate": 0.05}
    if optimizer == "sgd":
        params["momentum"] = 0.9
    xs = [rand_ndarray((3, 20), "csr", density=0.3) for _ in range(4)]

    def run(net, trainer, batches):
        for x in batches:
            _backward(net, x)
            trainer.step(3)

    reference = _net()
    init = _snapshot(reference)
    run(reference, nets.Trainer(reference.collect_params(), optimizer, params), xs)

    resumed = _net()
    for p, v in zip(resumed.collect_params().values(), init):
        p.set_data(nd.array(v))
    first = nets.Trainer(resumed.collect_params(), optimizer, params)
    run(resumed, first, xs[:2])
    path = str(tmp_path / "states.npz")
    first.save_states(path)
    second = nets.Trainer(resumed.collect_params(), optimizer, params)
    second.load_states(path)
    run(resumed, second, xs[2:])
    for a, b in zip(_snapshot(reference), _snapshot(resumed)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_states_saved_before_any_step_are_created_at_the_first_step(tmp_path):
    """A state saved as None (no step yet) is made at the next step, as on a fresh
    Trainer: Adam then keeps its moments instead of updating without them."""
    x = rand_ndarray((3, 20), "csr", density=0.3)
    nets_ = [_net(), _net()]
    for p, q in zip(*[n.collect_params().values() for n in nets_]):
        q.set_data(p.data().copy())
    fresh = nets.Trainer(nets_[0].collect_params(), "adam", {"learning_rate": 0.05})
    path = str(tmp_path / "none.npz")
    nets.Trainer(nets_[1].collect_params(), "adam").save_states(path)
    loaded = nets.Trainer(nets_[1].collect_params(), "adam", {"learning_rate": 0.05})
    loaded.load_states(path)
    for _ in range(3):
        for net, trainer in zip(nets_, (fresh, loaded)):
            _backward(net, x)
            trainer.step(3)
    for a, b in zip(*map(_snapshot, nets_)):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_load_states_rejects_mismatches(tmp_path):
    net = _net()
    trainer = nets.Trainer(net.collect_params(), "adam")
    _backward(net, rand_ndarray((2, 20), "csr", density=0.3))
    trainer.step(2)
    path = str(tmp_path / "s.npz")
    trainer.save_states(path)
    with pytest.raises(nets.NetsError, match="optimizer"):
        nets.Trainer(net.collect_params(), "sgd").load_states(path)
    with pytest.raises(nets.NetsError, match="parameters"):
        nets.Trainer(_net().collect_params(), "adam").load_states(path)


def test_sparse_linear_regression_reaches_mse_below_one():
    """The MXNet sparse linear-regression tutorial: y = x . [1..100] on 1000 CSR rows of
    density 0.01, FullyConnectedSparse with row_sparse gradients, SGD momentum 0.9, batch 1,
    lr 0.05, 10 epochs -> MSE < 1."""
    nets.random.seed(0)
    x = rand_ndarray((1000, 100), "csr", density=0.01)
    w_true = np.arange(1, 101, dtype=np.float32)
    y = x.asnumpy() @ w_true
    net = L.FullyConnectedSparse(100, 1, weight_grad_stype="row_sparse")
    net.initialize()
    trainer = nets.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.05, "momentum": 0.9})
    loss_fn = nets.loss.L2Loss()
    labels = nd.array(y)
    for _ in range(10):
        for i in range(1000):
            with autograd.record():
                loss = loss_fn(net(x[i]), labels[i:i + 1])
            loss.backward()
            trainer.step(1)
    pred = net(x).asnumpy().reshape(-1)
    assert np.mean((pred - y) ** 2) < 1.0


# -- through a KVStore ------------------------------------------------------------------------

def _param(stype="default", grad_stype="default", shape=(10, 1)):
    x = nets.layers.Parameter("x", shape=shape, stype=stype, grad_stype=grad_stype)
    x.initialize(init="zeros")
    return x


@pytest.mark.parametrize("make_kv", [lambda: "local", lambda: "device",
                                     lambda: nets.kv.create("local")])
@pytest.mark.parametrize("stype, grad_stype, update_on_kvstore, expected", [
    ("default", "default", True, True),
    ("default", "default", False, False),
    ("default", "row_sparse", None, False),
    ("default", "row_sparse", True, True),
    ("default", "row_sparse", False, False),
    ("row_sparse", "row_sparse", None, True),
    ("row_sparse", "row_sparse", False, NetsError),
])
def test_update_on_kvstore_table_and_step_arithmetic(make_kv, stype, grad_stype,
                                                     update_on_kvstore, expected):
    """MXNet's ``test_trainer_sparse_kv`` on one device: ``y = w + 1``, so each step
    subtracts lr * 1 from every element, whichever side updates."""
    x = _param(stype, grad_stype)
    if expected is NetsError:
        with pytest.raises(NetsError, match="update_on_kvstore=False is not possible"):
            nets.Trainer([x], "sgd", {"learning_rate": 0.1}, kvstore=make_kv(),
                         update_on_kvstore=update_on_kvstore)
        return
    trainer = nets.Trainer([x], "sgd", {"learning_rate": 0.1}, kvstore=make_kv(),
                           update_on_kvstore=update_on_kvstore)
    assert trainer._update_on_kvstore is expected
    all_rows = nd.arange(0, 10, dtype="int64")
    for step in (1, 2):
        w = x.data() if stype == "default" else x.row_sparse_data(all_rows)
        # rsp + 1 is a dense result the size of the row_sparse input: nets says so
        dense_result = (pytest.warns(nets.DenseResultWarning) if stype == "row_sparse"
                        else contextlib.nullcontext())
        with autograd.record(), dense_result:
            y = w + 1
        y.backward()
        trainer.step(1)
        updated = x.data() if stype == "default" else x.row_sparse_data(all_rows)
        np.testing.assert_allclose(updated.asnumpy(), np.full((10, 1), -0.1 * step), rtol=1e-6)


def test_a_store_is_made_from_a_name_only_when_needed():
    dense = _param()
    assert nets.Trainer([dense], "sgd", kvstore="local")._kvstore is None  # nothing to reduce
    t = nets.Trainer([dense], "sgd", kvstore="local", update_on_kvstore=True)
    assert t._kvstore.type == "local"
    assert nets.Trainer([dense], "sgd", kvstore="local",
                        compression_params={"type": "2bit", "threshold": 1})._kvstore
    sparse = _param("row_sparse", "row_sparse")
    assert nets.Trainer([sparse], "sgd", kvstore="device")._kvstore.type == "device"
    kv = nets.kv.create()
    assert nets.Trainer([dense], "sgd", kvstore=kv)._kvstore is kv


def test_trainer_store_errors():
    x = _param()
    with pytest.raises(NetsError, match="update_on_kvstore=True needs a kvstore"):
        nets.Trainer([x], "sgd", kvstore=None, update_on_kvstore=True)
    with pytest.raises(NetsError, match="compression_params need a kvstore"):
        nets.Trainer([x], "sgd", compression_params={"type": "2bit"})
    with pytest.raises(NetsError, match=r"nets\[dist\]"):
        nets.Trainer([x], "sgd", kvstore="dist_sync")
    with pytest.raises(NetsError, match="unknown store type 'nccl'"):
        nets.Trainer([x], "sgd", kvstore="nccl")
    with pytest.raises(NetsError, match="kvstore must be None"):
        nets.Trainer([x], "sgd", kvstore=3)
    t = nets.Trainer([x], "sgd", kvstore=nets.kv.create())
    with pytest.raises(NetsError, match="update_on_kvstore"):
        t.update(1)
    with pytest.raises(NetsError, match="update_on_kvstore"):
        t.allreduce_grads()


def _train(net, trainer, batches):
    for x in batches:
        _backward(net, x)
        trainer.step(x.shape[0])
    return _snapshot(net)


def _batches(n=4):
    return [rand_ndarray((5, 20), "csr", density=0.2) for _ in range(n)]


@pytest.mark.parametrize("grad_stype", ["default", "row_sparse"])
@pytest.mark.parametrize("update_on_kvstore", [True, False])
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_training_through_a_store_equals_training_without_one_bit_for_bit(
        grad_stype, update_on_kvstore, optimizer):
    batches = _batches()
    params = {"learning_rate": 0.1, "wd": 0.01}
    nets.random.seed(3)
    plain = _net(grad_stype)
    nets.random.seed(3)
    stored = _net(grad_stype)
    want = _train(plain, nets.Trainer(plain.collect_params(), optimizer, params), batches)
    trainer = nets.Trainer(stored.collect_params(), optimizer, params,
                           kvstore=nets.kv.create("local"), update_on_kvstore=update_on_kvstore)
    got = _train(stored, trainer, batches)
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a, b)


def _embedding_net():
    net = L.SparseEmbedding(12, 3)
    net.initialize(init=nets.init.Normal(0.5))
    return net


def _embedding_step(net, trainer, ids, pull):
    if pull:  # MXNet's pattern: pull the batch's rows, then forward
        net.weight.row_sparse_data(ids)
    with autograd.record():
        loss = (net(ids) * net(ids)).sum()
    loss.backward()
    trainer.step(ids.shape[0])


@pytest.mark.parametrize("pull", [False, True])
def test_row_sparse_weight_on_the_store_trains_like_the_local_trainer(pull):
    batches = [nd.array(b) for b in ([1, 4, 4, 7], [0, 1, 11], [4, 5, 6, 7])]
    nets.random.seed(5)
    plain = _embedding_net()
    nets.random.seed(5)
    stored = _embedding_net()
    t_plain = nets.Trainer(plain.collect_params(), "adam", {"learning_rate": 0.1})
    t_store = nets.Trainer(stored.collect_params(), "adam", {"learning_rate": 0.1},
                           kvstore="local")
    assert t_store._update_on_kvstore
    for ids in batches:
        _embedding_step(plain, t_plain, ids, False)
        _embedding_step(stored, t_store, ids, pull)
        rows = nd.arange(0, 12, dtype="int64")
        np.testing.assert_array_equal(stored.weight.row_sparse_data(rows).asnumpy(),
                                      plain.weight.data().asnumpy())


class _Linear:
    """``dot(x, w) + b`` over parameters of fixed names, so that two instances share a
    states file."""

    def __init__(self, values=None):
        self.params = [nets.layers.Parameter("w", shape=(20, 3), grad_stype="row_sparse"),
                       nets.layers.Parameter("b", shape=(3,))]
        for p, v in zip(self.params, values or [None, None]):
            p.initialize(init=nets.init.Normal(0.3))
            if v is not None:
                p.set_data(nd.array(v))

    def train(self, trainer, batches):
        w, b = self.params
        for x in batches:
            with autograd.record():
                out = nd.dot(x, w.data()) + b.data()
                loss = out * out
            loss.backward()
            trainer.step(x.shape[0])
        return [p.data().asnumpy().copy() for p in self.params]


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_states_saved_through_the_store_load_into_a_plain_trainer(tmp_path, optimizer):
    batches = _batches(6)
    params = {"learning_rate": 0.05}
    if optimizer == "sgd":
        params["momentum"] = 0.9
    stored = _Linear()
    t_store = nets.Trainer(stored.params, optimizer, params, kvstore=nets.kv.create(),
                           update_on_kvstore=True)
    stored.train(t_store, batches[:3])
    t_store.save_states(str(tmp_path / "s.npz"))
    plain = _Linear([p.data().asnumpy() for p in stored.params])
    t_plain = nets.Trainer(plain.params, optimizer, params)
    t_plain.load_states(str(tmp_path / "s.npz"))
    for a, b in zip(stored.train(t_store, batches[3:]), plain.train(t_plain, batches[3:])):
        np.testing.assert_array_equal(a, b)
    # and back: the plain Trainer's file loads into the store
    t_plain.save_states(str(tmp_path / "p.npz"))
    t_store.load_states(str(tmp_path / "p.npz"))
    for a, b in zip(stored.train(t_store, batches[:2]), plain.train(t_plain, batches[:2])):
        np.testing.assert_array_equal(a, b)
