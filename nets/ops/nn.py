"""Neural-network forward operators: FullyConnected, Embedding, Activation, LeakyReLU,
softmax, log_softmax and Dropout (MXNet's names and arguments), and ``_dot_bias``, the operator of
``FullyConnectedSparse`` (nets' own layer, weight laid out ``(in_units, units)``)."""
import math

import numpy as np

from .. import random as _random
from ..base import DEFAULT_DTYPE, FLOAT_DTYPES, DTypeError, NetsError, ShapeError, as_dtype
from ..arrays.dense import NDArray
from . import unary
from .dot import _csr_dense_into, _matmul, dot
from .elemwise import _sum_to, broadcast_mul, multiply
from .indexing import _backward_take
from .registry import REQUIRED, RECORDER, TRAINING, Op, same_shape
from .reshaping import reshape
from .sparse_ops import as_row_ids, cast_storage, take_rows
from .unary import as_dense

__all__ = ["FullyConnected", "Embedding", "Activation", "LeakyReLU", "softmax", "log_softmax",
           "Dropout"]


# -- FullyConnected ----------------------------------------------------------------------------

_FUSED_DOC = """
``act_type`` (default None) applies relu, sigmoid or tanh to the output inside the
operator: a hybridized block's graph fuses an ``Activation`` that only this output feeds
(one tape node instead of two). These are the activations whose derivative is a formula
of the output alone (relu's ``x > 0`` is ``y > 0``), so the gradient needs nothing else.
"""

FullyConnected = Op("FullyConnected", ("data", "weight", "bias?"),
                    {"num_hidden": REQUIRED, "no_bias": False, "flatten": True, "act_type": None},
                    doc="""\
Linear map ``y = x . weight^T + bias`` with MXNet's weight layout ``(num_hidden, in_units)``.

``flatten=True`` treats ``data`` as ``(batch, -1)`` (output ``(batch, num_hidden)``);
``flatten=False`` maps the last axis (output ``data.shape[:-1] + (num_hidden,)``).
``bias`` is required unless ``no_bias=True``. A CSR ``data`` runs the sparse
``dot(csr, weight^T)`` kernel and is never densified. The output is dense. All inputs
must have one dtype (MXNet's rule); otherwise ``DTypeError`` names the mismatch (numpy
would promote int64 data with a float32 weight to a float64 output whose gradient
could not flow back).
""" + _FUSED_DOC, entrywise=False)


@FullyConnected.shape
def _(ins, attrs):
    data, weight, bias = ins
    n = attrs["num_hidden"]
    bias = None if attrs["no_bias"] else (bias if bias == (n, 1) else (n,))  # MXNet's (n, 1)
    if data is None:
        return [data, weight, bias], [None]
    lead = data[:1] if attrs["flatten"] else data[:-1]
    return [data, (n, math.prod(data[len(lead):])), bias], [lead + (n,)]


@FullyConnected.grad_stype
def _(data, weight, bias, **attrs):
    # d data = dot(g, weight) (csr data: none); d weight, d bias dense
    return (None if data == "csr" else dot.infer_stype("default", weight)[0]), "default", (
        bias and "default")


@FullyConnected.infer
def _(data, weight, bias, num_hidden, no_bias, flatten, act_type):
    return "default"


@FullyConnected.check
def _(data, weight, bias, num_hidden, no_bias, flatten, act_type):
    """Validate shapes, dtypes and the fused activation."""
    dtype = weight.dtype
    if data.dtype != dtype or (bias is not None and bias.dtype != dtype):
        name, x = ("data", data) if data.dtype != dtype else ("bias", bias)
        raise DTypeError(f"FullyConnected: {name} has dtype {x.dtype} but weight has dtype "
                         f"{dtype}; all inputs need one dtype (as in MXNet): cast "
                         f"with {name}.astype({str(dtype)!r})")
    wshape, shape = weight.shape, data.shape
    if len(wshape) != 2 or wshape[0] != num_hidden:
        raise ShapeError(f"FullyConnected: weight has shape {wshape}, expected "
                         f"(num_hidden={num_hidden}, in_units)")
    lead = shape[:1] if flatten else shape[:-1]
    in_units = math.prod(shape[len(lead):])
    if not shape or in_units != wshape[1]:
        raise ShapeError(f"FullyConnected: data of shape {shape} (flatten={flatten}) has "
                         f"{in_units} input units but weight of shape {wshape} expects "
                         f"{wshape[1]}")
    if (bias is None) != bool(no_bias):
        raise NetsError(f"FullyConnected: no_bias={no_bias} but bias is "
                        f"{'missing' if bias is None else 'given'}")
    if bias is not None and bias.shape not in ((num_hidden,), (num_hidden, 1)):
        raise ShapeError(f"FullyConnected: bias has shape {bias.shape}, expected "
                         f"(num_hidden={num_hidden},) (or MXNet's (num_hidden, 1))")
    _check_act(act_type, "FullyConnected")


