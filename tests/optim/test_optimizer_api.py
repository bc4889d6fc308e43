"""The Optimizer base: registry, learning rate and multipliers, update counts, states,
multi-precision and argument errors."""
import math
import warnings

import numpy as np
import pytest

import nets
from nets import nd, optim
from nets.optim import FactorScheduler, Optimizer, create
from nets.test_utils import assert_almost_equal


def _rsp(rows, shape, value=1.0, dtype=np.float32):
    return nd.sparse.row_sparse_array((np.full((len(rows),) + shape[1:], value, dtype), rows),
                                      shape=shape)


def test_registry_and_create():
    for name, klass in [("SGD", optim.SGD), ("adam", optim.Adam), ("AdamW", optim.AdamW),
                        ("adagrad", optim.AdaGrad), ("ftrl", optim.FTRL),
                        ("rmsprop", optim.RMSProp)]:
        assert type(create(name)) is klass
    assert optim.Ftrl is optim.FTRL
    assert Optimizer.create_optimizer is create
    assert type(create("sgd", momentum=0.9)).__name__ == "SGD"
    with pytest.raises(nets.NetsError, match="unknown optimizer 'nope'.*'sgd'"):
        create("nope")
    with pytest.raises(nets.NetsError, match="Optimizer subclass"):
        optim.register(int)


def test_register_custom_optimizer():
    @optim.register
    class Halve(Optimizer):
        def update(self, index, weight, grad, state):
            weight[:] = weight.asnumpy() / 2

    try:
        opt = create("halve")
        weight = nd.ones((2,))
        opt.update(0, weight, nd.ones((2,)), None)
        assert_almost_equal(weight.asnumpy(), [0.5, 0.5])
        with pytest.warns(UserWarning, match="overrides"):
            optim.register(type("Halve", (Optimizer,), {}))
    finally:
        Optimizer.opt_registry.pop("halve")


@pytest.mark.parametrize("method", ["update", "update_multi_precision"])
def test_step_runs_an_update_a_subclass_implements(method):
    """``step`` applies MXNet's ``update`` (through ``update_multi_precision``) whichever of
    the two a subclass overrides; built-in ones run their update directly."""
    calls = []

    def override(self, index, weight, grad, state):
        calls.append(index)
        weight[:] = weight.asnumpy() / 2

    Custom = type("Custom", (optim.SGD,), {method: override})
    opt = Custom(learning_rate=0.1)
    weight = nd.ones((2,))
    opt.step(3, weight, nd.ones((2,)))
    assert calls == [3]
    assert_almost_equal(weight.asnumpy(), [0.5, 0.5])
    assert not Custom._builtin_update and optim.SGD._builtin_update
    sgd = optim.SGD(learning_rate=0.1)
    sgd.step(0, weight, nd.ones((2,)))
    assert_almost_equal(weight.asnumpy(), [0.4, 0.4])


def test_the_builtin_update_uses_a_subclass_s_count_and_rates():
    """A subclass overriding MXNet's extension points ``_get_lr``, ``_get_wd`` or
    ``_update_count`` has them used by the built-in update too."""
    counted = []

    class Halved(optim.SGD):
        def _get_lr(self, index):
            return super()._get_lr(index) / 2

        def _get_wd(self, index):
            return 0.5

        def _update_count(self, index):
            counted.append(index)
            super()._update_count(index)

    assert not Halved._builtin_rates and optim.SGD._builtin_rates
    opt = Halved(learning_rate=0.2)
    weight = nd.ones((2,))
    opt.step(7, weight, nd.ones((2,)))
    # w -= lr/2 * (wd * w + g) = 0.1 * (0.5 + 1)
    assert_almost_equal(weight.asnumpy(), [0.85, 0.85])
    assert counted == [7] and opt.num_update == 1


