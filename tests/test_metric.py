"""Metrics against direct formulas (AUC against the pairwise definition)."""
import numpy as np
import pytest

from nets import metric, nd
from nets.base import NetsError, ShapeError


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


# -- MXNet 1.9.1's registry, base class and metrics --------------------------------------

# MXNet's docstring example: class probabilities of three samples and their labels
_PROBS = np.array([[0.3, 0.7], [0.0, 1.0], [0.4, 0.6]])
_LABELS = np.array([0, 1, 1])


@pytest.fixture
def registry(monkeypatch):
    """A private copy of the registry, so test registrations do not leak."""
    monkeypatch.setattr(metric, "_REGISTRY", dict(metric._REGISTRY))


def test_register_is_a_bare_class_decorator_and_alias_adds_names(registry):
    @metric.register
    @metric.alias("my_count", "MyCnt")
    class MyCount(metric.EvalMetric):
        def __init__(self, scale=1, name="my-count"):
            super().__init__(name)
            self.scale = scale

        def update(self, labels, preds):
            self.sum_metric += self.scale * len(labels)
            self.num_inst += 1

    assert isinstance(MyCount, type) and issubclass(MyCount, metric.EvalMetric)
    for name in ("mycount", "MYCOUNT", "my_count", "mycnt"):
        assert type(metric.create(name)) is MyCount
    m = metric.create("my_count", 3)
    m.update([nd.array([1.0])] * 2, [nd.array([1.0])] * 2)
    assert m.get() == ("my-count", 6.0)
    assert metric.register(MyCount, "other") is MyCount
    assert type(metric.create("OTHER")) is MyCount


def test_register_rejects_non_metrics_and_warns_on_a_taken_name(registry):
    with pytest.raises(NetsError, match="'acc'.*alias"):
        metric.register("acc")
    with pytest.raises(NetsError, match="not a subclass of EvalMetric"):
        metric.register(dict)

    class Accuracy(metric.EvalMetric):
        def __init__(self):
            super().__init__("mine")

    with pytest.warns(UserWarning, match="'accuracy' replaces nets.metric.Accuracy"):
        metric.register(Accuracy)
    assert metric.create("accuracy").__class__ is Accuracy


def test_mxnet_registered_names():
    expected = {"acc": metric.Accuracy, "accuracy": metric.Accuracy,
                "top_k_accuracy": metric.TopKAccuracy, "top_k_acc": metric.TopKAccuracy,
                "f1": metric.F1, "mcc": metric.MCC, "perplexity": metric.Perplexity,
                "mae": metric.MAE, "mse": metric.MSE, "rmse": metric.RMSE,
                "ce": metric.CrossEntropy, "crossentropy": metric.CrossEntropy,
                "nll_loss": metric.NegativeLogLikelihood,
                "negativeloglikelihood": metric.NegativeLogLikelihood,
                "pearsonr": metric.PearsonCorrelation,
                "pearsoncorrelation": metric.PearsonCorrelation, "loss": metric.Loss,
                "composite": metric.CompositeEvalMetric}
    for name, cls in expected.items():
        assert type(metric.create(name, *([-1] if cls is metric.Perplexity else []))) is cls


def test_eval_metric_signature_global_stats_and_update_dict():
    class Sum(metric.EvalMetric):  # an MXNet-style subclass: touches only the local stats
        def update(self, labels, preds):
            labels, preds = metric.check_label_shapes(labels, preds, True)
            for p in preds:
                self.sum_metric += float(p.asnumpy().sum())
                self.num_inst += p.shape[0]

    m = Sum(42, output_names=["out_b"], label_names=["lab"], extra=7)
    assert m.name == "42" and m._kwargs == {"extra": 7}
    assert m.output_names == ["out_b"] and m.label_names == ["lab"]
    assert np.isnan(m.get()[1])
    m.update_dict({"lab": nd.array([0.0, 0.0])},
                  {"out_a": nd.array([100.0, 100.0]), "out_b": nd.array([1.0, 2.0])})
    assert m.get() == ("42", 1.5)
    assert m.get_global() == m.get()  # no global statistics: get_global is get
    assert m.get_name_value() == m.get_global_name_value() == [("42", 1.5)]
    assert str(m) == "EvalMetric: {'42': 1.5}"


