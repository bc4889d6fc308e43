"""Block/HybridBlock mechanics: naming, registration styles, collect_params, deferred shapes,
save/load (sparse-aware, stable names, clear errors), containers."""
import numpy as np
import pytest

import nets
from nets import layers as L
from nets import nd
from nets.base import NetsError, ShapeError


class TutorialFullyConnectedSparse(L.HybridBlock):
    """The MXNet Gluon sparse tutorial's block, verbatim apart from the names."""

    def __init__(self, in_units, units, weight_grad_stype="default"):
        super().__init__()
        with self.name_scope():
            self._units = units
            self.weight = self.params.get("weight", shape=(in_units, units), init=None,
                                          allow_deferred_init=True, dtype="float32",
                                          stype="default", grad_stype=weight_grad_stype)
            self.bias = self.params.get("bias", shape=(units), init="zeros",
                                        allow_deferred_init=True, dtype="float32",
                                        stype="default", grad_stype="default")

    def hybrid_forward(self, F, x, weight, bias):
        return F.sparse.dot(x, weight) + bias


class TutorialFullyConnected(L.HybridBlock):
    """The MXNet Gluon sparse tutorial's dense block, verbatim apart from the names."""

    def __init__(self, in_units, units):
        super().__init__()
        with self.name_scope():
            self._units = units
            self.weight = self.params.get("weight", shape=(units, in_units), init=None,
                                          allow_deferred_init=True, dtype="float32",
                                          stype="default", grad_stype="default")
            self.bias = self.params.get("bias", shape=(units), init="zeros",
                                        allow_deferred_init=True, dtype="float32",
                                        stype="default", grad_stype="default")

    def hybrid_forward(self, F, x, weight, bias):
        return F.FullyConnected(x, weight, bias, num_hidden=self._units)


class AttrStyle(L.Block):
    def __init__(self):
        super().__init__()
        self.fc = L.Dense(3, in_units=4)
        self.scale = L.Parameter("scale", shape=(3,), init="ones")

    def forward(self, x):
        return self.fc(x) * self.scale.data()


def test_names_follow_mxnet_counters():
    a, b = L.Dense(2), L.Dense(2)
    na, nb = int(a.name[len("dense"):]), int(b.name[len("dense"):])
    assert nb == na + 1 and a.weight.name == a.name + "_weight"
    with a.name_scope():
        inner = L.Dense(1)
    assert inner.name.startswith(a.prefix) and inner.prefix == a.prefix + "dense0_"


def test_both_registration_styles_collect_params():
    net = AttrStyle()
    names = list(net.collect_params().keys())
    assert names == [net.prefix + "scale", net.fc.weight.name, net.fc.bias.name]
    assert list(net.collect_params(".*weight").keys()) == [net.fc.weight.name]
    tut = TutorialFullyConnectedSparse(5, 3)
    assert set(tut.collect_params().keys()) == {tut.prefix + "weight", tut.prefix + "bias"}


def test_attribute_and_sequential_forward_match_numpy():
    net = AttrStyle()
    net.initialize()
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    w, b = net.fc.weight.data().asnumpy(), net.fc.bias.data().asnumpy()
    np.testing.assert_allclose(net(nd.array(x)).asnumpy(), x @ w.T + b, rtol=1e-5)


def test_tutorial_block_on_csr_input():
    net = TutorialFullyConnectedSparse(6, 3)
    net.initialize()
    x = nets.test_utils.rand_ndarray((4, 6), "csr", density=0.4)
    out = net(x)
    ref = x.asnumpy() @ net.weight.data().asnumpy() + net.bias.data().asnumpy()
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-6)


def test_tutorial_network_trains_with_both_blocks():
    """The tutorial's Sequential of FullyConnectedSparse (row_sparse grad) + FullyConnected
    blocks, SGD Trainer and sigmoid BCE loss: one step lowers the loss on its batch."""
    net = L.Sequential()
    net.add(TutorialFullyConnectedSparse(50, 8, weight_grad_stype="row_sparse"),
            L.Activation("sigmoid"), TutorialFullyConnected(8, 1), L.Activation("sigmoid"))
    net.initialize()
    trainer = nets.Trainer(net.collect_params(), "sgd", {"learning_rate": 1.0})
    loss_fn = nets.loss.SigmoidBinaryCrossEntropyLoss(from_sigmoid=True)
    x = nets.test_utils.rand_ndarray((10, 50), "csr", density=0.2)
    y = nd.array((np.arange(10) % 2).astype(np.float32))
    losses = []
    for _ in range(2):
        with nets.autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        assert net[0].weight.grad().stype == "row_sparse"
        trainer.step(10)
        losses.append(float(loss.mean().asscalar()))
    assert losses[1] < losses[0]
    assert [b.name.rstrip("0123456789") for b in (net[0], net[2])] == [
        "tutorialfullyconnectedsparse", "tutorialfullyconnected"]


