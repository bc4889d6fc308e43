"""Executors: simple_bind/bind, arg_dict assignment, forward/backward on the autograd engine
(gradients equal the imperative ones, in the declared storage types), fallback reports."""
import logging

import numpy as np
import pytest

import nets
from nets import autograd, nd, sym
from nets.base import NetsError, ShapeError
from nets.ops import registry
from nets.test_utils import assert_almost_equal, rand_ndarray


def test_simple_bind_allocates_zeros_of_each_stype_and_assignment_keeps_it():
    b, c = sym.var("b", stype="csr"), sym.var("c", stype="row_sparse")
    b_exec, c_exec = b.simple_bind(nets.cpu(), b=(2, 2)), c.simple_bind(c=(2, 2))
    (out_b,), (out_c,) = b_exec.forward(), c_exec.forward()
    assert (out_b.stype, out_c.stype) == ("csr", "row_sparse")
    assert out_b.nnz == 0 and len(out_c.indices) == 0
    arg = b_exec.arg_dict["b"]
    b_exec.arg_dict["b"][:] = nd.ones((2, 2)).tostype("csr")
    assert b_exec.forward()[0].asnumpy().tolist() == [[1, 1], [1, 1]]
    b_exec.arg_dict["b"][:] = nd.array([[0, 2], [0, 0]])  # dense in, csr kept
    assert b_exec.arg_dict["b"] is arg and arg.stype == "csr" and arg.nnz == 1
    assert b_exec.grad_dict["b"].stype == "csr" and c_exec.grad_dict["c"].stype == "row_sparse"


def test_group_storage_types_and_per_node_fallback_report():
    a, b, c = sym.var("a"), sym.var("b", stype="csr"), sym.var("c", stype="row_sparse")
    group = sym.Group([sym.elemwise_add(a, a), sym.sparse.negative(b),
                       sym.sparse.elemwise_add(c, c, name="rsp_add")])
    exe = group.simple_bind(a=(2, 2), b=(2, 2), c=(2, 2))
    assert [o.stype for o in exe.forward()] == ["default", "csr", "row_sparse"]
    assert not any(r[-1] for r in exe.storage_report)
    mixed = sym.Group([sym.elemwise_add(b, c, name="mix"), sym.log(a, name="lg")])
    with pytest.warns(nets.StorageFallbackWarning, match=r"node 'mix' \(elemwise_add\)"):
        exe = mixed.simple_bind(a=(2, 2), b=(2, 2), c=(2, 2))
    assert [(r[0], r[-1]) for r in exe.storage_report] == [("mix", True), ("lg", False)]
    with pytest.warns(nets.StorageFallbackWarning):
        added, logged = exe.forward()
    assert added.stype == "default" and np.all(added.asnumpy() == 0)
    assert np.all(np.isneginf(logged.asnumpy()))


def test_storage_verbose_logs_every_node_at_bind(caplog):
    caplog.set_level(logging.INFO, logger="nets.storage")
    x, w = sym.var("data", stype="csr"), sym.var("weight", stype="row_sparse")
    registry.set_storage_verbose(True)  # (NETS_STORAGE_VERBOSE=1 at import)
    try:
        sym.sparse.dot(x, w, name="d").simple_bind(data=(3, 4), weight=(4, 2))
    finally:
        registry.set_storage_verbose(False)
    assert "node 'd' (dot): inputs ('csr', 'row_sparse') -> outputs ('default',)" in caplog.text


def _sparse_net():
    x, w = sym.var("x", stype="csr"), sym.var("w", stype="row_sparse")
    b = sym.var("b")
    return sym.MakeLoss(sym.sum(sym.square(sym.broadcast_add(sym.sparse.dot(x, w), b))))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradients_equal_the_imperative_ones(dtype):
    x = rand_ndarray((5, 8), "csr", density=0.3, dtype=dtype)
    w = rand_ndarray((8, 3), "row_sparse", density=0.6, dtype=dtype)
    b = rand_ndarray((3,), dtype=dtype)
    exe = _sparse_net().simple_bind(x=x.shape, w=w.shape, b=b.shape, grad_req={"w": "write",
                                                                               "b": "write"},
                                    type_dict={"x": dtype})
    assert "x" not in exe.grad_dict and exe.grad_dict["w"].stype == "row_sparse"
    (loss,) = exe.forward(is_train=True, x=x, w=w, b=b)
    exe.backward()
    wi, bi = w.copy(), b.copy()
    wi.attach_grad()
    bi.attach_grad()
    with autograd.record():
        ref = nd.sum(nd.square(nd.broadcast_add(nd.sparse.dot(x, wi), bi)))
    ref.backward()
    assert_almost_equal(loss, ref)
    assert exe.grad_dict["w"].stype == "row_sparse"
    assert_almost_equal(exe.grad_dict["w"], wi.grad)
    assert_almost_equal(exe.grad_dict["b"], bi.grad)
    assert exe.grad_dict["w"].dtype == np.dtype(dtype)


