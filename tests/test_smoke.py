"""The smoke set: one short end-to-end check of each floor a new install depends on.

CI runs it (``pytest -m smoke``) in a fresh environment on every CPython it supports and
once more with ``NETS_PLAIN_NUMBA=1`` (kernels compiled by plain ``numba.njit``). Each
test checks values against numpy, so a broken build fails here rather than only later
in the full suite."""
import os
import subprocess
import sys

import numpy as np
import pytest

import nets
from nets import autograd, nd

pytestmark = pytest.mark.smoke


def _csr(rng, rows, cols, density):
    dense = rng.random((rows, cols)) * (rng.random((rows, cols)) < density)
    return dense.astype(np.float32)


def test_imports_and_public_namespaces():
    import nets.data
    import nets.kv
    import nets.layers
    import nets.mod
    import nets.optim
    import nets.sym
    assert nets.__version__
    for name in ("nd", "autograd", "layers", "optim", "data", "sym", "mod", "kv", "Trainer"):
        assert getattr(nets, name) is not None


def test_a_sparse_training_step_updates_only_the_batch_rows():
    rng = np.random.default_rng(0)
    x_np = _csr(rng, 8, 50, 0.1)
    x_np[:, 40:] = 0.0                      # features 40.. never occur: their rows stay
    x = nd.array(x_np).tostype("csr")
    net = nets.layers.FullyConnectedSparse(50, 3, weight_grad_stype="row_sparse")
    net.initialize()
    before = net.weight.data().asnumpy().copy()
    trainer = nets.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
    y = nd.array(rng.random((8, 3)).astype(np.float32))
    with autograd.record():
        out = net(x)
        loss = nets.loss.L2Loss()(out, y)
    loss.backward()
    grad = net.weight.grad()
    assert grad.stype == "row_sparse"
    # L2Loss = mean over the 3 outputs of (out - y)^2 / 2, so dL/dW = x.T (out - y) / 3
    expected_grad = x_np.T @ (out.asnumpy() - y.asnumpy()) / 3
    touched = np.flatnonzero(x_np.any(axis=0))
    np.testing.assert_array_equal(grad.indices.asnumpy(), touched)
    np.testing.assert_allclose(grad.asnumpy(), expected_grad, rtol=1e-5, atol=1e-6)
    trainer.step(batch_size=8)
    after = net.weight.data().asnumpy()
    np.testing.assert_allclose(after, before - 0.5 / 8 * expected_grad, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(after[40:], before[40:])


def test_libsvm_round_trip(tmp_path):
    rng = np.random.default_rng(1)
    dense = _csr(rng, 30, 20, 0.2)
    labels = rng.integers(0, 2, 30).astype(np.float32)
    path = str(tmp_path / "round.libsvm")
    nets.data.save_libsvm(path, nd.array(dense).tostype("csr"), labels)
    X, y = nets.data.load_libsvm(path, n_features=20)
    np.testing.assert_array_equal(X.asnumpy(), dense)
    np.testing.assert_array_equal(np.asarray(y.asnumpy() if hasattr(y, "asnumpy") else y),
                                  labels)


def test_one_executor_forward_and_backward():
    rng = np.random.default_rng(2)
    a_np = rng.random((4, 5)).astype(np.float32)
    w_np = rng.random((5, 3)).astype(np.float32)
    a, w = nets.sym.var("a"), nets.sym.var("w")
    out = nets.sym.dot(a, w)
    exe = out.simple_bind(nets.cpu(), a=(4, 5), w=(5, 3))
    exe.arg_dict["a"][:] = a_np
    exe.arg_dict["w"][:] = w_np
    exe.forward(is_train=True)
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), a_np @ w_np, rtol=1e-5)
    head = np.ones((4, 3), np.float32)
    exe.backward(nd.array(head))
    np.testing.assert_allclose(exe.grad_dict["w"].asnumpy(), a_np.T @ head, rtol=1e-5)


def _nets_command():
    """The installed console script beside this interpreter (what a user runs)."""
    script = os.path.join(os.path.dirname(sys.executable), "nets")
    return [script] if os.path.exists(script) else [sys.executable, "-m", "nets.cli"]


def test_cli_train_then_predict_on_a_small_file(tmp_path):
    rng = np.random.default_rng(3)
    w = rng.normal(size=30)
    lines = []
    for _ in range(400):
        cols = np.sort(rng.choice(30, 4, replace=False))
        label = int(w[cols].sum() > 0)
        lines.append(f"{label} " + " ".join(f"{c}:1" for c in cols))
    train = tmp_path / "train.libsvm"
    train.write_text("\n".join(lines) + "\n")
    model, preds = tmp_path / "model.npz", tmp_path / "preds.txt"
    env = dict(os.environ, NETS_NUM_THREADS="1")
    proc = subprocess.run(_nets_command() + ["train", str(train), "--epochs", "10",
                                             "--batch-size", "20", "--save", str(model)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert model.exists()
    proc = subprocess.run(_nets_command() + ["predict", str(model), str(train), "--output",
                                             str(preds)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    scores = np.loadtxt(preds)
    assert scores.shape == (400,)
    labels = np.array([int(line.split()[0]) for line in lines])
    # a linear model on a linearly separable file: far better than chance after 10 epochs
    assert ((scores > 0.5) == labels).mean() > 0.8
