"""An optimizer run by the store (``set_optimizer``): the same update as ``nets.optim``
applied directly, lazily for row_sparse gradients, with each key's ``lr_mult``; and the
states file, which is ``Trainer.save_states``' file."""
import numpy as np
import pytest

import nets
from nets import nd
from nets.base import NetsError
from nets.test_utils import rand_ndarray


def test_sgd_on_the_store_matches_the_hand_computed_update():
    kv = nets.kv.create()
    kv.set_optimizer(nets.optim.SGD(learning_rate=0.5, rescale_grad=0.25))
    w0 = np.arange(6, dtype=np.float32).reshape(3, 2)
    kv.init(0, nd.array(w0))
    g = np.ones((3, 2), np.float32)
    kv.push(0, [nd.array(g), nd.array(g)])  # summed first
    out = nd.zeros((3, 2))
    kv.pull(0, out=out)
    np.testing.assert_allclose(out.asnumpy(), w0 - 0.5 * 0.25 * 2 * g, rtol=1e-6)


@pytest.mark.parametrize("opt", ["sgd", "adam", "adagrad"])
def test_row_sparse_gradient_updates_only_its_rows_like_the_optimizer_itself(opt):
    kw = {"learning_rate": 0.1, "wd": 0.01}
    kv = nets.kv.create()
    kv.set_optimizer(nets.optim.create(opt, **kw))
    w0 = rand_ndarray((8, 3), "row_sparse", density=1.0)
    kv.init(0, w0)
    reference = w0.copy()
    ref_opt = nets.optim.create(opt, **kw)
    state = ref_opt.create_state(0, reference)
    for _ in range(3):
        g = rand_ndarray((8, 3), "row_sparse", density=0.3)
        kv.push(0, g)
        ref_opt.update(0, reference, g, state)
    out = nd.sparse.zeros("row_sparse", (8, 3))
    kv.pull(0, out=out, ignore_sparse=False)
    np.testing.assert_array_equal(out.asnumpy(), reference.asnumpy())


def test_lr_mult_of_the_keys_parameter_applies():
    p = nets.layers.Parameter("w", shape=(2,), lr_mult=0.5)
    kv = nets.kv.create()
    kv.set_optimizer(nets.optim.SGD(learning_rate=1.0, param_dict={0: p}))
    kv.init(0, nd.zeros((2,)))
    kv.push(0, nd.ones((2,)))
    out = nd.zeros((2,))
    kv.pull(0, out=out)
    np.testing.assert_allclose(out.asnumpy(), [-0.5, -0.5])


def test_optimizer_states_save_and_load_continue_identically(tmp_path):
    def store(values):
        kv = nets.kv.create()
        kv.set_optimizer(nets.optim.Adam(learning_rate=0.01))
        kv.init([0, 1], values)
        return kv

    grads = [(nd.array(np.full((4, 2), s, np.float32)), nd.array(np.full((3,), -s, np.float32)))
             for s in (0.5, 1.0, 2.0, -1.0)]
    a = store([nd.ones((4, 2)), nd.ones((3,))])
    for g in grads[:2]:
        a.push([0, 1], list(g))
    a.save_optimizer_states(str(tmp_path / "s.npz"))
    outs = [nd.zeros((4, 2)), nd.zeros((3,))]
    a.pull([0, 1], out=outs)
    b = store(outs)  # a fresh store from a's weights and saved states
    b.load_optimizer_states(str(tmp_path / "s.npz"))
    for g in grads[2:]:
        a.push([0, 1], list(g))
        b.push([0, 1], list(g))
    for k in (0, 1):
        x, y = nd.zeros(outs[k].shape), nd.zeros(outs[k].shape)
        a.pull(k, out=x)
        b.pull(k, out=y)
        np.testing.assert_array_equal(x.asnumpy(), y.asnumpy())


def test_set_optimizer_needs_an_optimizer():
    with pytest.raises(NetsError, match="expected a nets.optim.Optimizer"):
        nets.kv.create().set_optimizer("sgd")
