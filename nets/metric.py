"""Evaluation metrics (MXNet 1.9.1's ``mx.metric``): ``update(labels, preds)`` accumulates,
``get()`` returns ``(name, value)``, ``reset()`` starts over.

``labels`` and ``preds`` are arrays (nets arrays or numpy arrays) or lists of arrays, one
per output; a single array is taken as a list of one. Every metric keeps two sets of
statistics: the *local* one, which ``reset_local()`` clears (``callback.Speedometer`` does
after each log), and the *global* one, which only ``reset()`` clears; ``get()`` reads the
local set and ``get_global()`` the global one.

Metrics are created by name (case-insensitive) with ``create``; ``register`` (a bare class
decorator registering ``klass.__name__.lower()``) and ``alias(*names)`` add names, as in
MXNet. Departures from MXNet 1.9.1: ``MAE``, ``MSE`` and ``RMSE`` average over every
element seen (MXNet averages per-batch means, which weighs a short last batch as much as a
full one); ``TopKAccuracy`` accepts ``top_k=1``; ``F1`` and ``MCC`` also accept one score
per sample (thresholded at 0.5); ``Perplexity`` and ``CrossEntropy`` reject labels out
of range (MXNet's ``pick`` clips them into range); errors are ``NetsError``s
(``ShapeError`` is also a ``ValueError``, as MXNet raises); ``AUC`` is nets' own (NaN
when a score is NaN).
"""
import math
import warnings

import numpy

from .base import NetsError, ShapeError

__all__ = ["EvalMetric", "CompositeEvalMetric", "Accuracy", "TopKAccuracy", "F1", "MCC", "PCC",
           "Perplexity", "MAE", "MSE", "RMSE", "CrossEntropy", "NegativeLogLikelihood",
           "PearsonCorrelation", "Loss", "CustomMetric", "AUC", "check_label_shapes",
           "create", "register", "alias"]

_REGISTRY = {}


def _host(x):
    """``x`` as a numpy array (nets arrays are densified: metrics read every value)."""
    return x.asnumpy() if hasattr(x, "asnumpy") else numpy.asarray(x)


def check_label_shapes(labels, preds, wrap=False, shape=False):
    """Check that ``labels`` and ``preds`` have the same length (``shape=True``: the same
    shape) and return them; with ``wrap=True`` a single array becomes a list of one.

    Raises ``ShapeError`` (a ``ValueError``) naming both lengths or shapes."""
    if shape:
        label_shape, pred_shape = tuple(labels.shape), tuple(preds.shape)
    else:
        label_shape, pred_shape = _length(labels), _length(preds)
    if label_shape != pred_shape:
        raise ShapeError(f"Shape of labels {label_shape} does not match shape of "
                         f"predictions {pred_shape}")
    if wrap:
        labels = labels if isinstance(labels, (list, tuple)) else [labels]
        preds = preds if isinstance(preds, (list, tuple)) else [preds]
    return labels, preds


def _length(x):
    """``len`` of a list, or of an array's first axis (a 0-d array counts as one)."""
    if isinstance(x, (list, tuple)):
        return len(x)
    shape = x.shape
    return shape[0] if len(shape) else 1