def test_default_learning_rates_and_scheduler():
    assert create("sgd").learning_rate == 0.01
    assert create("adam").learning_rate == 0.001
    assert create("ftrl").learning_rate == 0.1
    assert create("rmsprop").learning_rate == 0.001
    sched = FactorScheduler(step=1, factor=0.5, base_lr=0.4)
    opt = create("sgd", lr_scheduler=sched)  # no learning_rate: the scheduler's base_lr
    assert opt.learning_rate == 0.4
    opt2 = create("sgd", learning_rate=0.2, lr_scheduler=FactorScheduler(step=1, factor=0.5))
    assert opt2.lr_scheduler.base_lr == 0.2
    weight = nd.ones((2,))
    for _ in range(3):
        opt.update(0, weight, nd.ones((2,)), None)
    assert opt.num_update == 3
    assert opt.learning_rate == 0.4 * 0.5 ** 2
    # lrs used: 0.4, 0.2, 0.1
    assert_almost_equal(weight.asnumpy(), 1 - (0.4 + 0.2 + 0.1) * np.ones(2))
    with pytest.raises(nets.NetsError, match="lr_scheduler"):
        opt.set_learning_rate(0.1)


def test_set_learning_rate():
    opt = create("sgd", learning_rate=0.1)
    opt.set_learning_rate(0.3)
    assert opt.learning_rate == 0.3
    opt.learning_rate = 0.5
    assert opt.lr == 0.5
    weight = nd.ones((2,))
    for lr in (0.5, 0.25, np.array(0.125)):  # (a 0-d array too)
        opt.set_learning_rate(lr)
        opt.update(0, weight, nd.ones((2,)), None)
    assert_almost_equal(weight.asnumpy(), 1 - (0.5 + 0.25 + 0.125) * np.ones(2))


class _Param:
    def __init__(self, name, lr_mult=1.0, wd_mult=1.0):
        self.name, self.lr_mult, self.wd_mult = name, lr_mult, wd_mult


def _rates(opt, index):
    """Parameter ``index``'s learning rate and weight decay, through MXNet's extension
    points, checked equal to what the built-in update computes (``Optimizer._account``,
    which also counts the update)."""
    rates = opt._get_lr(index), opt._get_wd(index)
    record = optim.Record()
    assert opt._account(index, record) == rates and record.step == 1
    return rates


def test_lr_and_wd_multipliers():
    params = {0: _Param("w0", lr_mult=2.0, wd_mult=0.0), 1: _Param("w1"), 2: _Param("w2")}
    opt = create("sgd", learning_rate=0.1, wd=0.5, param_dict=params)
    assert _rates(opt, 0) == pytest.approx((0.2, 0.0))
    assert _rates(opt, 1) == pytest.approx((0.1, 0.5))
    assert _rates(opt, 7) == pytest.approx((0.1, 0.5))  # not in param_dict
    opt.set_lr_mult({"w1": 3.0, 2: 4.0, 0: 0.5})  # by name or index; they win over the Parameter
    assert _rates(opt, 0) == pytest.approx((0.05, 0.0))
    assert _rates(opt, 1) == pytest.approx((0.3, 0.5))
    assert _rates(opt, 2) == pytest.approx((0.4, 0.5))
    assert _rates(opt, 7) == pytest.approx((0.1, 0.5))
    opt.set_wd_mult({"w2": 2.0})
    assert _rates(opt, 2) == pytest.approx((0.4, 1.0)) and _rates(opt, 0) == (0.05, 0.0)
    opt.set_lr_mult({})
    assert _rates(opt, 0) == pytest.approx((0.2, 0.0))  # the Parameter's own again
    assert _rates(opt, 2) == pytest.approx((0.1, 1.0))
    weight = nd.ones((2,))
    opt.update(0, weight, nd.ones((2,)), None)  # lr 0.2 (the Parameter's 2 x 0.1), wd 0
    assert_almost_equal(weight.asnumpy(), [0.8, 0.8])