def test_local_and_global_statistics():
    acc = metric.Accuracy()
    acc.update(nd.array([1, 0]), nd.array([[0.2, 0.8], [0.9, 0.1]]))  # 2 of 2
    acc.update(nd.array([1, 1]), nd.array([[0.2, 0.8], [0.9, 0.1]]))  # 1 of 2
    assert acc.get() == acc.get_global() == ("accuracy", 0.75)
    acc.reset_local()
    assert np.isnan(acc.get()[1]) and acc.get_global()[1] == 0.75
    acc.update(nd.array([0, 0]), nd.array([[0.2, 0.8], [0.9, 0.1]]))  # 1 of 2
    assert acc.get()[1] == 0.5 and acc.get_global()[1] == 4 / 6
    assert acc.get_global_name_value() == [("accuracy", 4 / 6)]
    acc.reset()
    assert np.isnan(acc.get_global()[1])


def test_accuracy_compares_int32_classes():
    acc = metric.Accuracy()
    acc.update(np.array([1.0, 2.0, 3.0]), np.array([1.9, 2.2, 0.0]))  # same shape: truncated
    assert acc.get()[1] == pytest.approx(2 / 3)
    acc = metric.create("acc", axis=0)
    acc.update(nd.array([1, 1]), nd.array(_PROBS[:2].T))  # classes along axis 0
    assert acc.get()[1] == 1.0


def test_check_label_shapes():
    a, b = nd.array([1.0, 2.0]), nd.array([[1.0], [2.0]])
    assert metric.check_label_shapes(a, b) == (a, b)
    labels, preds = metric.check_label_shapes(a, b, wrap=True)
    assert labels == [a] and preds == [b]
    assert metric.check_label_shapes([a], [b], True) == ([a], [b])
    with pytest.raises(ValueError, match=r"labels \(2,\) does not match .* \(2, 1\)"):
        metric.check_label_shapes(a, b, shape=True)
    with pytest.raises(ShapeError, match="labels 1 does not match shape of predictions 2"):
        metric.check_label_shapes([a], [a, b])
    with pytest.raises(ShapeError):
        metric.create("mae").update([a], [a, b])


def test_create_of_lists_instances_and_functions():
    acc = metric.Accuracy()
    assert metric.create(acc) is acc
    with pytest.raises(NetsError, match="already a metric"):
        metric.create(acc, axis=0)

    def half_abs(label, pred):
        return float(np.abs(label - pred).sum()) / 2, label.size

    c = metric.create([acc, "mse", half_abs, ["mae"]])
    assert isinstance(c, metric.CompositeEvalMetric) and c.get_metric(0) is acc
    assert isinstance(c.get_metric(2), metric.CustomMetric)
    assert isinstance(c.get_metric(3), metric.CompositeEvalMetric)
    c.update(nd.array([1.0, 0.0]), nd.array([1.0, 1.0]))
    assert c.get() == (["accuracy", "mse", "half_abs", "mae"], [0.5, 0.5, 0.25, 0.5])
    assert c.get_name_value()[2] == ("half_abs", 0.25)
    with pytest.raises(NetsError, match="index=4 is out of range for 4 metrics"):
        c.get_metric(4)
    # extra arguments go to each metric of a list
    c = metric.create(["mae", "mse"], name="err")
    assert c.get()[0] == ["err", "err"]


def test_composite_local_global_and_update_dict():
    c = metric.CompositeEvalMetric(["acc", "mae"], output_names=["p"], label_names=["y"])
    c.update_dict({"y": nd.array([1.0, 0.0]), "z": nd.array([9.0, 9.0])},
                  {"p": nd.array([1.0, 1.0]), "q": nd.array([5.0, 5.0])})
    assert c.get() == (["accuracy", "mae"], [0.5, 0.5])
    c.reset_local()
    c.update(nd.array([1.0, 1.0]), nd.array([1.0, 1.0]))
    assert c.get() == (["accuracy", "mae"], [1.0, 0.0])
    assert c.get_global() == (["accuracy", "mae"], [0.75, 0.25])
    c.reset()
    assert all(np.isnan(v) for v in c.get_global()[1])