class EvalMetric:
    """Base class of the metrics.

    ``EvalMetric(name, output_names=None, label_names=None, **kwargs)``: ``output_names``
    and ``label_names`` select, by name, the arrays ``update_dict`` passes on (default:
    all). Keyword ``has_global_stats=True`` makes ``get_global()`` read the global
    statistics (``global_sum_metric``, ``global_num_inst``); without it ``get_global()``
    is ``get()``, as for MXNet subclasses that only update ``sum_metric`` and
    ``num_inst``. Other keyword arguments are kept in ``_kwargs``.

    A subclass defines ``update(labels, preds)``, or ``_update(label, pred)`` taking one
    numpy pair and returning ``(sum, count)``, which the base ``update`` adds to both the
    local and the global statistics; the value is ``sum / count`` (NaN while ``count`` is
    0) unless the subclass overrides ``_value``."""

    def __init__(self, name, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self):
        return f"EvalMetric: {dict(self.get_name_value())}"

    __repr__ = __str__

    def reset(self):
        """Clear the local and the global statistics."""
        self.reset_local()
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self):
        """Clear the local statistics; the global ones go on accumulating."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def update(self, labels, preds):
        """Accumulate a batch: ``labels`` and ``preds`` are arrays or equally long lists of
        arrays (one per output)."""
        labels, preds = check_label_shapes(labels, preds, wrap=True)
        for label, pred in zip(labels, preds):
            self._accumulate(*self._update(_host(label), _host(pred)))

    def _update(self, label, pred):
        raise NotImplementedError(f"{type(self).__name__} defines neither update() nor "
                                  f"_update()")

    def _accumulate(self, total, count):
        self.sum_metric += total
        self.num_inst += count
        self.global_sum_metric += total
        self.global_num_inst += count

    def update_dict(self, label, pred):
        """``update`` with the arrays of the dicts ``label`` and ``pred`` (name -> array)
        named by ``label_names`` and ``output_names`` (all of them, in order, if None)."""
        pred = ([pred[n] for n in self.output_names] if self.output_names is not None
                else list(pred.values()))
        label = ([label[n] for n in self.label_names] if self.label_names is not None
                 else list(label.values()))
        self.update(label, pred)

    def _value(self, local):
        """The metric's value from the local (``local=True``) or global statistics."""
        total, count = ((self.sum_metric, self.num_inst) if local
                        else (self.global_sum_metric, self.global_num_inst))
        return float(total / count) if count else float("nan")

    def get(self):
        """``(name, value)`` of the local statistics; value is NaN before any update."""
        return self.name, self._value(local=True)

    def get_global(self):
        """``(name, value)`` of the global statistics (``get()`` for a metric without
        global statistics)."""
        if not self._has_global_stats:
            return self.get()
        return self.name, self._value(local=False)

    def get_name_value(self):
        """``get()`` as a list of ``(name, value)`` pairs."""
        return _zip_name_value(*self.get())

    def get_global_name_value(self):
        """``get_global()`` as a list of ``(name, value)`` pairs."""
        return _zip_name_value(*self.get_global())


def _zip_name_value(name, value):
    names = name if isinstance(name, list) else [name]
    values = value if isinstance(value, list) else [value]
    return list(zip(names, values))


def register(klass, name=None):
    """Make the ``EvalMetric`` subclass ``klass`` creatable as ``create(name)`` (default
    ``klass.__name__``; names are case-insensitive) and return it, so that ``@register``
    decorates a class. Registering a taken name warns and replaces the earlier class."""
    if not (isinstance(klass, type) and issubclass(klass, EvalMetric)):
        raise NetsError(f"register: {klass!r} is not a subclass of EvalMetric (to add "
                        f"names to a class, decorate it with alias(*names))")
    key = (klass.__name__ if name is None else name).lower()
    old = _REGISTRY.get(key)
    if old is not None and old is not klass:
        warnings.warn(f"metric {klass.__module__}.{klass.__name__} registered as {key!r} "
                      f"replaces {old.__module__}.{old.__name__}", UserWarning, stacklevel=2)
    _REGISTRY[key] = klass
    return klass


def alias(*names):
    """A class decorator registering the class under each of ``names``."""
    def deco(klass):
        for name in names:
            register(klass, name)
        return klass
    return deco


def create(metric, *args, **kwargs):
    """A metric from: a registered name (``'acc'``, ``'rmse'``, ``'nll_loss'``..., extra
    arguments going to its constructor); an ``EvalMetric`` (returned as is); a list of
    those (a ``CompositeEvalMetric``; extra arguments go to each); or a function
    ``feval(label, pred)`` of numpy arrays (a ``CustomMetric``)."""
    if isinstance(metric, EvalMetric):
        if args or kwargs:
            raise NetsError(f"create: {metric!r} is already a metric; extra arguments "
                            f"{args} {kwargs} cannot apply")
        return metric
    if isinstance(metric, (list, tuple)):
        return CompositeEvalMetric([create(m, *args, **kwargs) for m in metric])
    if callable(metric):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, str) and metric.lower() in _REGISTRY:
        return _REGISTRY[metric.lower()](*args, **kwargs)
    raise NetsError(f"metric={metric!r} is not a metric; use one of {sorted(_REGISTRY)}, "
                    f"an EvalMetric, a list of those, or a function feval(label, pred)")


