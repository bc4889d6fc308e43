"""A Module keeps its trained weights whatever batches it is given: another batch size
rebinds and shares the parameters; another feature width raises ``ShapeError`` (MXNet's
"shape inconsistent") and leaves every parameter, and later batches of the right width
still use them."""
import numpy as np
import pytest

import nets
from nets.base import ShapeError


def _module(width=6, batch=4):
    data = nets.sym.var("data")
    out = nets.sym.FullyConnected(data, num_hidden=3, name="fc")
    mod = nets.mod.Module(out, data_names=["data"], label_names=None)
    mod.bind(data_shapes=[("data", (batch, width))], for_training=False)
    mod.init_params(nets.init.Uniform(0.5))
    return mod


def _batch(x):
    return nets.io.DataBatch(data=[nets.nd.array(x)], label=None)


def _forward(mod, x):
    mod.forward(_batch(x), is_train=False)
    return mod.get_outputs()[0].asnumpy()


def test_another_batch_size_rebinds_with_the_same_weights():
    mod = _module()
    arg, _ = mod.get_params()
    w, b = arg["fc_weight"].asnumpy(), arg["fc_bias"].asnumpy()
    x = np.random.default_rng(0).normal(size=(7, 6)).astype(np.float32)
    np.testing.assert_allclose(_forward(mod, x), x @ w.T + b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_forward(mod, x[:4]), x[:4] @ w.T + b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("width", [5, 8])
def test_another_feature_width_raises_and_keeps_the_weights(width):
    mod = _module()
    arg, _ = mod.get_params()
    w, b = arg["fc_weight"].asnumpy(), arg["fc_bias"].asnumpy()
    bad = np.ones((4, width), np.float32)
    with pytest.raises(ShapeError, match=r"forward: the batch's shapes \{'data': \(4, "
                                         rf"{width}\)\}} are inconsistent.*'fc_weight'"):
        mod.forward(_batch(bad), is_train=False)
    with pytest.raises(ShapeError):
        mod.predict(nets.io.NDArrayIter(bad, batch_size=4))
    after, _ = mod.get_params()
    np.testing.assert_array_equal(after["fc_weight"].asnumpy(), w)
    np.testing.assert_array_equal(after["fc_bias"].asnumpy(), b)
    x = np.random.default_rng(1).normal(size=(4, 6)).astype(np.float32)
    np.testing.assert_allclose(_forward(mod, x), x @ w.T + b, rtol=1e-5, atol=1e-6)


def test_executor_reshape_names_the_argument_unless_partial_shaping():
    data = nets.sym.var("data")
    out = nets.sym.FullyConnected(data, num_hidden=2, name="fc")
    exe = out.simple_bind(nets.cpu(), data=(3, 4))
    exe.arg_dict["fc_weight"][:] = 1.0
    with pytest.raises(ShapeError, match=r"'fc_weight' would change shape from \(2, 4\) to "
                                         r"\(2, 5\)"):
        exe.reshape(data=(3, 5))
    fresh = exe.reshape(partial_shaping=True, data=(3, 5))
    assert fresh.arg_dict["fc_weight"].shape == (2, 5)
    same = exe.reshape(data=(6, 4))
    assert same.arg_dict["fc_weight"] is exe.arg_dict["fc_weight"]
