"""HybridBlock.hybridize(): the traced graph gives exactly the imperative outputs and
gradients (dense and row_sparse), finishes deferred initialization, and exports."""
import warnings

import numpy as np
import pytest

import nets
import nets.data
from nets import autograd, nd, sym
from nets import layers as L
from nets import loss as gloss
from nets.base import NetsError
from nets.test_utils import rand_ndarray


def _net(kind):
    nets.random.seed(7)
    net = L.HybridSequential()
    if kind == "dense":  # deferred input size: the graph's shape inference finishes it
        net.add(L.Dense(8, activation="tanh"), L.Dropout(0.3), L.Dense(3))
        x = rand_ndarray((4, 5))
    elif kind == "dense_csr":
        net.add(L.Dense(6, in_units=30, activation="relu"), L.Dense(2, in_units=6))
        x = rand_ndarray((4, 30), "csr", density=0.2)
    elif kind == "fc_sparse":
        net.add(L.FullyConnectedSparse(30, 6, weight_grad_stype="row_sparse"),
                L.Activation("sigmoid"), L.Dense(2, in_units=6))
        x = rand_ndarray((4, 30), "csr", density=0.1)
    else:
        emb = (L.Embedding(20, 4, sparse_grad=True) if kind == "embedding"
               else L.SparseEmbedding(20, 4))
        net.add(emb, L.Dense(3, flatten=True))
        x = nd.array([[1, 5, 5], [19, 0, 2]])
    net.initialize(nets.init.Normal(0.5))
    return net, x


def _run(net, x, train=True):
    nets.random.seed(3)  # the same dropout masks on both paths
    with autograd.record(train_mode=train):
        y = net(x)
    y.backward(nd.array(np.linspace(-1, 1, y.size).reshape(y.shape), dtype="float32"))
    grads = {k: p.grad() for k, p in net._structural_params().items()}
    return y, grads


@pytest.mark.parametrize("kind", ["dense", "dense_csr", "fc_sparse", "embedding",
                                  "sparse_embedding"])
def test_hybridized_outputs_and_gradients_equal_imperative(kind):
    net, x = _net(kind)
    hybrid, _ = _net(kind)
    hybrid.hybridize()
    for n in (net, hybrid):  # deferred shapes: imperatively from the data, else by the graph
        nets.random.seed(1)
        n(x)
    assert all(p.shape == q.shape and np.array_equal(p.data().asnumpy(), q.data().asnumpy())
               for p, q in zip(net.collect_params().values(), hybrid.collect_params().values()))
    y0, g0 = _run(net, x)
    y1, g1 = _run(hybrid, x)
    assert np.array_equal(y0.asnumpy(), y1.asnumpy())
    assert g0.keys() == g1.keys()
    for k in g0:
        assert g0[k].stype == g1[k].stype, k
        assert np.array_equal(g0[k].asnumpy(), g1[k].asnumpy()), k
    if kind in ("fc_sparse", "embedding", "sparse_embedding"):
        assert g1["0.weight"].stype == "row_sparse"
    assert len(hybrid._cached) == 1
    y2, g2 = _run(hybrid, x)  # the cached graph again (implementations called directly)
    assert np.array_equal(y1.asnumpy(), y2.asnumpy()) and len(hybrid._cached) == 1
    for k in g0:
        assert g2[k].stype == g0[k].stype and np.array_equal(g2[k].asnumpy(), g0[k].asnumpy())
    assert isinstance(hybrid._graph, sym.Symbol)


@pytest.mark.parametrize("loss, pred, label", [
    (gloss.L2Loss(), (5, 1), nd.array([1, 2, 3, 4, 5])),
    (gloss.HuberLoss(rho=0.5), (5, 2), nd.ones((5, 2))),
    (gloss.SoftmaxCrossEntropyLoss(), (5, 3), nd.array([0, 2, 1, 1, 0])),
])
def test_hybridized_losses_use_traced_shapes(loss, pred, label):
    pred = rand_ndarray(pred)
    want = loss(pred, label)
    loss.hybridize()
    assert np.array_equal(loss(pred, label).asnumpy(), want.asnumpy())


