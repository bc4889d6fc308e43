"""The operator registry's own behaviour: storage logging, the fallback warning's content,
the declarations every operator makes, and vjps calling operators the ordinary way."""
import logging
import warnings

import numpy as np
import pytest

import nets
from nets import autograd, nd, sym
from nets.base import DenseResultWarning, ShapeError
from nets.ops import registry
from nets.test_utils import assert_almost_equal, rand_ndarray


@pytest.fixture
def verbose():
    """The storage log switched on for one test (``NETS_STORAGE_VERBOSE=1`` at import)."""
    registry.set_storage_verbose(True)
    yield
    registry.set_storage_verbose(False)


def test_storage_verbose_logs_every_op(verbose, caplog):
    x = nd.array([[1.0, 0.0], [0.0, 2.0]]).tostype("csr")
    with caplog.at_level(logging.INFO, logger="nets.storage"):
        y = x * 2
        nd.dot(x, nd.ones((2, 3)))
    assert y.stype == "csr"
    lines = [r.getMessage() for r in caplog.records if r.name == "nets.storage"]
    assert "_mul_scalar: inputs ('csr',) -> outputs ('csr',)" in lines
    assert "dot: inputs ('csr', 'default') -> outputs ('default',)" in lines


def test_quiet_by_default(caplog):
    assert registry.storage_verbose() is False  # the test environment does not set the variable
    with caplog.at_level(logging.INFO, logger="nets.storage"):
        nd.ones((2, 2)) * 2
    assert not [r for r in caplog.records if r.name == "nets.storage"]


def test_fallback_warning_names_op_stypes_and_bytes():
    x = nd.array([[1.0, 0.0], [0.0, 2.0]], dtype="float64").tostype("row_sparse")
    with pytest.warns(nets.StorageFallbackWarning,
                      match=r"log: .*\('row_sparse',\).*densified 32 bytes") as rec:
        out = nd.log(x)
    assert out.stype == "default" and len(rec) == 1


def test_every_operator_declares_a_shape_rule():
    missing = [name for name, op in registry.OPS.items() if op._shape_fn is None]
    assert missing == []


def test_no_fixed_arity_operator_has_a_catch_all_implementation():
    # '*' is only for a variadic operator whose every mix runs natively (add_n)
    catch_all = sorted({name for name, op in registry.OPS.items() if not op.variadic
                        for pattern, _ in op._impls if "*" in pattern})
    assert catch_all == []
    assert registry.get_op("dot").find_impl(("csr", "default")) is not None
    assert registry.get_op("log").find_impl(("row_sparse",)) is not None
    assert registry.get_op("Embedding").find_impl(("csr", "default")) is None  # fallback


@pytest.fixture
def toy_op():
    """``(op, calls)``: an operator with a dense implementation that notes each call and
    no sparse one, registered for the test only; its vjp calls the operator itself."""
    calls = []
    op = registry.Op("_toy_scale", ("data",), {"scale": 1.0})

    @op.impl("default")
    def _(data, scale):
        calls.append(data.stype)
        return nd.NDArray(data.asnumpy() * scale)

    op.vjp(lambda node, g: (op(g, scale=node.attrs["scale"]),))
    yield op, calls
    del registry.OPS[op.name]


def test_a_check_runs_before_the_implementation_and_before_the_fallback():
    calls = []
    op = registry.Op("_toy_checked", ("data",), {"size": 2})

    @op.check
    def _(data, size):
        calls.append(("check", data.stype))
        if data.shape[-1] != size:
            raise ShapeError(f"_toy_checked: data {data.shape} must end in {size}")

    @op.impl("default")
    def _(data, size):
        calls.append(("impl", data.stype))
        return nd.NDArray(data.asnumpy() * 2)

    try:
        np.testing.assert_allclose(op(nd.ones((3, 2))).asnumpy(), 2)
        assert calls == [("check", "default"), ("impl", "default")]
        with pytest.raises(ShapeError, match="must end in 2"):
            op(nd.ones((3, 4)))
        calls.clear()
        with pytest.warns(nets.StorageFallbackWarning, match="_toy_checked"):
            op(nd.ones((3, 2)).tostype("csr"))
        assert calls == [("check", "csr"), ("impl", "default")]  # checked as the call was made
        with pytest.raises(ShapeError, match="must end in 2"):
            op(nd.ones((3, 4)).tostype("csr"))
    finally:
        del registry.OPS[op.name]