def test_update_counts_and_adam_bias_correction_per_parameter():
    """Adam's t counts the updates of each parameter (MXNet), not of a row."""
    opt = create("adam", learning_rate=0.1)
    weights = [nd.zeros((3, 1)), nd.zeros((3, 1))]
    states = [opt.create_state(i, w) for i, w in enumerate(weights)]
    for _ in range(3):
        opt.update(0, weights[0], _rsp([0], (3, 1)), states[0])
    opt.update([1], [weights[1]], [_rsp([2], (3, 1))], [states[1]])  # list form
    assert {i: r.step for i, r in opt.state.items()} == {0: 3, 1: 1}
    assert opt.num_update == 3
    # a row first touched at step 4 of parameter 0 is corrected with t = 4
    opt.update(0, weights[0], _rsp([1], (3, 1)), states[0])
    m, v = 0.1, 0.001  # first moments of gradient 1
    lr_t = 0.1 * math.sqrt(1 - 0.999 ** 4) / (1 - 0.9 ** 4)
    assert_almost_equal(weights[0].asnumpy()[1], [-lr_t * m / (math.sqrt(v) + 1e-8)], rtol=1e-5)
    lr_1 = 0.1 * math.sqrt(1 - 0.999) / (1 - 0.9)
    assert_almost_equal(weights[1].asnumpy()[2], [-lr_1 * m / (math.sqrt(v) + 1e-8)], rtol=1e-5)


@pytest.mark.parametrize("lazy", [True, False])
def test_state_storage_types(lazy):
    rsp = nd.sparse.zeros("row_sparse", (4, 2))
    for name in ("sgd", "adam", "adamw", "adagrad", "ftrl", "rmsprop"):
        kwargs = {"momentum": 0.9} if name == "sgd" else {}
        opt = create(name, lazy_update=lazy, **kwargs)
        for weight in (nd.zeros((4, 2), dtype=np.float64), rsp):
            state = opt.create_state(0, weight)
            states = state if isinstance(state, tuple) else (state,)
            expected = weight.stype if lazy else "default"
            assert all(s.stype == expected and s.shape == (4, 2) for s in states)
            assert all(s.dtype == weight.dtype for s in states)
    assert create("sgd").create_state(0, rsp) is None
    assert len(create("rmsprop", centered=True).create_state(0, rsp)) == 3


def test_row_sparse_state_grows_to_the_weight_rows_once():
    """An empty row_sparse state is filled to the weight's rows on first use (as MXNet)."""
    weight = nd.ones((5, 2)).tostype("row_sparse")
    opt = create("adam")
    mean, var = opt.create_state(0, weight)
    assert len(mean._indices) == 0
    opt.update(0, weight, _rsp([1, 3], (5, 2)), (mean, var))
    assert mean._indices.tolist() == [0, 1, 2, 3, 4]
    assert np.array_equal(mean.asnumpy()[[0, 2, 4]], np.zeros((3, 2)))


def test_dense_weight_with_a_row_sparse_state():
    """A dense weight may keep a row_sparse state: a lazy update inserts the gradient's rows
    (and no other) into the state and updates those rows of both."""
    weight = nd.ones((5, 2))
    mom = nd.sparse.zeros("row_sparse", (5, 2))
    opt = create("sgd", learning_rate=0.1, momentum=0.5)
    for _ in range(2):
        opt.update(0, weight, _rsp([1, 3], (5, 2), 2.0), mom)
    # mom = -0.1 * 2 = -0.2, w = 0.8; then mom = 0.5 * -0.2 - 0.2 = -0.3, w = 0.5
    assert mom.stype == "row_sparse" and mom.indices.asnumpy().tolist() == [1, 3]
    assert_almost_equal(mom.data.asnumpy(), np.full((2, 2), -0.3))
    expected = np.ones((5, 2))
    expected[[1, 3]] = 0.5
    assert_almost_equal(weight.asnumpy(), expected)


def test_empty_gradient_changes_nothing():
    for stype in ("default", "row_sparse"):
        weight = nd.array(np.arange(6.0).reshape(3, 2), dtype=np.float64).tostype(stype)
        opt = create("adam", wd=0.1)
        state = opt.create_state(0, weight)
        opt.update(0, weight, nd.sparse.zeros("row_sparse", (3, 2), dtype=np.float64), state)
        assert np.array_equal(weight.asnumpy(), np.arange(6.0).reshape(3, 2))


