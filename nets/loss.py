"""Losses (MXNet Gluon's): each returns one value per sample, shape ``(batch,)``.

Every loss is composed of operators, so its gradient comes from their vjps (the hot
L2 and sigmoid cross-entropy losses are single fused operators of ``nets.ops.nn``). A
label of shape ``(batch,)`` is reshaped to predictions of shape ``(batch, 1)``
(same size), as in Gluon. ``weight`` scales the loss; ``sample_weight`` (an
array broadcastable to the loss) weights individual samples.
"""
from .base import ShapeError
from .layers.block import HybridBlock, op_in
from .ops.nn import l2_loss, sigmoid_bce

__all__ = ["Loss", "L2Loss", "L1Loss", "SigmoidBinaryCrossEntropyLoss", "SigmoidBCELoss",
           "SoftmaxCrossEntropyLoss", "SoftmaxCELoss", "LogisticLoss", "HingeLoss", "HuberLoss"]


def _reshape_like(label, pred):
    if label.shape == pred.shape:
        return label
    if label.size != pred.size:
        raise ShapeError(f"label has shape {label.shape} and pred {pred.shape}: sizes differ")
    return label.reshape(pred.shape)


class Loss(HybridBlock):
    """Base class: ``weight`` (a global scale) and ``batch_axis``."""

    def __init__(self, weight=None, batch_axis=0, prefix=None):
        super().__init__(prefix=prefix)
        self._weight, self._batch_axis = weight, batch_axis

    def _finish(self, F, loss, sample_weight):
        """Apply the weights, then average over every axis but the batch axis."""
        if sample_weight is not None:
            loss = F.broadcast_mul(loss, sample_weight)
        if self._weight is not None and self._weight != 1:
            loss = loss * self._weight
        if loss.ndim == 1:
            return loss
        batch = self._batch_axis % loss.ndim
        axes = tuple(a for a in range(loss.ndim) if a != batch)
        if all(loss.shape[a] == 1 for a in axes):  # (batch, 1): the mean only drops axes
            return F.reshape(loss, shape=(loss.shape[batch],))
        return F.mean(loss, axis=axes)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        return self._finish(F, self._loss(F, pred, label), sample_weight)

    def _loss(self, F, pred, label):
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}(batch_axis={self._batch_axis}, w={self._weight})"


class _FusedLoss(Loss):
    """A loss computed by one fused operator of ``nets.ops.nn`` (``_op``, with the
    attributes ``_attrs()``). When all that would follow is dropping the unit axes of
    ``(batch, 1)`` predictions (no ``sample_weight``, no scaling ``weight``), the operator
    returns the ``(batch,)`` loss itself and takes a ``(batch,)`` label as it is: no
    reshape nodes, forward or backward."""

    _op = None

    def _attrs(self):
        return {}

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        shape = None
        if sample_weight is None and self._weight in (None, 1) and pred.ndim > 1:
            batch = self._batch_axis % pred.ndim
            if all(d == 1 for a, d in enumerate(pred.shape) if a != batch):
                shape = (pred.shape[batch],)
        if shape is None or label.shape != shape:
            label = _reshape_like(label, pred)
        return self._finish(F, op_in(F, self._op)(pred, label, shape=shape, **self._attrs()),
                            sample_weight)


class L2Loss(_FusedLoss):
    """``weight/2 * (pred - label)**2`` (MXNet's default weight 1 keeps the 1/2)."""

    _op = l2_loss

    def __init__(self, weight=1.0, batch_axis=0, prefix=None):
        super().__init__(weight, batch_axis, prefix)


class L1Loss(Loss):
    """``|pred - label|``."""

    def __init__(self, weight=None, batch_axis=0, prefix=None):
        super().__init__(weight, batch_axis, prefix)

    def _loss(self, F, pred, label):
        return F.abs(pred - _reshape_like(label, pred))


class SigmoidBinaryCrossEntropyLoss(_FusedLoss):
    """Binary cross-entropy of labels in {0, 1}. With ``from_sigmoid=False`` (default)
    ``pred`` are logits and the loss is the stable ``max(x,0) - x*y + log1p(exp(-|x|))``."""

    _op = sigmoid_bce

    def __init__(self, from_sigmoid=False, weight=None, batch_axis=0, prefix=None):
        super().__init__(weight, batch_axis, prefix)
        self._from_sigmoid = from_sigmoid

    def _attrs(self):
        return {"from_sigmoid": self._from_sigmoid}


SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss


class SoftmaxCrossEntropyLoss(Loss):
    """Cross-entropy of ``softmax(pred, axis)``; ``sparse_label`` labels are class ids,
    otherwise distributions; ``from_logits`` means ``pred`` is already log-softmax.

    A class id outside ``[0, classes)`` raises ``NetsError`` naming it (MXNet clips it to
    the nearest class, so label 7 of 3 classes trained class 2 and -1 class 0)."""

    def __init__(self, axis=-1, sparse_label=True, from_logits=False, weight=None,
                 batch_axis=0, prefix=None):
        super().__init__(weight, batch_axis, prefix)
        self._axis, self._sparse_label, self._from_logits = axis, sparse_label, from_logits

    def _loss(self, F, pred, label):
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        if self._sparse_label:
            # a class id outside [0, classes) raises (MXNet clips it to the nearest class,
            # silently training that class instead)
            return -F.pick(pred, label, axis=self._axis, keepdims=True, mode="raise")
        return -F.sum(pred * _reshape_like(label, pred), axis=self._axis, keepdims=True)


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class LogisticLoss(Loss):
    """``log(1 + exp(-pred * label))`` for labels in {-1, 1} (``label_format='signed'``)
    or {0, 1} (``'binary'``), computed stably."""

    def __init__(self, weight=None, batch_axis=0, label_format="signed", prefix=None):
        super().__init__(weight, batch_axis, prefix)
        if label_format not in ("signed", "binary"):
            raise ValueError(f"label_format={label_format!r}: expected 'signed' or 'binary'")
        self._label_format = label_format

    def _loss(self, F, pred, label):
        label = _reshape_like(label, pred)
        if self._label_format == "binary":
            label = label * 2.0 - 1.0
        margin = pred * label
        return F.relu(-margin) + F.Activation(-F.abs(margin), act_type="softrelu")


class HingeLoss(Loss):
    """``max(0, margin - pred * label)`` for labels in {-1, 1}."""

    def __init__(self, margin=1.0, weight=None, batch_axis=0, prefix=None):
        super().__init__(weight, batch_axis, prefix)
        self._margin = margin

    def _loss(self, F, pred, label):
        return F.relu(self._margin - pred * _reshape_like(label, pred))


class HuberLoss(Loss):
    """Smooth L1: ``0.5/rho * d**2`` where ``|d| <= rho``, else ``|d| - rho/2``."""

    def __init__(self, rho=1.0, weight=None, batch_axis=0, prefix=None):
        super().__init__(weight, batch_axis, prefix)
        self._rho = rho

    def _loss(self, F, pred, label):
        d = F.abs(pred - _reshape_like(label, pred))
        return F.where(d > self._rho, d - 0.5 * self._rho, F.square(d) * (0.5 / self._rho))