def _fc(data, weight, bias, num_hidden, no_bias, flatten, act_type):
    shape = (data.shape[:1] if flatten else data.shape[:-1]) + (num_hidden,)  # (checked)
    if data.stype == "csr":
        y = dot.compute((data, weight), {"transpose_a": False, "transpose_b": True})[0].values
    else:
        w, x = weight.values, data.values
        if x.ndim != 2:
            x = x.reshape(math.prod(shape[:-1]), w.shape[1])
        y = _matmul(x, w.T)
    if bias is not None:
        b = bias.values
        y += b if b.ndim == 1 else b.reshape(-1)
    if act_type is not None:
        y = _fused_act(y, act_type)
    return NDArray(y if y.shape == shape else y.reshape(shape), data.context)


def _register_layer(op, fn):
    """``fn`` as ``op``'s implementation for dense or csr data, a dense weight and a dense
    or absent bias."""
    for data in ("default", "csr"):
        for bias in ("default", None):
            op.impl(data, "default", bias)(fn)


_register_layer(FullyConnected, _fc)


@FullyConnected.vjp
def _(node, g):
    """``d data = g . W``, ``d W = g^T . x``, ``d bias = sum of g over the batch``, with
    ``g`` and ``x`` viewed as 2-D ``(batch, -1)`` (all leading axes when ``flatten=False``).

    A CSR ``data`` is a batch, not a variable: no gradient (as in MXNet). Its ``d W`` is
    computed by the sparse ``dot(g^T, csr)`` kernel over the columns the batch touches
    and returned dense: with MXNet's ``(num_hidden, in_units)`` layout the touched
    entries are columns, not rows. ``FullyConnectedSparse`` (weight ``(in_units, units)``)
    is the layer whose weight gradient is row_sparse.
    """
    data, weight, bias = node.inputs
    wants = node.parents  # None: that input takes no gradient (a constant), skip its product
    g = _through_act(node, as_dense(g))
    if data.stype == weight.stype == "default" and RECORDER.get() is None:
        # not differentiated again: the same products in numpy, without dispatching ops
        g2, ctx = g.values.reshape(-1, weight.shape[0]), g.context
        return (None if wants[0] is None else
                NDArray(_matmul(g2, weight.values).reshape(data.shape), ctx),
                None if wants[1] is None else
                # (the width from the weight: a 0-row batch has no -1 to infer)
                NDArray(_matmul(g2.T, data.values.reshape(g2.shape[0], weight.shape[1])), ctx),
                None if bias is None or wants[2] is None else
                NDArray(np.add.reduce(g2, axis=0, dtype=g2.dtype).reshape(bias.shape), ctx))
    g2 = g if g.ndim == 2 else reshape(g, shape=(-1, weight.shape[0]))
    d_data = d_weight = None
    if data.stype == "csr":
        if wants[1] is not None:
            d_weight = cast_storage(dot(g2, data, transpose_a=True), stype="default")
    else:
        if wants[0] is not None:
            d_data = dot(g2, weight)
            d_data = d_data if data.ndim == 2 else reshape(d_data, shape=data.shape)
        if wants[1] is not None:
            x2 = data if data.ndim == 2 else reshape(data, shape=(g2.shape[0], weight.shape[1]))
            d_weight = dot(g2, x2, transpose_a=True)
    return (d_data, d_weight,
            None if bias is None or wants[2] is None else _bias_grad(g2, bias))


def _bias_grad(g2, bias):
    """The batch sum of the 2-D ``g2``, in the bias's shape (``(n,)`` or MXNet's ``(n, 1)``)."""
    out = _sum_to(g2, shape=(g2.shape[1],))
    return out if bias.ndim == 1 else reshape(out, shape=bias.shape)


# -- dot + bias --------------------------------------------------------------------------------

_dot_bias = Op("_dot_bias", ("data", "weight", "bias?"), {"act_type": None}, doc="""\
``dot(data, weight) + bias`` for 2-D ``data`` (csr or dense) of shape ``(batch,
in_units)``, ``weight`` ``(in_units, units)`` and an optional ``bias`` ``(units,)``, all
of one dtype: ``FullyConnectedSparse``'s computation as one operator, as
``FullyConnected`` is for its own weight layout. For a csr batch the bias fills the
output that the sparse kernel then adds into, so it costs no pass of its own. The
gradients are ``dot``'s (row_sparse ``data^T . g`` for the weight when ``data`` is csr;
none for csr data) and the batch sum of ``g`` for the bias. The output is dense.
""" + _FUSED_DOC, entrywise=False)


@_dot_bias.shape
def _(ins, attrs):
    data, weight, bias = ins  # (an absent bias is never assigned the shape given for it)
    units = weight[1] if weight is not None else bias[0] if bias is not None else None
    if units is None:
        return ins, [None]
    if data is None:
        return [data, weight, (units,)], [None]
    return [data, (data[1], units), (units,)], [(data[0], units)]


@_dot_bias.grad_stype
def _(data, weight, bias, act_type):
    # dot's rule: d weight = dot(data, g, transpose_a=True), row_sparse for csr data
    return ((None, "row_sparse") if data == "csr" else ("default", "default")) + (
        bias and "default",)


