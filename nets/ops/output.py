"""Output layers (MXNet's): ``LinearRegressionOutput``, ``LogisticRegressionOutput``,
``MAERegressionOutput``, ``SoftmaxOutput`` and ``MakeLoss``.

An output layer computes the prediction forward and hands its loss's gradient backward:
its vjp ignores the incoming head gradient (``backward()`` of a graph ending in one needs
no ``out_grads``), as in MXNet. ``grad_scale`` scales that gradient. Outputs are dense;
the label is never differentiated.

==========================  ===============  ============================================
op                          forward          gradient w.r.t. ``data``
==========================  ===============  ============================================
LinearRegressionOutput      ``data``         ``(out - label) * grad_scale / m``
LogisticRegressionOutput    ``sigmoid``      ``(out - label) * grad_scale / m``
MAERegressionOutput         ``data``         ``sign(out - label) * grad_scale / m``
SoftmaxOutput               ``softmax``      ``(out - one_hot(label)) * grad_scale / norm``
MakeLoss                    ``data``         ``grad_scale / norm`` everywhere
==========================  ===============  ============================================

``m`` is the number of outputs per example (``label.size / label.shape[0]``, MXNet's rule).
A regression label may have the data's shape or, for ``(batch, 1)`` data, ``(batch,)``;
any label storage type works natively (``out - label`` with a sparse label is dense).
"""
import numpy as np

from ..base import NetsError, ShapeError
from ..arrays.creation import zeros as _zeros
from ..arrays.dense import NDArray
from .elemwise import subtract
from .registry import Op, same_shape
from .reshaping import reshape
from .sparse_ops import as_row_ids
from .unary import as_dense, sign

__all__ = ["LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput",
           "SoftmaxOutput", "Softmax", "MakeLoss", "make_loss", "stop_gradient", "BlockGrad"]

_NORMALIZATIONS = ("null", "batch", "valid")


def _check_normalization(op, normalization):
    if normalization not in _NORMALIZATIONS:
        raise NetsError(f"{op}: normalization={normalization!r} is not one of {_NORMALIZATIONS}")


def _dense_output(*stypes, **attrs):
    return "default"


def _data_grad_only(data, label, **attrs):
    return "default", None  # the label is data: no gradient


# -- regression outputs --------------------------------------------------------------------

def _check_label(op, data, label):
    """MXNet's rule: the label has the data's first dimension and size."""
    if label.ndim == 0 or data.ndim == 0 or label.shape[0] != data.shape[0] \
            or label.size != data.size:
        raise ShapeError(f"{op}: label has shape {label.shape}, data {data.shape}; the label "
                         f"needs the data's shape (or (batch,) for (batch, 1) data)")