def test_grad_req_add_null_and_out_grads():
    x, w = sym.var("x"), sym.var("w")
    y = sym.dot(x, w)
    xv, wv = rand_ndarray((2, 3)), rand_ndarray((3, 4))
    exe = y.bind(nets.cpu(), {"x": xv, "w": wv}, args_grad={"w": nd.zeros((3, 4))},
                 grad_req="add")
    assert exe.arg_dict["w"] is wv and exe.grad_arrays[0] is None  # shared, not copied
    head = rand_ndarray((2, 4))
    for _ in range(2):
        exe.forward(is_train=True)
        exe.backward(head)
    assert_almost_equal(exe.grad_dict["w"], 2 * xv.asnumpy().T @ head.asnumpy())
    exe.backward(head)  # again on the same forward (MXNet): 'add' accumulates once more
    assert_almost_equal(exe.grad_dict["w"], 3 * xv.asnumpy().T @ head.asnumpy())
    wv[:] = 0  # an input the recorded graph read changed: no gradient from stale values
    with pytest.raises(NetsError, match="modified in place"):
        exe.backward(head)
    exe.forward()  # predicting records nothing
    with pytest.raises(NetsError, match="forward\\(is_train=True\\)"):
        exe.backward(head)


def test_bind_checks_its_arrays():
    y = sym.dot(sym.var("x"), sym.var("w"))
    with pytest.raises(NetsError, match=r"no arrays for arguments \['w'\]"):
        y.bind(None, {"x": nd.ones((2, 3))})
    with pytest.raises(ShapeError, match="do not share"):
        y.bind(None, [nd.ones((2, 3)), nd.ones((2, 4))])
    # names that are not arguments are ignored (MXNet: one dict may serve several graphs)
    exe = y.bind(None, {"x": nd.ones((2, 3)), "w": nd.ones((3, 1)), "z": 9})
    assert list(exe.arg_dict) == ["x", "w"]
    assert y.eval(x=nd.ones((2, 3)), w=nd.ones((3, 1)))[0].asnumpy().tolist() == [[3], [3]]
    exe = y.simple_bind(x=(2, 3), w=(3, 1))
    with pytest.raises(NetsError, match="'v' is not an argument"):
        exe.forward(v=nd.ones(1))
    with pytest.raises(NetsError, match="grad_req"):
        y.simple_bind(x=(2, 3), w=(3, 1), grad_req="sometimes")


def test_reshape_shares_the_unchanged_arrays():
    net = sym.FullyConnected(sym.var("data"), num_hidden=4, name="fc")
    exe = net.simple_bind(data=(8, 5))
    bigger = exe.reshape(data=(16, 5))
    assert bigger.arg_dict["fc_weight"] is exe.arg_dict["fc_weight"]
    assert bigger.grad_dict["fc_weight"] is exe.grad_dict["fc_weight"]
    assert bigger.arg_dict["data"].shape == (16, 5)
    assert bigger.forward()[0].shape == (16, 4)
    assert list(bigger.output_dict) == ["fc_output"]


def test_dropout_follows_train_and_predict_mode():
    y = sym.Dropout(sym.var("x"), p=0.5)
    exe = y.simple_bind(x=(50, 50), grad_req="null")
    exe.arg_dict["x"][:] = 1
    assert np.all(exe.forward()[0].asnumpy() == 1)
    dropped = exe.forward(is_train=True)[0].asnumpy()
    assert set(np.unique(dropped)) == {0.0, 2.0}


# -- gradient storage types: what MXNet 1.x allocates and produces ---------------------------

def test_dot_csr_weight_gradient_is_row_sparse_and_the_csr_data_gradient_dense():
    x, w = sym.var("x", stype="csr"), sym.var("w")
    y = sym.sparse.dot(x, w)
    assert y.infer_grad_storage_type() == ["default", "row_sparse"]
    xv = nd.sparse.csr_matrix(([1.0, 2.0, 3.0], [1, 4, 1], [0, 2, 2, 3]), shape=(3, 5))
    wv = rand_ndarray((5, 2))
    head = rand_ndarray((3, 2))
    exe = y.simple_bind(x=(3, 5), w=(5, 2))
    assert [g.stype for g in exe.grad_arrays] == ["default", "row_sparse"]
    exe.forward(is_train=True, x=xv, w=wv)
    exe.backward(head)
    dense_x, h = xv.asnumpy(), head.asnumpy()
    assert [g.stype for g in exe.grad_arrays] == ["default", "row_sparse"]
    assert exe.grad_dict["w"].indices.asnumpy().tolist() == [1, 4]  # the touched features
    assert_almost_equal(exe.grad_dict["w"], dense_x.T @ h)
    assert_almost_equal(exe.grad_dict["x"], h @ wv.asnumpy().T)
    exe = y.simple_bind(x=(3, 5), w=(5, 2), grad_req={"x": "null", "w": "write"})
    assert [None if g is None else g.stype for g in exe.grad_arrays] == [None, "row_sparse"]


