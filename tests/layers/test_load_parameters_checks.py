"""Stored arrays fill parameters only when they fit: the shape exactly (nothing
broadcasts) and a dtype that converts without loss of meaning (any bool/int/float into a
float parameter, rounding float64 to float32; into an integer parameter only a safe
cast). Otherwise NetsError names the parameter, the file's shape and dtype and the
expected ones, and no parameter changes. The same rule holds for Parameter.set_data,
Module.set_params and the optimizer states a Trainer loads."""
import json
import re

import numpy as np
import pytest

import nets
from nets import layers, nd, serialization, sym
from nets.base import DTypeError, NetsError, ShapeError

W = np.array([[0.5, -1.0, 2.0, 0.25], [1.0, 2.0, 3.0, 4.0], [-3.0, 0.0, 1.5, 8.0]])


def _dense():
    """Dense(3, in_units=4): weight (3, 4), bias (3,), float32, initialized."""
    net = layers.Dense(3, in_units=4)
    net.initialize()
    return net


def _file(tmp_path, weight, bias=None):
    path = str(tmp_path / "p.npz")
    bias = nd.array(np.array([1.0, 2.0, 3.0]), dtype="float32") if bias is None else bias
    serialization.save_arrays(path, {"weight": weight, "bias": bias}, {"kind": "parameters"})
    return path


@pytest.mark.parametrize("shape", [(4,), (1, 4), (3, 1), (4, 3), (12,), (3, 4, 1), ()])
def test_a_stored_shape_other_than_the_parameters_is_refused(tmp_path, shape):
    net = _dense()
    before = net.weight.data().asnumpy().copy()
    path = _file(tmp_path, nd.array(np.ones(shape), dtype="float32"))
    with pytest.raises(ShapeError) as info:
        net.load_parameters(path)
    message = str(info.value)
    assert path in message and "parameter 'weight'" in message
    assert f"shape {shape} dtype float32" in message and "expected shape (3, 4) dtype float32" \
        in message
    np.testing.assert_array_equal(net.weight.data().asnumpy(), before)


def test_a_failing_parameter_leaves_every_parameter_unchanged(tmp_path):
    """The weight fits, the bias does not: neither is written."""
    net = _dense()
    before = [p.data().asnumpy().copy() for p in (net.weight, net.bias)]
    path = _file(tmp_path, nd.array(W, dtype="float32"), nd.array(np.ones(4), dtype="float32"))
    with pytest.raises(ShapeError, match="parameter 'bias'"):
        net.load_parameters(path)
    for p, old in zip((net.weight, net.bias), before):
        np.testing.assert_array_equal(p.data().asnumpy(), old)


@pytest.mark.parametrize("dtype", ["float64", "float16", "int64", "int32", "uint8", "bool"])
def test_bool_integer_and_float_files_load_into_a_float32_parameter_cast(tmp_path, dtype):
    values = (W != 0) if dtype == "bool" else np.abs(W) * 4 if dtype == "uint8" else W * 4
    stored = values.astype(dtype)
    net = _dense()
    net.load_parameters(_file(tmp_path, nd.array(stored, dtype=dtype)))
    assert net.weight.data().dtype == np.float32 and net.weight.dtype == np.float32
    np.testing.assert_array_equal(net.weight.data().asnumpy(), stored.astype(np.float32))


def test_float64_values_round_to_float32(tmp_path):
    stored = np.array([[1 / 3, 2 ** -30, 1e30, -7.1]] * 3)
    net = _dense()
    net.load_parameters(_file(tmp_path, nd.array(stored, dtype="float64")))
    np.testing.assert_array_equal(net.weight.data().asnumpy(), stored.astype(np.float32))


@pytest.mark.parametrize("values", [np.array([1 + 2j] * 12).reshape(3, 4),
                                    np.array([["abc"] * 4] * 3),
                                    np.array([[{"x": 1}] * 4] * 3, dtype=object),
                                    np.zeros((3, 4), "M8[s]")])