@register
@alias("composite")
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; ``get()`` returns the list of their names and
    the list of their values."""

    def __init__(self, metrics=None, name="composite", output_names=None, label_names=None):
        self.metrics = [create(m) for m in (metrics or [])]
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def add(self, metric):
        """Add a metric (an instance or anything ``create`` takes)."""
        self.metrics.append(create(metric))

    def get_metric(self, index):
        """The ``index``-th child metric."""
        if not -len(self.metrics) <= index < len(self.metrics):
            raise NetsError(f"get_metric: index={index} is out of range for "
                            f"{len(self.metrics)} metrics")
        return self.metrics[index]

    def reset(self):
        for m in self.metrics:
            m.reset()

    def reset_local(self):
        for m in self.metrics:
            m.reset_local()

    def update(self, labels, preds):
        for m in self.metrics:
            m.update(labels, preds)

    def update_dict(self, labels, preds):
        """Each child's ``update_dict`` with the arrays this metric's ``label_names`` and
        ``output_names`` select (all if None)."""
        if self.label_names is not None:
            labels = {k: v for k, v in labels.items() if k in self.label_names}
        if self.output_names is not None:
            preds = {k: v for k, v in preds.items() if k in self.output_names}
        for m in self.metrics:
            m.update_dict(labels, preds)

    def get(self):
        return self._gather([m.get() for m in self.metrics])

    def get_global(self):
        return self._gather([m.get_global() for m in self.metrics])

    @staticmethod
    def _gather(pairs):
        names, values = [], []
        for name, value in pairs:
            names.extend(name if isinstance(name, list) else [name])
            values.extend(value if isinstance(value, list) else [value])
        return names, values


########################
# Classification metrics
########################

@register
@alias("acc")
class Accuracy(EvalMetric):
    """Fraction of correct classes. A ``pred`` whose shape differs from the label's is
    arg-maxed on ``axis``; labels and predicted classes are compared as int32."""

    def __init__(self, axis=1, name="accuracy", output_names=None, label_names=None):
        self.axis = axis
        super().__init__(name, axis=axis, output_names=output_names,
                         label_names=label_names, has_global_stats=True)

    def _update(self, label, pred):
        if pred.shape != label.shape:
            pred = pred.argmax(axis=self.axis)
        label, pred = label.astype(numpy.int32).ravel(), pred.astype(numpy.int32).ravel()
        check_label_shapes(label, pred)
        return int((label == pred).sum()), label.size


@register
@alias("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """Fraction of samples whose label is among the ``top_k`` highest of the ``(batch,
    classes)`` predictions; the name is ``'<name>_<top_k>'``."""

    def __init__(self, top_k=1, name="top_k_accuracy", output_names=None, label_names=None):
        if top_k < 1:
            raise NetsError(f"TopKAccuracy: top_k={top_k} must be >= 1")
        self.top_k = top_k
        super().__init__(f"{name}_{top_k}", top_k=top_k, output_names=output_names,
                         label_names=label_names, has_global_stats=True)

    def _update(self, label, pred):
        if pred.ndim != 2:
            raise ShapeError(f"{self.name}: pred of shape {pred.shape} must be "
                             f"(batch, classes)")
        label = label.astype(numpy.int64).ravel()
        check_label_shapes(label, pred)
        top = numpy.argsort(-pred, axis=1, kind="stable")[:, :self.top_k]
        return int((top == label[:, None]).any(axis=1).sum()), label.size


def _average(metric, average):
    """``average`` checked: ``'macro'`` (each update's score averaged, MXNet's default) or
    ``'micro'`` (one score over every sample since reset)."""
    if average not in ("macro", "micro"):
        raise NetsError(f"{type(metric).__name__}: average={average!r} must be 'macro' or "
                        f"'micro'")
    return average


class _BinaryClassification(EvalMetric):
    """Metrics of the counts ``(tp, fp, fn, tn)`` of binary predictions: ``pred`` is
    ``(batch, 2)`` class scores (arg-maxed) or one score per sample (positive above
    0.5); labels have at most two values and 1 is positive. ``average='macro'`` averages
    each update's score, ``'micro'`` scores the counts of every update since reset."""

    def __init__(self, name, output_names, label_names, average):
        self.average = _average(self, average)
        super().__init__(name, output_names=output_names, label_names=label_names,
                         average=average, has_global_stats=True)

    def reset(self):
        super().reset()
        self._global_counts = numpy.zeros(4, numpy.int64)

    def reset_local(self):
        super().reset_local()
        self._counts = numpy.zeros(4, numpy.int64)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, wrap=True)
        counts = sum((self._batch_counts(_host(label), _host(pred))
                      for label, pred in zip(labels, preds)), numpy.zeros(4, numpy.int64))
        if self.average == "macro":
            self._accumulate(self._score(counts), 1)
        else:
            self._counts += counts
            self._global_counts += counts
            self._accumulate(0.0, int(counts.sum()))

    def _batch_counts(self, label, pred):
        if pred.ndim > 1 and pred.shape[1] > 1:
            pred = pred.argmax(axis=1)
        pred = pred.reshape(-1) > 0.5 if pred.dtype.kind == "f" else pred.reshape(-1) == 1
        label = label.astype(numpy.int32).reshape(-1)
        check_label_shapes(label, pred)
        if len(numpy.unique(label)) > 2:
            raise NetsError(f"{type(self).__name__} supports binary classification only; "
                            f"labels have values {numpy.unique(label).tolist()}")
        positive = label == 1
        return numpy.array([(pred & positive).sum(), (pred & ~positive).sum(),
                            (~pred & positive).sum(), (~pred & ~positive).sum()], numpy.int64)

    def _value(self, local):
        if self.average == "macro":
            return super()._value(local)
        counts = self._counts if local else self._global_counts
        return float(self._score(counts)) if counts.sum() else float("nan")