def test_multi_precision_float16():
    w16 = nd.array(np.ones((4, 2)), dtype=np.float16)
    opt = create("sgd", learning_rate=0.1, momentum=0.5, multi_precision=True)
    master, mom = opt.create_state_multi_precision(0, w16)
    assert master.dtype == np.float32 and mom.dtype == np.float32
    grad = _rsp([1, 2], (4, 2), 0.5, np.float16)
    opt.update_multi_precision(0, w16, grad, (master, mom))
    assert w16.dtype == np.float16
    expected = np.ones((4, 2))
    expected[[1, 2]] -= 0.05
    assert_almost_equal(master.asnumpy(), expected, rtol=1e-6)
    assert_almost_equal(w16.asnumpy(), expected, rtol=1e-3)
    with pytest.raises(nets.DTypeError if hasattr(nets, "DTypeError") else nets.NetsError,
                       match="multi_precision=True"):
        create("sgd").update(0, w16, grad, None)
    # float32 weights take the plain path
    w32 = nd.ones((2,))
    opt.update_multi_precision(0, w32, nd.ones((2,)), opt.create_state_multi_precision(0, w32))
    assert_almost_equal(w32.asnumpy(), [0.9, 0.9])


def test_argument_errors():
    opt = create("sgd")
    weight = nd.ones((3, 2))
    with pytest.raises(nets.NetsError, match=r"grad has shape \(2, 2\)"):
        opt.update(0, weight, nd.ones((2, 2)), None)
    with pytest.raises(nets.NetsError, match="stype 'csr'"):
        opt.update(0, weight, nd.ones((3, 2)).tostype("csr"), None)
    with pytest.raises(nets.NetsError, match="grad has dtype float64"):
        opt.update(0, weight, nd.ones((3, 2), dtype=np.float64), None)
    with pytest.raises(nets.NetsError, match="must be a nets array"):
        opt.update(0, weight, np.ones((3, 2)), None)
    with pytest.raises(nets.NetsError, match="state 0 has shape"):
        create("sgd", momentum=0.9).update(0, weight, nd.ones((3, 2)), nd.zeros((3, 1)))
    with pytest.raises(nets.NetsError, match="C-contiguous"):
        opt.update(0, nd.ones((3, 4))[:, ::2], nd.ones((3, 2)), None)
    with pytest.raises(NotImplementedError):
        Optimizer().update(0, weight, nd.ones((3, 2)), None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        create("sgd", clip_gradient=None)  # None is the documented "off"


@pytest.mark.parametrize("name, kwargs, state", [
    ("adam", {}, None), ("adagrad", {}, None), ("ftrl", {}, None),
    ("rmsprop", {}, None), ("adam", {}, "half"), ("rmsprop", {"centered": True}, "uncentered")])
@pytest.mark.parametrize("stype", ["default", "row_sparse"])
def test_a_missing_state_raises_instead_of_being_read(name, kwargs, state, stype):
    """The kernels read every state an update needs: a missing one (None, Adam's var
    alone, or RMSProp's state made before ``centered=True``) is an error, not a read of
    memory that is not there."""
    opt = create(name, **kwargs)
    weight = nd.ones((3, 2))
    if state == "half":
        state = (opt.create_state(0, weight)[0], None)
    elif state == "uncentered":
        state = create(name).create_state(0, weight)
    grad = nd.ones((3, 2)).tostype(stype)
    with pytest.raises(nets.NetsError, match="has no state"):
        opt.update(0, weight, grad, state)
    opt.update(0, weight, grad, opt.create_state(0, weight))  # with its states: fine


def test_too_many_states_raise():
    weight = nd.ones((3, 2))
    states = tuple(nd.zeros((3, 2)) for _ in range(3))
    with pytest.raises(nets.NetsError, match="3 state arrays, at most 2"):
        create("adam").update(0, weight, nd.ones((3, 2)), states)


def test_only_the_latest_update_s_arrays_are_kept_alive():
    """The optimizer holds the arrays of a parameter's latest update (as ``torch.optim``
    holds its parameters and their state) and nothing older: states replaced (e.g. by
    ``Trainer.load_states``) are freed at the next update, a new weight array is the one
    updated, and the arrays go with the optimizer."""
    import gc
    import weakref
    opt = create("adam", learning_rate=0.1)
    w = nd.ones((4, 3))
    state = opt.create_state(0, w)
    for _ in range(2):
        opt.update(0, w, nd.ones((4, 3)), state)
    old_state = [weakref.ref(s._np) for s in state]
    state = opt.create_state(0, w)  # e.g. Trainer.load_states replacing the states
    opt.update(0, w, nd.ones((4, 3)), state)
    assert all(r() is None for r in old_state)
    before = w.asnumpy()
    old_buffer = weakref.ref(w._np)
    w = nd.array(before)  # a new weight array of the same values: the one updated
    opt.update(0, w, nd.ones((4, 3)), state)
    assert not np.array_equal(w.asnumpy(), before)
    assert old_buffer() is None
    weight, buffer = weakref.ref(w), weakref.ref(w._np)
    del w, state
    assert weight() is not None  # the optimizer's parameter, until the optimizer goes
    del opt
    gc.collect()
    assert weight() is None and buffer() is None


def test_checks_apply_on_every_update():
    """Every update checks its operands, also after earlier updates of the same weight and
    state: a bad gradient, a changed state or settings that read more states are refused."""
    opt = create("rmsprop", learning_rate=0.1)
    w = nd.ones((3, 2))
    state = opt.create_state(0, w)  # (n,): uncentered
    for _ in range(2):
        opt.update(0, w, nd.ones((3, 2)), state)
    with pytest.raises(nets.NetsError, match=r"grad has shape \(2, 3\)"):
        opt.update(0, w, nd.ones((2, 3)), state)
    with pytest.raises(nets.NetsError, match="grad has dtype float64"):
        opt.update(0, w, nd.ones((3, 2), dtype=np.float64), state)
    with pytest.raises(nets.NetsError, match="has no state 0"):
        opt.update(0, w, nd.ones((3, 2)), None)
    with pytest.raises(nets.NetsError, match="state 0 has shape"):
        opt.update(0, w, nd.ones((3, 2)), (nd.zeros((3, 1)),))
    opt.centered = True  # now reads (n, g, delta)
    with pytest.raises(nets.NetsError, match="has no state 1"):
        opt.update(0, w, nd.ones((3, 2)), state)
    g = np.random.default_rng(0).random((3, 4), dtype=np.float32)
    w2 = w.copy()
    opt.update(0, w, nd.array(g)[:, ::2], opt.create_state(0, w))  # a strided gradient
    opt.update(1, w2, nd.array(np.ascontiguousarray(g[:, ::2])), opt.create_state(1, w2))
    assert np.array_equal(w.asnumpy(), w2.asnumpy())


def test_updates_of_the_same_arrays_see_every_write_and_every_change():
    """Updating the same weight, gradient and state objects step after step (as a Trainer
    does, ``backward`` writing the gradient in place) uses each step's values, a strided
    gradient included; settings that read more states are refused with those same objects;
    a gradient dropped after its update is freed at the next update."""
    import weakref
    rng = np.random.default_rng(1)
    opt = create("sgd", learning_rate=0.1, momentum=0.9)
    w, g = nd.ones((3, 2)), nd.zeros((3, 2))
    base = nd.zeros((3, 4))
    strided = base[:, ::2]  # a view: the update reads a contiguous copy of it
    w2 = nd.ones((3, 2))
    state, state2 = opt.create_state(0, w), opt.create_state(1, w2)
    ref_w, ref_mom = np.ones((3, 2)), np.zeros((3, 2))
    for _ in range(3):
        values = rng.random((3, 2)).astype(np.float32)
        g[:] = nd.array(values)
        base[:] = nd.array(np.repeat(values, 2, axis=1))
        opt.update(0, w, g, state)
        opt.update(1, w2, strided, state2)
        ref_mom = 0.9 * ref_mom - 0.1 * values
        ref_w = ref_w + ref_mom
        assert_almost_equal(w.asnumpy(), ref_w, rtol=1e-5, atol=1e-6)
        assert_almost_equal(w2.asnumpy(), ref_w, rtol=1e-5, atol=1e-6)
        assert_almost_equal(state.asnumpy(), ref_mom, rtol=1e-5, atol=1e-6)

    rms = create("rmsprop", learning_rate=0.1)
    v, gv = nd.ones((3, 2)), nd.ones((3, 2))
    rms_state = rms.create_state(0, v)  # uncentered: (n,)
    for _ in range(2):
        rms.update(0, v, gv, rms_state)
    rms.centered = True  # now reads (n, g, delta), with the same objects as before
    with pytest.raises(nets.NetsError, match="has no state 1"):
        rms.update(0, v, gv, rms_state)

    dropped = weakref.ref(g._np)
    del g
    opt.update(0, w, nd.zeros((3, 2)), state)  # the next update holds its own gradient
    assert dropped() is None


def test_an_optimizer_that_updated_pickles_with_its_update_counts():
    """An optimizer is shipped to a store's servers by pickling it: after updates it still
    pickles, each record with its count, and the copy updates arrays of its own."""
    import pickle
    opt = create("adam", learning_rate=0.1)
    w, g = nd.ones((2, 3)), nd.ones((2, 3))
    state = opt.create_state(0, w)
    for _ in range(2):
        opt.update(0, w, g, state)
    copy = pickle.loads(pickle.dumps(opt))
    assert copy.state[0].step == 2 and copy.num_update == 2
    w2 = nd.ones((2, 3))
    copy.update(0, w2, g, copy.create_state(0, w2))
    assert copy.state[0].step == 3 and opt.state[0].step == 2
    assert not np.array_equal(w2.asnumpy(), np.ones((2, 3)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_updates_of_the_same_arrays_use_each_update_s_hyper_parameters(dtype):
    """A hyper-parameter changed between updates of the same weight, gradient and state
    (learning rate, weight decay, momentum, rescaling, clipping) is the one the next update
    applies, in the weight's dtype: SGD with momentum against numpy."""
    rng = np.random.default_rng(2)
    opt = create("sgd", learning_rate=0.1, momentum=0.5)
    w, g = nd.array(np.ones((4, 3)), dtype=dtype), nd.zeros((4, 3), dtype=dtype)
    state = opt.create_state(0, w)
    ref_w, ref_mom = np.ones((4, 3), dtype), np.zeros((4, 3), dtype)
    settings = [(0.1, 0.0, 0.5, 1.0, None), (0.1, 0.0, 0.5, 1.0, None),
                (0.3, 0.01, 0.5, 1.0, None), (0.3, 0.01, 0.9, 0.5, None),
                (0.3, 0.01, 0.9, 0.5, 0.2), (0.05, 0.0, 0.0, 2.0, 0.2)]
    for lr, wd, momentum, rescale, clip in settings:
        opt.set_learning_rate(lr)
        opt.wd, opt.momentum, opt.rescale_grad, opt.clip_gradient = wd, momentum, rescale, clip
        values = rng.standard_normal((4, 3)).astype(dtype)
        g[:] = nd.array(values, dtype=dtype)
        opt.update(0, w, g, state)
        step = rescale * values
        if clip is not None:
            step = np.clip(step, -clip, clip)
        ref_mom = momentum * ref_mom - lr * (wd * ref_w + step)
        ref_w = ref_w + ref_mom
        assert w.dtype == dtype
        assert_almost_equal(w.asnumpy(), ref_w, rtol=1e-5, atol=1e-6)
        assert_almost_equal(state.asnumpy(), ref_mom, rtol=1e-5, atol=1e-6)
