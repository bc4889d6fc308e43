"""Labels and scores that would silently give wrong results: a class id outside the
classes (MXNet clips it into range, training the nearest class), a NaN score in AUC."""
import numpy as np
import pytest

import nets
from nets import autograd, nd
from nets.loss import SoftmaxCrossEntropyLoss


def _log_softmax(x):
    x = x - x.max(axis=1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=1, keepdims=True))


@pytest.mark.parametrize("hybridize", [False, True])
def test_softmax_cross_entropy_of_valid_labels_matches_numpy(hybridize):
    rng = np.random.default_rng(0)
    pred = rng.normal(size=(5, 3)).astype(np.float32)
    label = np.array([0, 2, 1, 2, 0], np.float32)
    loss_fn = SoftmaxCrossEntropyLoss()
    if hybridize:
        loss_fn.hybridize()
    out = loss_fn(nd.array(pred), nd.array(label)).asnumpy()
    expected = -_log_softmax(pred.astype(np.float64))[np.arange(5), label.astype(int)]
    np.testing.assert_allclose(out, expected, rtol=1e-5)


@pytest.mark.parametrize("bad", [7, 3, -1])
@pytest.mark.parametrize("hybridize", [False, True])
def test_softmax_cross_entropy_refuses_a_label_out_of_range(bad, hybridize):
    loss_fn = SoftmaxCrossEntropyLoss()
    if hybridize:
        loss_fn.hybridize()
    pred = nd.array(np.zeros((3, 3), np.float32))
    pred.attach_grad()
    with pytest.raises(nets.NetsError, match=r"out of range.*size 3") as info:
        with autograd.record():
            loss_fn(pred, nd.array([0.0, float(bad), 1.0]))
    assert str(bad) in str(info.value)


def test_cross_entropy_metric_names_a_label_out_of_range():
    metric = nets.metric.create("ce")
    prob = nd.array(np.full((2, 3), 1 / 3, np.float32))
    with pytest.raises(nets.NetsError, match=r"cross-entropy: labels \[3\] out of range for 3"):
        metric.update([nd.array([0, 3])], [prob])
    with pytest.raises(nets.NetsError, match=r"labels \[-1\] out of range"):
        metric.update([nd.array([-1, 2])], [prob])
    metric.update([nd.array([0, 2])], [prob])
    assert metric.get()[1] == pytest.approx(np.log(3), rel=1e-6)


def test_auc_of_a_nan_score_is_nan_not_perfect():
    metric = nets.metric.AUC()
    # without the NaN this ranking is perfect: the NaN must not be read as the top score
    metric.update([nd.array([0, 0, 1, 1])], [nd.array([0.1, 0.2, 0.8, np.nan])])
    assert np.isnan(metric.get()[1])
    metric.reset()
    metric.update([nd.array([0, 0, 1, 1])], [nd.array([0.1, 0.2, 0.8, 0.9])])
    assert metric.get()[1] == 1.0