@register
class F1(_BinaryClassification):
    """F1 score ``2 * precision * recall / (precision + recall)`` of a binary
    classification (0 where undefined); ``average`` as MXNet: ``'macro'`` (default)
    averages the F1 of each update, ``'micro'`` is the F1 of everything since reset."""

    def __init__(self, name="f1", output_names=None, label_names=None, average="macro"):
        super().__init__(name, output_names, label_names, average)

    @staticmethod
    def _score(counts):
        tp, fp, fn, _ = (float(c) for c in counts)
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


@register
class PCC(EvalMetric):
    """MXNet's ``PCC``: the multiclass Matthews correlation of the confusion matrix of
    predicted classes (a ``pred`` whose shape differs from the label's is arg-maxed on
    axis 1) against labels, ``cov(x, y) / sqrt(cov(x, x) cov(y, y))`` with ``x``/``y`` the
    predicted/true class counts; NaN while either variance is 0. Equals ``MCC`` for two
    classes. The matrix grows with the largest class seen."""

    def __init__(self, name="pcc", output_names=None, label_names=None,
                 has_global_stats=True):
        self.k = 2
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=has_global_stats)

    def reset(self):
        self.k = getattr(self, "k", 2)
        self.gcm = numpy.zeros((self.k, self.k))
        super().reset()

    def reset_local(self):
        self.lcm = numpy.zeros((self.k, self.k))
        super().reset_local()

    def _grow(self, inc):
        self.lcm = numpy.pad(self.lcm, ((0, inc), (0, inc)))
        self.gcm = numpy.pad(self.gcm, ((0, inc), (0, inc)))
        self.k += inc

    @staticmethod
    def _mcc(cmat):
        n = cmat.sum()
        x, y = cmat.sum(axis=1), cmat.sum(axis=0)
        cov_xx, cov_yy = numpy.sum(x * (n - x)), numpy.sum(y * (n - y))
        if cov_xx == 0 or cov_yy == 0:
            return float("nan")
        return float(numpy.sum(cmat.diagonal() * n - x * y) / (cov_xx * cov_yy) ** 0.5)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, wrap=True)
        for label, pred in zip(labels, preds):
            label, pred = _host(label).astype(numpy.int64).ravel(), _host(pred)
            pred = (pred.argmax(axis=1) if pred.shape != label.shape and pred.ndim > 1
                    else pred).astype(numpy.int64).ravel()
            check_label_shapes(label, pred)
            if label.size and (label.min() < 0 or pred.min() < 0):
                raise NetsError("PCC: classes must be non-negative integers")
            n = int(max(pred.max(initial=0), label.max(initial=0)))
            if n >= self.k:
                self._grow(n + 1 - self.k)
            bcm = numpy.zeros((self.k, self.k))
            numpy.add.at(bcm, (pred, label), 1)
            self.lcm += bcm
            self.gcm += bcm
        self.num_inst += 1
        self.global_num_inst += 1

    def _value(self, local):
        if not (self.num_inst if local else self.global_num_inst):
            return float("nan")
        return self._mcc(self.lcm if local else self.gcm)


