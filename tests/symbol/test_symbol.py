"""Symbols: composition from the registry's operators, names, inference, JSON."""
import json

import numpy as np
import pytest

import nets
from nets import nd, sym
from nets.base import NetsError, ShapeError
from nets.ops.registry import OPS


def test_namespace_covers_every_nd_operator_and_wrapper():
    import nets.ops as ops
    for name in ops.__all__ + ["LinearRegressionOutput", "SoftmaxOutput", "MakeLoss"]:
        assert callable(getattr(sym, name)), name
        assert callable(getattr(sym.sparse, name)), name
    for name in OPS:  # private operators too (the Python operators use them)
        assert getattr(sym, name).name == name


def test_variables_and_tutorial_composition():
    a, b, c = sym.Variable("a"), sym.Variable("b", stype="csr"), sym.var("c", stype="row_sparse")
    assert repr(b) == "<Symbol b>" and b.attr("stype") == "csr"
    d, e, f = sym.elemwise_add(a, a), sym.sparse.negative(b), sym.sparse.elemwise_add(c, c)
    assert d.name.startswith("elemwise_add") and e.name.startswith("negative")
    group = sym.Group([d, e, f])
    assert len(group) == 3 and group.name is None
    assert group.list_arguments() == ["a", "b", "c"]
    assert group.infer_storage_type()[1] == ["default", "csr", "row_sparse"]
    assert group.list_outputs() == [d.list_outputs()[0], e.list_outputs()[0],
                                    f.list_outputs()[0]]
    assert group[1].name == e.name and group[e.list_outputs()[0]].name == e.name
    assert [s.name for s in group] == [d.name, e.name, f.name]


def test_omitted_weights_become_named_variables():
    x = sym.var("data")
    fc = sym.FullyConnected(x, num_hidden=8, name="fc1")
    assert fc.list_arguments() == ["data", "fc1_weight", "fc1_bias"]
    assert fc.list_outputs() == ["fc1_output"]
    nob = sym.FullyConnected(x, num_hidden=8, no_bias=True, name="fc2")
    assert nob.list_arguments() == ["data", "fc2_weight"]
    out = sym.SoftmaxOutput(fc, name="softmax")
    assert out.list_arguments()[-1] == "softmax_label"
    emb = sym.Embedding(x, input_dim=10, output_dim=4, name="emb")
    assert emb.list_arguments() == ["data", "emb_weight"]
    with pytest.raises(TypeError, match="num_hidden"):
        sym.FullyConnected(x)
    with pytest.raises(TypeError, match="must be a Symbol"):
        sym.dot(x, nd.ones((2, 2)))
    with pytest.raises(NetsError, match="single-output"):
        sym.relu(sym.split(x, num_outputs=2))


def test_python_operators_pick_the_same_operators_as_nd():
    x, y = sym.var("x"), sym.var("y")
    cases = {"x + y": (x + y, "broadcast_add"), "x + 1": (x + 1, "_plus_scalar"),
             "2 - x": (2 - x, "_rminus_scalar"), "x * y": (x * y, "broadcast_mul"),
             "x / 2": (x / 2, "_div_scalar"), "x ** 2": (x ** 2, "_power_scalar"),
             "-x": (-x, "negative"), "x > 0": (x > 0, "_greater_scalar"),
             "x.sum(axis=1)": (x.sum(axis=1), "sum"), "x.reshape(2, 3)": (x.reshape(2, 3),
                                                                           "reshape")}
    for expr, (s, op) in cases.items():
        node = s._outputs[0][0]
        assert node.op.name == op, expr
    assert (x.reshape(2, 3))._outputs[0][0].attrs == {"shape": (2, 3)}
    with pytest.raises(NetsError, match="truth value"):
        bool(x)


def test_get_internals_and_children():
    x = sym.var("x")
    h = sym.relu(sym.FullyConnected(x, num_hidden=3, name="fc"), name="act")
    internals = h.get_internals()
    assert internals.list_outputs() == ["x", "fc_weight", "fc_bias", "fc_output", "act_output"]
    assert internals["fc_output"].name == "fc"
    assert h.get_children().list_outputs() == ["fc_output"]
    assert x.get_children() is None