def _regression(name, forward, delta, what):
    op = Op(name, ("data", "label"), {"grad_scale": 1.0}, doc=f"""\
{what} output layer: forward ``{forward.__doc__}``; backward
``{delta.__doc__} * grad_scale / m`` with ``m = label.size / label.shape[0]``, whatever
the head gradient (see ``nets.ops.output``).""")
    op.infer(_dense_output)
    op.grad_stype(_data_grad_only)

    @op.shape
    def _(ins, attrs):
        data, label = ins
        if data is not None and label is None:  # MXNet's default: (batch,) for (batch, 1) data
            label = data[:1] if len(data) == 2 and data[1] == 1 else data
        return [data, label], [data]

    @op.impl("default", "default")  # the label is not read forward: any storage type
    @op.impl("default", "csr")
    @op.impl("default", "row_sparse")
    def _(data, label, grad_scale):
        _check_label(name, data, label)
        return NDArray(forward(data.values), data.context)

    @op.vjp
    def _(node, g):
        data, label = node.inputs
        out = node.output(0)
        if label.shape != out.shape:
            label = reshape(label, shape=out.shape)
        scale = node.attrs["grad_scale"] / (label.size // label.shape[0])
        grad = delta(out, label) * scale
        return grad.astype(data.dtype, copy=False), None
    return op


def _identity(x):
    """data"""
    return x.copy()


def _sigmoid(x):
    """1 / (1 + exp(-data))"""
    with np.errstate(over="ignore"):
        return (1 / (1 + np.exp(-x))).astype(x.dtype, copy=False)


def _difference(out, label):
    """(out - label)"""
    return subtract(out, label)


def _sign_difference(out, label):
    """sign(out - label)"""
    return sign(subtract(out, label))


LinearRegressionOutput = _regression("LinearRegressionOutput", _identity, _difference,
                                     "Least-squares (L2) regression")
LogisticRegressionOutput = _regression("LogisticRegressionOutput", _sigmoid, _difference,
                                       "Logistic (binary cross-entropy) regression")
MAERegressionOutput = _regression("MAERegressionOutput", _identity, _sign_difference,
                                  "Mean-absolute-error (L1) regression")


# -- SoftmaxOutput -------------------------------------------------------------------------

SoftmaxOutput = Op("SoftmaxOutput", ("data", "label"),
                   {"grad_scale": 1.0, "ignore_label": -1.0, "multi_output": False,
                    "use_ignore": False, "preserve_shape": False, "normalization": "null",
                    "out_grad": False, "smooth_alpha": 0.0}, doc="""\
Softmax output layer with the cross-entropy gradient ``(out - one_hot(label)) * grad_scale``.

The softmax runs over axis 1 with ``multi_output`` (data ``(n, k, ...)``, label ``(n,
...)``), over the last axis with ``preserve_shape``, and otherwise over each example's
flattened values (label ``(n,)``). A label of the data's shape holds probabilities
instead of class ids. ``use_ignore`` zeroes the gradient where the label equals
``ignore_label``; ``smooth_alpha`` smooths the target (``1 - alpha`` on the class,
``alpha / (k - 1)`` elsewhere); ``normalization`` divides by 1 (``'null'``), the batch
size (``'batch'``) or the number of labels not ignored (``'valid'``, at least 1);
``out_grad=True`` multiplies by the head gradient. A class id that is not a whole
number in ``[0, k)`` (and not ignored) raises ``NetsError`` (MXNet read out of bounds).
""")
Softmax = SoftmaxOutput  # MXNet's deprecated name
SoftmaxOutput.infer(_dense_output)
SoftmaxOutput.grad_stype(_data_grad_only)
SoftmaxOutput.dtype(lambda d, a: d[0], index={1})


@SoftmaxOutput.shape
def _(ins, attrs):
    data, label = ins
    if data is not None and label is None:
        label = (data[:1] + data[2:] if attrs["multi_output"] else
                 data[:-1] if attrs["preserve_shape"] else data[:1])
    return [data, label], [data]


def _class_axis(data, multi_output, preserve_shape):
    """``data`` as a numpy array with the class axis last (flattened per example when
    neither ``multi_output`` nor ``preserve_shape``)."""
    x = data.values
    if multi_output:
        return np.moveaxis(x, 1, -1)
    return x if preserve_shape else x.reshape(x.shape[0], -1)


def _from_class_axis(values, shape, multi_output):
    return np.moveaxis(values, -1, 1) if multi_output else values.reshape(shape)


@SoftmaxOutput.impl("default", "default")
def _(data, label, grad_scale, ignore_label, multi_output, use_ignore, preserve_shape,
      normalization, out_grad, smooth_alpha):
    _check_normalization("SoftmaxOutput", normalization)
    if data.ndim < (3 if multi_output else 1):
        raise ShapeError(f"SoftmaxOutput: data of shape {data.shape} is too small "
                         f"(multi_output={multi_output})")
    x = _class_axis(data, multi_output, preserve_shape)
    e = np.exp(x - x.max(axis=-1, keepdims=True)) if x.size else x.copy()
    out = e / e.sum(axis=-1, keepdims=True) if x.size else e
    labels = label.shape if label.shape == data.shape else x.shape[:-1]
    if label.size != int(np.prod(labels)):
        raise ShapeError(f"SoftmaxOutput: label has shape {label.shape}; expected {labels} "
                         f"(class ids) or the data's shape {data.shape} (probabilities)")
    return NDArray(np.ascontiguousarray(_from_class_axis(out, data.shape, multi_output)),
                   data.context)


@SoftmaxOutput.vjp
def _(node, g):
    data, label = node.inputs[0], as_dense(node.inputs[1])  # (a sparse label fell back)
    a = node.attrs
    p = _class_axis(node.outputs[0], a["multi_output"], a["preserve_shape"])
    k = p.shape[-1]
    if label.shape == data.shape:  # probabilities
        target = _class_axis(label, a["multi_output"], a["preserve_shape"])
        keep = np.ones(p.shape[:-1], bool)
    else:
        ids = label.values.reshape(p.shape[:-1])
        keep = ~(ids == a["ignore_label"]) if a["use_ignore"] else np.ones(ids.shape, bool)
        rows = as_row_ids(ids[keep], k, "SoftmaxOutput", "label")
        alpha = a["smooth_alpha"]
        target = np.full(p.shape, alpha / max(k - 1, 1) if alpha else 0.0, p.dtype)
        target[keep, rows] = 1.0 - alpha
    grad = (p - target) * keep[..., None]
    norm = {"null": 1, "batch": data.shape[0], "valid": max(int(keep.sum()), 1)}
    grad *= a["grad_scale"] / norm[a["normalization"]]
    grad = _from_class_axis(grad, data.shape, a["multi_output"]).astype(data.dtype)
    if a["out_grad"]:
        grad = grad * g.asnumpy()
    return NDArray(np.ascontiguousarray(grad), data.context), None


# -- MakeLoss ------------------------------------------------------------------------------

MakeLoss = Op("MakeLoss", ("data",),
              {"grad_scale": 1.0, "valid_thresh": 0.0, "normalization": "null"}, doc="""\
Marks ``data`` as a loss: forward is ``data``; backward is ``grad_scale`` for every
element whatever the head gradient, divided by the batch size (``normalization=
'batch'``) or by the number of elements above ``valid_thresh`` (``'valid'``, at least 1:
MXNet divided by zero when none was).
""")
MakeLoss.infer(_dense_output)
MakeLoss.shape(same_shape)


@MakeLoss.impl("default")
def _(data, grad_scale, valid_thresh, normalization):
    _check_normalization("MakeLoss", normalization)
    return NDArray(data.values.copy(), data.context)


@MakeLoss.vjp
def _(node, g):
    data, a = node.inputs[0], node.attrs
    norm = {"null": 1, "batch": data.shape[0] if data.ndim else 1,
            "valid": max(int((as_dense(data).values > a["valid_thresh"]).sum()), 1)}
    return NDArray(np.full(data.shape, a["grad_scale"] / norm[a["normalization"]], data.dtype),
                   data.context)


# -- make_loss / stop_gradient -------------------------------------------------------------

def _keep_stype(data):
    return data


def _identity(data):
    """A copy of ``data`` in its storage type (a sparse one shares the immutable indices)."""
    if data.stype == "default":
        return NDArray(data.values.copy(), data.context)
    return data.with_values(data.values.copy())


make_loss = Op("make_loss", ("data",), doc="""\
Marks ``data`` as a loss (MXNet's ``make_loss``): forward is ``data`` in its storage type
(a sparse input stays sparse); backward is 1 for every element whatever the head
gradient (MXNet's ``ones_like``), a dense gradient. ``MakeLoss`` adds ``grad_scale`` and
normalization.
""")
make_loss.infer(_keep_stype)
make_loss.shape(same_shape)
make_loss.impl("default")(_identity)
make_loss.impl("csr")(_identity)
make_loss.impl("row_sparse")(_identity)


@make_loss.vjp
def _(node, g):
    data = node.inputs[0]
    return NDArray(np.ones(data.shape, data.dtype), data.context)


stop_gradient = Op("stop_gradient", ("data",), doc="""\
Stops gradients (MXNet's ``stop_gradient``, alias ``BlockGrad``): forward is ``data`` in
its storage type; the gradient of ``data`` through it is zero (an empty array of
``data``'s storage type, so nothing flows to what computed ``data``).
""")
stop_gradient.infer(_keep_stype)
stop_gradient.shape(same_shape)
stop_gradient.impl("default")(_identity)
stop_gradient.impl("csr")(_identity)
stop_gradient.impl("row_sparse")(_identity)
BlockGrad = stop_gradient


@stop_gradient.grad_stype
def _(data):
    return (data,)


@stop_gradient.vjp
def _(node, g):
    data = node.inputs[0]
    return (_zeros(data.shape, data.context, data.dtype, data.stype),)