def test_deferred_shape_inference_on_first_forward():
    net = L.HybridSequential()
    net.add(L.Dense(5), L.Dense(2, flatten=True))
    net.initialize()
    out = net(nd.ones((3, 2, 4)))
    assert out.shape == (3, 2)
    assert net[0].weight.shape == (5, 8) and net[1].weight.shape == (2, 5)


def test_save_load_roundtrip_sparse_and_stable_names(tmp_path):
    def build():
        net = L.Sequential()
        net.add(L.SparseEmbedding(10, 3), L.Dense(2, in_units=3))
        return net
    net = build()
    net.initialize()
    path = tmp_path / "p.npz"
    net.save_parameters(str(path))
    other = build()  # new blocks get new prefixes; structural names still match
    other.initialize(init="zeros")
    other.load_parameters(str(path))
    for p, q in zip(net.collect_params().values(), other.collect_params().values()):
        assert p.data().stype == q.data().stype
        assert np.array_equal(p.data().asnumpy(), q.data().asnumpy())
    assert other[0].weight.data().stype == "row_sparse"


def test_load_errors_are_clear(tmp_path):
    net = L.Sequential()
    net.add(L.Dense(2, in_units=3))
    net.initialize()
    path = str(tmp_path / "p.npz")
    net.save_parameters(path)
    wrong = L.Sequential()
    wrong.add(L.Dense(2, in_units=4))
    wrong.initialize()
    with pytest.raises(ShapeError, match="0.weight"):
        wrong.load_parameters(path)
    bigger = L.Sequential()
    bigger.add(L.Dense(2, in_units=3), L.Dense(1, in_units=2))
    bigger.initialize()
    with pytest.raises(NetsError, match="no values for parameters"):
        bigger.load_parameters(path)
    bigger.load_parameters(path, allow_missing=True)
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip file at all")
    with pytest.raises(NetsError, match="not a readable"):
        net.load_parameters(str(bad))
    truncated = tmp_path / "trunc.npz"
    truncated.write_bytes(open(path, "rb").read()[:100])
    with pytest.raises(NetsError):
        net.load_parameters(str(truncated))


def test_loading_never_unpickles(tmp_path):
    path = tmp_path / "evil.npz"
    np.savez(path, **{"0.weight": np.array([object()], dtype=object)})
    net = L.Sequential()
    net.add(L.Dense(1, in_units=1))
    net.initialize()
    with pytest.raises(NetsError):
        net.load_parameters(str(path))


def test_sequential_indexing_len_and_lambda():
    net = L.Sequential()
    net.add(L.Dense(2, in_units=2), L.Lambda("relu"), L.HybridLambda(lambda F, x: F.negative(x)))
    assert len(net) == 3 and isinstance(net[1], L.Lambda) and len(net[:2]) == 2
    net.initialize()
    out = net(nd.ones((1, 2)))
    assert np.all(out.asnumpy() <= 0)
    with pytest.raises(NetsError, match="no function 'nope'"):
        L.Lambda("nope")


def test_hybridize_is_accepted():
    net = L.HybridSequential()
    net.add(L.Dense(2, in_units=2))
    net.initialize()
    net.hybridize()
    assert net(nd.ones((1, 2))).shape == (1, 2)


def test_a_cached_graph_checks_again_when_a_parameter_array_changes():
    """Later runs of a hybridized block skip the operators' checks only while its
    parameters are the arrays the first run validated: a parameter cast to another dtype
    is refused as the imperative call refuses it, a re-initialized one is used."""
    net = L.Dense(2, in_units=3)
    net.initialize()
    net.hybridize()
    x = nd.array(np.ones((4, 3), np.float32))
    net(x)
    net(x)
    net.weight.cast("float64")
    with pytest.raises(nets.base.DTypeError, match="FullyConnected: data has dtype float32"):
        net(x)
    net.weight.cast("float32")
    net.initialize(nets.init.Constant(0.5), force_reinit=True)
    for _ in range(2):
        np.testing.assert_allclose(net(x).asnumpy(), np.full((4, 2), 1.5))


def test_a_cached_graph_keeps_no_replaced_parameter_array_alive():
    import gc
    import weakref
    net = L.Dense(2, in_units=3)
    net.initialize()
    net.hybridize()
    x = nd.array(np.ones((4, 3), np.float32))
    net(x)
    old = weakref.ref(net.weight.data())
    net.weight.cast("float64")  # a new array: the graph must not hold the old one
    gc.collect()
    assert old() is None