def test_negative_log_likelihood_and_its_eps():
    nll = metric.create("nll_loss")
    nll.update([nd.array(_LABELS)], [nd.array(_PROBS)])
    # -(ln 0.3 + ln 1 + ln 0.6) / 3, MXNet's documented value 0.57159948
    assert nll.get() == ("nll-loss", pytest.approx(0.5715994, abs=1e-7))
    nll = metric.NegativeLogLikelihood(eps=1e-4)
    nll.update(nd.array([0, 1]), nd.array([[0.0, 1.0], [0.0, 1.0]]))  # a zero probability
    assert nll.get()[1] == pytest.approx((-np.log(1e-4) - np.log(1 + 1e-4)) / 2)
    with pytest.raises(ShapeError, match=r"pred of shape \(2,\) must be \(batch, classes\)"):
        nll.update(nd.array([0, 1]), nd.array([0.5, 0.5]))


def test_perplexity_is_exp_of_mean_nll_with_ignore_label():
    perp = metric.Perplexity(ignore_label=None)
    perp.update([nd.array(_LABELS)], [nd.array(_PROBS)])
    assert perp.get() == ("perplexity", pytest.approx(1.7710976285155853))  # MXNet's doc
    # ignore_label leaves the sample out of the sum and the count: exp(-ln 0.3 / 2)
    perp = metric.create("perplexity", -1)
    perp.update(nd.array([0, 1, -1]), nd.array(_PROBS))
    assert perp.get()[1] == pytest.approx(1 / np.sqrt(0.3))
    # over several batches it is exp of the mean over all samples: exp(6 ln 2 / 3) = 4
    perp = metric.Perplexity(ignore_label=None)
    perp.update(nd.array([0]), nd.array([[0.5, 0.5]]))
    perp.update(nd.array([1, 0]), nd.array([[0.75, 0.25], [0.125, 0.875]]))
    assert perp.get()[1] == pytest.approx(4.0)
    # probabilities are floored at 1e-10; axis names the class axis
    perp = metric.Perplexity(ignore_label=None, axis=0)
    perp.update([nd.array([1])], [nd.array([[1.0], [0.0]])])
    assert perp.get()[1] == pytest.approx(1e10)
    with pytest.raises(NetsError, match=r"labels \[2\] out of range for 2 classes"):
        metric.Perplexity(None).update(nd.array([2]), nd.array([[0.5, 0.5]]))
    with pytest.raises(ShapeError, match="one label per probability vector"):
        metric.Perplexity(None).update(nd.array([[1, 0], [0, 1]]), nd.ones((2, 3)) / 3)


def test_pearson_correlation_macro_and_micro():
    pr = metric.PearsonCorrelation()
    pr.update([nd.array([[1, 0], [0, 1], [0, 1]])], [nd.array(_PROBS)])
    assert pr.get() == ("pearsonr", pytest.approx(0.42163704544016178))  # MXNet's doc
    # by hand: flattened x (labels) and y (preds), r = sum(dx dy) / sqrt(sum dx^2 sum dy^2)
    x = np.array([1, 0, 0, 1, 0, 1.0])
    y = _PROBS.ravel()
    dx, dy = x - x.mean(), y - y.mean()
    assert pr.get()[1] == pytest.approx(dx @ dy / np.sqrt((dx @ dx) * (dy @ dy)))
    rng = _rng()
    ys, ps = [rng.normal(size=n) for n in (5, 9, 4)], [rng.normal(size=n) for n in (5, 9, 4)]
    ps = [p + y for p, y in zip(ps, ys)]
    macro, micro = metric.create("pearsonr"), metric.PearsonCorrelation(average="micro")
    for y, p in zip(ys, ps):
        macro.update(nd.array(y), nd.array(p))
        micro.update(nd.array(y), nd.array(p))
    assert macro.get()[1] == pytest.approx(np.mean([np.corrcoef(y, p)[0, 1]
                                                    for y, p in zip(ys, ps)]))
    everything = np.corrcoef(np.concatenate(ys), np.concatenate(ps))[0, 1]
    assert micro.get()[1] == pytest.approx(everything)
    micro.reset_local()
    micro.update(nd.array(ys[0]), nd.array(ps[0]))
    assert micro.get()[1] == pytest.approx(np.corrcoef(ys[0], ps[0])[0, 1])
    y_all = np.concatenate(ys + ys[:1])
    p_all = np.concatenate(ps + ps[:1])
    assert micro.get_global()[1] == pytest.approx(np.corrcoef(y_all, p_all)[0, 1])
    with pytest.raises(ShapeError, match=r"labels \(2,\) does not match .* \(2, 1\)"):
        macro.update(nd.array([1.0, 2.0]), nd.array([[1.0], [2.0]]))
    with pytest.raises(NetsError, match="average='mean'"):
        metric.PearsonCorrelation(average="mean")