@_dot_bias.infer
def _(data, weight, bias, act_type):
    return "default"


@_dot_bias.check
def _(data, weight, bias, act_type):
    for name, x in (("weight", weight), ("bias", bias)):
        if x is not None and x.dtype != data.dtype:
            raise DTypeError(f"_dot_bias: {name} has dtype {x.dtype} but data has dtype "
                             f"{data.dtype}; all inputs need one dtype")
    if data.ndim != 2 or weight.ndim != 2 or data.shape[1] != weight.shape[0]:
        raise ShapeError(f"_dot_bias: data {data.shape} and weight {weight.shape} must be "
                         f"(batch, in_units) and (in_units, units)")
    if bias is not None and bias.shape != weight.shape[1:]:
        raise ShapeError(f"_dot_bias: bias has shape {bias.shape}, expected "
                         f"({weight.shape[1]},)")
    _check_act(act_type, "_dot_bias")


def _dot_bias_impl(data, weight, bias, act_type):
    if data.stype == "csr":
        out = np.empty((data.shape[0], weight.shape[1]), weight.dtype)
        out[...] = 0 if bias is None else bias.values
        _csr_dense_into(data, weight.values, out)
    else:
        out = _matmul(data.values, weight.values)
        if bias is not None:
            out += bias.values
    return NDArray(_fused_act(out, act_type), data.context)


_register_layer(_dot_bias, _dot_bias_impl)


@_dot_bias.vjp(fresh=True)
def _(node, g):
    """``d data = g . W^T`` (none for csr data), ``d W = data^T . g`` (row_sparse for csr
    data: ``dot``'s own rule), ``d bias`` = the batch sum of ``g``."""
    data, weight, bias = node.inputs
    wants = node.parents  # None: a constant input, no gradient
    g = _through_act(node, as_dense(g))
    d_data = (_vjp_dot(g, weight, False, True)
              if data.stype != "csr" and wants[0] is not None else None)
    d_weight = _vjp_dot(data, g, True, False) if wants[1] is not None else None
    d_bias = None
    if bias is not None and wants[2] is not None:
        d_bias = (NDArray(g.values.sum(axis=0), g.context) if RECORDER.get() is None
                  else _sum_to(g, shape=bias.shape))  # (a graph only when differentiated again)
    return d_data, d_weight, d_bias


def _vjp_dot(a, b, transpose_a, transpose_b):
    """``dot`` inside a vjp: the operator call (recorded, differentiable again) under
    ``create_graph``, else its computation alone (``Op.compute``: no argument binding and
    nothing to record; the forward pass checked the operands)."""
    attrs = {"transpose_a": transpose_a, "transpose_b": transpose_b, "forward_stype": None}
    if RECORDER.get() is None:
        return dot.compute((a, b), attrs)[0]
    return dot(a, b, **attrs)


# -- Embedding ---------------------------------------------------------------------------------

Embedding = Op("Embedding", ("data", "weight"),
               {"input_dim": REQUIRED, "output_dim": REQUIRED, "dtype": "float32",
                "sparse_grad": False}, doc="""\
Look up rows of ``weight`` (``(input_dim, output_dim)``): output ``data.shape + (output_dim,)``.

Ids may be integers or whole-number floats; a fractional, non-finite or out-of-range id
raises ``NetsError`` naming it and its position (MXNet silently clipped out-of-range
ids). ``weight`` may be dense or row_sparse (absent rows read as zeros, gathered
without densifying). The output is dense and has the weight's dtype; ``dtype`` names
the weight dtype (as in MXNet) and ``sparse_grad=True`` makes the weight gradient
row_sparse; without it the gradient is dense, for a row_sparse weight too (MXNet's rule:
the gradient's storage type follows ``sparse_grad`` alone).
""", entrywise=False)


@Embedding.shape
def _(ins, attrs):
    data = ins[0]
    out = None if data is None else data + (attrs["output_dim"],)
    return [data, (attrs["input_dim"], attrs["output_dim"])], [out]


Embedding.dtype(lambda d, a: d[1], index={0})


@Embedding.grad_stype
def _(data, weight, sparse_grad, **attrs):
    return None, "row_sparse" if sparse_grad else "default"


@Embedding.infer
def _(data, weight, input_dim, output_dim, dtype, sparse_grad):
    return "default"


def _embedding_check(weight, input_dim, output_dim, dtype):
    as_dtype(dtype)
    if weight.shape != (input_dim, output_dim):
        raise ShapeError(f"Embedding: weight has shape {weight.shape}, expected "
                         f"(input_dim={input_dim}, output_dim={output_dim})")


@Embedding.impl("default", "default")
def _(data, weight, input_dim, output_dim, dtype, sparse_grad):
    _embedding_check(weight, input_dim, output_dim, dtype)
    return NDArray(take_rows(weight.values, data.values, "Embedding", "data"), data.context)


