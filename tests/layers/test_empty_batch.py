"""A batch of no rows is a batch: forward gives no rows, backward gives zero gradients of
the parameters' shapes (dense) or no rows (row_sparse), never a reshape error."""
import numpy as np
import pytest

from nets import autograd, layers, nd


@pytest.mark.parametrize("hybridize", [False, True])
@pytest.mark.parametrize("stype, shape", [("default", (0, 4)), ("default", (0, 2, 2)),
                                          ("csr", (0, 4))])
def test_dense_on_an_empty_batch(stype, hybridize, shape):
    net = layers.Dense(3, in_units=4)
    net.initialize()
    if hybridize:
        net.hybridize()
    x = nd.zeros(shape) if stype == "default" else nd.zeros(shape).tostype("csr")
    if stype == "default":
        x.attach_grad()
    with autograd.record():
        y = net(x)
    assert y.shape == (0, 3)
    y.backward()
    assert net.weight.grad().shape == (3, 4) and not net.weight.grad().asnumpy().any()
    assert net.bias.grad().shape == (3,) and not net.bias.grad().asnumpy().any()
    if stype == "default":
        assert x.grad.shape == shape


def test_sparse_layers_on_an_empty_batch_give_no_rows():
    x = nd.zeros((0, 5)).tostype("csr")
    fcs = layers.FullyConnectedSparse(5, 2, weight_grad_stype="row_sparse")
    emb = layers.Embedding(5, 2, sparse_grad=True)
    fcs.initialize()
    emb.initialize()
    with autograd.record():
        loss = fcs(x).sum() + emb(nd.array(np.zeros(0))).sum()
    loss.backward()
    for g in (fcs.weight.grad(), emb.weight.grad()):
        assert g.stype == "row_sparse" and g.indices.shape == (0,)
