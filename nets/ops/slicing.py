"""Slicing operators: slice, slice_axis (and ``_backward_slice``, their gradient).

Storage rules (MXNet's, plus the native sparse paths marked +):

=========================================  ==============  =================================
call                                       output          how
=========================================  ==============  =================================
slice / slice_axis (csr), any axis/step    csr             row slicing, vectorised column
                                                           filter (+ steps other than 1)
anything else with a sparse input          default         dense fallback (warns)
=========================================  ==============  =================================

Gradients (the vjp beside each op): slice / slice_axis scatter the gradient into zeros of
the input's shape (dense, for a CSR input too).
"""
import builtins

import numpy as np

from ..base import INDEX_DTYPE, ShapeError
from ..arrays.csr import CSRNDArray, row_ids
from .registry import REQUIRED, Op, shape_attr
from .shape_helpers import _axis, _copy, _csr_rows, _dense, _tuple, _unary_shape, _vjp
from .unary import as_dense

__all__ = ["slice", "slice_axis", "crop"]


def _csr_slice(x, rows, cols):
    """``x[rows, cols]`` for Python slices, as a new CSR (never densifies)."""
    r0, r1, rs = rows.indices(x.shape[0])
    out = x[r0:r1] if rs == 1 else _csr_rows(x, np.arange(r0, r1, rs, dtype=INDEX_DTYPE))
    c0, c1, cs = cols.indices(x.shape[1])
    if (c0, c1, cs) == (0, x.shape[1], 1):
        return out.copy() if rs == 1 else out
    c = out.index_array
    if cs > 0:
        keep = (c >= c0) & (c < c1) & ((c - c0) % cs == 0)
    else:
        keep = (c <= c0) & (c > c1) & ((c0 - c) % -cs == 0)
    new_cols = (c[keep] - c0) // cs
    kept = np.concatenate(([0], np.cumsum(keep, dtype=INDEX_DTYPE)))
    indptr = kept[out.indptr_array]  # kept entries before each row start
    data = out.values[keep]
    if cs < 0 and data.size:
        # A negative step leaves each row's columns descending: reverse every row
        # segment (position p of row r <-> indptr[r] + indptr[r+1] - 1 - p).
        r = row_ids(indptr)
        src = indptr[r] + indptr[r + 1] - 1 - np.arange(data.size)
        data, new_cols = data[src], new_cols[src]
    n_cols = len(range(c0, c1, cs))
    return CSRNDArray(data, new_cols, indptr, (out.shape[0], n_cols), x.context)


def _sliced(shape, key):
    return tuple(len(range(*k.indices(d))) for k, d in zip(key, shape))


def _slice_key(shape, begin, end, step):
    begin, end = _tuple(begin, "begin"), _tuple(end, "end")
    step = () if step is None else _tuple(step, "step")
    if len(begin) != len(end) or step and len(step) != len(begin):
        raise ShapeError(f"slice: begin={begin}, end={end}, step={step} must have equal "
                         f"lengths (step may be empty)")
    if len(begin) > len(shape):
        raise ShapeError(f"slice: begin={begin} has more entries than the {len(shape)} "
                         f"dimensions of shape {shape}")
    step = step or (None,) * len(begin)
    if 0 in step:
        raise ShapeError(f"slice: step={step} must not contain 0")
    key = tuple(builtins.slice(b, e, s) for b, e, s in zip(begin, end, step))
    return key + (builtins.slice(None),) * (len(shape) - len(key))


slice = Op("slice", ("data",), {"begin": REQUIRED, "end": REQUIRED, "step": None}, doc="""\
``data[begin[0]:end[0]:step[0], ...]`` (a copy), with MXNet's tuple arguments.

``begin``, ``end`` and ``step`` have one entry per leading axis (None entries
take the default of Python slicing; axes not named are kept whole); negative
values count from the end, and out-of-range bounds are clipped as in Python.
``slice(csr)`` is CSR for every step (MXNet falls back for steps other than 1).
""")


slice.shape(_unary_shape(lambda s, begin, end, step: _sliced(s, _slice_key(s, begin, end,
                                                                             step))))


@slice.infer
def _(data, begin, end, step):
    return "csr" if data == "csr" else "default"


@slice.impl("csr")
def _(data, begin, end, step):
    return _csr_slice(data, *_slice_key(data.shape, begin, end, step))


@slice.impl("default")
def _(data, begin, end, step):
    return _dense(data, _copy(data.values[_slice_key(data.shape, begin, end, step)]))


@_vjp(slice)
def _(node, g):
    return _backward_slice(as_dense(g), shape=node.inputs[0].shape, **node.attrs)


_backward_slice = Op("_backward_slice", ("data",),
                     {"shape": REQUIRED, "begin": REQUIRED, "end": REQUIRED, "step": None},
                     doc="""\
The adjoint of ``slice``: zeros of ``shape`` with ``data`` written at the slice (the
gradient of ``slice`` and ``slice_axis``; its own gradient is ``slice``).
""")


_backward_slice.shape(shape_attr)


@_backward_slice.impl("default")
def _(data, shape, begin, end, step):
    out = np.zeros(shape, data.dtype)
    out[_slice_key(shape, begin, end, step)] = data.values
    return _dense(data, out)


@_vjp(_backward_slice)
def _(node, g):
    a = node.attrs
    return slice(as_dense(g), begin=a["begin"], end=a["end"], step=a["step"])


slice_axis = Op("slice_axis", ("data",), {"axis": REQUIRED, "begin": REQUIRED, "end": REQUIRED},
                doc="""\
``data`` restricted to ``begin:end`` along ``axis`` (``end=None``: to the end;
negative values count from the end). ``slice_axis(csr)`` is CSR.
""")


def _axis_key(shape, axis, begin, end):
    axis = _axis(axis, len(shape))
    return (builtins.slice(None),) * axis + (builtins.slice(begin, end),) + \
        (builtins.slice(None),) * (len(shape) - axis - 1)


slice_axis.shape(_unary_shape(lambda s, axis, begin, end: _sliced(
    s, _axis_key(s, axis, begin, end))))


@slice_axis.infer
def _(data, axis, begin, end):
    return "csr" if data == "csr" else "default"


@slice_axis.impl("csr")
def _(data, axis, begin, end):
    return _csr_slice(data, *_axis_key(data.shape, axis, begin, end))


@slice_axis.impl("default")
def _(data, axis, begin, end):
    return _dense(data, _copy(data.values[_axis_key(data.shape, axis, begin, end)]))


@_vjp(slice_axis)
def _(node, g):
    shape, a = node.inputs[0].shape, node.attrs
    lead = (None,) * _axis(a["axis"], len(shape))
    return _backward_slice(as_dense(g), shape=shape, begin=lead + (a["begin"],),
                           end=lead + (a["end"],), step=None)


crop = slice  # MXNet's alias of ``slice`` (``nd.crop(x, begin, end)``)