def test_infer_shape_forward_and_backward():
    data = sym.var("data")
    net = sym.FullyConnected(data, num_hidden=5, name="fc")
    net = sym.SoftmaxOutput(sym.relu(net), name="softmax")
    args, outs, aux = net.infer_shape(data=(7, 2, 3))
    assert dict(zip(net.list_arguments(), args)) == {
        "data": (7, 2, 3), "fc_weight": (5, 6), "fc_bias": (5,), "softmax_label": (7,)}
    assert outs == [(7, 5)] and aux == []
    assert net.infer_shape((7, 2, 3)) == (args, outs, aux)  # positional
    partial = net.infer_shape_partial()
    assert partial[0] == [None, None, (5,), None] and partial[1] == [None]
    with pytest.raises(ShapeError, match=r"\['data', 'fc_weight'"):
        net.infer_shape()
    with pytest.raises(ShapeError, match="fc_weight"):
        net.infer_shape(data=(7, 6), fc_weight=(5, 4))


def test_infer_shape_of_the_sparse_tutorial_graph_and_regression_label():
    x = sym.var("data", stype="csr")
    w = sym.var("weight", stype="row_sparse", shape=(100, 1))
    pred = sym.broadcast_add(sym.sparse.dot(x, w), sym.var("bias", shape=(1,)))
    lro = sym.LinearRegressionOutput(pred, sym.var("label"), name="lro")
    args, outs, _ = lro.infer_shape(data=(32, 100))
    assert args == [(32, 100), (100, 1), (1,), (32,)] and outs == [(32, 1)]
    assert lro.infer_shape(data=(32, 100), label=(32, 1))[0][-1] == (32, 1)
    with pytest.raises(ShapeError, match="node 'dot.*do not share the contracted"):
        lro.infer_shape(data=(32, 50))
    with pytest.raises(ShapeError, match=r"'weight' is declared with shape \(100, 1\)"):
        lro.infer_shape(data=(32, 100), weight=(50, 1))
    with pytest.raises(NetsError, match=r"\['nope'\] are not arguments"):
        lro.infer_type(nope="float32")


_IDS = nd.array([[1, 0], [3, 2]])


@pytest.mark.parametrize("expr, others", [
    (lambda x: sym.reshape(x, shape=(-1, 0)), {}),
    (lambda x: sym.reshape(x, shape=(-1, 0), reverse=True), {}),
    (lambda x: sym.transpose(x, axes=(2, 0, 1)), {}),
    (lambda x: sym.sum(x, axis=1, keepdims=True), {}),
    (lambda x: sym.max(x, axis=(0, 2), exclude=True), {}),
    (lambda x: sym.norm(x), {}),
    (lambda x: sym.argmax(x, axis=1), {}),
    (lambda x: sym.concat(x, x, dim=2), {}),
    (lambda x: sym.split(x, num_outputs=5, axis=2, squeeze_axis=True)[4], {}),
    (lambda x: sym.slice_axis(x, axis=1, begin=1, end=-1), {}),
    (lambda x: sym.slice(x, begin=(None, 1), end=(2, None), step=(1, 2)), {}),
    (lambda x: sym.expand_dims(x, axis=-1), {}),
    (lambda x: sym.flatten(x), {}),
    (lambda x: sym.stack(x, x, axis=1), {}),
    (lambda x: sym.broadcast_to(sym.sum(x, axis=0, keepdims=True), shape=(6, 0, 0)), {}),
    (lambda x: sym.broadcast_mul(x, sym.var("w")), {"w": nd.ones((4, 1))}),
    (lambda x: sym.pick(x, sym.var("i"), axis=1), {"i": nd.zeros((3, 5))}),
    (lambda x: sym.take(x, sym.var("i")), {"i": _IDS}),
    (lambda x: sym.one_hot(sym.var("i"), depth=7), {"i": _IDS}),
    (lambda x: sym.dot(x, sym.var("w"), transpose_a=True), {"w": nd.ones((3, 6))}),
    (lambda x: sym.Embedding(sym.var("i"), input_dim=4, output_dim=2), {"i": _IDS}),
    (lambda x: sym.FullyConnected(x, num_hidden=2, flatten=False), {}),
    (lambda x: sym._dot_bias(sym.reshape(x, shape=(3, 20)), sym.var("w"), sym.var("b")),
     {"w": nd.ones((20, 2))}),
    (lambda x: sym._dot_bias(sym.reshape(x, shape=(3, 20)), sym.var("w"), sym.var("b")),
     {"b": nd.ones((7,))}),
])
def test_shape_rules_match_the_computed_arrays(expr, others):
    x = nd.array(np.random.default_rng(0).standard_normal((3, 4, 5)), dtype="float32")
    out = expr(sym.var("x", shape=x.shape))
    given = {k: v.shape for k, v in others.items()}
    arg_shapes, out_shapes, _ = out.infer_shape(**given)
    values = dict(others, x=x)
    values = {n: values.get(n, nd.ones(s)) for n, s in zip(out.list_arguments(), arg_shapes)}
    assert out_shapes == [out.eval(**values)[0].shape]


