"""``sym.LeakyReLU(act_type='prelu')`` with MXNet's implicit ``<name>_gamma`` variable: its
shape inferred from the data's channel axis, values and gradients through an executor
against numpy and central differences, and a Module decaying ``_gamma`` (MXNet's rule)."""
import numpy as np
import pytest

import nets
from nets import nd, sym


def prelu(x, gamma):
    g = gamma.reshape((1, -1) + (1,) * (x.ndim - 2)) if gamma.size > 1 else gamma
    return np.where(x > 0, x, g * x)


def away_from_kink(shape, seed=0):
    x = np.random.default_rng(seed).uniform(0.2, 1.0, shape)
    return x * np.where(np.arange(x.size).reshape(shape) % 2, 1, -1)


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 4), (2, 3, 2, 2)])
def test_gamma_is_an_implicit_variable_shaped_by_the_channel_axis(shape):
    net = sym.LeakyReLU(sym.var("data"), act_type="prelu", name="p")
    assert net.list_arguments() == ["data", "p_gamma"]
    arg_shapes, out_shapes, _ = net.infer_shape(data=shape)
    assert arg_shapes == [shape, (shape[1],)] and out_shapes == [shape]
    # other act_types take no gamma; a gamma given by the caller is used as given
    assert sym.LeakyReLU(sym.var("data"), act_type="leaky").list_arguments() == ["data"]
    given = sym.LeakyReLU(sym.var("data"), sym.var("g", shape=(1,)), act_type="prelu")
    assert given.list_arguments() == ["data", "g"]
    assert given.infer_shape(data=shape)[0] == [shape, (1,)]


def test_executor_values_and_gradients_against_central_differences():
    shape = (3, 4, 2)
    x = away_from_kink(shape)
    gamma = np.array([0.1, 0.2, 0.3, 0.4])
    og = np.random.default_rng(2).normal(size=shape)
    net = sym.LeakyReLU(sym.var("data"), act_type="prelu", name="p")
    exe = net.simple_bind(data=shape, type_dict={"data": np.float64})
    exe.arg_dict["p_gamma"][:] = gamma
    out = exe.forward(is_train=True, data=nd.array(x, dtype=np.float64))[0]
    np.testing.assert_allclose(out.asnumpy(), prelu(x, gamma), rtol=1e-12)
    exe.backward(nd.array(og, dtype=np.float64))

    def f(xv, gv):
        return float((prelu(xv, gv) * og).sum())

    eps = 1e-6
    dx, dg = np.zeros_like(x), np.zeros_like(gamma)
    for i in np.ndindex(*x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        dx[i] = (f(hi, gamma) - f(lo, gamma)) / (2 * eps)
    for i in range(gamma.size):
        hi, lo = gamma.copy(), gamma.copy()
        hi[i] += eps
        lo[i] -= eps
        dg[i] = (f(x, hi) - f(x, lo)) / (2 * eps)
    np.testing.assert_allclose(exe.grad_dict["data"].asnumpy(), dx, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(exe.grad_dict["p_gamma"].asnumpy(), dg, rtol=1e-6, atol=1e-8)


def test_module_initializes_gamma_to_ones_and_decays_it_as_mxnet():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 5)).astype(np.float32)
    label = rng.normal(size=(4, 3)).astype(np.float32)
    net = sym.FullyConnected(sym.var("data"), num_hidden=3, name="fc")
    net = sym.LeakyReLU(net, act_type="prelu", name="p")
    net = sym.LinearRegressionOutput(net, sym.var("label"), name="out")
    mod = nets.mod.Module(net, label_names=("label",))
    mod.bind([("data", (4, 5))], [("label", (4, 3))])
    mod.init_params(nets.init.Uniform(0.5))
    args = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    assert sorted(args) == ["fc_bias", "fc_weight", "p_gamma"]
    assert args["p_gamma"].tolist() == [1, 1, 1]  # MXNet's initializers give gamma ones
    gamma = np.array([0.1, 0.25, 0.5], dtype=np.float32)
    args["p_gamma"] = gamma
    args["fc_bias"] = np.array([0.3, -0.2, 0.1], dtype=np.float32)
    mod.set_params({k: nd.array(v) for k, v in args.items()})
    lr, wd = 0.1, 0.5
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": lr, "wd": wd})
    mod.forward(nets.data.DataBatch([nd.array(x)], [nd.array(label)]), is_train=True)
    mod.backward()
    mod.update()

    # numpy: y = x W^T + b, z = prelu(y), dL/dz = (z - label) / 3 (LinearRegressionOutput
    # divides by the label's width, as MXNet's)
    w, b = args["fc_weight"].astype(np.float64), args["fc_bias"].astype(np.float64)
    y = x @ w.T + b
    dz = (prelu(y, gamma.astype(np.float64)) - label) / 3
    dgamma = (dz * np.minimum(y, 0)).sum(axis=0)
    dy = dz * np.where(y > 0, 1, gamma)
    grads = {"fc_weight": dy.T @ x, "fc_bias": dy.sum(axis=0), "p_gamma": dgamma}
    decay = {"fc_weight": wd, "fc_bias": 0.0, "p_gamma": wd}  # biases are not decayed
    new = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    for name, g in grads.items():
        p = args[name].astype(np.float64)
        want = p - lr * (g / 4 + decay[name] * p)
        np.testing.assert_allclose(new[name], want, rtol=1e-5, atol=1e-6, err_msg=name)
