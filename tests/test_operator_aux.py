"""Custom operators with auxiliary states (MXNet's ``list_auxiliary_states``): an operator
that keeps a running mean of its input in an aux state, checked against numpy over several
calls, imperative (``nd.Custom`` with the state as a trailing input) and symbolic
(``sym.Custom`` makes the state variable; bind, simple_bind, Module, checkpoints)."""
import numpy as np
import pytest

import nets
from nets import autograd, nd, sym
from nets.base import NetsError
from nets.operator import CustomOp, CustomOpProp, register

SEEN = {}  # what the Prop's methods received


class Centre(CustomOp):
    """``out = data - running_mean``; in training the running mean first moves toward the
    batch's column means: ``rm = momentum * rm + (1 - momentum) * mean(data, axis=0)``."""

    def __init__(self, momentum):
        super().__init__()
        self.momentum = momentum

    def forward(self, is_train, req, in_data, out_data, aux):
        rm = aux[0]
        if is_train:
            rm[:] = self.momentum * rm + (1 - self.momentum) * in_data[0].mean(axis=0)
        self.assign(out_data[0], req[0], in_data[0] - rm.reshape((1, -1)))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        SEEN["backward_aux"] = aux[0].asnumpy().copy()
        self.assign(in_grad[0], req[0], out_grad[0])


@register("test_centre")
class CentreProp(CustomOpProp):
    def __init__(self, momentum="0.9"):
        super().__init__(need_top_grad=True)
        self.momentum = float(momentum)

    def list_arguments(self):
        return ["data"]

    def list_auxiliary_states(self):
        return ["running_mean"]

    def infer_shape(self, in_shape):
        SEEN["infer_shape"] = in_shape
        return in_shape, [in_shape[0]], [[in_shape[0][1]]]

    def create_operator(self, ctx, shapes, dtypes):
        SEEN["create_shapes"] = shapes
        return Centre(self.momentum)


def centre_oracle(batches, momentum, rm=None):
    """The outputs and the final running mean of training on ``batches``, in numpy."""
    rm = np.zeros(batches[0].shape[1]) if rm is None else rm.copy()
    outs = []
    for x in batches:
        rm = momentum * rm + (1 - momentum) * x.mean(axis=0)
        outs.append(x - rm)
    return outs, rm


def batches(n=4, shape=(5, 3), seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(i, 1.0, size=shape).astype(np.float32) for i in range(n)]


def test_imperative_state_is_a_trailing_input_updated_in_place():
    xs = batches()
    rm = nd.zeros((3,))
    want_outs, want_rm = centre_oracle(xs, 0.8)
    for x, want in zip(xs, want_outs):
        with autograd.train_mode():
            out = nd.Custom(nd.array(x), rm, op_type="test_centre", momentum=0.8)
        np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rm.asnumpy(), want_rm, rtol=1e-5, atol=1e-6)
    assert SEEN["create_shapes"] == [[5, 3], [3]]  # every input's shape, as MXNet's
    # predicting reads the state without moving it
    out = nd.Custom(nd.array(xs[0]), rm, op_type="test_centre", momentum=0.8)
    np.testing.assert_allclose(out.asnumpy(), xs[0] - want_rm, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rm.asnumpy(), want_rm, rtol=1e-5, atol=1e-6)
    with pytest.raises(NetsError, match=r"input 'running_mean' is not given"):
        nd.Custom(nd.array(xs[0]), op_type="test_centre")


