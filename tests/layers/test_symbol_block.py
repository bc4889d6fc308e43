"""SymbolBlock (MXNet's gluon.SymbolBlock), SymbolBlock.imports of HybridBlock.export's
files, Parameter.var() and Parameter's storage-type defaults."""
import numpy as np
import pytest

import nets
from nets import autograd, gluon, nd, sym
from nets.test_utils import assert_almost_equal


def _net():
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(4, in_units=3, activation="relu"))
    net.add(gluon.nn.Dense(2))
    net.initialize()
    net.hybridize()
    return net


def test_imports_loads_what_export_wrote(tmp_path):
    net = _net()
    x = nd.array(np.random.rand(5, 3))
    want = net(x)
    net.export(str(tmp_path / "model"), epoch=3)
    block = gluon.SymbolBlock.imports(str(tmp_path / "model-symbol.json"), ["data"],
                                      str(tmp_path / "model-0003.params.npz"))
    assert_almost_equal(block(x), want)
    assert sorted(block.collect_params().keys()) == sorted(net.collect_params().keys())
    with autograd.record():
        loss = block(x).sum()
    loss.backward()
    w = block.collect_params()[net[0].weight.name]
    assert w.grad().shape == (4, 3) and np.abs(w.grad().asnumpy()).sum() > 0


def test_symbol_block_from_symbols_with_a_sparse_parameter():
    data = sym.var("data")
    w = sym.var("w", stype="row_sparse", shape=(5, 1))
    b = sym.var("b", shape=(1,))
    out = sym.broadcast_add(sym.dot(data, w), b)
    block = gluon.SymbolBlock(out, data)
    block.initialize(init=nets.init.One())
    x = np.random.rand(2, 5)
    y = block(nd.array(x))
    assert y.shape == (2, 1)
    params = block.collect_params()
    assert params["w"].stype == "row_sparse" and params["w"].grad_stype == "row_sparse"
    assert_almost_equal(y, x @ params["w"].data().asnumpy() + params["b"].data().asnumpy())


def test_parameter_var_and_stype_defaults():
    p = gluon.Parameter("weight", shape=(10, 10), stype="row_sparse")
    assert p.grad_stype == "row_sparse"  # MXNet accepts stype without grad_stype
    v = p.var()
    assert v.name == "weight" and v.attr("__storage_type__") == "1"  # MXNet's id
    assert v.list_arguments() == ["weight"]
    assert gluon.Parameter("w", shape=(2,)).grad_stype == "default"
    for kwargs in ({"stype": "invalid"}, {"grad_stype": "invalid"}):
        with pytest.raises(AssertionError):  # MXNet's exception type (also a NetsError)
            gluon.Parameter("w", shape=(2, 2), **kwargs)
        with pytest.raises(nets.NetsError):
            gluon.Parameter("w", shape=(2, 2), **kwargs)
