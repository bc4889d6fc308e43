"""sym.Custom: Python-defined operators (nets.operator) in graphs - simple_bind, Module
training over CSR data with a row_sparse weight, hybridized blocks, JSON - and the
``_internal`` namespaces."""
import numpy as np
import pytest

import nets
from nets import autograd, nd, sym
from nets.base import NetsError
from nets.layers import HybridBlock
from nets.operator import CustomOp, CustomOpProp, register
from nets.test_utils import assert_almost_equal, rand_ndarray
from tests.custom_ops import weighted_ce_oracle  # (registers test_weighted_softmax_ce)


class Cube(CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] ** 3 * self.scale)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], 3 * self.scale * in_data[0] ** 2 * out_grad[0])


@register("test_sym_cube")
class CubeProp(CustomOpProp):
    def __init__(self, scale):
        super().__init__()
        self.scale = float(scale)

    def create_operator(self, ctx, in_shapes, in_dtypes):
        op = Cube()
        op.scale = self.scale
        return op


def test_graph_values_gradients_and_inference():
    x = sym.var("x")
    out = sym.Custom(x * 2, op_type="test_sym_cube", scale=0.5, name="cube")
    assert out.list_outputs() == ["cube_output"]
    assert out.infer_shape(x=(2, 3))[1] == [(2, 3)]
    assert out.infer_type(x=np.float64)[1] == [np.float64]
    exe = out.simple_bind(x=(2, 3), type_dict={"x": np.float64})
    xv = np.random.default_rng(0).normal(size=(2, 3))
    exe.forward(is_train=True, x=nd.array(xv, dtype=np.float64))
    g = np.random.default_rng(1).normal(size=(2, 3))
    exe.backward(nd.array(g, dtype=np.float64))
    assert_almost_equal(exe.outputs[0], 0.5 * (2 * xv) ** 3)
    assert_almost_equal(exe.grad_dict["x"], 3 * 0.5 * (2 * xv) ** 2 * 2 * g)


def test_missing_inputs_become_variables_and_json_round_trip():
    loss = sym.Custom(sym.var("data"), op_type="test_weighted_softmax_ce",
                      positive_cls_weight=2, name="out")
    assert loss.list_arguments() == ["data", "out_label"]
    back = sym.load_json(loss.tojson())
    assert back.list_arguments() == ["data", "out_label"]
    assert back.attr_dict()["out"] == {"op_type": "test_weighted_softmax_ce",
                                       "params": (("positive_cls_weight", "2"),)}
    with pytest.raises(NetsError, match="registered"):
        sym.Custom(sym.var("a"), op_type="test_sym_unregistered")


def test_module_trains_like_linear_classification():
    """CSR data . row_sparse weight + bias through the custom loss: the weight's gradient
    is row_sparse over the batch's features and equals the numpy gradient."""
    num_features, batch = 7, 4
    data = sym.Variable("data", stype="csr")
    weight = sym.Variable("weight", shape=(num_features, 2), stype="row_sparse")
    bias = sym.Variable("bias", shape=(2,))
    logits = sym.broadcast_add(sym.sparse.dot(data, weight), bias)
    out = sym.Custom(logits, sym.Variable("softmax_label"), op_type="test_weighted_softmax_ce",
                     positive_cls_weight=2, name="out")
    model = sym.MakeLoss(out)
    mod = nets.mod.Module(symbol=model, data_names=["data"], label_names=["softmax_label"])
    mod.bind(data_shapes=[("data", (batch, num_features))],
             label_shapes=[("softmax_label", (batch,))])
    rng = np.random.default_rng(2)
    w0, b0 = rng.normal(size=(num_features, 2)), rng.normal(size=2)
    mod.init_params(arg_params={"weight": nd.array(w0).tostype("row_sparse"),
                                "bias": nd.array(b0)})
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    x = rand_ndarray((batch, num_features), "csr", 0.3, np.float32)
    y = np.array([0, 1, 1, 0], np.float32)
    mod.forward_backward(nets.data.DataBatch([x], [nd.array(y)]))
    xd = x.asnumpy().astype(np.float64)
    p, dz = weighted_ce_oracle(xd @ w0.astype(np.float32) + b0.astype(np.float32), y, 2.0)
    assert_almost_equal(mod.get_outputs()[0], p, rtol=1e-5, atol=1e-6)
    grad = mod._exec.grad_dict["weight"]
    assert grad.stype == "row_sparse"
    assert set(grad.indices.asnumpy().tolist()) <= set(np.nonzero(xd.any(axis=0))[0].tolist())
    assert_almost_equal(grad, xd.T @ dz, rtol=1e-4, atol=1e-5)
    mod.update()


