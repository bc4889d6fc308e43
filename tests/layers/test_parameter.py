"""Parameter and ParameterDict: validation, initialization (incl. deferred), data/grad access."""
import numpy as np
import pytest

from nets import autograd, init, nd
from nets.base import NetsError, ShapeError
from nets.layers import DeferredInitializationError, Parameter, ParameterDict


@pytest.mark.parametrize("stype, grad_stype", [("default", "default"), ("default", "row_sparse"),
                                               ("row_sparse", "row_sparse")])
def test_stype_combinations_allocate_matching_arrays(stype, grad_stype):
    p = Parameter("w", shape=(5, 3), stype=stype, grad_stype=grad_stype, init="ones")
    p.initialize()
    assert p.data().stype == stype and p.grad().stype == grad_stype
    assert np.array_equal(p.data().asnumpy(), np.ones((5, 3), np.float32))
    assert np.array_equal(p.grad().asnumpy(), np.zeros((5, 3), np.float32))
    assert p.list_data()[0] is p.data() and p.list_grad()[0] is p.grad()


@pytest.mark.parametrize("kwargs, match", [
    ({"stype": "coo"}, "stype='coo'"),
    ({"grad_stype": "csr"}, "a csr gradient needs a csr weight"),
    ({"stype": "csr", "grad_stype": "row_sparse"}, "grad_stype='row_sparse' with stype='csr'"),
    ({"grad_stype": "dense"}, "grad_stype='dense'"),
    ({"stype": "row_sparse", "grad_stype": "default"}, "needs grad_stype='row_sparse'"),
    ({"grad_req": "sometimes"}, "grad_req='sometimes'"),
])
def test_invalid_combinations_raise_naming_the_value(kwargs, match):
    with pytest.raises(NetsError, match=match):
        Parameter("w", shape=(2, 2), **kwargs)


def test_int_shape_and_grad_req_null():
    p = Parameter("b", shape=4, grad_req="null")
    p.initialize()
    assert p.shape == (4,) and p.data().grad is None
    with pytest.raises(NetsError, match="grad_req='null'"):
        p.grad()
    p.grad_req = "write"
    assert p.grad().shape == (4,)


@pytest.mark.parametrize("grad_stype", ["default", "row_sparse"])
def test_the_parameter_declares_its_gradient_slot(grad_stype):
    p = Parameter("w", shape=(4, 2), grad_stype=grad_stype, init="ones")
    p.initialize()
    slot = autograd.grad_slot(p.data())
    assert slot.buffer is p.grad() and slot.stype == grad_stype and slot.req == "write"
    assert not slot.fresh  # no backward yet
    with autograd.record():
        y = nd.Embedding(nd.array([3, 3]), p.data(), input_dim=4, output_dim=2,
                         sparse_grad=grad_stype == "row_sparse").sum()
    y.backward()
    assert slot.fresh
    np.testing.assert_array_equal(p.grad().asnumpy(), [[0, 0], [0, 0], [0, 0], [2, 2]])
    p.grad_req = "add"  # a new declaration: a new, zero buffer that accumulates
    slot = autograd.grad_slot(p.data())
    assert slot.req == "add" and slot.stype == grad_stype and not slot.fresh
    assert not p.grad().asnumpy().any()
    p.grad_req = "null"  # no slot at all: backward delivers nothing to it
    assert autograd.grad_slot(p.data()) is None and p.data().grad is None
    p.cast("float64")
    assert autograd.grad_slot(p.data()) is None
    p.grad_req = "write"
    assert p.grad().dtype == np.float64 and p.grad().stype == grad_stype


def test_uninitialized_and_deferred_errors():
    p = Parameter("w", shape=(2, 2))
    with pytest.raises(NetsError, match="has not been initialized"):
        p.data()
    d = Parameter("d", shape=(0, 3), allow_deferred_init=True)
    d.initialize(init=init.One())
    with pytest.raises(DeferredInitializationError, match="deferred"):
        d.data()
    d.shape = (4, 3)
    d._finish_deferred_init()
    assert np.array_equal(d.data().asnumpy(), np.ones((4, 3)))
    with pytest.raises(NetsError, match="unknown and allow_deferred_init is False"):
        Parameter("u", shape=(0, 3)).initialize()
    with pytest.raises(ShapeError, match="incompatible"):
        d.shape = (5, 3)


