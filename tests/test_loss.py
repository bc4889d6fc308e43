"""Losses: values against plain-numpy formulas, label broadcasting, weights, numeric grads."""
import numpy as np
import pytest

from nets import autograd, loss, nd
from nets.test_utils import check_numeric_gradient


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _log_softmax(x):
    z = x - x.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


RNG = np.random.default_rng(11)
PRED = RNG.standard_normal((6, 1))
SIGNED = np.where(RNG.random(6) > 0.5, 1.0, -1.0)
BINARY = (SIGNED > 0).astype(float)
TARGET = RNG.standard_normal(6)

CASES = [
    (loss.L2Loss(), PRED, TARGET, lambda p, y: 0.5 * (p - y) ** 2),
    (loss.L1Loss(), PRED, TARGET, lambda p, y: np.abs(p - y)),
    (loss.SigmoidBinaryCrossEntropyLoss(), PRED, BINARY,
     lambda p, y: -(y * np.log(_sigmoid(p)) + (1 - y) * np.log(1 - _sigmoid(p)))),
    (loss.SigmoidBinaryCrossEntropyLoss(from_sigmoid=True), _sigmoid(PRED), BINARY,
     lambda p, y: -(y * np.log(p) + (1 - y) * np.log(1 - p))),
    (loss.LogisticLoss(), PRED, SIGNED, lambda p, y: np.log1p(np.exp(-p * y))),
    (loss.LogisticLoss(label_format="binary"), PRED, BINARY,
     lambda p, y: np.log1p(np.exp(-p * (2 * y - 1)))),
    (loss.HingeLoss(), PRED, SIGNED, lambda p, y: np.maximum(0, 1 - p * y)),
    (loss.HuberLoss(rho=0.5), PRED, TARGET,
     lambda p, y: np.where(np.abs(p - y) > 0.5, np.abs(p - y) - 0.25, (p - y) ** 2)),
]


@pytest.mark.parametrize("fn, pred, label, ref", CASES, ids=lambda c: type(c).__name__)
def test_values_with_batch_label_against_batch_by_1_pred(fn, pred, label, ref):
    out = fn(nd.array(pred), nd.array(label))
    assert out.shape == (6,)
    np.testing.assert_allclose(out.asnumpy(), ref(pred.reshape(-1), label), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("fn, pred, label, ref", CASES, ids=lambda c: type(c).__name__)
def test_numeric_gradients(fn, pred, label, ref):
    p = nd.array(pred + 0.05, dtype="float64")  # away from kinks at exact ties
    check_numeric_gradient(lambda x: fn(x, nd.array(label, dtype="float64")), [p])


def test_softmax_cross_entropy_sparse_dense_and_logits():
    logits = RNG.standard_normal((5, 4))
    label = RNG.integers(0, 4, 5)
    expected = -_log_softmax(logits)[np.arange(5), label]
    out = loss.SoftmaxCrossEntropyLoss()(nd.array(logits), nd.array(label))
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-5)
    onehot = np.eye(4)[label]
    dense = loss.SoftmaxCrossEntropyLoss(sparse_label=False)(nd.array(logits), nd.array(onehot))
    np.testing.assert_allclose(dense.asnumpy(), expected, rtol=1e-5)
    from_logits = loss.SoftmaxCrossEntropyLoss(from_logits=True)(
        nd.array(_log_softmax(logits)), nd.array(label))
    np.testing.assert_allclose(from_logits.asnumpy(), expected, rtol=1e-5)
    check_numeric_gradient(lambda x: loss.SoftmaxCELoss()(x, nd.array(label, dtype="float64")),
                           [nd.array(logits, dtype="float64")])


def test_weight_sample_weight_and_mean_over_non_batch_axes():
    pred, label = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    sw = RNG.random((3, 1))
    out = loss.L1Loss(weight=2.0)(nd.array(pred), nd.array(label), nd.array(sw))
    np.testing.assert_allclose(out.asnumpy(), 2.0 * (np.abs(pred - label) * sw).mean(axis=1),
                               rtol=1e-5)


def test_stable_for_large_logits():
    big = nd.array([[80.0], [-80.0]])
    out = loss.SigmoidBCELoss()(big, nd.array([0.0, 1.0])).asnumpy()
    np.testing.assert_allclose(out, [80.0, 80.0], rtol=1e-5)
    x = nd.array([[80.0], [-80.0]], dtype="float64")
    x.attach_grad()
    with autograd.record():
        y = loss.LogisticLoss()(x, nd.array([-1.0, 1.0], dtype="float64"))
    y.backward()
    assert np.all(np.isfinite(x.grad.asnumpy()))
