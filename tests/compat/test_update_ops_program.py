"""A hand-written MXNet training loop calling the update operators
(``update_ops_loop.py``: ``mx.nd.sparse.sgd_mom_update``/``adam_update``/``adagrad_update``
with ``out=weight`` and ``lazy_update=True``) runs after renaming ``mx.`` to ``nets.`` alone,
and ends with the weights ``gluon.Trainer`` reaches with the same optimizers on the same
data: the operators and the optimizers run one rule."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from nets import autograd, gluon, nd

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from rename import rename

BATCH_SIZE, EPOCHS = 8, 3
OPTIMIZERS = {
    "sgd": ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.001, "clip_gradient": 5.0}),
    "adam": ("adam", {"learning_rate": 0.05, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8,
                      "wd": 0.001}),
    "adagrad": ("adagrad", {"learning_rate": 0.1, "eps": 1e-7}),
}


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    work = tmp_path_factory.mktemp("update_ops")
    with open(os.path.join(HERE, "update_ops_loop.py")) as f:
        program = rename(f.read())
    assert "mxnet" not in program and "mx." not in program
    script = work / "program.py"
    script.write_text(program)
    proc = subprocess.run([sys.executable, str(script), str(work)], capture_output=True,
                          text=True, timeout=600, env=dict(os.environ, NETS_NUM_THREADS="1"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return work, json.loads(proc.stdout.strip().splitlines()[-1])


class Linear(gluon.HybridBlock):
    def __init__(self, units_in):
        super().__init__()
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(units_in, 1), dtype="float32",
                                          stype="default", grad_stype="row_sparse")

    def hybrid_forward(self, F, x, weight):
        return F.sparse.dot(x, weight)


def trained_by_trainer(name, x, y, w0):
    net = Linear(x.shape[1])
    net.initialize()
    net.weight.set_data(nd.array(w0))
    optimizer, params = OPTIMIZERS[name]
    trainer = gluon.Trainer(net.collect_params(), optimizer, params)
    loss_fn = gluon.loss.L2Loss()
    for _ in range(EPOCHS):
        for start in range(0, len(x), BATCH_SIZE):
            data = nd.array(x[start:start + BATCH_SIZE]).tostype("csr")
            label = nd.array(y[start:start + BATCH_SIZE])
            with autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(BATCH_SIZE)
    return net.weight.data().asnumpy()


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_the_loop_ends_with_the_trainers_weights(loop, name):
    work, _ = loop
    data = np.load(work / "data.npz")
    final = np.load(work / f"{name}.npy")
    expected = trained_by_trainer(name, data["x"], data["y"], data["w0"])
    assert not np.allclose(final, data["w0"])  # it trained
    np.testing.assert_allclose(final, expected, rtol=1e-6, atol=1e-7)


def test_the_updates_were_lazy(loop):
    """Rows of features no sample has never move (their gradient rows never come)."""
    _, measured = loop
    assert measured["idle_features"] > 0
    for name in OPTIMIZERS:
        assert measured["untouched_rows"][name] == measured["idle_features"], name