@register
class MCC(_BinaryClassification):
    """Matthews correlation coefficient ``(tp*tn - fp*fn) / sqrt((tp+fp)(tp+fn)(tn+fp)
    (tn+fn))`` of a binary classification, zero factors of the denominator replaced by 1
    (as MXNet); ``average`` as for ``F1``."""

    def __init__(self, name="mcc", output_names=None, label_names=None, average="macro"):
        super().__init__(name, output_names, label_names, average)

    @staticmethod
    def _score(counts):
        tp, fp, fn, tn = (float(c) for c in counts)
        if not tp + fp + fn + tn:
            return 0.0
        denom = math.prod(t for t in (tp + fp, tp + fn, tn + fp, tn + fn) if t)
        return (tp * tn - fp * fn) / math.sqrt(denom)


@register
class Perplexity(EvalMetric):
    """``exp`` of the mean negative log-likelihood of the labels: ``pred`` holds class
    probabilities along ``axis`` (default the last), one label per probability vector
    (labels are cast to integers, as MXNet casts them to int32). Labels equal to
    ``ignore_label`` (None: none) are left out of both the sum and the count;
    probabilities are floored at 1e-10 before the log (MXNet's rule)."""

    def __init__(self, ignore_label, axis=-1, name="perplexity", output_names=None,
                 label_names=None):
        self.ignore_label = ignore_label
        self.axis = axis
        super().__init__(name, ignore_label=ignore_label, output_names=output_names,
                         label_names=label_names, has_global_stats=True)

    def _update(self, label, pred):
        pred = numpy.moveaxis(pred, self.axis, -1)
        classes = pred.shape[-1]
        if label.size * classes != pred.size:
            raise ShapeError(f"{self.name}: label of shape {label.shape} does not give one "
                             f"label per probability vector of pred {pred.shape} (axis "
                             f"{self.axis})")
        label, prob = label.reshape(-1).astype(numpy.int64), pred.reshape(-1, classes)
        rows = numpy.arange(label.size)
        if self.ignore_label is not None:
            rows = rows[label != self.ignore_label]
        picked = _class_ids(label[rows], classes, self.name)
        p = prob[rows, picked].astype(numpy.float64)
        return float(-numpy.log(numpy.maximum(p, 1e-10)).sum()), rows.size

    def _value(self, local):
        return math.exp(super()._value(local))


def _class_ids(label, classes, name):
    """``label`` (integers) when every one is a class id in ``[0, classes)``, else
    ``NetsError`` naming the metric and the labels out of range."""
    bad = label[(label < 0) | (label >= classes)]
    if bad.size:
        raise NetsError(f"{name}: labels {numpy.unique(bad)[:10].tolist()} out of range for "
                        f"{classes} classes")
    return label


######################
# Regression metrics
######################

def _flat_same(label, pred, name):
    label, pred = label.reshape(-1), pred.reshape(-1)
    if label.size != pred.size:
        raise ShapeError(f"{name}: label has {label.size} values, pred {pred.size}")
    return label.astype(numpy.float64), pred.astype(numpy.float64)


