"""Hyper-parameters are checked where they enter (issue 24, item 8): NaN, infinite and
out-of-range values raise ``NetsError`` naming the argument and the value - in every
optimizer's constructor, in later assignments and setters, in the schedulers, in
``Trainer.step``/``update`` (``batch_size``) and in the store's gradient compression. A zero
learning rate is legal (it freezes the weights)."""
import re

import numpy as np
import pytest

import nets
from nets import autograd, nd
from nets.base import NetsError
from nets.optim import create
from nets.optim.hyper import check_number
from nets.optim.lr_scheduler import (CosineScheduler, FactorScheduler, MultiFactorScheduler,
                                     PolyScheduler)

NAMES = ["sgd", "adam", "adamw", "adagrad", "rowwise_adagrad", "groupadagrad", "ftrl", "rmsprop",
         "signum", "signsgd"]
NAN, INF = float("nan"), float("inf")


def _raises(name, value):
    """``pytest.raises`` for the error naming ``name=value``."""
    shown = value if isinstance(value, (int, float)) else repr(value)
    return pytest.raises(NetsError, match="^" + re.escape(f"{name}={shown}: must be "))


def test_every_optimizer_of_nets_is_tested_here():
    registry = nets.optim.Optimizer.opt_registry
    ours = {klass for klass in registry.values() if klass.__module__.startswith("nets.optim")}
    assert ours == {registry[name] for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("arg, value", [
    ("learning_rate", NAN), ("learning_rate", INF), ("learning_rate", -INF),
    ("learning_rate", -0.1), ("learning_rate", "0.1"), ("learning_rate", True),
    ("wd", NAN), ("wd", INF), ("wd", -1.0),
    ("rescale_grad", NAN), ("rescale_grad", INF), ("rescale_grad", -0.5),
    ("clip_gradient", NAN), ("clip_gradient", INF), ("clip_gradient", -1.0),
])
def test_common_hyperparameters_are_checked(name, arg, value):
    with _raises(arg, value):
        create(name, **{arg: value})


def test_the_message_names_the_rule():
    with pytest.raises(NetsError) as e:
        create("sgd", learning_rate=NAN)
    assert str(e.value) == "learning_rate=nan: must be a finite number >= 0"
    with pytest.raises(NetsError) as e:
        create("adam", beta1=1.0)
    assert str(e.value) == "beta1=1.0: must be a finite number in [0, 1)"
    with pytest.raises(NetsError) as e:
        create("adam", epsilon=0)
    assert str(e.value) == "epsilon=0: must be a finite number > 0"
    with pytest.raises(NetsError) as e:
        create("sgd", clip_gradient=-1)
    assert str(e.value) == "clip_gradient=-1: must be None or a finite number >= 0"


@pytest.mark.parametrize("name, arg, value", [
    ("sgd", "momentum", NAN), ("sgd", "momentum", -0.1), ("sgd", "momentum", 1.0),
    ("sgd", "momentum", 1.5),
    *[(name, beta, value) for name in ("adam", "adamw") for beta in ("beta1", "beta2")
      for value in (NAN, INF, -0.1, 1.0, 2.0)],
    *[(name, "epsilon", value) for name in ("adam", "adamw", "rmsprop")
      for value in (0.0, -1e-8, NAN, INF)],
    *[(name, "eps", value) for name in ("adagrad", "rowwise_adagrad", "groupadagrad")
      for value in (0.0, -1.0, NAN)],
    ("ftrl", "lamda1", -0.01), ("ftrl", "lamda1", NAN), ("ftrl", "beta", -1.0),
    ("ftrl", "beta", INF), ("ftrl", "learning_rate", 0.0),
    *[("rmsprop", gamma, value) for gamma in ("gamma1", "gamma2")
      for value in (NAN, -0.5, 1.0)],
    ("rmsprop", "clip_weights", NAN), ("rmsprop", "clip_weights", INF),
    ("signum", "momentum", NAN), ("signum", "momentum", 1.0), ("signum", "momentum", -0.1),
    ("signum", "wd_lh", -0.1), ("signum", "wd_lh", NAN), ("signsgd", "wd_lh", INF),
])
def test_optimizer_specific_hyperparameters_are_checked(name, arg, value):
    with _raises(arg, value):
        create(name, **{arg: value})


@pytest.mark.parametrize("name, kwargs", [
    ("sgd", {"momentum": 0.0}), ("sgd", {"momentum": 0.99}),
    ("adam", {"beta1": 0.0, "beta2": 0.0}), ("adamw", {"epsilon": 1e-30}),
    ("adagrad", {"eps": 1e-12}), ("rowwise_adagrad", {"eps": 1e-12}),
    ("ftrl", {"lamda1": 0.0, "beta": 0.0}),
    ("rmsprop", {"gamma1": 0.0, "gamma2": 0.0, "clip_weights": 0.0}),
    ("sgd", {"learning_rate": np.float32(0.1), "wd": np.float64(0.0), "rescale_grad": 0,
             "clip_gradient": 0}),
])
def test_values_at_the_ends_of_their_ranges_are_accepted(name, kwargs):
    opt = create(name, **kwargs)
    for arg, value in kwargs.items():
        attr = {"learning_rate": "lr", "eps": "float_stable_eps"}.get(arg, arg)
        assert getattr(opt, attr) == value


@pytest.mark.parametrize("name", [n for n in NAMES if n != "ftrl"])
@pytest.mark.parametrize("stype", ["default", "row_sparse"])
def test_a_zero_learning_rate_freezes_the_weight(name, stype):
    w0 = np.arange(12, dtype=np.float32).reshape(4, 3) / 7
    weight = nd.array(w0)
    opt = create(name, learning_rate=0.0)
    state = opt.create_state(0, weight)
    grad = nd.array(np.full((4, 3), 0.5, np.float32)).tostype(stype)
    for _ in range(3):
        opt.update(0, weight, grad, state)
    assert np.array_equal(weight.asnumpy(), w0)


@pytest.mark.parametrize("name", NAMES)
def test_later_assignments_and_setters_are_checked(name):
    opt = create(name, learning_rate=0.1)
    with _raises("learning_rate", NAN):
        opt.set_learning_rate(NAN)
    with _raises("learning_rate", INF):
        opt.learning_rate = INF
    with _raises("learning_rate", -1.0):
        opt.lr = -1.0
    with _raises("wd", -1):
        opt.wd = -1
    with _raises("rescale_grad", NAN):
        opt.rescale_grad = NAN
    assert (opt.lr, opt.learning_rate, opt.wd, opt.rescale_grad) == (0.1, 0.1, 0.0, 1.0)


def test_later_assignments_of_optimizer_specific_hyperparameters_are_checked():
    sgd = create("sgd", momentum=0.9)
    with _raises("momentum", 1.0):
        sgd.momentum = 1.0
    adam = create("adam")
    with _raises("beta2", NAN):
        adam.beta2 = NAN
    assert (sgd.momentum, adam.beta2) == (0.9, 0.999)


@pytest.mark.parametrize("setter", ["set_lr_mult", "set_wd_mult"])
@pytest.mark.parametrize("mult", [NAN, INF, -1.0])
def test_multipliers_are_checked(setter, mult):
    opt = create("sgd")
    what = setter[4:]
    with pytest.raises(NetsError, match=rf"^{what}\['w'\]={mult}: must be a finite number >= 0"):
        getattr(opt, setter)({0: 1.0, "w": mult})


def test_ftrl_refuses_a_zero_rate_reached_through_a_multiplier():
    """FTRL divides by the rate: a parameter frozen by lr_mult=0 would fill with NaNs."""
    opt = create("ftrl", learning_rate=0.1)
    opt.set_lr_mult({0: 0.0})
    weight = nd.ones((2, 2))
    with pytest.raises(NetsError, match="FTRL: learning rate 0.0 .* must be > 0"):
        opt.update(0, weight, nd.ones((2, 2)), opt.create_state(0, weight))
    assert np.array_equal(weight.asnumpy(), np.ones((2, 2)))


@pytest.mark.parametrize("make, arg, value", [
    (lambda: FactorScheduler(step=2, base_lr=NAN), "base_lr", NAN),
    (lambda: FactorScheduler(step=2, base_lr=-0.1), "base_lr", -0.1),
    (lambda: FactorScheduler(step=2, factor=NAN), "factor", NAN),
    (lambda: FactorScheduler(step=2, factor=0), "factor", 0),
    (lambda: FactorScheduler(step=2, stop_factor_lr=NAN), "stop_factor_lr", NAN),
    (lambda: FactorScheduler(step=2, stop_factor_lr=-1.0), "stop_factor_lr", -1.0),
    (lambda: MultiFactorScheduler(step=[2], factor=INF), "factor", INF),
    (lambda: MultiFactorScheduler(step=[2], base_lr=INF), "base_lr", INF),
    (lambda: PolyScheduler(max_update=5, pwr=NAN), "pwr", NAN),
    (lambda: PolyScheduler(max_update=5, pwr=-2), "pwr", -2),
    (lambda: PolyScheduler(max_update=5, final_lr=NAN), "final_lr", NAN),
    (lambda: CosineScheduler(max_update=5, final_lr=-0.01), "final_lr", -0.01),
    (lambda: CosineScheduler(max_update=5, warmup_steps=2, warmup_begin_lr=NAN),
     "warmup_begin_lr", NAN),
    (lambda: CosineScheduler(max_update=5, warmup_steps=2, warmup_begin_lr=-0.5),
     "warmup_begin_lr", -0.5),
])
def test_scheduler_rates_are_checked(make, arg, value):
    with _raises(arg, value):
        make()


def test_a_schedulers_base_lr_set_later_is_checked():
    sched = FactorScheduler(step=2, base_lr=0.1)
    with _raises("base_lr", NAN):
        sched.base_lr = NAN
    with _raises("learning_rate", INF):
        create("sgd", learning_rate=INF, lr_scheduler=sched)
    assert sched.base_lr == 0.1


def test_check_number_takes_a_0d_array_as_its_number():
    assert check_number("x", np.array(0.5), low=0) == 0.5
    for bad, shown in [(np.array([0.5]), "array([0.5])"), (np.array(NAN), "nan"),
                       (np.array("a"), "array('a', dtype='<U1')")]:
        with pytest.raises(NetsError, match=re.escape(f"x={shown}: must be a finite number")):
            check_number("x", bad)


# -- Trainer ---------------------------------------------------------------------------

def _trained_net(kvstore=None):
    """A linear layer with a fresh gradient and its Trainer."""
    net = nets.layers.Dense(2, in_units=3)
    net.initialize(init=nets.init.One())
    trainer = nets.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5},
                           kvstore=kvstore, update_on_kvstore=None if kvstore is None else True)
    with autograd.record():
        loss = net(nd.ones((4, 3))).sum()
    loss.backward()
    return net, trainer


