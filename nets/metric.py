"""Evaluation metrics (MXNet's ``mx.metric``): ``update(labels, preds)`` accumulates,
``get()`` returns ``(name, value)``, ``reset()`` starts over.

``labels`` and ``preds`` are arrays or lists of arrays (one per output).
"""
import numpy as np

from .base import NetsError, ShapeError

__all__ = ["EvalMetric", "Accuracy", "TopKAccuracy", "F1", "MAE", "MSE", "RMSE", "CrossEntropy",
           "AUC", "CompositeEvalMetric", "create", "register"]

_REGISTRY = {}


def register(*names):
    """Make a metric class creatable by ``names`` (``metric.create('acc')``)."""
    def deco(cls):
        for n in names:
            _REGISTRY[n.lower()] = cls
        return cls
    return deco


def _np(x):
    return x.asnumpy() if hasattr(x, "asnumpy") else np.asarray(x)


def _pairs(labels, preds):
    labels = labels if isinstance(labels, (list, tuple)) else [labels]
    preds = preds if isinstance(preds, (list, tuple)) else [preds]
    if len(labels) != len(preds):
        raise ShapeError(f"{len(labels)} label arrays but {len(preds)} prediction arrays")
    return [(_np(label), _np(pred)) for label, pred in zip(labels, preds)]


class EvalMetric:
    """Base class: subclasses implement ``_update(label, pred) -> (sum, count)``."""

    def __init__(self, name):
        self.name = name
        self.reset()

    def reset(self):
        """Forget everything accumulated."""
        self.sum_metric, self.num_inst = 0.0, 0

    def update(self, labels, preds):
        """Accumulate a batch."""
        for label, pred in _pairs(labels, preds):
            s, n = self._update(label, pred)
            self.sum_metric += s
            self.num_inst += n

    def get(self):
        """``(name, value)``; value is NaN before any update."""
        return self.name, self._value()

    def _value(self):
        return self.sum_metric / self.num_inst if self.num_inst else float("nan")

    def get_name_value(self):
        """``[(name, value)]``."""
        return [self.get()]

    def __repr__(self):
        name, value = self.get()
        return f"EvalMetric: {{'{name}': {value}}}"


def _flat_same(label, pred, name):
    label, pred = label.reshape(-1), pred.reshape(-1)
    if label.size != pred.size:
        raise ShapeError(f"{name}: label has {label.size} values, pred {pred.size}")
    return label.astype(np.float64), pred.astype(np.float64)


@register("acc", "accuracy")
class Accuracy(EvalMetric):
    """Fraction of correct classes; ``pred`` of shape ``(batch, K)`` is arg-maxed on ``axis``."""

    def __init__(self, axis=1, name="accuracy"):
        self.axis = axis
        super().__init__(name)

    def _update(self, label, pred):
        if pred.shape != label.shape and pred.ndim > 1:
            pred = pred.argmax(axis=self.axis)
        label, pred = _flat_same(label, pred, self.name)
        return float((label == pred).sum()), label.size