@register
class MAE(EvalMetric):
    """Mean absolute error over every element since reset."""

    def __init__(self, name="mae", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def _update(self, label, pred):
        label, pred = _flat_same(label, pred, self.name)
        return float(numpy.abs(label - pred).sum()), label.size


@register
class MSE(EvalMetric):
    """Mean squared error over every element since reset."""

    def __init__(self, name="mse", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def _update(self, label, pred):
        label, pred = _flat_same(label, pred, self.name)
        return float(numpy.square(label - pred).sum()), label.size


@register
class RMSE(MSE):
    """Root of the mean squared error over every element since reset."""

    def __init__(self, name="rmse", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    def _value(self, local):
        return math.sqrt(super()._value(local))


@register
@alias("ce", "cross-entropy")
class CrossEntropy(EvalMetric):
    """Mean of ``-log(pred[i, label[i]] + eps)`` for class probabilities ``pred`` of shape
    ``(batch, classes)``."""

    def __init__(self, eps=1e-12, name="cross-entropy", output_names=None, label_names=None):
        self.eps = eps
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def _update(self, label, pred):
        label = label.reshape(-1).astype(numpy.int64)
        if pred.ndim != 2 or pred.shape[0] != label.size:
            raise ShapeError(f"{self.name}: pred of shape {pred.shape} must be (batch, "
                             f"classes) with batch = {label.size} labels")
        label = _class_ids(label, pred.shape[1], self.name)
        prob = pred[numpy.arange(label.size), label].astype(numpy.float64)
        return float(-numpy.log(prob + self.eps).sum()), label.size


@register
@alias("nll_loss")
class NegativeLogLikelihood(CrossEntropy):
    """Negative log-likelihood: the mean of ``-log(pred[i, label[i]] + eps)``, as
    ``CrossEntropy`` (MXNet's name ``'nll-loss'``)."""

    def __init__(self, eps=1e-12, name="nll-loss", output_names=None, label_names=None):
        super().__init__(eps=eps, name=name, output_names=output_names,
                         label_names=label_names)


def _merge_moments(stats, x, y):
    """Chan et al.'s pairwise merge of ``stats = [n, mean_x, mean_y, m2_x, m2_y, c_xy]``
    (count, means, sums of squared deviations and of co-deviations) with the samples
    ``x``, ``y``: the result is that of the concatenated samples."""
    n_a, mx_a, my_a, m2x_a, m2y_a, cxy_a = stats
    n_b = x.size
    if not n_b:
        return stats
    mx_b, my_b = x.mean(), y.mean()
    dx, dy = x - mx_b, y - my_b
    n = n_a + n_b
    ex, ey = mx_b - mx_a, my_b - my_a
    w = n_a * n_b / n
    return [n, mx_a + ex * n_b / n, my_a + ey * n_b / n,
            m2x_a + float(dx @ dx) + ex * ex * w, m2y_a + float(dy @ dy) + ey * ey * w,
            cxy_a + float(dx @ dy) + ex * ey * w]


@register
@alias("pearsonr")
class PearsonCorrelation(EvalMetric):
    """Pearson correlation of the flattened labels and predictions (of equal shapes).
    ``average='macro'`` (MXNet's default) averages the correlation of each label/pred
    pair updated; ``'micro'`` is the correlation over all samples since reset."""

    def __init__(self, name="pearsonr", output_names=None, label_names=None, average="macro"):
        self.average = _average(self, average)
        super().__init__(name, output_names=output_names, label_names=label_names,
                         average=average, has_global_stats=True)

    def reset(self):
        super().reset()
        self._global_moments = [0] + [0.0] * 5

    def reset_local(self):
        super().reset_local()
        self._moments = [0] + [0.0] * 5

    def _update(self, label, pred):
        check_label_shapes(label, pred, shape=True)
        label, pred = label.astype(numpy.float64).ravel(), pred.astype(numpy.float64).ravel()
        if self.average == "macro":
            return float(numpy.corrcoef(pred, label)[0, 1]), 1
        self._moments = _merge_moments(self._moments, label, pred)
        self._global_moments = _merge_moments(self._global_moments, label, pred)
        return 0.0, 1

    def _value(self, local):
        if self.average == "macro":
            return super()._value(local)
        n, _, _, m2x, m2y, cxy = self._moments if local else self._global_moments
        return float(cxy / math.sqrt(m2x * m2y)) if n and m2x * m2y else float("nan")


@register
class Loss(EvalMetric):
    """Mean of the predictions themselves (outputs that are losses); labels are
    ignored."""

    def __init__(self, name="loss", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, _, preds):
        for pred in preds if isinstance(preds, (list, tuple)) else [preds]:
            pred = _host(pred)
            self._accumulate(float(pred.sum(dtype=numpy.float64)), pred.size)


@register
class CustomMetric(EvalMetric):
    """A metric of the function ``feval(label, pred)`` of numpy arrays, called per
    label/pred pair: it returns a value (counted once) or a ``(sum, count)`` pair. The
    name defaults to ``feval.__name__`` (``'custom(<lambda>)'`` for a lambda).
    ``allow_extra_outputs=True`` allows more predictions than labels (the extra ones are
    ignored)."""

    def __init__(self, feval, name=None, allow_extra_outputs=False, output_names=None,
                 label_names=None):
        if name is None:
            name = feval.__name__
            if "<" in name:
                name = f"custom({name})"
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs
        super().__init__(name, feval=feval, allow_extra_outputs=allow_extra_outputs,
                         output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds):
        if self._allow_extra_outputs:
            labels = labels if isinstance(labels, (list, tuple)) else [labels]
            preds = preds if isinstance(preds, (list, tuple)) else [preds]
        else:
            labels, preds = check_label_shapes(labels, preds, wrap=True)
        for label, pred in zip(labels, preds):
            result = self._feval(_host(label), _host(pred))
            self._accumulate(*(result if isinstance(result, tuple) else (result, 1)))


def np(numpy_feval, name=None, allow_extra_outputs=False):
    """A ``CustomMetric`` of the function ``numpy_feval(label, pred)`` of numpy arrays
    (MXNet's ``mx.metric.np``; left out of ``__all__`` so that ``import *`` does not
    shadow numpy's usual name)."""
    return CustomMetric(numpy_feval, name, allow_extra_outputs)


@register
class AUC(EvalMetric):
    """Area under the ROC curve of binary labels vs scores (ties counted half). ``pred``
    is one score per sample or ``(batch, 2)`` class scores (column 1 is scored)."""

    def __init__(self, name="auc", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def reset(self):
        super().reset()
        self._global_seen = []

    def reset_local(self):
        super().reset_local()
        self._seen = []

    def _update(self, label, pred):
        if pred.ndim > 1 and pred.shape[1] == 2:
            pred = pred[:, 1]
        label, pred = _flat_same(label, pred, self.name)
        self._seen.append((label > 0.5, pred))
        self._global_seen.append(self._seen[-1])
        return 0.0, label.size

    def _value(self, local):
        seen = self._seen if local else self._global_seen
        if not seen:
            return float("nan")
        y = numpy.concatenate([lab for lab, _ in seen])
        s = numpy.concatenate([score for _, score in seen])
        n_pos, n_neg = int(y.sum()), int((~y).sum())
        # a NaN score has no rank: the area is NaN (sorting would put it last, as the
        # highest score, and could report a perfect 1.0)
        if n_pos == 0 or n_neg == 0 or numpy.isnan(s).any():
            return float("nan")
        order = numpy.argsort(s)  # (any order of ties: each run of them gets one rank)
        ranks = numpy.empty(len(s))
        sorted_s = s[order]
        # the average (1-based) rank of each run of tied scores
        starts = numpy.flatnonzero(numpy.r_[True, sorted_s[1:] != sorted_s[:-1]])
        ends = numpy.r_[starts[1:], len(s)]
        ranks[order] = numpy.repeat((starts + ends + 1) / 2.0, ends - starts)
        return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))
