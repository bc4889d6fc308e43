"""Trainer: rescaling, multipliers, stale gradients (dense and row_sparse alike), grad_req
'add', state save/load, and the MXNet sparse linear-regression result."""
import numpy as np
import pytest

import nets
from nets import autograd, nd
from nets import layers as L
from nets.test_utils import rand_ndarray
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
