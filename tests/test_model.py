"""nets.model: MXNet's BatchEndParam and checkpoint functions."""
import numpy as np
import pytest

import nets
import nets.data
from nets import model, nd, sym
from nets.base import NetsError


def test_batch_end_param_is_mxnets_namedtuple_and_the_one_fit_passes():
    p = model.BatchEndParam(epoch=1, nbatch=2, eval_metric="m", locals={"a": 1})
    assert p._fields == ("epoch", "nbatch", "eval_metric", "locals")
    assert tuple(p) == (1, 2, "m", {"a": 1}) and p.nbatch == 2
    rng = np.random.default_rng(1)
    x = rng.standard_normal((20, 3)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float32)
    net = sym.SoftmaxOutput(sym.FullyConnected(sym.var("data"), num_hidden=2, name="fc"),
                            name="softmax")
    seen = []
    nets.mod.Module(net).fit(nets.data.NDArrayIter(x, y, batch_size=10), num_epoch=1,
                             progress_bar=False, batch_end_callback=seen.append)
    assert [type(s) for s in seen] == [model.BatchEndParam] * 2
    assert [(s.epoch, s.nbatch) for s in seen] == [(0, 0), (0, 1)]
    assert isinstance(seen[0].eval_metric, nets.metric.Accuracy) and "batch" in seen[0].locals


def test_checkpoints_round_trip_keeping_row_sparse_parameters(tmp_path):
    prefix = str(tmp_path / "ckpt")
    data = sym.Variable("data", stype="csr")
    weight = sym.Variable("weight", stype="row_sparse", shape=(5, 1))
    net = sym.LinearRegressionOutput(sym.sparse.dot(data, weight), sym.var("label"))
    rows = np.array([[0.5], [0.0], [0.0], [-2.0], [0.0]], np.float32)
    model.save_checkpoint(prefix, 7, net, {"weight": nd.array(rows).tostype("row_sparse")},
                          {})
    symbol, args, aux = model.load_checkpoint(prefix, 7)
    assert symbol.list_arguments() == net.list_arguments() and aux == {}
    assert args["weight"].stype == "row_sparse"
    assert args["weight"].indices.asnumpy().tolist() == [0, 3]
    np.testing.assert_array_equal(args["weight"].asnumpy(), rows)
    assert (tmp_path / "ckpt-symbol.json").exists()
    assert (tmp_path / "ckpt-0007.params.npz").exists()
    # the same functions as nets.mod's, so a Module reads what nets.model wrote
    assert model.save_checkpoint is nets.mod.save_checkpoint
    assert model.load_checkpoint is nets.mod.load_checkpoint


def test_checkpoint_errors_name_the_problem(tmp_path):
    net = sym.FullyConnected(sym.var("data"), num_hidden=2, name="fc")
    with pytest.raises(NetsError,
                       match=r"aux_params has \[.moving_mean.\], which are not auxiliary"):
        model.save_checkpoint(str(tmp_path / "a"), 1, net, {},
                              {"moving_mean": nd.zeros((2,))})
    model.save_checkpoint(str(tmp_path / "b"), 1, net, {"fc_bias": nd.zeros((2,))})
    with pytest.raises(NetsError, match="b-0002.params.npz"):
        model.load_checkpoint(str(tmp_path / "b"), 2)