def test_a_csr_variable_declaring_a_csr_gradient_gets_it_on_its_stored_values():
    """``grad_stype='csr'`` on the csr variable: its gradient buffer is csr, and backward
    fills it as a csr leaf's (``attach_grad()``): the data's pattern, holding the dense
    gradient ``head . w^T`` at the stored entries."""
    x, w = sym.var("x", stype="csr", grad_stype="csr"), sym.var("w")
    y = sym.sparse.dot(x, w)
    assert y.infer_grad_storage_type() == ["csr", "row_sparse"]
    exe = y.simple_bind(x=(3, 5), w=(5, 2))
    xv = nd.sparse.csr_matrix(([1.0, 2.0, 3.0], [1, 4, 1], [0, 2, 2, 3]), shape=(3, 5))
    wv, head = rand_ndarray((5, 2)), rand_ndarray((3, 2))
    exe.forward(is_train=True, x=xv, w=wv)
    exe.backward(head)
    g = exe.grad_dict["x"]
    assert g.stype == "csr"
    assert g.indptr.asnumpy().tolist() == [0, 2, 2, 3] and g.indices.asnumpy().tolist() == [1, 4, 1]
    dense = head.asnumpy() @ wv.asnumpy().T
    assert_almost_equal(g, dense * (xv.asnumpy() != 0))


def test_dot_of_a_transposed_csr_outputs_row_sparse():
    x, w = sym.var("x", stype="csr"), sym.var("w")
    y = sym.sparse.dot(x, w, transpose_a=True)
    assert y.infer_storage_type()[1] == ["row_sparse"]
    xv = nd.sparse.csr_matrix(([1.0, 2.0, 3.0], [1, 4, 1], [0, 2, 2, 3]), shape=(3, 5))
    wv = rand_ndarray((3, 2))
    exe = y.simple_bind(x=(3, 5), w=(3, 2))
    for _ in range(2):  # the first run and the cached program alike
        (out,) = exe.forward(x=xv, w=wv)
        assert out.stype == "row_sparse" and out.indices.asnumpy().tolist() == [1, 4]
        assert_almost_equal(out, xv.asnumpy().T @ wv.asnumpy())


def test_sparse_grad_embedding_weight_gradient_holds_only_the_looked_up_rows():
    ids, weight = sym.var("ids"), sym.var("emb_weight")
    out = sym.sum(sym.Embedding(ids, weight, input_dim=10, output_dim=3, sparse_grad=True))
    assert out.infer_grad_storage_type() == ["default", "row_sparse"]
    exe = out.simple_bind(ids=(4,), emb_weight=(10, 3), grad_req={"emb_weight": "write"})
    assert exe.grad_dict["emb_weight"].stype == "row_sparse"
    ids_v = nd.array([7, 2, 7, 5])
    exe.forward(is_train=True, ids=ids_v, emb_weight=rand_ndarray((10, 3)))
    exe.backward()
    grad = exe.grad_dict["emb_weight"]
    expected = np.zeros((10, 3))
    np.add.at(expected, [7, 2, 7, 5], 1.0)
    assert grad.stype == "row_sparse" and grad.indices.asnumpy().tolist() == [2, 5, 7]
    assert_almost_equal(grad, expected)
    dense = sym.sum(sym.Embedding(ids, weight, input_dim=10, output_dim=3))
    assert dense.infer_grad_storage_type() == ["default", "default"]


@pytest.mark.parametrize("head_stype", ["row_sparse", "default"])
def test_elemwise_add_of_row_sparse_variables_gives_row_sparse_gradients(head_stype):
    a, b = sym.var("a", stype="row_sparse"), sym.var("b", stype="row_sparse")
    y = sym.sparse.elemwise_add(a, b)
    assert y.infer_grad_storage_type() == ["row_sparse", "row_sparse"]
    exe = y.simple_bind(a=(4, 2), b=(4, 2))
    assert [g.stype for g in exe.grad_arrays] == ["row_sparse", "row_sparse"]
    av = nd.array([[0, 0], [1, 2], [0, 0], [3, 0]]).tostype("row_sparse")
    bv = nd.array([[5, 0], [0, 0], [0, 0], [0, 1]]).tostype("row_sparse")
    (out,) = exe.forward(is_train=True, a=av, b=bv)
    assert out.stype == "row_sparse"
    head = nd.array([[0, 0], [2, 3], [0, 0], [4, 5]])  # rows 1 and 3
    exe.backward(head.tostype(head_stype))
    for name in ("a", "b"):
        g = exe.grad_dict[name]
        assert g.stype == "row_sparse" and g.indices.asnumpy().tolist() == [1, 3]
        assert_almost_equal(g, head.asnumpy())


def test_a_declared_grad_stype_wins_and_uses_are_summed_by_add_n():
    x, w = sym.var("x", stype="csr"), sym.var("w")
    both = sym.Group([sym.sparse.dot(x, w), sym.square(w)])  # row_sparse + default
    assert both.infer_grad_storage_type() == ["default", "default"]
    declared = sym.sparse.dot(x, sym.var("w", grad_stype="default"))
    assert declared.infer_grad_storage_type() == ["default", "default"]