class CubeBlock(HybridBlock):
    def hybrid_forward(self, F, x):
        return F.Custom(x + 1, op_type="test_sym_cube", scale=2)


def test_hybridized_block_matches_imperative():
    xv = np.random.default_rng(3).normal(size=(3, 2))
    results = []
    for hybrid in (False, True):
        net = CubeBlock()
        if hybrid:
            net.hybridize()
        x = nd.array(xv)
        x.attach_grad()
        for _ in range(2):  # the second call runs the cached graph
            with autograd.record():
                y = net(x)
            y.backward()
        results.append((y.asnumpy(), x.grad.asnumpy()))
    for y, g in results:
        assert_almost_equal(y, 2 * (xv + 1) ** 3, rtol=1e-5)
        assert_almost_equal(g, 6 * (xv + 1) ** 2, rtol=1e-5)


def test_internal_namespaces():
    x = rand_ndarray((3, 4), "csr", 0.5, np.float64)
    assert_almost_equal(nd._internal._square_sum(x, axis=1), (x.asnumpy() ** 2).sum(axis=1))
    s = sym._internal._square_sum(sym.var("x"), axis=1, keepdims=True)
    assert_almost_equal(s.eval(x=x)[0], (x.asnumpy() ** 2).sum(axis=1, keepdims=True))
    a, b = nd.array([1.0, 5.0]), nd.array([3.0, 2.0])
    assert nd._internal._maximum(a, b).asnumpy().tolist() == [3.0, 5.0]
    assert nd._internal._plus(a, b).asnumpy().tolist() == [4.0, 7.0]
    assert nd._internal._plus_scalar(a, scalar=1.0).asnumpy().tolist() == [2.0, 6.0]
    s = sym._internal._mul(sym.var("a"), sym.var("b"))
    assert s.eval(a=a, b=b)[0].asnumpy().tolist() == [3.0, 10.0]
    for name in nets.ops.registry.OPS:  # every internal operator is there under its name
        if name.startswith("_"):
            assert hasattr(nd._internal, name) and hasattr(sym._internal, name)


class First(CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0])


@register("test_sym_first")
class FirstProp(CustomOpProp):
    def list_arguments(self):
        return ["a", "b"]

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return First()


@pytest.mark.parametrize("stype_a", ["default", "csr", "row_sparse"])
@pytest.mark.parametrize("stype_b", ["default", "csr", "row_sparse"])
def test_symbolic_and_imperative_storage_agree(stype_a, stype_b):
    """The Prop's default storage rule (every output takes the first input's stype) is the
    one table of both paths, and the executor runs it natively (no fallback)."""
    a, b = rand_ndarray((4, 3), stype_a, 0.5), rand_ndarray((4, 3), stype_b, 0.5)
    out = nd.Custom(a, b, op_type="test_sym_first")
    assert out.stype == stype_a
    assert_almost_equal(out, a.asnumpy())
    s = sym.Custom(sym.var("a", stype=stype_a), sym.var("b", stype=stype_b),
                   op_type="test_sym_first", name="first")
    assert s.infer_storage_type()[1] == [stype_a]
    exe = s.bind(None, {"a": a, "b": b}, grad_req="null")
    assert [r[4] for r in exe.storage_report] == [False]
    assert exe.forward()[0].stype == stype_a
