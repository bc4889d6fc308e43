"""2-bit gradient compression through a store (MXNet's ``gradient_compression`` semantics:
values at or beyond +-threshold are sent as +-threshold, the rest as 0, and a residual kept
per key carries what was not sent), checked against a float32 numpy reference."""
import numpy as np
import pytest

import nets
from nets import nd
from nets.base import NetsError


def _reference(grads, threshold):
    """The values sent for each gradient in turn (one key, one array per push)."""
    residual = np.zeros_like(grads[0])
    t = np.float32(threshold)
    sent = []
    for g in grads:
        residual = residual + g
        q = np.where(residual >= t, t, np.where(residual <= -t, -t, np.float32(0)))
        residual = residual - q
        sent.append(q.astype(np.float32))
    return sent


@pytest.mark.parametrize("name", ["local", "device"])
def test_pushed_values_are_quantized_with_a_residual(name):
    rng = np.random.default_rng(0)
    grads = [rng.uniform(-1, 1, (5, 3)).astype(np.float32) for _ in range(6)]
    kv = nets.kv.create(name)
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    kv.init(0, nd.zeros((5, 3)))
    for g, expected in zip(grads, _reference(grads, 0.5)):
        kv.push(0, nd.array(g))  # no updater: the value becomes the sent gradient
        out = nd.zeros((5, 3))
        kv.pull(0, out=out)
        np.testing.assert_array_equal(out.asnumpy(), expected)
        assert set(np.unique(out.asnumpy())) <= {-0.5, 0.0, 0.5}


def test_residuals_are_kept_per_key_and_per_pushed_array():
    kv = nets.kv.create()
    kv.set_gradient_compression({"type": "2bit", "threshold": 1.0})
    kv.init([0, 1], [nd.zeros((2,)), nd.zeros((2,))])
    kv._set_updater(lambda key, recv, local: local.__iadd__(recv))
    kv.push(0, [nd.array([0.6, -0.6]), nd.array([0.3, 0.0])])
    kv.push(1, nd.array([0.6, 0.6]))
    kv.push(0, [nd.array([0.6, -0.6]), nd.array([0.3, 0.0])])
    out = nd.zeros((2,))
    kv.pull(0, out=out)
    # first array: residual 0.6 then 1.2 -> sends 1 once (and -1 once); second: 0.3, 0.6 -> 0
    np.testing.assert_allclose(out.asnumpy(), [1.0, -1.0])
    kv.pull(1, out=out)
    np.testing.assert_array_equal(out.asnumpy(), [0.0, 0.0])  # key 1 has its own residual


def test_with_an_optimizer_the_store_applies_the_sent_values():
    kv = nets.kv.create()
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.25})
    kv.set_optimizer(nets.optim.SGD(learning_rate=0.1))
    w0 = np.array([1.0, 2.0, 3.0], np.float32)
    kv.init(0, nd.array(w0))
    g = np.array([0.3, -0.1, -0.4], np.float32)
    kv.push(0, nd.array(g))
    out = nd.zeros((3,))
    kv.pull(0, out=out)
    np.testing.assert_allclose(out.asnumpy(), w0 - 0.1 * np.array([0.25, 0, -0.25]), rtol=1e-6)


def test_none_disables_and_bad_parameters_raise():
    kv = nets.kv.create()
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    kv.set_gradient_compression({"type": "none"})
    kv.init(0, nd.zeros((2,)))
    kv.push(0, nd.array([0.3, -0.2]))
    out = nd.zeros((2,))
    kv.pull(0, out=out)
    np.testing.assert_allclose(out.asnumpy(), [0.3, -0.2], rtol=1e-6)
    for params, match in (({"type": "1bit"}, "supported: '2bit'"),
                          ({"type": "2bit", "threshold": 0}, "threshold=0"),
                          ({"type": "2bit", "thresh": 1}, "unknown parameters"),
                          ("2bit", "expected a dict")):
        with pytest.raises(NetsError, match=match):
            kv.set_gradient_compression(params)


def test_row_sparse_gradients_are_not_compressed():
    kv = nets.kv.create()
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    kv.init(0, nd.zeros((3, 2)).tostype("row_sparse"))
    with pytest.raises(NetsError, match="dense gradients; key 0 got a row_sparse"):
        kv.push(0, nd.ones((3, 2)).tostype("row_sparse"))