def test_retrace_per_input_signature_and_unhybridize():
    net = L.Dense(2, in_units=3)
    net.initialize()
    net.hybridize()
    a, b = net(nd.ones((4, 3))), net(nd.ones((2, 3)))
    c = net(nd.ones((2, 3)).tostype("csr"))
    assert len(net._cached) == 3
    assert np.allclose(a.asnumpy()[:2], b.asnumpy()) and np.allclose(b.asnumpy(), c.asnumpy())
    net.hybridize(False)
    assert not net._cached and net(np.ones((1, 3), np.float32)).shape == (1, 2)


def test_export_then_load_as_a_module(tmp_path):
    net, x = _net("fc_sparse")
    with pytest.raises(NetsError, match="hybridize"):
        net.export(str(tmp_path / "m"))
    net.hybridize()
    want = net(x).asnumpy()
    net.export(str(tmp_path / "m"), epoch=3)
    mod = nets.mod.Module.load(str(tmp_path / "m"), 3, label_names=None)
    mod.bind(data_shapes=[("data", x.shape)], for_training=False)
    mod.forward(nets.data.DataBatch([x]), is_train=False)
    assert np.array_equal(mod.get_outputs()[0].asnumpy(), want)
    assert mod.symbol.attr_dict()["data"]["stype"] == "csr"


def test_symbolic_call_composes_blocks_into_a_bigger_graph():
    net = L.HybridSequential()
    net.add(L.Dense(4, in_units=3, prefix="a_"), L.Dense(2, in_units=4, prefix="b_"))
    out = net(sym.var("data"))
    assert out.list_arguments() == ["data", "a_weight", "a_bias", "b_weight", "b_bias"]
    assert out.infer_shape(data=(5, 3))[1] == [(5, 2)]


class _Poly(L.HybridBlock):
    """``sum(w * x**3)``: its second derivative in ``x`` is not constant."""

    def __init__(self):
        super().__init__()
        self.w = self.params.get("w", shape=(3,), init=nets.init.Constant(2.0))

    def hybrid_forward(self, F, x, w):
        return F.sum(w * x * x * x)


@pytest.mark.parametrize("calls", [1, 3])
def test_hybridized_second_derivatives_equal_imperative(calls):
    """A cached graph records each step as its operator call would, so
    ``grad(create_graph=True)`` differentiates through it (first and later calls)."""
    results = []
    for hybrid in (False, True):
        block = _Poly()
        block.initialize()
        if hybrid:
            block.hybridize()
        x = nd.array([0.5, -1.0, 2.0])
        x.attach_grad()
        for _ in range(calls):
            with autograd.record():
                y = block(x)
                dx = autograd.grad(y, x, create_graph=True)
            dx.backward()
        results.append((dx.asnumpy(), x.grad.asnumpy()))
    (d0, g0), (d1, g1) = results
    assert np.allclose(d0, 6 * np.array([0.25, 1.0, 4.0]))  # 3 w x^2
    assert np.allclose(g0, 12 * np.array([0.5, -1.0, 2.0]))  # 6 w x
    assert np.array_equal(d0, d1) and np.array_equal(g0, g1)


class _Log(L.HybridBlock):
    def hybrid_forward(self, F, x):
        return F.log(x)


def test_hybridized_fallback_warns_on_every_call():
    """A step with no implementation for its storage types falls back (densifying, with the
    warning) on every call of the cached graph, not only the first."""
    block = _Log()
    block.hybridize()
    x = nd.array(np.array([[1.0, 0.0], [0.0, 4.0]], np.float32)).tostype("csr")
    for _ in range(2):
        with pytest.warns(nets.StorageFallbackWarning, match="log"):
            y = block(x)
        with np.errstate(divide="ignore"):
            assert np.array_equal(y.asnumpy(), np.log(x.asnumpy()))


class _TwoReads(L.HybridBlock):
    """A pre-activation read twice: by the activation and by the sum."""

    def __init__(self):
        super().__init__()
        self.fc = L.Dense(3, in_units=4)

    def hybrid_forward(self, F, x):
        y = self.fc(x)
        return F.Activation(y, act_type="tanh") + y


