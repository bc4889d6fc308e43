"""Layers against numpy references, their gradients, and the MXNet sparse tutorial's claims:
row_sparse gradients of FullyConnectedSparse, their memory, Embedding(sparse_grad=True)."""
import numpy as np
import pytest

import nets
from nets import autograd, nd
from nets import layers as L
from nets.test_utils import check_numeric_gradient, rand_ndarray


def _grads(net, x, head=None):
    with autograd.record():
        out = net(x)
    out.backward(head)
    return out


@pytest.mark.parametrize("act", [None, "relu", "sigmoid", "tanh", "softrelu", "softsign"])
def test_dense_forward_and_backward_match_numpy(act):
    net = L.Dense(3, activation=act, in_units=4)
    net.initialize(init=nets.init.Normal(0.5))
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    w, b = net.weight.data().asnumpy(), net.bias.data().asnumpy()
    z = x @ w.T + b
    f = {None: lambda v: v, "relu": lambda v: np.maximum(v, 0),
         "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "tanh": np.tanh,
         "softrelu": lambda v: np.log1p(np.exp(v)), "softsign": lambda v: v / (1 + np.abs(v))}[act]
    out = _grads(net, nd.array(x))
    np.testing.assert_allclose(out.asnumpy(), f(z), rtol=1e-4, atol=1e-5)
    eps = 1e-3  # finite-difference d sum(out)/dW through numpy
    dz = (f(z + eps) - f(z - eps)) / (2 * eps)
    np.testing.assert_allclose(net.weight.grad().asnumpy(), dz.T @ x, rtol=2e-3, atol=1e-3)
    np.testing.assert_allclose(net.bias.grad().asnumpy(), dz.sum(0), rtol=2e-3, atol=1e-3)


def test_dense_on_csr_input_never_densifies():
    net = L.Dense(3, in_units=50)
    net.initialize()
    x = rand_ndarray((4, 50), "csr", density=0.1)
    expected = x.asnumpy() @ net.weight.data().asnumpy().T
    x.asnumpy = lambda: pytest.fail("the CSR input was densified")
    out = _grads(net, x)
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-5, atol=1e-6)
    assert net.weight.grad().stype == "default"


def test_fully_connected_sparse_row_sparse_grad_is_dense_grad_restricted():
    x = rand_ndarray((6, 40), "csr", density=0.1)
    dense_net = L.FullyConnectedSparse(40, 3)
    sparse_net = L.FullyConnectedSparse(40, 3, weight_grad_stype="row_sparse")
    for net in (dense_net, sparse_net):
        net.initialize(init=nets.init.One())
        _grads(net, x)
    g_dense, g_sparse = dense_net.weight.grad(), sparse_net.weight.grad()
    assert g_sparse.stype == "row_sparse" and g_dense.stype == "default"
    touched = np.unique(x.indices.asnumpy())
    assert np.array_equal(g_sparse.indices.asnumpy(), touched)
    np.testing.assert_array_equal(g_sparse.asnumpy(), g_dense.asnumpy())
    untouched = np.setdiff1d(np.arange(40), touched)
    assert np.all(g_dense.asnumpy()[untouched] == 0)


def test_fully_connected_sparse_numeric_gradient():
    x = rand_ndarray((4, 10), "csr", density=0.3, dtype="float64")
    w = rand_ndarray((10, 3), dtype="float64")
    b = rand_ndarray((3,), dtype="float64")
    check_numeric_gradient(lambda x, w, b: nd.broadcast_add(nd.sparse.dot(x, w), b), [x, w, b],
                           grad_stypes=[None, "row_sparse", "default"])


def test_tutorial_gradient_memory_table(capsys):
    """10 samples x 10 non-zeros over 10^6 features x 128 units: the row_sparse gradient is
    < 100 KB, the dense one 512 MB (the MXNet Gluon sparse tutorial's table)."""
    n_features, units = 1_000_000, 128
    rng = np.random.default_rng(0)
    cols = np.stack([np.sort(rng.choice(n_features, 10, replace=False)) for _ in range(10)])
    rows = np.repeat(np.arange(10), 10)
    x = nd.sparse.csr_matrix((rng.random(100).astype(np.float32), (rows, cols.ravel())),
                             shape=(10, n_features))
    net = L.FullyConnectedSparse(n_features, units, weight_grad_stype="row_sparse")
    net.initialize()
    net.summary(x)
    out = capsys.readouterr().out
    assert "row_sparse" in out and "weight" in out
    _grads(net, x)
    grad = net.weight.grad()
    assert grad.stype == "row_sparse" and grad.nbytes < 100_000
    assert net.weight.data().nbytes == n_features * units * 4  # 512 MB dense weight
    assert f"{n_features * units * 4:,}" in out  # the summary reports the weight bytes


def test_embedding_sparse_grad_with_dense_weight():
    emb = L.Embedding(20, 4, sparse_grad=True)
    emb.initialize()
    ids = nd.array([[3, 7, 3], [19, 0, 7]])
    _grads(emb, ids)
    g = emb.weight.grad()
    assert emb.weight.data().stype == "default" and g.stype == "row_sparse"
    assert list(g.indices.asnumpy()) == [0, 3, 7, 19]
    counts = np.bincount(ids.asnumpy().astype(int).ravel(), minlength=20)
    np.testing.assert_array_equal(g.asnumpy(), np.repeat(counts[:, None], 4, axis=1))
    dense = L.Embedding(20, 4)
    dense.initialize()
    _grads(dense, ids)
    np.testing.assert_array_equal(dense.weight.grad().asnumpy(), g.asnumpy())


def test_embedding_rejects_bad_ids():
    emb = L.Embedding(5, 2)
    emb.initialize()
    with pytest.raises(nets.NetsError, match="2.5"):
        emb(nd.array([1.0, 2.5]))
    with pytest.raises(nets.NetsError, match="5"):
        emb(nd.array([5]))


def test_sparse_embedding_row_sparse_weight_and_grad():
    emb = L.SparseEmbedding(10, 3)
    emb.initialize(init=nets.init.One())
    out = _grads(emb, nd.array([2, 2, 9]))
    np.testing.assert_array_equal(out.asnumpy(), np.ones((3, 3)))
    assert emb.weight.data().stype == "row_sparse"
    g = emb.weight.grad()
    assert g.stype == "row_sparse" and list(g.indices.asnumpy()) == [2, 9]
    np.testing.assert_array_equal(g.asnumpy()[2], [2, 2, 2])


def test_dropout_training_vs_predict_and_flatten():
    d = L.Dropout(0.5)
    x = nd.ones((200, 50))
    np.testing.assert_array_equal(d(x).asnumpy(), x.asnumpy())  # predict mode: identity
    with autograd.record():
        y = d(x).asnumpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and 0.4 < (y == 0).mean() < 0.6
    assert L.Flatten()(nd.ones((2, 3, 4))).shape == (2, 12)