@Embedding.impl("default", "row_sparse")
def _(data, weight, input_dim, output_dim, dtype, sparse_grad):
    _embedding_check(weight, input_dim, output_dim, dtype)
    ids = as_row_ids(data.values, input_dim, "Embedding", "data").reshape(-1)
    # Position of each id among the stored rows; ids not stored stay zero.
    pos = np.minimum(np.searchsorted(weight.index_array, ids), len(weight.index_array) - 1)
    found = np.flatnonzero(weight.index_array[pos] == ids) if len(weight.index_array) else pos[:0]
    out = np.zeros((ids.size, output_dim), dtype=weight.dtype)
    out[found] = weight.values[pos[found]]
    return NDArray(out.reshape(data.shape + (output_dim,)), data.context)


@Embedding.vjp(fresh=True)
def _(node, g):
    """No gradient for the ids; the weight's is the output gradient's rows added at their
    ids (``take``'s gradient along axis 0): row_sparse (the batch's unique ids, sorted,
    duplicates' rows summed) with ``sparse_grad=True``, else dense
    ``(input_dim, output_dim)``.
    """
    data, weight = node.inputs
    stype = "row_sparse" if node.attrs["sparse_grad"] else "default"
    g = as_dense(g)
    if RECORDER.get() is None and data.stype == "default" and g.dtype in FLOAT_DTYPES:
        # not differentiated again: the implementation itself (its result has ``stype``;
        # its attributes in order: shape, axis, mode, stype)
        return None, _BACKWARD_TAKE_DENSE(g, data, weight.shape, 0, None, stype)
    return None, _backward_take(g, data, shape=weight.shape, axis=0, mode=None, stype=stype)


_BACKWARD_TAKE_DENSE = _backward_take.find_impl(("default", "default"))


# -- Activation --------------------------------------------------------------------------------

# Each act_type is the elementwise operator of `unary` with its storage rule (relu, tanh and
# softsign keep a sparse stype; sigmoid and softrelu give a dense output, computed natively).
_softrelu = unary.map_op("_softrelu", lambda x: np.logaddexp(0, x),  # = log1p(e^-|x|) + max(x, 0)
                         doc="Elementwise log(1 + exp(x)), stable for large |x| (softplus).",
                         grad=lambda x, y: unary.sigmoid(x))
_ACTIVATIONS = {"relu": unary.relu, "sigmoid": unary.sigmoid, "tanh": unary.tanh,
                "softrelu": _softrelu, "softsign": unary.softsign}

Activation = Op("Activation", ("data",), {"act_type": REQUIRED}, doc="""\
Element-wise activation ``act_type``: relu, sigmoid, tanh, softrelu (log(1 + e^x)) or
softsign (x / (1 + |x|)); the same as the operator of that name (``_softrelu``).

relu, tanh and softsign map 0 to 0, so a sparse input keeps its storage type; sigmoid
and softrelu of a sparse input give a dense output (computed from the stored values,
without densifying the input). The gradient is the operator's: a sparse input's keeps
its pattern only for relu (f'(0) = 0); the others' are dense (f'(0) != 0).
""")


def _activation(act_type):
    try:
        return _ACTIVATIONS[act_type]
    except (KeyError, TypeError):
        raise NetsError(f"Activation: act_type={act_type!r} is not one of "
                        f"{sorted(_ACTIVATIONS)}") from None


Activation.shape(same_shape)


@Activation.infer
def _(data, act_type):
    return _activation(act_type).infer_stype(data)


@Activation.impl("default")
@Activation.impl("csr")
@Activation.impl("row_sparse")
def _(data, act_type):
    # The operator's own implementation, without a second dispatch (it never declines: every
    # act_type has a finite f(0), so no stype falls back).
    return _activation(act_type).find_impl((data.stype,))(data)


# The gradient of the act_type's operator (its f' formula), with unary's storage rule.
unary.declare_vjp(Activation,
                  (lambda x, y, act_type: _activation(act_type).derivatives[0](x, y),))


# The activations FullyConnected and _dot_bias apply themselves (``act_type``; see _FUSED_DOC):
# each derivative is a formula of the output alone, bounded on it (no floating-point error).
FUSABLE_ACTIVATIONS = frozenset({"relu", "sigmoid", "tanh"})


def fuse_activation(host, host_attrs, host_stypes, op, attrs):
    """``(host, attributes)`` applying the activation ``op(**attrs)`` to the output of
    ``host(**host_attrs)`` inside ``host`` itself, or None where it cannot: a fusion rule of
    cached graphs (``nets.ops.fusion``)."""
    if (op is not Activation or attrs["act_type"] not in FUSABLE_ACTIVATIONS
            or host not in (FullyConnected, _dot_bias) or host_attrs["act_type"] is not None):
        return None
    return host, {**host_attrs, "act_type": attrs["act_type"]}


def _check_act(act_type, name):
    """Raise unless ``act_type`` names a fusable activation (or is None)."""
    if act_type is not None and act_type not in FUSABLE_ACTIVATIONS:
        raise NetsError(f"{name}: act_type={act_type!r} is not one of "
                        f"{sorted(FUSABLE_ACTIVATIONS)} (or None)")


