"""Ordering operators: ``sort``, ``argsort`` and ``topk`` (MXNet's ``ordering_op``).

Orders are stable: equal values keep their positions' order (the lower index first),
ascending or descending, so results do not depend on the sorting algorithm (MXNet's CPU
``std::sort`` leaves the order of ties unspecified). Indices are returned as floats of
``dtype`` (float32 by default), as in MXNet. Dense only: a sparse input falls back (warns).

Gradients: ``sort`` and ``topk`` returning values pass each value's gradient back to the
position it came from (zeros elsewhere); indices and masks are piecewise constant in the
data, so ``argsort`` and ``topk(ret_typ='indices'|'mask')`` pass back a zero gradient.
"""
import numpy as np

from ..base import NetsError, ShapeError, as_dtype
from ..arrays.dense import NDArray
from .registry import Op

__all__ = ["sort", "argsort", "topk"]

RET_TYPES = ("value", "indices", "mask", "both")


def _axis(shape, axis):
    """``axis`` normalised, or None (the flattened array)."""
    if axis is None:
        return None
    if not isinstance(axis, (int, np.integer)) or not -len(shape) <= axis < len(shape):
        raise ShapeError(f"axis={axis!r} must be None or an int in [{-len(shape)}, "
                         f"{len(shape)}) for an array of shape {tuple(shape)}")
    return int(axis) % len(shape)


def _order(x, axis, is_ascend):
    """Stable ``argsort`` of numpy ``x`` along ``axis`` (ties: lower index first, also
    when descending)."""
    if is_ascend:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]  # descending: a stable ascending sort of the reversed axis, reversed
    return n - 1 - np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)


def _topk_plan(shape, axis, k, ret_typ):
    """``(axis, k)`` checked; axis None flattens."""
    if ret_typ not in RET_TYPES:
        raise NetsError(f"topk: ret_typ={ret_typ!r} must be one of {RET_TYPES}")
    ax = _axis(shape, axis)
    n = int(np.prod(shape)) if ax is None else shape[ax]
    if not isinstance(k, (int, np.integer)):
        raise NetsError(f"topk: k={k!r} must be an int")
    k = n if k < 1 else int(k)  # k < 1: every element (a full sort), as MXNet
    if k > n:
        raise ShapeError(f"topk: k={k} is larger than the {n} elements along axis={axis!r} "
                         f"of shape {tuple(shape)}")
    return ax, k


def _topk_shape(shape, axis, k, ret_typ):
    ax, k = _topk_plan(shape, axis, k, ret_typ)
    if ret_typ == "mask":
        return tuple(shape)
    return (k,) if ax is None else tuple(shape[:ax]) + (k,) + tuple(shape[ax + 1:])


def _flat(x, axis):
    """numpy ``x`` and the axis to order along (the flattened array when ``axis`` is None)."""
    ax = _axis(x.shape, axis)
    return (x.reshape(-1), 0) if ax is None else (x, ax)


def _top(x, axis, k, ret_typ, is_ascend):
    """``(flat x, the axis ordered along, the top-k positions along it)``."""
    ax, k = _topk_plan(x.shape, axis, k, ret_typ)
    flat, fax = _flat(x, axis)
    return flat, fax, np.take(_order(flat, fax, is_ascend), np.arange(k), axis=fax)


def _values_vjp(node, g, k, is_ascend):
    """The gradient of the top-``k`` values (a sort: every value): ``g`` back at the
    positions they were taken from, zeros elsewhere."""
    x = node.inputs[0]
    values = x.values if x.stype == "default" else x.asnumpy()  # (a sparse input fell back)
    flat, fax, pos = _top(values, node.attrs["axis"], k, "value", is_ascend)
    out = np.zeros(flat.shape, g.dtype)
    np.put_along_axis(out, pos, g.asnumpy(), axis=fax)
    return NDArray(out.reshape(x.shape), x.context)