@pytest.mark.parametrize("make, ops", [
    (lambda: (L.Dense(5, in_units=4), L.Activation("sigmoid"), L.Dense(3, activation="relu"),
              L.Dense(2), L.Activation("softrelu")),
     [("FullyConnected", "sigmoid"), ("FullyConnected", "relu"), ("FullyConnected", None),
      ("Activation", None)]),
    (lambda: (L.FullyConnectedSparse(4, 3), L.Activation("tanh")), [("_dot_bias", "tanh")]),
    (lambda: (_TwoReads(),),
     [("FullyConnected", None), ("Activation", None), ("broadcast_add", None)]),
])
def test_activations_fuse_into_the_layer_that_feeds_them(make, ops):
    """A relu/sigmoid/tanh Activation read from a FullyConnected or _dot_bias that nothing
    else reads runs inside it (one step, one tape node); softrelu, and an output read
    twice, are left as they are. Outputs and gradients equal the imperative ones."""
    def build():
        nets.random.seed(5)
        net = L.HybridSequential()
        net.add(*make())
        net.initialize(nets.init.Normal(0.5))
        return net
    x = rand_ndarray((6, 4))
    net, hybrid = build(), build()
    hybrid.hybridize()
    y0, g0 = _run(net, x)
    y1, g1 = _run(hybrid, x)
    program = next(iter(hybrid._cached.values()))[0]
    assert [(op.name, attrs.get("act_type") if op.name != "Activation" else None)
            for op, _, attrs, _, _ in program.steps] == ops
    assert np.array_equal(y0.asnumpy(), y1.asnumpy())
    for k in g0:
        assert np.array_equal(g0[k].asnumpy(), g1[k].asnumpy()), k


@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh"])
def test_a_fused_activations_gradient_at_saturated_inputs_warns_of_nothing(act):
    """Pre-activations of +-1e4, 0 and 1: a fused activation's derivative is a formula of
    its output, bounded there, so its backward runs under no ``np.errstate`` and must
    raise no floating-point warning; gradients equal the imperative ones."""
    def build():
        net = L.Dense(3, in_units=2, activation=act)
        net.initialize(nets.init.Constant(1.0))
        return net
    x = nets.nd.array(np.array([[1e4, 0], [-1e4, 0], [0, 0], [0.5, 0.5]], np.float32))
    net, hybrid = build(), build()
    hybrid.hybridize()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y0, g0 = _run(net, x)
        y1, g1 = _run(hybrid, x)
    assert np.array_equal(y0.asnumpy(), y1.asnumpy())
    for k in g0:
        assert np.array_equal(g0[k].asnumpy(), g1[k].asnumpy()), k


class _Dots(L.HybridBlock):
    """Matrix factorization's score: the sum of the product of two embeddings (``mul``: the
    product's operator; ``twice``: the product also read by another step)."""

    def __init__(self, mul="broadcast_mul", twice=False):
        super().__init__()
        self.mul, self.twice = mul, twice
        self.user = L.Embedding(7, 4, sparse_grad=True)
        self.item = L.Embedding(5, 4)

    def hybrid_forward(self, F, users, items):
        p = getattr(F, self.mul)(self.user(users), self.item(items))
        s = F.sum(p, axis=1)
        return s + F.mean(p, axis=1) if self.twice else s


@pytest.mark.parametrize("mul, twice, ops", [
    ("broadcast_mul", False, ["Embedding", "Embedding", "_mul_sum"]),
    ("elemwise_mul", False, ["Embedding", "Embedding", "_mul_sum"]),
    ("broadcast_mul", True, ["Embedding", "Embedding", "broadcast_mul", "sum", "mean",
                             "broadcast_add"]),
])
def test_the_sum_of_a_product_fuses_into_one_step(mul, twice, ops):
    """``sum(a * b)`` of dense operands runs as ``_mul_sum`` when nothing else reads the
    product; outputs and gradients (row_sparse and dense) equal the imperative ones."""
    def build():
        nets.random.seed(6)
        net = _Dots(mul, twice)
        net.initialize(nets.init.Normal(0.5))
        return net
    users, items = nd.array([0, 3, 6, 3, 1, 2]), nd.array([4, 0, 0, 2, 1, 3])
    results = []
    for hybrid in (False, True):
        net = build()
        if hybrid:
            net.hybridize()
        for _ in range(2):  # the second run is the fused one
            with autograd.record():
                y = net(users, items)
            y.backward(nd.array(np.linspace(-1, 1, 6)))
        results.append((y, {k: p.grad() for k, p in net._structural_params().items()}))
    program = next(iter(net._cached.values()))[0]
    assert [step[0].name for step in program.steps] == ops
    (y0, g0), (y1, g1) = results
    assert np.array_equal(y0.asnumpy(), y1.asnumpy())
    for k in g0:
        assert g0[k].stype == g1[k].stype and np.array_equal(g0[k].asnumpy(), g1[k].asnumpy())