def _fused_act(out, act_type):
    """Numpy ``out`` (a fresh dense result) through the activation ``act_type`` (None:
    itself; checked by ``_check_act``), computed by the activation's own operator
    function."""
    if act_type is None:
        return out
    return unary._map(_activation(act_type).fn, out, {})


def _through_act(node, g):
    """Dense ``g`` times the derivative of the node's fused activation (``g`` itself when
    none), evaluated on the node's output: numpy when nothing records, operators (so
    ``create_graph`` differentiates it) otherwise. The formula is the activation's own,
    given the output for both ``x`` and ``y`` (see FUSABLE_ACTIVATIONS)."""
    act_type = node.attrs["act_type"]
    if act_type is None:
        return g
    derivative, y = _activation(act_type).derivatives[0], node.output(0)
    if RECORDER.get() is None:  # (on an output of these activations no formula can
        # overflow or divide by zero: no np.errstate needed)
        d = derivative(y.values, y.values)
        return NDArray(np.multiply(g.values, d).astype(g.dtype, copy=False), g.context)
    return g * derivative(y, y)


# -- LeakyReLU ---------------------------------------------------------------------------------

_SELU_ALPHA, _SELU_LAMBDA = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
_SQRT2, _INV_SQRT_2PI = math.sqrt(2), 1 / math.sqrt(2 * math.pi)
_erf = unary.erf.fn


def _gelu(x, slope):
    return 0.5 * x * (1 + _erf(x / _SQRT2))


_LEAKY = {  # act_type: (f(x, slope), f'(x, y, slope)), numpy functions; f(0) = 0 for each
    "leaky": (lambda x, slope: np.where(x > 0, x, slope * x),
              lambda x, y, slope: np.where(x > 0, 1, slope)),
    "elu": (lambda x, slope: np.where(x > 0, x, slope * np.expm1(np.minimum(x, 0))),
            lambda x, y, slope: np.where(x > 0, 1, y + slope)),
    "selu": (lambda x, slope: _SELU_LAMBDA * np.where(
                 x > 0, x, _SELU_ALPHA * np.expm1(np.minimum(x, 0))),
             lambda x, y, slope: np.where(x > 0, _SELU_LAMBDA, y + _SELU_LAMBDA * _SELU_ALPHA)),
    "gelu": (_gelu, lambda x, y, slope: (0.5 + 0.5 * _erf(x / _SQRT2)
                                         + x * np.exp(-0.5 * x * x) * _INV_SQRT_2PI)),
}

LeakyReLU = Op("LeakyReLU", ("data", "gamma?"),
               {"act_type": "leaky", "slope": 0.25, "lower_bound": 0.125, "upper_bound": 0.334},
               doc="""\
MXNet's LeakyReLU: ``act_type`` 'leaky' (``x > 0 ? x : slope * x``), 'elu' (``x > 0 ? x :
slope * (exp(x) - 1)``), 'selu' (``lambda * (x > 0 ? x : alpha * (exp(x) - 1))`` with
SELU's fixed alpha and lambda), 'gelu' (``0.5 * x * (1 + erf(x / sqrt(2)))``, the erf form
MXNet 1.9 uses) or 'prelu' (``x > 0 ? x : gamma * x`` with the learned ``gamma`` of shape
``(data.shape[1],)``, or ``(1,)`` for one slope, broadcast along axis 1). 'rrelu' (random
slopes) is not provided; ``lower_bound``/``upper_bound`` are accepted for MXNet's signature.

Storage: every act_type maps 0 to 0, so a sparse ``data`` keeps its storage type (only the
stored values change; MXNet falls back to dense) except 'prelu', whose sparse input falls
back with ``StorageFallbackWarning``. ``gamma`` is required by 'prelu' and ignored by the
other act_types (MXNet's other act_types take no gamma); a 'prelu' symbol left without one
gets the variable ``<name>_gamma``, of shape ``(data.shape[1],)`` by inference, which a
``Module`` decays as a ``_gamma`` parameter and initializes to ones (as MXNet).
The gradient of ``data`` has the output's storage type; ``gamma``'s is dense.""")


def _leaky(act_type):
    """``(f, f')`` of a non-prelu ``act_type``; None for 'prelu'."""
    if act_type == "prelu":
        return None
    if act_type not in _LEAKY:
        raise NetsError(f"LeakyReLU: act_type={act_type!r} is not one of "
                        f"{sorted(_LEAKY) + ['prelu']}")
    return _LEAKY[act_type]


def _prelu_gamma(gamma, ndim):
    """``gamma`` shaped to broadcast along axis 1 of an ``ndim``-d input."""
    return gamma.reshape((1, -1) + (1,) * (ndim - 2)) if gamma.size > 1 else gamma.reshape(())


@LeakyReLU.graph_inputs
def _(attrs):  # MXNet's: a prelu node's omitted gamma becomes the variable <node>_gamma
    return ("data", "gamma") if attrs["act_type"] == "prelu" else ("data",)


