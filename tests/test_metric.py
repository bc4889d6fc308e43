"""Metrics against direct formulas (AUC against the pairwise definition)."""
import numpy as np
import pytest

from nets import metric, nd
from nets.base import NetsError


def _rng():
    return np.random.default_rng(3)


def test_accuracy_argmax_and_labels():
    pred = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]])
    label = np.array([1, 1, 1])
    m = metric.create("acc")
    m.update([nd.array(label)], [nd.array(pred)])
    assert m.get() == ("accuracy", 2 / 3)
    m.update(nd.array([0.0]), nd.array([0.0]))
    assert m.get()[1] == 3 / 4


def test_topk_accuracy():
    pred = _rng().random((50, 6))
    label = _rng().integers(0, 6, 50)
    m = metric.TopKAccuracy(top_k=3)
    m.update(nd.array(label), nd.array(pred))
    top3 = np.argsort(-pred, axis=1)[:, :3]
    assert m.get()[1] == pytest.approx(np.mean([label[i] in top3[i] for i in range(50)]))


@pytest.mark.parametrize("name, ref", [
    ("mae", lambda y, p: np.mean(np.abs(y - p))),
    ("mse", lambda y, p: np.mean((y - p) ** 2)),
    ("rmse", lambda y, p: np.sqrt(np.mean((y - p) ** 2))),
])
def test_regression_metrics_accumulate_over_batches(name, ref):
    y, p = _rng().normal(size=40), _rng().normal(size=40)
    m = metric.create(name)
    m.update(nd.array(y[:25]), nd.array(p[:25].reshape(25, 1)))
    m.update(nd.array(y[25:]), nd.array(p[25:]))
    assert m.get()[1] == pytest.approx(ref(y, p))


def test_cross_entropy_and_f1():
    prob = _rng().dirichlet(np.ones(4), size=30)
    label = _rng().integers(0, 4, 30)
    ce = metric.CrossEntropy()
    ce.update(nd.array(label), nd.array(prob))
    assert ce.get()[1] == pytest.approx(-np.mean(np.log(prob[np.arange(30), label] + 1e-12)))
    y, s = _rng().integers(0, 2, 100), _rng().random(100)
    f1 = metric.F1()
    f1.update(nd.array(y), nd.array(s))
    p = s > 0.5
    tp, fp, fn = np.sum(p & (y == 1)), np.sum(p & (y == 0)), np.sum(~p & (y == 1))
    assert f1.get()[1] == pytest.approx(2 * tp / (2 * tp + fp + fn))


def test_auc_equals_pairwise_definition_with_ties():
    y = _rng().integers(0, 2, 200)
    s = np.round(_rng().random(200), 1)  # many ties
    m = metric.AUC()
    m.update(nd.array(y[:120]), nd.array(s[:120]))
    m.update(nd.array(y[120:]), nd.array(s[120:]))
    pos, neg = s[y == 1], s[y == 0]
    diff = pos[:, None] - neg[None, :]
    expected = (np.sum(diff > 0) + 0.5 * np.sum(diff == 0)) / diff.size
    assert m.get()[1] == pytest.approx(expected)
    m.reset()
    assert np.isnan(m.get()[1])


def test_composite_and_errors():
    c = metric.create(["acc", "mse"])
    c.update(nd.array([1.0, 0.0]), nd.array([1.0, 1.0]))
    names, values = c.get()
    assert names == ["accuracy", "mse"] and values == [0.5, 0.5]
    with pytest.raises(NetsError, match="'nope'"):
        metric.create("nope")