class _SparseDots(L.HybridBlock):
    def __init__(self):
        super().__init__()
        self.w = self.params.get("w", shape=(1, 6))

    def hybrid_forward(self, F, x, w):
        return F.sum(F.broadcast_mul(x, w), axis=1)


def test_a_sparse_product_is_not_fused():
    """csr * dense is native (csr) and so is the sum of a csr array: no fusion (whose
    operator is dense), and no fallback."""
    net = _SparseDots()
    net.initialize()
    net.hybridize()
    x = rand_ndarray((4, 6), "csr", density=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", nets.StorageFallbackWarning)
        for _ in range(2):
            y = net(x)
    program = next(iter(net._cached.values()))[0]
    assert [step[0].name for step in program.steps] == ["broadcast_mul", "sum"]
    expect = (x.asnumpy() * net.w.data().asnumpy()).sum(axis=1)
    assert np.allclose(y.asnumpy(), expect, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cached_runs_over_new_sparse_batches_match_a_dense_reference(dtype):
    """After its first (checked) run, a hybridized graph calls its operators'
    implementations alone; over new csr batches of one signature (densities 0, partial,
    1) its outputs and gradients equal a dense numpy reference, and the sparse layer's
    weight gradient holds exactly the rows of the features each batch touches."""
    nets.random.seed(11)
    net = L.HybridSequential()
    net.add(L.FullyConnectedSparse(30, 6, weight_grad_stype="row_sparse"),
            L.Activation("relu"), L.Dense(2, in_units=6))
    net.initialize(nets.init.Normal(0.5))
    net.cast(dtype)
    net.hybridize()
    fcs, dense = net[0], net[2]
    tol = 1e-5 if dtype == "float32" else 1e-12
    for density in (0.3, 0.0, 1.0, 0.3):
        x = rand_ndarray((4, 30), "csr", density=density, dtype=dtype)
        head = nd.array(np.linspace(-1, 1, 8).reshape(4, 2), dtype=dtype)
        with autograd.record():
            y = net(x)
        y.backward(head)
        xd, w, b = x.asnumpy(), fcs.weight.data().asnumpy(), fcs.bias.data().asnumpy()
        v, c, g = dense.weight.data().asnumpy(), dense.bias.data().asnumpy(), head.asnumpy()
        h = xd @ w + b
        a = np.maximum(h, 0)
        dh = (g @ v) * (h > 0)
        np.testing.assert_allclose(y.asnumpy(), a @ v.T + c, rtol=tol, atol=tol)
        np.testing.assert_allclose(dense.weight.grad().asnumpy(), g.T @ a, rtol=tol, atol=tol)
        np.testing.assert_allclose(dense.bias.grad().asnumpy(), g.sum(0), rtol=tol, atol=tol)
        np.testing.assert_allclose(fcs.bias.grad().asnumpy(), dh.sum(0), rtol=tol, atol=tol)
        gw = fcs.weight.grad()
        assert gw.stype == "row_sparse" and gw.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(np.sort(gw.indices.asnumpy()),
                                      np.flatnonzero(np.abs(xd).sum(0)))
        np.testing.assert_allclose(gw.asnumpy(), xd.T @ dh, rtol=tol, atol=tol)
    (program, _, _), = net._cached.values()  # one signature, one program: after the first
    assert program._plan is not None  # batch every run called the noted implementations