def test_initializer_precedence_and_reinit_warning():
    p = Parameter("w", shape=(3, 3), init="zeros")
    p.initialize(default_init=init.One())  # the parameter's own init wins over the default
    assert np.all(p.data().asnumpy() == 0)
    with pytest.warns(UserWarning, match="already initialized"):
        p.initialize()
    p.initialize(init=init.Constant(2.0), force_reinit=True)
    assert np.all(p.data().asnumpy() == 2)


def test_set_data_keeps_stype_and_zero_grad_empties_row_sparse():
    p = Parameter("e", shape=(4, 2), stype="row_sparse", grad_stype="row_sparse")
    p.initialize()
    p.set_data(nd.array(np.arange(8).reshape(4, 2)))
    assert p.data().stype == "row_sparse"
    assert np.array_equal(p.data().asnumpy(), np.arange(8).reshape(4, 2))
    p.grad()[:] = nd.array(np.ones((4, 2))).tostype("row_sparse")
    p.zero_grad()
    assert p.grad().stype == "row_sparse" and p.grad().indices.size == 0


def test_row_sparse_data_retains_rows():
    p = Parameter("e", shape=(6, 2), stype="row_sparse", grad_stype="row_sparse", init="ones")
    p.initialize()
    rows = p.row_sparse_data(nd.array([1, 4]))
    assert rows.stype == "row_sparse" and list(rows.indices.asnumpy()) == [1, 4]
    dense = Parameter("w", shape=(6, 2))
    dense.initialize()
    with pytest.raises(NetsError, match="needs a row_sparse Parameter"):
        dense.row_sparse_data(nd.array([1]))


def test_parameter_dict_get_select_and_conflicts():
    pd = ParameterDict("net_")
    w = pd.get("weight", shape=(2, 3))
    assert w.name == "net_weight" and pd.get("weight") is w
    pd.get("bias", shape=(2,))
    assert list(pd.select(".*bias").keys()) == ["net_bias"]
    with pytest.raises(NetsError, match="grad_stype"):
        pd.get("weight", grad_stype="row_sparse")
    pd.initialize(init.One())
    assert np.all(pd["net_weight"].data().asnumpy() == 1)
    assert np.all(pd["net_bias"].data().asnumpy() == 0)  # biases start at zero


@pytest.mark.parametrize("grad_stype", ["csr", "default"])
def test_csr_parameter(grad_stype):
    """Parameter(stype='csr') (MXNet Gluon's): a CSR weight holding the initializer's
    non-zeros, its gradient in grad_stype, set_data and zero_grad keeping the stypes."""
    p = Parameter("w", shape=(3, 4), stype="csr", grad_stype=grad_stype, init="ones")
    p.initialize()
    assert p.stype == "csr" and p.data().stype == "csr" and p.grad().stype == grad_stype
    assert p.data().nnz == 12
    np.testing.assert_array_equal(p.data().asnumpy(), np.ones((3, 4), np.float32))
    with autograd.record():
        y = (p.data() * 3).sum()
    y.backward()
    assert p.grad().stype == grad_stype
    np.testing.assert_array_equal(p.grad().asnumpy(), np.full((3, 4), 3, np.float32))
    p.set_data(nd.array([[1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 2]]))
    assert p.data().stype == "csr" and p.data().nnz == 2
    np.testing.assert_array_equal(p.data().indices.asnumpy(), [0, 3])
    p.zero_grad()
    assert p.grad().stype == grad_stype and not p.grad().asnumpy().any()
    with pytest.raises(NetsError, match="row_sparse Parameter"):
        p.row_sparse_data(nd.array([0]))
    with pytest.raises(ShapeError):
        Parameter("v", shape=(2, 3, 4), stype="csr").initialize()