def test_imperative_gradient_and_backward_sees_the_state():
    x = nd.array(batches(1)[0])
    rm = nd.array(np.arange(3, dtype=np.float32))
    x.attach_grad()
    with autograd.record():
        out = nd.Custom(x, rm, op_type="test_centre", momentum=0.5)
        loss = (out * out).sum()
    loss.backward()
    want_out, want_rm = centre_oracle([x.asnumpy()], 0.5, np.arange(3.0))
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * want_out[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(SEEN["backward_aux"], want_rm, rtol=1e-6)
    assert rm.grad is None  # a state is not differentiated


def test_symbol_lists_the_state_apart_and_infers_it():
    net = sym.Custom(sym.var("data"), op_type="test_centre", name="c")
    assert net.list_arguments() == ["data"]
    assert net.list_auxiliary_states() == ["c_running_mean"]
    assert net.list_inputs() == ["data", "c_running_mean"]
    assert net.infer_shape(data=(5, 3)) == ([(5, 3)], [(5, 3)], [(3,)])
    assert SEEN["infer_shape"] == [[5, 3]]  # the Prop sees the arguments only
    assert net.infer_type(data="float64") == ([np.float64], [np.float64], [np.float64])
    assert net.infer_storage_type() == (["default"], ["default"], ["default"])
    # the state keeps its name through JSON
    assert sym.load_json(net.tojson()).list_auxiliary_states() == ["c_running_mean"]


def test_executor_updates_its_aux_array_over_several_forwards():
    xs = batches()
    net = sym.Custom(sym.var("data"), op_type="test_centre", momentum=0.7, name="c")
    exe = net.simple_bind(data=(5, 3))
    assert list(exe.aux_dict) == ["c_running_mean"] and exe.aux_arrays[0].shape == (3,)
    want_outs, want_rm = centre_oracle(xs, 0.7)
    for x, want in zip(xs, want_outs):
        out = exe.forward(is_train=True, data=nd.array(x))[0]
        exe.backward(nd.ones((5, 3)))
        np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(exe.grad_dict["data"].asnumpy(), 1.0)
    np.testing.assert_allclose(exe.aux_dict["c_running_mean"].asnumpy(), want_rm,
                               rtol=1e-5, atol=1e-6)
    # bind shares the given state array
    rm = nd.array(np.ones(3, dtype=np.float32))
    exe2 = net.bind(None, {"data": nd.array(xs[0])}, aux_states=[rm])
    exe2.forward(is_train=True)
    _, want_rm = centre_oracle(xs[:1], 0.7, np.ones(3))
    np.testing.assert_allclose(rm.asnumpy(), want_rm, rtol=1e-5, atol=1e-6)
    with pytest.raises(NetsError, match=r"no arrays for auxiliary states \['c_running_mean'\]"):
        net.bind(None, {"data": nd.array(xs[0])})
    exe2.copy_params_from({}, {"c_running_mean": nd.zeros((3,))})
    assert rm.asnumpy().tolist() == [0, 0, 0]
    with pytest.raises(NetsError, match="'other' is not an auxiliary state"):
        exe2.copy_params_from({}, {"other": nd.zeros((3,))})


def test_module_trains_the_state_and_returns_it_in_aux_params(tmp_path):
    xs = batches(n=3, shape=(4, 3))
    data = sym.var("data")
    net = sym.Custom(data, op_type="test_centre", momentum=0.6, name="c")
    net = sym.FullyConnected(net, num_hidden=2, name="fc")
    net = sym.LinearRegressionOutput(net, sym.var("label"), name="out")
    mod = nets.mod.Module(net, label_names=("label",))
    mod.bind([("data", (4, 3))], [("label", (4, 2))])
    mod.init_params(nets.init.Uniform(0.1))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    args, aux = mod.get_params()
    assert sorted(args) == ["fc_bias", "fc_weight"] and list(aux) == ["c_running_mean"]
    assert aux["c_running_mean"].asnumpy().tolist() == [0, 0, 0]  # running_mean: zeros
    for x in xs:
        batch = nets.data.DataBatch([nd.array(x)], [nd.zeros((4, 2))])
        mod.forward(batch, is_train=True)
        mod.backward()
        mod.update()
    _, want_rm = centre_oracle(xs, 0.6)
    args, aux = mod.get_params()
    np.testing.assert_allclose(aux["c_running_mean"].asnumpy(), want_rm, rtol=1e-5, atol=1e-6)

    # a checkpoint carries the state; set_params writes it back
    prefix = str(tmp_path / "centre")
    mod.save_checkpoint(prefix, 3)
    symbol, args2, aux2 = nets.model.load_checkpoint(prefix, 3)
    assert symbol.list_auxiliary_states() == ["c_running_mean"]
    np.testing.assert_array_equal(aux2["c_running_mean"].asnumpy(),
                                  aux["c_running_mean"].asnumpy())
    mod2 = nets.mod.Module.load(prefix, 3, label_names=("label",))
    mod2.bind([("data", (4, 3))], [("label", (4, 2))])
    np.testing.assert_array_equal(mod2.get_params()[1]["c_running_mean"].asnumpy(),
                                  aux["c_running_mean"].asnumpy())
    mod2.set_params(args2, {"c_running_mean": nd.ones((3,))})
    assert mod2.get_params()[1]["c_running_mean"].asnumpy().tolist() == [1, 1, 1]
    with pytest.raises(NetsError, match=r"aux_params has no value for 'c_running_mean'"):
        mod2.set_params(args2, {})
    with pytest.raises(NetsError, match=r"aux_params has \['x'\], which are not auxiliary"):
        mod2.set_params(args2, {"c_running_mean": nd.ones((3,)), "x": nd.ones((3,))})


def test_a_state_must_be_a_variable_and_not_also_an_argument():
    x = sym.var("data")
    with pytest.raises(NetsError, match="auxiliary states .* must be Variables"):
        sym.Custom(x, x * 2, op_type="test_centre")
    c = sym.Custom(x, sym.var("s"), op_type="test_centre")
    with pytest.raises(NetsError, match=r"\['s'\] are both auxiliary states and arguments"):
        (c + sym.var("s")).list_arguments()


@register("test_centre_no_aux_shape")
class MissingAuxShapeProp(CentreProp):
    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]]  # (no shapes for the state)


def test_inference_must_give_the_states_shapes():
    net = sym.Custom(sym.var("data"), op_type="test_centre_no_aux_shape", name="c")
    with pytest.raises(NetsError, match="infer_shape returned 0 entries for 1 auxiliary"):
        net.infer_shape(data=(2, 3))