@pytest.mark.parametrize("kvstore, method", [(None, "step"), (None, "update"),
                                             ("local", "step")])  # (the store updates)
@pytest.mark.parametrize("batch_size", [0, -1, -4.0, NAN, INF, "4", None])
def test_trainer_refuses_a_batch_size_that_is_not_a_positive_number(kvstore, method,
                                                                    batch_size):
    net, trainer = _trained_net(kvstore)
    with _raises("batch_size", batch_size):
        getattr(trainer, method)(batch_size)
    # nothing was updated, and a valid step still works with the same gradient
    assert np.array_equal(net.weight.data().asnumpy(), np.ones((2, 3)))
    getattr(trainer, method)(4)
    # d(sum(x W^T + b))/dW = 4 ones per row (4 samples), rescaled by 1/4, times lr 0.5
    np.testing.assert_allclose(net.weight.data().asnumpy(), np.full((2, 3), 0.5))


def test_trainer_checks_a_batch_size_array_at_every_step():
    """A 0-d array batch size is checked at each step: it may have been written since."""
    net, trainer = _trained_net()
    size = np.array(4.0)
    trainer.step(size)
    size[...] = 0
    with autograd.record():
        loss = net(nd.ones((4, 3))).sum()
    loss.backward()
    with _raises("batch_size", 0.0):
        trainer.step(size)
    trainer.step(4)


def test_trainer_checks_the_learning_rate():
    net, trainer = _trained_net()
    with _raises("learning_rate", NAN):
        trainer.set_learning_rate(NAN)
    assert trainer.learning_rate == 0.5
    with _raises("learning_rate", -0.5):
        nets.Trainer(net.collect_params(), "sgd", {"learning_rate": -0.5})
    with _raises("wd", -1):
        nets.Trainer(net.collect_params(), "adam", {"wd": -1})


def test_module_init_optimizer_checks_the_optimizer_params():
    data = nets.sym.var("data")
    out = nets.sym.FullyConnected(data, num_hidden=1, name="fc")
    mod = nets.mod.Module(out, label_names=None)
    mod.bind(data_shapes=[("data", (2, 3))])
    mod.init_params()
    with _raises("learning_rate", NAN):
        mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": NAN})


@pytest.mark.parametrize("threshold", [NAN, INF, 0.0, -0.5])
def test_gradient_compression_threshold_is_checked(threshold):
    store = nets.kv.create("local")
    with pytest.raises(NetsError, match=f"threshold={threshold}: must be a finite number > 0"):
        store.set_gradient_compression({"type": "2bit", "threshold": threshold})