# -- sort / argsort -----------------------------------------------------------------------------

sort = Op("sort", ("data",), {"axis": -1, "is_ascend": True}, doc="""\
``data``'s values sorted along ``axis`` (None: the flattened array), ascending unless
``is_ascend=False``. The gradient goes back to each value's position.
""")
sort.shape(lambda ins, attrs: (ins, [None if ins[0] is None else
                                     _topk_shape(ins[0], attrs["axis"], 0, "value")]))
sort.vjp(lambda node, g: _values_vjp(node, g, 0, node.attrs["is_ascend"]))


@sort.impl("default")
def _(data, axis, is_ascend):
    flat, fax, pos = _top(data.values, axis, 0, "value", is_ascend)
    return NDArray(np.take_along_axis(flat, pos, fax), data.context)


argsort = Op("argsort", ("data",), {"axis": -1, "is_ascend": True, "dtype": "float32"}, doc="""\
The positions that sort ``data`` along ``axis`` (None: of the flattened array), as
floats of ``dtype`` (float32, as MXNet). The gradient is zero.
""")
argsort.shape(sort._shape_fn)
argsort.dtype(lambda d, a: as_dtype(a["dtype"]))
argsort.grad_stype(lambda data, axis, is_ascend, dtype: (None,))
argsort.vjp(lambda node, g: None)


@argsort.impl("default")
def _(data, axis, is_ascend, dtype):
    _, _, pos = _top(data.values, axis, 0, "indices", is_ascend)
    return NDArray(pos.astype(as_dtype(dtype)), data.context)


# -- topk ---------------------------------------------------------------------------------------

topk = Op("topk", ("data",), {"axis": -1, "k": 1, "ret_typ": "indices", "is_ascend": False,
                              "dtype": "float32"}, doc="""\
The ``k`` largest (``is_ascend=True``: smallest) elements along ``axis`` (None: of the
flattened array), in order; ``k < 1`` takes every element. ``ret_typ``: ``'indices'``
(positions as floats of ``dtype``), ``'value'``, ``'both'`` (``[values, indices]``) or
``'mask'`` (``data``'s shape, 1 where an element is among the top ``k``). Values pass their
gradient back to their positions; indices and masks have a zero gradient.
""")


@topk.infer
def _(data, axis, k, ret_typ, is_ascend, dtype):
    return ("default", "default") if ret_typ == "both" else "default"


@topk.shape
def _(ins, attrs):
    s = ins[0]
    n = 2 if attrs["ret_typ"] == "both" else 1
    if s is None:
        return ins, [None] * n
    return ins, [_topk_shape(s, attrs["axis"], attrs["k"], attrs["ret_typ"])] * n


topk.dtype(lambda d, a: {"value": d[0], "mask": d[0], "indices": as_dtype(a["dtype"]),
                         "both": (d[0], as_dtype(a["dtype"]))}[a["ret_typ"]])
topk.grad_stype(lambda data, axis, k, ret_typ, is_ascend, dtype:
                ("default" if ret_typ in ("value", "both") else None,))


@topk.impl("default")
def _(data, axis, k, ret_typ, is_ascend, dtype):
    x = data.values
    flat, fax, pos = _top(x, axis, k, ret_typ, is_ascend)
    if ret_typ == "mask":
        mask = np.zeros(flat.shape, x.dtype)
        np.put_along_axis(mask, pos, 1, axis=fax)
        return NDArray(mask.reshape(x.shape), data.context)
    values = NDArray(np.take_along_axis(flat, pos, fax), data.context)
    indices = NDArray(pos.astype(as_dtype(dtype)), data.context)
    return {"value": values, "indices": indices, "both": (values, indices)}[ret_typ]


@topk.vjp
def _(node, *grads):
    a = node.attrs
    if a["ret_typ"] not in ("value", "both"):
        return None
    return _values_vjp(node, grads[0], a["k"], a["is_ascend"])