@LeakyReLU.shape
def _(ins, attrs):
    data, gamma = ins
    if attrs["act_type"] == "prelu" and gamma is None and data is not None:
        if len(data) < 2:
            raise ShapeError(f"LeakyReLU: act_type='prelu' needs data of 2 or more dimensions, "
                             f"got shape {data}")
        gamma = (data[1],)
    if attrs["act_type"] == "prelu" and data is not None and gamma is not None \
            and math.prod(gamma) not in (1, data[1]):
        raise ShapeError(f"LeakyReLU: gamma has shape {gamma}, it must be (1,) or "
                         f"({data[1]},) for data of shape {data}")
    return [data, gamma], [data]


@LeakyReLU.dtype
def _(dtypes, attrs):
    return np.result_type(*dtypes) if attrs["act_type"] == "prelu" else dtypes[0]


@LeakyReLU.infer
def _(data, gamma, act_type, **attrs):
    return "default" if act_type == "prelu" else data


@LeakyReLU.grad_stype
def _(data, gamma, act_type, **attrs):
    prelu = act_type == "prelu"
    return ("default" if prelu else data), ("default" if prelu and gamma is not None else None)


@LeakyReLU.impl("default", None)
@LeakyReLU.impl("csr", None)
@LeakyReLU.impl("row_sparse", None)
@LeakyReLU.impl("default", "default")
@LeakyReLU.impl("csr", "default")
@LeakyReLU.impl("row_sparse", "default")
def _(data, gamma, act_type, slope, lower_bound, upper_bound):
    fns = _leaky(act_type)
    if fns is None:  # prelu: dense data only (a sparse one falls back)
        if gamma is None:
            raise NetsError("LeakyReLU: act_type='prelu' needs the gamma input")
        if data.stype != "default":
            return NotImplemented
        x = data.values
        out = np.where(x > 0, x, _prelu_gamma(gamma.values, x.ndim) * x)
        return NDArray(out.astype(np.result_type(data.dtype, gamma.dtype), copy=False),
                       data.context)
    with np.errstate(all="ignore"):
        out = fns[0](data.values, slope).astype(data.dtype, copy=False)
    return NDArray(out, data.context) if data.stype == "default" else data.with_values(out)


def _at(x, g):
    """The values of ``x`` where the sparse ``g`` stores values (``g.values``'s layout): the
    stored values themselves when ``x`` has ``g``'s pattern, else read from ``x`` dense."""
    if x.stype == g.stype and np.array_equal(x.index_array, g.index_array) and (
            x.stype != "csr" or np.array_equal(x.indptr_array, g.indptr_array)):
        return x.values
    return as_dense(x).values[unary.positions(g)]


@LeakyReLU.vjp
def _(node, g):
    (x, gamma), attrs = node.inputs, node.attrs
    y = node.output(0)
    with np.errstate(all="ignore"):
        if attrs["act_type"] == "prelu":
            xv, gv = x.values, as_dense(g).values
            dx = gv * np.where(xv > 0, 1, _prelu_gamma(gamma.values, xv.ndim))
            axes = tuple(a for a in range(xv.ndim) if a != 1 or gamma.size == 1)
            dgamma = (gv * np.minimum(xv, 0)).sum(axis=axes).reshape(gamma.shape)
            return (NDArray(dx.astype(x.dtype, copy=False), x.context),
                    NDArray(dgamma.astype(gamma.dtype, copy=False), gamma.context))
        derivative = _leaky(attrs["act_type"])[1]
        if g.stype == "default":
            xv, yv = as_dense(x).values, as_dense(y).values
            d = derivative(xv, yv, attrs["slope"])
            return NDArray((g.values * d).astype(g.dtype, copy=False), g.context), None
        d = derivative(_at(x, g), _at(y, g), attrs["slope"])
        return g.with_values((g.values * d).astype(g.dtype, copy=False)), None


# -- softmax / log_softmax ---------------------------------------------------------------------

def _float(dtype):
    """``dtype`` if it is a float type, else float32 (integer inputs give float outputs)."""
    return dtype if dtype.kind == "f" else DEFAULT_DTYPE


def _shifted(data, op, axis, temperature):
    """``data / temperature`` minus its max along ``axis`` (so exp never overflows)."""
    if not -data.ndim <= axis < data.ndim:
        raise ShapeError(f"{op}: axis={axis} is out of range for an input of shape {data.shape}")
    x = data.values.astype(_float(data.dtype), copy=False)
    if temperature is not None:
        if not temperature > 0:
            raise NetsError(f"{op}: temperature={temperature!r} must be positive")
        x = x / np.asarray(temperature, dtype=x.dtype)
    return x - np.max(x, axis=axis, keepdims=True) if x.size else x


