"""``nets.gluon`` is MXNet's ``mx.gluon`` namespace as re-exports: every name is nets' own
object (no copies), every import form MXNet programs use works, and ``split_data`` /
``split_and_load`` slice a batch as MXNet's ``gluon.utils`` does."""

import numpy as np
import pytest

import nets
from nets import autograd, gluon, nd


def test_gluon_names_are_nets_own_objects():
    assert gluon.Block is nets.layers.Block and gluon.HybridBlock is nets.layers.HybridBlock
    assert gluon.Parameter is nets.layers.Parameter
    assert gluon.ParameterDict is nets.layers.ParameterDict
    assert gluon.Trainer is nets.Trainer
    for name in nets.layers.__all__:
        assert getattr(gluon.nn, name) is getattr(nets.layers, name)
    for name in nets.loss.__all__:
        assert getattr(gluon.loss, name) is getattr(nets.loss, name)
    for name in nets.utils.__all__:
        assert getattr(gluon.utils, name) is getattr(nets.utils, name)
    for name in gluon.data.__all__:
        assert getattr(gluon.data, name) is getattr(nets.data, name)
    assert gluon.contrib.nn.SparseEmbedding is nets.layers.SparseEmbedding


@pytest.mark.parametrize("statement", [
    "from nets import gluon",
    "from nets.gluon import nn",
    "from nets.gluon import loss as gloss",
    "import nets.gluon.nn as nn",
    "from nets.gluon.data import DataLoader, ArrayDataset",
    "from nets.gluon.contrib.nn import SparseEmbedding",
    "from nets.gluon.utils import split_and_load, clip_global_norm",
    "import nets.gluon.contrib.nn",
])
def test_mxnet_import_forms_work_renamed(statement):
    exec(statement, {})


def test_gluon_is_loaded_on_first_use_only():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", "import sys, nets; print('nets.gluon' in "
                          "sys.modules); nets.gluon; print('nets.gluon' in sys.modules)"],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True"]


def test_a_gluon_program_written_for_mxnet_trains_renamed():
    """MXNet Gluon's usual loop, with `mx.` renamed to `nets.` and nothing else."""
    mx = nets
    rng = np.random.default_rng(0)
    X = rng.normal(size=(64, 5)).astype(np.float32)
    y = X @ np.arange(1, 6, dtype=np.float32)
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Dense(1, in_units=5))
    net.initialize(mx.init.Zero())
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    loss_fn = mx.gluon.loss.L2Loss()
    loader = mx.gluon.data.DataLoader(mx.gluon.data.ArrayDataset(X, y), batch_size=16)
    first = last = None
    for _ in range(30):
        for data, label in loader:
            (part,) = mx.gluon.utils.split_and_load(data, [mx.cpu()])
            with autograd.record():
                loss = loss_fn(net(part), label)
            loss.backward()
            trainer.step(data.shape[0])
            value = float(loss.mean().asscalar())
            first = value if first is None else first
            last = value
    assert last < first / 100
    np.testing.assert_allclose(net[0].weight.data().asnumpy().ravel(), np.arange(1, 6),
                               atol=0.05)


@pytest.mark.parametrize("shape,axis,num", [((12, 3), 0, 4), ((12, 3), 0, 1), ((3, 10), 1, 5),
                                            ((2, 9, 2), 1, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_split_data_matches_numpy_array_split(shape, axis, num, dtype):
    x = np.random.default_rng(1).normal(size=shape).astype(dtype)
    parts = gluon.utils.split_data(nd.array(x, dtype=dtype), num, batch_axis=axis)
    expected = np.array_split(x, num, axis=axis)
    assert len(parts) == num
    for p, e in zip(parts, expected):
        assert p.dtype == dtype
        np.testing.assert_array_equal(p.asnumpy(), e)


@pytest.mark.parametrize("density", [0.0, 0.3, 1.0])
def test_split_and_load_of_a_csr_batch_keeps_csr_rows(density):
    rng = np.random.default_rng(2)
    x = (rng.random((10, 6)) * (rng.random((10, 6)) < density)).astype(np.float32)
    parts = gluon.utils.split_and_load(nd.array(x).tostype("csr"), [nets.cpu(), nets.cpu()],
                                       even_split=True)
    assert [p.stype for p in parts] == ["csr", "csr"]
    np.testing.assert_array_equal(np.vstack([p.asnumpy() for p in parts]), x)


def test_uneven_split_gives_the_first_slices_one_more_row():
    x = np.arange(10.0).reshape(10, 1)
    parts = gluon.utils.split_data(nd.array(x), 3, even_split=False)
    assert [p.shape[0] for p in parts] == [4, 3, 3]
    np.testing.assert_array_equal(np.vstack([p.asnumpy() for p in parts]), x)


def test_split_and_load_converts_numpy_and_names_bad_arguments():
    (part,) = gluon.utils.split_and_load(np.ones((4, 2)), [nets.cpu()])
    assert isinstance(part, nets.nd.NDArray) and part.dtype == np.float32
    with pytest.raises(nets.NetsError, match="cannot be split evenly into 3 slices"):
        gluon.utils.split_data(nd.ones((10, 2)), 3)
    with pytest.raises(nets.NetsError, match=r"too many slices \(5\)"):
        gluon.utils.split_data(nd.ones((4, 2)), 5, even_split=False)
    with pytest.raises(nets.NetsError, match="num_slice=0"):
        gluon.utils.split_data(nd.ones((4, 2)), 0)
    with pytest.raises(nets.NetsError, match="batch_axis=2"):
        gluon.utils.split_data(nd.ones((4, 2)), 2, batch_axis=2)
    with pytest.raises(nets.NetsError, match="ctx_list"):
        gluon.utils.split_and_load(nd.ones((4, 2)), [])
    with pytest.raises(nets.base.ContextError):
        gluon.utils.split_and_load(nd.ones((4, 2)), [nets.gpu(0)])