@register("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """Fraction of samples whose label is among the ``top_k`` highest predictions."""

    def __init__(self, top_k=1, name="top_k_accuracy"):
        if top_k < 1:
            raise NetsError(f"TopKAccuracy: top_k={top_k} must be >= 1")
        self.top_k = top_k
        super().__init__(f"{name}_{top_k}")

    def _update(self, label, pred):
        top = np.argsort(-pred, axis=1)[:, :self.top_k]
        return float((top == label.reshape(-1, 1)).any(axis=1).sum()), label.shape[0]


@register("f1")
class F1(EvalMetric):
    """F1 score of binary predictions (``pred`` probabilities of shape ``(batch, 2)`` or
    ``(batch,)``/``(batch, 1)`` thresholded at 0.5), over everything seen since reset."""

    def __init__(self, name="f1"):
        super().__init__(name)

    def reset(self):
        super().reset()
        self.tp = self.fp = self.fn = 0

    def update(self, labels, preds):
        for label, pred in _pairs(labels, preds):
            pred = pred.argmax(axis=1) if pred.ndim > 1 and pred.shape[1] > 1 else pred > 0.5
            label, pred = label.reshape(-1) > 0.5, pred.reshape(-1).astype(bool)
            self.tp += int((pred & label).sum())
            self.fp += int((pred & ~label).sum())
            self.fn += int((~pred & label).sum())
            self.num_inst += label.size

    def _value(self):
        if not self.num_inst:
            return float("nan")
        denom = 2 * self.tp + self.fp + self.fn
        return 2 * self.tp / denom if denom else 0.0


@register("mae")
class MAE(EvalMetric):
    """Mean absolute error."""

    def __init__(self, name="mae"):
        super().__init__(name)

    def _update(self, label, pred):
        label, pred = _flat_same(label, pred, self.name)
        return float(np.abs(label - pred).sum()), label.size


@register("mse")
class MSE(EvalMetric):
    """Mean squared error."""

    def __init__(self, name="mse"):
        super().__init__(name)

    def _update(self, label, pred):
        label, pred = _flat_same(label, pred, self.name)
        return float(np.square(label - pred).sum()), label.size


@register("rmse")
class RMSE(MSE):
    """Root mean squared error over everything seen since reset."""

    def __init__(self, name="rmse"):
        super().__init__(name)

    def _value(self):
        return float(np.sqrt(super()._value()))


@register("ce", "cross-entropy", "crossentropy")
class CrossEntropy(EvalMetric):
    """Mean of ``-log(pred[label])`` for class probabilities ``pred`` of shape ``(batch, K)``."""

    def __init__(self, eps=1e-12, name="cross-entropy"):
        self.eps = eps
        super().__init__(name)

    def _update(self, label, pred):
        label = label.reshape(-1).astype(np.int64)
        prob = pred[np.arange(label.size), label]
        return float(-np.log(prob + self.eps).sum()), label.size


@register("auc")
class AUC(EvalMetric):
    """Area under the ROC curve of binary labels vs scores (ties counted half), over
    everything seen since reset."""

    def __init__(self, name="auc"):
        super().__init__(name)

    def reset(self):
        super().reset()
        self._labels, self._scores = [], []

    def update(self, labels, preds):
        for label, pred in _pairs(labels, preds):
            if pred.ndim > 1 and pred.shape[1] == 2:
                pred = pred[:, 1]
            label, pred = _flat_same(label, pred, self.name)
            self._labels.append(label > 0.5)
            self._scores.append(pred)
            self.num_inst += label.size

    def _value(self):
        if not self._labels:
            return float("nan")
        y, s = np.concatenate(self._labels), np.concatenate(self._scores)
        n_pos, n_neg = int(y.sum()), int((~y).sum())
        if n_pos == 0 or n_neg == 0:
            return float("nan")
        order = np.argsort(s, kind="mergesort")
        ranks = np.empty(len(s))
        sorted_s = s[order]
        # average ranks over ties (1-based)
        starts = np.flatnonzero(np.r_[True, sorted_s[1:] != sorted_s[:-1]])
        ends = np.r_[starts[1:], len(s)]
        ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
        return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; ``get()`` returns lists of names and values."""

    def __init__(self, metrics=None, name="composite"):
        self.metrics = [create(m) for m in (metrics or [])]
        super().__init__(name)

    def add(self, metric):
        """Add a metric (instance or name)."""
        self.metrics.append(create(metric))

    def reset(self):
        for m in getattr(self, "metrics", []):
            m.reset()

    def update(self, labels, preds):
        for m in self.metrics:
            m.update(labels, preds)

    def get(self):
        pairs = [m.get() for m in self.metrics]
        return [n for n, _ in pairs], [v for _, v in pairs]

    def get_name_value(self):
        return [m.get() for m in self.metrics]


def create(metric, *args, **kwargs):
    """A metric from an instance, a name (``'acc'``, ``'rmse'``, ``'auc'``...), or a list
    of those (giving a ``CompositeEvalMetric``)."""
    if isinstance(metric, EvalMetric):
        return metric
    if isinstance(metric, (list, tuple)):
        return CompositeEvalMetric(metric)
    if isinstance(metric, str) and metric.lower() in _REGISTRY:
        return _REGISTRY[metric.lower()](*args, **kwargs)
    raise NetsError(f"metric={metric!r} is not a metric; use one of {sorted(_REGISTRY)}")