def test_a_vjp_calls_operators_the_ordinary_way(toy_op, verbose, caplog):
    op, calls = toy_op
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = op(x, scale=3.0)
    with caplog.at_level(logging.INFO, logger="nets.storage"):
        y.backward()
    assert x.grad.asnumpy().tolist() == [3.0, 3.0] and calls == ["default", "default"]
    lines = [r.getMessage() for r in caplog.records if r.name == "nets.storage"]
    assert lines == ["_toy_scale: inputs ('default',) -> outputs ('default',)"]  # logged too


def test_a_vjp_is_differentiable_and_falls_back_with_the_warning(toy_op):
    op, calls = toy_op
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = op(x, scale=3.0)
        (dx,) = [autograd.grad(y, x, head_grads=x, create_graph=True)]
        z = nd.sum(dx)
    z.backward()  # dx = 3 * x: its gradient w.r.t. x is 3
    assert dx.asnumpy().tolist() == [3.0, 6.0] and x.grad.asnumpy().tolist() == [3.0, 3.0]
    rsp = nd.array([[1.0], [0.0]]).tostype("row_sparse")  # no implementation: fallback
    with pytest.warns(nets.StorageFallbackWarning, match="_toy_scale"):
        out = op(rsp, scale=2.0)
    assert out.asnumpy().tolist() == [[2.0], [0.0]] and calls[-1] == "default"


def test_an_operator_without_a_shape_rule_is_named_by_infer_shape(toy_op):
    op, _ = toy_op
    out = sym.namespace()["_toy_scale"](sym.var("x", shape=(3, 4)), name="t")
    with pytest.raises(ShapeError, match="node 't': operator '_toy_scale' declares no shape"):
        out.infer_shape()
    op.shape(registry.same_shape)
    assert out.infer_shape()[1] == [(3, 4)]
    assert out.infer_type()[1] == [np.float32]


def test_dense_result_of_a_sparse_input_warns_once_in_forward_not_in_backward():
    x = nd.sparse.csr_matrix(np.array([[0, 1.0], [2, 0]], dtype=np.float32))
    row = nd.array([[1.0, 2.0]])
    for make in [lambda: x + 1, lambda: nd.exp(x), lambda: nd.broadcast_add(x, row),
                 lambda: row / x, lambda: x == 0]:
        with pytest.warns(DenseResultWarning, match=r"dense .* csr input of shape \(2, 2\)"):
            assert make().stype == "default"
    with warnings.catch_warnings():
        warnings.simplefilter("error", DenseResultWarning)
        # zero-preserving results stay sparse, conversions are asked for, a dense operand
        # of the full size is no densification, a dot's result has another shape
        assert (x * 2).stype == (x * row).stype == (x / nd.array([[1.0], [2.0]])).stype == "csr"
        x.tostype("default")
        (x + nd.ones((2, 2))), nd.dot(x, nd.ones((2, 3))), nd.sum(x)
        r = nd.sparse.row_sparse_array(np.array([[0, 1.0], [0, 0]], dtype=np.float32))
        r.attach_grad(stype="row_sparse")
        with pytest.warns(DenseResultWarning):
            with autograd.record():
                y = nd.exp(r)  # warned here, in the forward pass ...
        y.backward()  # ... and not again by the gradient computation


def test_products_and_lookups_with_a_sparse_input_s_shape_do_not_warn():
    """Operators declared ``entrywise=False``: an output that happens to have a sparse
    input's shape is not that input densified (a product of square operands, a
    FullyConnected as wide as its input, as many ids as table rows)."""
    rng = np.random.default_rng(0)
    csr, batch = rand_ndarray((4, 4), "csr", 0.5), rand_ndarray((8, 4), "csr", 0.5)
    rsp = rand_ndarray((4, 4), "row_sparse", 0.5)
    w = nd.array(rng.standard_normal((4, 4)), dtype="float32")
    ids = rng.integers(0, 4, size=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DenseResultWarning)
        results = [
            (nd.dot(csr, rsp), csr.asnumpy() @ rsp.asnumpy()),
            (nd.FullyConnected(batch, w, num_hidden=4, no_bias=True),
             batch.asnumpy() @ w.asnumpy().T),
            (nd.take(rsp, nd.array(ids)), rsp.asnumpy()[ids]),
            (nd.Embedding(nd.array(ids), rsp, input_dim=4, output_dim=4), rsp.asnumpy()[ids]),
        ]
    for out, want in results:
        assert out.stype == "default"
        assert_almost_equal(out, want, rtol=1e-5, atol=1e-6)