def test_loss_averages_the_outputs():
    loss = metric.create("loss")
    loss.update(None, [nd.array([1.0, 2.0, 3.0])])
    loss.update([nd.array([0.0])], nd.array([[4.0, 6.0]]))
    assert loss.get() == ("loss", pytest.approx(16 / 5))


def test_f1_macro_micro_and_mcc():
    f1 = metric.F1()
    f1.update([nd.array(_LABELS)], [nd.array(_PROBS)])
    assert f1.get() == ("f1", pytest.approx(0.8))  # MXNet's doc: tp 2, fp 1, fn 0
    batches = [(np.array([1, 1, 0, 0]), np.array([[0, 1], [1, 0], [0, 1], [1, 0.0]])),
               (np.array([1, 0]), np.array([[0, 1], [1, 0.0]]))]
    macro, micro = metric.F1(), metric.create("f1", average="micro")
    for y, p in batches:
        macro.update(nd.array(y), nd.array(p))
        micro.update(nd.array(y), nd.array(p))
    assert macro.get()[1] == pytest.approx((0.5 + 1.0) / 2)  # per batch: F1 1/2, then 1
    assert micro.get()[1] == pytest.approx(2 / 3)  # tp 2, fp 1, fn 1
    micro.reset_local()
    micro.update(nd.array(batches[1][0]), nd.array(batches[1][1]))
    assert micro.get()[1] == 1.0
    assert micro.get_global()[1] == pytest.approx(0.75)  # tp 3, fp 1, fn 1
    with pytest.raises(NetsError, match=r"binary classification only; .*\[0, 1, 2\]"):
        f1.update(nd.array([0, 1, 2]), nd.array(_PROBS))
    # MXNet's MCC example: tp 10000, fp 1000, fn 1, tn 1
    pred = np.array([[0.3, 0.7]] * 1000 + [[0.7, 0.3]] * 2 + [[0.3, 0.7]] * 10000)
    label = np.array([0] * 1001 + [1] * 10001)
    mcc, f1 = metric.MCC(), metric.F1()
    mcc.update(nd.array(label), nd.array(pred))
    f1.update(nd.array(label), nd.array(pred))
    assert mcc.get()[1] == pytest.approx((10000 * 1 - 1000 * 1) /
                                         np.sqrt(11000 * 10001 * 1001 * 2))
    assert mcc.get()[1] == pytest.approx(0.01917751877733392)
    assert f1.get()[1] == pytest.approx(0.95233560306652054)


def test_custom_metric_and_np():
    m = metric.CustomMetric(feval=lambda x, y: (x + y).mean())
    m.update([nd.array([2.5, 0.0, 2, 8])], [nd.array([3, -0.5, 2, 7])])
    assert m.get() == ("custom(<lambda>)", 6.0)  # MXNet's docstring example

    def sum_count(label, pred):
        return float(np.sum(label == pred)), label.size

    m = metric.np(sum_count)
    m.update([nd.array([1, 2]), nd.array([3])], [nd.array([1, 0]), nd.array([3])])
    assert m.get() == ("sum_count", pytest.approx(2 / 3))
    extra = metric.CustomMetric(sum_count, name="first", allow_extra_outputs=True)
    extra.update([nd.array([1.0])], [nd.array([1.0]), nd.array([5.0, 5.0])])
    assert extra.get() == ("first", 1.0)
    with pytest.raises(ShapeError):
        metric.CustomMetric(sum_count).update([nd.array([1.0])],
                                              [nd.array([1.0]), nd.array([5.0])])