def test_complex_string_object_and_datetime_values_are_refused(tmp_path, values):
    """No nets array holds them, so no file can either (load_arrays refuses them); a
    direct set_data refuses them too, naming the dtype."""
    net = _dense()
    path = str(tmp_path / "p.npz")
    with open(path, "wb") as f:  # a file with a nets config declaring float32 'weight'
        header = {"format": "nets-npz-1", "config": {}, "arrays": {
            "weight": {"stype": "default", "shape": [3, 4], "dtype": "float32"}}}
        np.savez(f, weight=values, __nets_config__=np.frombuffer(
            json.dumps(header).encode(), np.uint8))
    with pytest.raises(NetsError, match=re.escape(f"stored weight dtype {values.dtype}")):
        net.load_parameters(path, allow_missing=True)
    with pytest.raises(DTypeError, match=re.escape(f"dtype {values.dtype}; expected shape "
                                                   f"(3, 4) dtype float32")):
        net.weight.set_data(values)


@pytest.mark.parametrize("param_dtype, stored, ok", [
    ("int64", np.array([1, 2, 3], np.int32), True),
    ("int64", np.array([1, 2, 3], np.uint8), True),
    ("int64", np.array([True, False, True]), True),
    ("int32", np.array([1, 2, 3], np.int64), False),  # narrowing
    ("int64", np.array([1.0, 2.0, 3.0]), False),  # float into an integer parameter
    ("uint8", np.array([1, 2, 3], np.int8), False),  # signed into unsigned
    ("bool", np.array([0, 1, 1], np.int64), False),
])
def test_integer_parameters_take_only_safe_casts(tmp_path, param_dtype, stored, ok):
    class Counts(layers.Block):
        def __init__(self):
            super().__init__()
            self.counts = nets.layers.Parameter("counts", shape=(3,), dtype=param_dtype,
                                                grad_req="null")

    net = Counts()
    net.initialize()
    path = str(tmp_path / "c.npz")
    serialization.save_arrays(path, {"counts": nd.array(stored, dtype=stored.dtype)})
    if ok:
        net.load_parameters(path)
        assert net.counts.data().dtype == np.dtype(param_dtype)
        np.testing.assert_array_equal(net.counts.data().asnumpy(), stored.astype(param_dtype))
    else:
        with pytest.raises(DTypeError, match=f"parameter 'counts'.*dtype {stored.dtype}; "
                                             f"expected shape \\(3,\\) dtype {param_dtype}"):
            net.load_parameters(path)


def test_a_deferred_parameter_takes_the_files_shape_where_its_own_is_unknown(tmp_path):
    path = _file(tmp_path, nd.array(W, dtype="float32"))
    net = layers.Dense(3)  # weight (3, 0): in_units unknown
    net.initialize()
    net.load_parameters(path)
    assert net.weight.shape == (3, 4)
    np.testing.assert_array_equal(net.weight.data().asnumpy(), W.astype(np.float32))
    for shape in [(4, 4), (3,), (3, 4, 1)]:
        net = layers.Dense(3)
        net.initialize()
        with pytest.raises(ShapeError, match=r"expected shape \(3, \?\) dtype float32"):
            net.load_parameters(_file(tmp_path, nd.array(np.ones(shape), dtype="float32")))


def test_a_sparse_file_fills_a_dense_parameter_of_its_shape_only(tmp_path):
    rsp = nd.sparse.row_sparse_array((W[[0, 2]], [0, 2]), shape=(3, 4), dtype="float64")
    net = _dense()
    net.load_parameters(_file(tmp_path, rsp))
    expected = W.copy()
    expected[1] = 0
    assert net.weight.data().stype == "default"
    np.testing.assert_array_equal(net.weight.data().asnumpy(), expected.astype(np.float32))
    wide = nd.sparse.row_sparse_array((W[[0]], [5]), shape=(6, 4), dtype="float32")
    with pytest.raises(ShapeError, match=r"shape \(6, 4\) dtype float32; expected shape "
                                         r"\(3, 4\)"):
        _dense().load_parameters(_file(tmp_path, wide))