def _softmax_op(name, formula):
    op = Op(name, ("data",), {"axis": -1, "temperature": None, "dtype": None},
            doc=f"""``{formula}`` along ``axis`` (``x`` divided by ``temperature`` if
given), computed stably by subtracting the maximum first. ``dtype`` is the output
dtype (default: the input's). The output is dense.""")
    op.infer(lambda data, axis, temperature, dtype: "default")
    op.shape(same_shape)
    op.dtype(lambda d, a: as_dtype(a["dtype"], _float(d[0])))
    return op


softmax = _softmax_op("softmax", "exp(x) / sum(exp(x))")
log_softmax = _softmax_op("log_softmax", "x - log(sum(exp(x)))")


@softmax.impl("default")
def _(data, axis, temperature, dtype):
    e = np.exp(_shifted(data, "softmax", axis, temperature))
    out = e / np.sum(e, axis=axis, keepdims=True)
    return NDArray(out.astype(as_dtype(dtype, _float(data.dtype)), copy=False), data.context)


@log_softmax.impl("default")
def _(data, axis, temperature, dtype):
    z = _shifted(data, "log_softmax", axis, temperature)
    out = z - np.log(np.sum(np.exp(z), axis=axis, keepdims=True))
    return NDArray(out.astype(as_dtype(dtype, _float(data.dtype)), copy=False), data.context)


def _softmax_vjp(formula):
    def vjp(node, g):
        x, attrs = node.inputs[0], node.attrs
        y = node.output(0)
        kept = tuple(1 if i == attrs["axis"] % y.ndim else n for i, n in enumerate(y.shape))
        dx = formula(as_dense(g), y, lambda v: _sum_to(v, shape=kept))
        if attrs["temperature"] is not None:
            dx = dx / attrs["temperature"]
        return dx if dx.dtype == x.dtype else dx.astype(x.dtype)
    return vjp


# From the output y, with sums along `axis`: d softmax = y * (g - sum(g * y)) and
# d log_softmax = g - exp(y) * sum(g), both divided by the temperature (x is scaled by 1/t).
softmax.vjp(_softmax_vjp(lambda g, y, sum_: y * (g - sum_(g * y))))
for _op in (softmax, log_softmax):
    _op.grad_stype(lambda data, **attrs: ("default",))
log_softmax.vjp(_softmax_vjp(lambda g, y, sum_: g - unary.exp(y) * sum_(g)))


# -- Dropout -----------------------------------------------------------------------------------

_dropout = Op("_dropout", ("data", "mask?"), doc="""\
``data * mask`` (``mask`` broadcasts against ``data``), or a copy of ``data`` without a
mask. The random mask is drawn by ``Dropout``, so this op is deterministic and its
gradient is ``grad * mask``.
""")


@_dropout.infer
def _(data, mask):
    return data  # zero-preserving: a sparse input stays sparse


_dropout.shape(lambda ins, attrs: ([ins[0], ins[1]], [ins[0]]))
# g (in the output's stype, the data's) times the mask
_dropout.grad_stype(lambda data, mask: (
    data if mask is None else broadcast_mul.infer_stype(data, mask)[0], None))


@_dropout.impl("default", None)
@_dropout.impl("csr", None)
@_dropout.impl("row_sparse", None)
def _(data, mask):
    return data.copy()


@_dropout.impl("default", "default")
def _(data, mask):
    return NDArray(data.values * mask.values, data.context)


@_dropout.vjp
def _(node, g):
    """``g * mask`` (``g`` without a mask); the mask is random, not a variable: None."""
    mask = node.inputs[1]
    return (g if mask is None else multiply(g, mask)), None


def Dropout(data, p=0.5, mode="training", axes=()):
    """Inverted dropout: zero each element with probability ``p`` and scale the rest by
    ``1 / (1 - p)``, so the expected value is unchanged.

    Active while training (``autograd.record()``/``train_mode()``) or always with
    ``mode='always'``; otherwise (or with ``p=0``) it returns a copy. ``axes`` lists
    axes along which one mask value is shared (variational dropout). Random numbers
    come from ``nets.random`` (seed with ``nets.random.seed``).
    """
    if not (isinstance(p, (int, float, np.number)) and 0 <= p < 1):
        raise NetsError(f"Dropout: p={p!r} must be a number in [0, 1)")
    if mode not in ("training", "always"):
        raise NetsError(f"Dropout: mode={mode!r} must be 'training' or 'always'")
    axes = (axes,) if isinstance(axes, (int, np.integer)) else tuple(axes)
    if any(not -data.ndim <= a < data.ndim for a in axes):
        raise ShapeError(f"Dropout: axes={axes} out of range for an input of shape {data.shape}")
    if p == 0 or not (mode == "always" or TRAINING.get()):
        return _dropout(data)
    shape = tuple(1 if i in {a % data.ndim for a in axes} else d for i, d in enumerate(data.shape))
    keep = _random.generator().random(shape) >= p
    dtype = _float(data.dtype)
    return _dropout(data, NDArray(keep.astype(dtype) / dtype.type(1 - p), data.context))


# -- fused losses ------------------------------------------------------------------------------

