"""The operator registry's own behaviour: storage logging and the fallback warning's content."""
import logging

import pytest

import nets
from nets import nd
from nets.ops import registry


def test_storage_verbose_logs_every_op(monkeypatch, caplog):
    # NETS_STORAGE_VERBOSE=1 is read once at import; this flips the flag it sets
    monkeypatch.setattr(registry, "_VERBOSE", True)
    x = nd.array([[1.0, 0.0], [0.0, 2.0]]).tostype("csr")
    with caplog.at_level(logging.INFO, logger="nets.storage"):
        y = x * 2
        nd.dot(x, nd.ones((2, 3)))
    assert y.stype == "csr"
    lines = [r.getMessage() for r in caplog.records if r.name == "nets.storage"]
    assert "_mul_scalar: inputs ('csr',) -> outputs ('csr',)" in lines
    assert "dot: inputs ('csr', 'default') -> outputs ('default',)" in lines


def test_quiet_by_default(caplog):
    assert registry._VERBOSE is False  # the test environment does not set the variable
    with caplog.at_level(logging.INFO, logger="nets.storage"):
        nd.ones((2, 2)) * 2
    assert not [r for r in caplog.records if r.name == "nets.storage"]


def test_fallback_warning_names_op_stypes_and_bytes():
    x = nd.array([[1.0, 0.0], [0.0, 2.0]], dtype="float64").tostype("row_sparse")
    with pytest.warns(nets.StorageFallbackWarning,
                      match=r"log: .*\('row_sparse',\).*densified 32 bytes") as rec:
        out = nd.log(x)
    assert out.stype == "default" and len(rec) == 1


@pytest.fixture
def toy_op():
    """``(op, calls)``: an operator with a dense implementation that notes each call and
    no sparse one, registered for the test only."""
    calls = []
    op = registry.Op("_toy_in_vjp", ("data",), {"scale": 1.0})

    @op.impl("default")
    def _(data, scale):
        calls.append(data.stype)
        return nd.NDArray(data.asnumpy() * scale)

    op.vjp(lambda node, g: (g * node.attrs["scale"],))
    yield op, calls
    del registry.OPS[op.name]


def test_in_vjp_runs_the_implementation_directly_when_nothing_records(toy_op, monkeypatch):
    op, calls = toy_op
    monkeypatch.setattr(op, "_bind", lambda *a: pytest.fail("in_vjp bound the arguments"))
    out = op.in_vjp(nd.array([1.0, 2.0]), scale=3.0)
    assert calls == ["default"] and out._node is None
    assert out.asnumpy().tolist() == [3.0, 6.0]


def test_in_vjp_records_under_create_graph_and_falls_back_with_the_warning(toy_op):
    op, calls = toy_op
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with nets.autograd.record():  # as a vjp runs under grad(create_graph=True)
        out = op.in_vjp(x, scale=3.0)
    assert out._node is not None and out._node[0].op is op  # recorded: differentiable
    out.backward()
    assert x.grad.asnumpy().tolist() == [3.0, 3.0]
    rsp = nd.array([[1.0], [0.0]]).tostype("row_sparse")  # no implementation: the full call
    with pytest.warns(nets.StorageFallbackWarning, match="_toy_in_vjp"):
        out = op.in_vjp(rsp, scale=2.0)
    assert out.asnumpy().tolist() == [[2.0], [0.0]] and calls[-1] == "default"


def test_in_vjp_logs_under_storage_verbose(toy_op, monkeypatch, caplog):
    op, calls = toy_op
    monkeypatch.setattr(registry, "_VERBOSE", True)
    with caplog.at_level(logging.INFO, logger="nets.storage"):
        op.in_vjp(nd.array([1.0]), scale=2.0)
    assert "_toy_in_vjp: inputs ('default',) -> outputs ('default',)" in [
        r.getMessage() for r in caplog.records if r.name == "nets.storage"]