def test_set_data_does_not_broadcast():
    net = _dense()
    with pytest.raises(ShapeError, match="Parameter '.*weight'.set_data.*shape \\(4,\\)"):
        net.weight.set_data(nd.ones((4,)))
    with pytest.raises(ShapeError):
        net.weight.set_data(np.ones((1, 4)))
    net.weight.set_data(W.tolist())  # (a list of Python floats: float64, cast)
    np.testing.assert_array_equal(net.weight.data().asnumpy(), W.astype(np.float32))


def _module():
    out = sym.FullyConnected(sym.var("data"), num_hidden=3, name="fc")
    mod = nets.mod.Module(out, label_names=[])
    mod.bind(data_shapes=[("data", (2, 4))], for_training=False)
    mod.init_params()
    return mod


def test_module_set_params_checks_every_array_before_writing_any():
    mod = _module()
    before = mod.get_params()[0]
    bad = {"fc_weight": nd.array(W, dtype="float32"), "fc_bias": nd.ones((1, 3))}
    with pytest.raises(ShapeError, match=r"arg_params\['fc_bias'\].*\(1, 3\).*expected shape "
                                         r"\(3,\)"):
        mod.set_params(bad)
    for name, value in mod.get_params()[0].items():
        np.testing.assert_array_equal(value.asnumpy(), before[name].asnumpy())
    mod.set_params({"fc_weight": nd.array(W, dtype="float64"), "fc_bias": nd.zeros(3)})
    assert mod.get_params()[0]["fc_weight"].dtype == np.float32
    np.testing.assert_array_equal(mod.get_params()[0]["fc_weight"].asnumpy(),
                                  W.astype(np.float32))


def test_a_checkpoint_of_other_shapes_is_refused_by_module_load(tmp_path):
    out = sym.FullyConnected(sym.var("data"), num_hidden=3, name="fc")
    prefix = str(tmp_path / "m")
    nets.model.save_checkpoint(prefix, 1, out, {"fc_weight": nd.ones((4,)),
                                                "fc_bias": nd.zeros(3)})
    mod = nets.mod.Module.load(prefix, 1, label_names=[])
    with pytest.raises(ShapeError, match=r"arg_params\['fc_weight'\].*\(4,\)"):
        mod.bind(data_shapes=[("data", (2, 4))], for_training=False)


def test_trainer_states_must_fit_the_states_the_optimizer_makes(tmp_path):
    """Momentum saved for a (3, 4) weight does not load into a trainer whose weight is
    (4, 3); float64 momentum loads into a float32 weight's float32 momentum."""
    net = _dense()
    trainer = nets.Trainer(net.collect_params(), "sgd", {"momentum": 0.9})
    with nets.autograd.record():
        loss = net(nd.ones((2, 4))).sum()
    loss.backward()
    trainer.step(1)
    path = str(tmp_path / "s.npz")
    trainer.save_states(path)
    other = layers.Dense(4, in_units=3, prefix=net.prefix)
    other.initialize()
    with pytest.raises(ShapeError, match=r"state of '.*weight'.*\(3, 4\).*expected shape "
                                         r"\(4, 3\)"):
        nets.Trainer(other.collect_params(), "sgd", {"momentum": 0.9}).load_states(path)
    double = layers.Dense(3, in_units=4, prefix=net.prefix, dtype="float64")
    double.initialize()
    fresh = nets.Trainer(double.collect_params(), "sgd", {"momentum": 0.9})
    fresh.load_states(path)
    loaded = [r.state for r in fresh.optimizer.state.values()]
    assert [s.dtype for s in loaded] == [np.float64, np.float64]
    np.testing.assert_array_equal(loaded[0].asnumpy(),
                                  trainer.optimizer.state[0].state.asnumpy())