_LOSS_SHAPE = """

``shape`` (default None: ``pred``'s) is the output's shape, of ``pred``'s size: the loss
classes pass ``(batch,)`` for ``(batch, 1)`` predictions, so that no reshape follows (one
tape node less, forward and backward). ``label`` has ``pred``'s shape or the output's."""


def _loss_op(name, attrs, doc, loss, grads):
    """An elementwise loss of dense ``pred`` and ``label`` as ONE operator: ``nets.loss``
    would otherwise pay a dispatch per composed operator, forward and backward.
    ``loss(x, y, **attrs)`` and ``grads(x, y, label, **attrs)`` (the partial derivatives
    w.r.t. ``x`` and, when ``label`` (a gradient flows to it), ``y``, else None) are numpy
    formulas over ``pred``'s shape. The vjp is computed in
    numpy, so it is not itself differentiable (no second derivative under
    ``create_graph``)."""
    op = Op(name, ("pred", "label"), {**attrs, "shape": None}, doc=doc + _LOSS_SHAPE)
    op.infer(lambda pred, label, **_: "default")
    op.grad_stype(lambda pred, label, **_: ("default", "default"))

    @op.shape
    def _(ins, attrs):  # the label has pred's shape or the output's (``shape``, when given)
        pred, label = ins
        out = attrs.get("shape")
        if out is None:
            pred = label = next((s for s in ins if s is not None), None)
            return [pred, label], [pred]
        out = tuple(out)
        return [pred, out if label is None else label], [out]

    @op.check
    def _(pred, label, shape, **kw):
        if shape is not None and math.prod(shape) != pred.size:
            raise ShapeError(f"{name}: shape={shape} does not hold the {pred.size} values of "
                             f"pred {pred.shape}")
        if label.shape != pred.shape and (shape is None or label.shape != tuple(shape)):
            raise ShapeError(f"{name}: label has shape {label.shape} but pred {pred.shape}; "
                             f"they must be equal" + ("" if shape is None else
                                                      f" (or label the output's {shape})"))

    @op.impl("default", "default")
    def _(pred, label, shape, **kw):
        out = np.asarray(loss(pred.values, label.values.reshape(pred.shape), **kw))
        return NDArray(out if shape is None else out.reshape(shape), pred.context)

    names = tuple(attrs)  # the formula's attributes (not ``shape``)

    @op.vjp
    def _(node, g):
        pred, label = node.inputs
        shape = pred.shape
        g = as_dense(g).values.reshape(shape)
        # (sparse operands reach here from the dense fallback)
        wants = node.parents  # (None: a constant, no gradient)
        d_pred, d_label = grads(as_dense(pred).values, as_dense(label).values.reshape(shape),
                                wants[1] is not None, **{k: node.attrs[k] for k in names})
        return (None if wants[0] is None else _times(g, d_pred, pred),
                None if wants[1] is None else _times(g, d_label, label))
    return op


def _times(g, d, x):
    """``g * d`` (numpy, ``x``'s size) as an array of ``x``'s shape and dtype."""
    return NDArray(np.asarray(g * d, dtype=x.dtype).reshape(x.shape), x.context)


_BCE_EPS = 1e-12  # keeps log finite at p = 0 or 1 (from_sigmoid=True), as Gluon's loss


def _bce(x, y, from_sigmoid):
    if from_sigmoid:
        return -(y * np.log(x + _BCE_EPS) + (1 - y) * np.log(1 - x + _BCE_EPS))
    return np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x)))


def _bce_grads(x, y, label, from_sigmoid):
    if from_sigmoid:
        dy = np.log(1 - x + _BCE_EPS) - np.log(x + _BCE_EPS) if label else None
        return (1 - y) / (1 - x + _BCE_EPS) - y / (x + _BCE_EPS), dy
    # sigmoid(x) - y, without overflow
    return np.exp(-np.logaddexp(0, -x)) - y, -x if label else None


_sigmoid_bce = _loss_op("_sigmoid_bce", {"from_sigmoid": False}, """\
Elementwise binary cross-entropy of ``pred`` against ``label`` (same shape, dense):
for logits ``max(x, 0) - x*y + log1p(exp(-|x|))`` (stable for any ``x``), with
``from_sigmoid=True`` (``pred`` are probabilities) ``-(y log(p + eps) + (1 - y)
log(1 - p + eps))``, ``eps = 1e-12``. The fused form of ``SigmoidBinaryCrossEntropyLoss``.
""", _bce, _bce_grads)

_l2_loss = _loss_op("_l2_loss", {}, """\
Elementwise ``0.5 * (pred - label)**2`` of a dense ``pred`` and ``label`` of the same
shape: the fused form of ``L2Loss``.
""", lambda x, y: 0.5 * np.square(x - y), lambda x, y, label: (x - y, y - x if label else None))


# Public handles of the internal operators other packages call (``nets.layers``, ``nets.loss``);
# not in ``__all__``, so ``nets.nd`` does not export them (MXNet's ``_internal`` namespace).
dot_bias, l2_loss, sigmoid_bce = _dot_bias, _l2_loss, _sigmoid_bce