def test_infer_type():
    x, w = sym.var("x", dtype="float64"), sym.var("w")
    out = sym.dot(x, w)
    args, outs, _ = out.infer_type()
    assert args == [np.float64, np.float64] and outs == [np.float64]  # w follows x
    ids = sym.var("ids", dtype="int64")
    emb = sym.Embedding(ids, input_dim=5, output_dim=2, name="e")
    assert emb.infer_type()[0] == [np.int64, np.float32]
    assert sym.argmax(ids).dtype == np.float64
    assert sym.one_hot(ids, depth=3, dtype="float16").dtype == np.float16


def test_json_roundtrip_keeps_structure_and_attributes(tmp_path):
    init = nets.init.Normal(sigma=0.02)
    x = sym.var("data", stype="csr", shape=(0, 10))
    w = sym.var("w", stype="row_sparse", shape=(10, 2), init=init, lr_mult=2.0,
                attr={"note": "hi"})
    net = sym.Group([sym.SoftmaxOutput(sym.dot(x, w), name="out", use_ignore=True),
                     sym.split(sym.relu(sym.dot(x, w)), num_outputs=2, name="parts")[1]])
    text = net.tojson()
    back = sym.load_json(text)
    assert back.tojson() == text
    assert back.list_arguments() == net.list_arguments()
    assert back.list_outputs() == ["out_output", "parts_output1"]
    spec = back.attr_dict()["w"]
    assert spec["shape"] == (10, 2) and spec["lr_mult"] == 2.0 and spec["attr"] == {"note": "hi"}
    assert isinstance(spec["init"], nets.init.Normal) and spec["init"].sigma == 0.02
    assert back.infer_storage_type()[1] == net.infer_storage_type()[1]
    net.save(tmp_path / "g.json")
    assert sym.load(tmp_path / "g.json").tojson() == text


@pytest.mark.parametrize("mutate, message", [
    (lambda g: g.update(format="other"), "not a nets symbol"),
    (lambda g: g["nodes"][1].update(op="os.system"), "unknown operator 'os.system'"),
    (lambda g: g["nodes"][1]["attrs"].update(evil=1), r"no attributes \['evil'\]"),
    (lambda g: g["nodes"][1].update(inputs=[[5, 0]]), "not an output of an earlier node"),
    (lambda g: g["nodes"][1].update(inputs=[]), "takes 1 inputs"),
    (lambda g: g["nodes"][0]["attrs"].update(init=["pickle", {}]), "not an initializer"),
    (lambda g: g["nodes"][0]["attrs"].update(init=["normal", {"evil": 1}]), "variable 'x'"),
    (lambda g: g["nodes"][0]["attrs"].update(lr_mult="fast"), "variable 'x'"),
    (lambda g: g["nodes"][0]["attrs"].update(code="x"), "unknown attributes"),
    (lambda g: g.update(heads=[[9, 0]]), "head"),
    (lambda g: g["nodes"][1]["attrs"].update(act_type="nope"), "act_type"),
])
def test_load_json_rejects_hostile_or_broken_graphs(mutate, message):
    graph = json.loads(sym.Activation(sym.var("x"), act_type="relu").tojson())
    mutate(graph)
    with pytest.raises(NetsError, match=message):
        sym.load_json(json.dumps(graph))


def test_load_reports_the_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(NetsError, match="bad.json.*not JSON"):
        sym.load(bad)
    with pytest.raises(NetsError, match="cannot read"):
        sym.load(tmp_path / "missing.json")


def test_save_is_atomic(tmp_path, monkeypatch):
    """An error while writing keeps the previous file whole and leaves no temporary."""
    import os
    path = tmp_path / "net-symbol.json"
    first = sym.FullyConnected(sym.var("data"), num_hidden=2, name="fc")
    first.save(path)
    before = path.read_text()

    def fail(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError, match="disk full"):
        sym.relu(first).save(str(path))
    assert path.read_text() == before and os.listdir(tmp_path) == ["net-symbol.json"]
    assert sym.load(path).tojson() == first.tojson()


def test_unsaveable_attributes_are_named():
    class Custom(nets.init.Initializer):
        def _init_weight(self, name, values):
            values[...] = 1
    with pytest.raises(NetsError, match="not registered"):
        sym.var("w", init=Custom()).tojson()
