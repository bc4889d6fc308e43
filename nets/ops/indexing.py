"""Indexing operators: take, pick, one_hot, where (and ``_backward_take``, take's gradient).

Storage rules (MXNet's, plus the native sparse paths marked +):

=========================================  ==============  =================================
call                                       output          how
=========================================  ==============  =================================
take(csr, default), any axis, 1-D indices  csr             row gather (+ axis 1, via transpose)
take(rsp, default)                         default         lookup of the stored rows, absent
                                                           rows are zeros (+; the embedding
                                                           gather, never densifies the rsp)
where(csr, default, default)               default         copy y, write x at stored places
anything else with a sparse input          default         dense fallback (warns)
=========================================  ==============  =================================

Gradients (the vjp beside each op): take / pick scatter the gradient into zeros of the
input's shape (``take`` adds repeated indices; clipped or wrapped indices send their
gradient to the position they read), where routes it to ``x`` or ``y``. Indices and
conditions get none. ``take(row_sparse, indices)`` along axis 0 gives the embedding
gradient: row_sparse, holding the taken rows with repeated ones summed. Otherwise
gradients are dense, a CSR input's too (as MXNet's fallback computes them).
"""
import numpy as np

from ..base import INDEX_DTYPE, NetsError, ShapeError, as_dtype
from ..arrays.csr import row_ids
from ..arrays.row_sparse import RowSparseNDArray
from .elemwise import multiply
from .registry import REQUIRED, Op, shape_attr
from .reshaping import reshape, transpose
from .shape_helpers import _axis, _copy, _csr_rows, _csr_transpose, _dense, _unary_shape, _vjp
from .sparse_ops import _sum_by_key, zeros_like
from .unary import as_dense

__all__ = ["take", "one_hot", "where", "pick"]


def _int_indices(x, op, name="indices"):
    """The values of index array ``x`` as int64; floats must be whole numbers.

    (MXNet truncates float indices silently; a fractional index is a bug upstream.)
    """
    a = x.values
    if a.dtype.kind not in "iub":
        bad = np.flatnonzero(~np.isfinite(a) | (a != np.trunc(a)))
        if bad.size:
            raise NetsError(f"{op}: {name} must hold whole numbers, got {name}{_at(a, bad[0])}")
    return a.astype(INDEX_DTYPE, copy=False)


def _at(a, flat):
    """``"[i,j]=v"``: the position and value of flat element ``flat`` of numpy ``a``."""
    k = np.unravel_index(flat, a.shape)
    return f"[{','.join(str(int(i)) for i in k)}]={a[k].item()!r}"


# -- take -----------------------------------------------------------------------------

take = Op("take", ("a", "indices"), {"axis": 0, "mode": "clip"}, doc="""\
Entries of ``a`` at ``indices`` along ``axis``: the output shape is
``a.shape[:axis] + indices.shape + a.shape[axis+1:]``.

``mode``: ``'clip'`` clamps indices into range, ``'wrap'`` wraps them around,
``'raise'`` raises ``NetsError`` for any index outside ``[0, a.shape[axis])``
(MXNet silently wraps instead). Float indices must be whole numbers (MXNet
truncates). Storage: ``take(csr, default)`` is CSR for 1-D indices (any
``axis``); ``take(row_sparse, default)`` is dense, looked up in the stored
rows without densifying ``a`` (absent rows read as zeros: the embedding gather).
""", entrywise=False)


@take.shape
def _(ins, attrs):
    a, idx = ins
    if a is None or idx is None:
        return ins, [None]
    axis = _axis(attrs["axis"], len(a))
    return ins, [a[:axis] + idx + a[axis + 1:]]


take.dtype(lambda d, a: d[0], index={1})


@take.infer
def _(a, indices, axis, mode):
    if indices != "default":
        return "default"
    return "csr" if a == "csr" else "default"


def _take_indices(shape, indices, axis, mode):
    """(axis, in-range int64 indices) for taking from an array of ``shape``, after ``mode``."""
    axis = _axis(axis, len(shape))
    return axis, _mode_indices(_int_indices(indices, "take"), shape[axis], mode, "take",
                               f"axis {axis}")


def _mode_indices(idx, n, mode, op, where):
    """int64 ``idx`` brought into [0, n) by ``mode`` ('clip', 'wrap', or 'raise')."""
    if mode not in ("clip", "wrap", "raise"):
        raise NetsError(f"{op}: mode={mode!r} must be 'clip', 'wrap' or 'raise'")
    if n == 0 and idx.size:
        raise NetsError(f"{op}: {where} is empty; nothing to take")
    if mode == "clip":  # (in range already, the common case: no copy)
        return idx if not idx.size or 0 <= idx.min() and idx.max() < n else np.clip(idx, 0, n - 1)
    if mode == "wrap":
        return np.mod(idx, n) if idx.size else idx
    bad = np.flatnonzero((idx < 0) | (idx >= n))
    if bad.size:
        raise NetsError(f"{op}: indices{_at(idx, bad[0])} is out of range for {where} of "
                        f"size {n} (mode='raise')")
    return idx


@take.impl("csr", "default")
def _(a, indices, axis, mode):
    if indices.ndim != 1:
        raise ShapeError(f"take on a csr array needs 1-D indices, got shape {indices.shape}")
    axis, idx = _take_indices(a.shape, indices, axis, mode)
    if axis == 0:
        return _csr_rows(a, idx)
    return _csr_transpose(_csr_rows(_csr_transpose(a), idx))


@take.impl("row_sparse", "default")
def _(a, indices, axis, mode):
    axis, idx = _take_indices(a.shape, indices, axis, mode)
    if axis > 0:  # rows are unchanged: gather within the stored rows
        out = np.zeros(a.shape[:axis] + idx.shape + a.shape[axis + 1:], a.dtype)
        out[a.index_array] = np.take(a.values, idx, axis=axis)
        return _dense(a, out)
    pos = np.searchsorted(a.index_array, idx)
    found = pos < len(a.index_array)
    found[found] = a.index_array[pos[found]] == idx[found]
    out = np.zeros(idx.shape + a.shape[1:], a.dtype)
    out[found] = a.values[pos[found]]
    return _dense(a, out)


@take.impl("default", "default")
def _(a, indices, axis, mode):
    axis, idx = _take_indices(a.shape, indices, axis, mode)
    return _dense(a, np.take(a.values, idx, axis=axis))


@_vjp(take, "indices")
def _(node, g):
    a, indices = node.inputs
    return _backward_take(as_dense(g), indices, shape=a.shape,
                          axis=_axis(node.attrs["axis"], a.ndim), mode=node.attrs["mode"],
                          stype=take.infer_grad_stype(a.stype, indices.stype,
                                                      **node.attrs)[0]), None


@take.grad_stype
def _(a, indices, axis, mode):
    """Rows of a row_sparse ``a`` taken along axis 0 give it a row_sparse gradient (the
    rows taken); otherwise dense."""
    return ("row_sparse" if a == "row_sparse" and axis == 0 else "default"), None


_backward_take = Op("_backward_take", ("data", "indices"),
                    {"shape": REQUIRED, "axis": 0, "mode": "clip", "stype": "default"}, doc="""\
The adjoint of ``take``: zeros of ``shape`` with the slices of ``data`` added at
``indices`` along ``axis`` (repeated indices add up). ``stype='row_sparse'`` (``axis``
0) stores only the rows taken: the embedding gradient. ``mode=None``: the indices are
known to be whole numbers in range (an Embedding's, checked by its forward) and are not
checked again, only cast to int64.
Its own gradient is ``take``.
""")


_backward_take.shape(shape_attr)
_backward_take.dtype(lambda d, a: d[0], index={1})


@_backward_take.infer
def _(data, indices, shape, axis, mode, stype):
    return stype


@_backward_take.impl("default", "default")
def _(data, indices, shape, axis, mode, stype):
    if mode is None:  # whole numbers in range already (checked by the forward): just cast
        axis, idx = _axis(axis, len(shape)), indices.values.astype(INDEX_DTYPE, copy=False)
    else:
        axis, idx = _take_indices(shape, indices, axis, mode)
    # Sort the indices and add up the runs of equal ones (axis moved to the front).
    g = data.values.reshape(shape[:axis] + (idx.size,) + shape[axis + 1:])
    rows, sums = _sum_by_key(idx.reshape(-1), np.moveaxis(g, axis, 0) if axis else g,
                             shape[axis])
    if stype == "row_sparse":
        return RowSparseNDArray(sums, rows, shape, data.context)
    out = np.zeros(shape, data.dtype)
    np.moveaxis(out, axis, 0)[rows] = sums
    return _dense(data, out)


@_vjp(_backward_take, "indices")
def _(node, g):
    a = node.attrs
    return take(as_dense(g), node.inputs[1], axis=a["axis"], mode=a["mode"] or "clip"), None


# -- one_hot / where -------------------------------------------------------------------------

one_hot = Op("one_hot", ("indices",),
             {"depth": REQUIRED, "on_value": 1.0, "off_value": 0.0, "dtype": "float32"}, doc="""\
One-hot rows: output shape ``indices.shape + (depth,)``, ``on_value`` at each
index and ``off_value`` elsewhere; an index outside ``[0, depth)`` gives a row
of ``off_value`` (MXNet). Float indices must be whole numbers.
""")


one_hot.shape(_unary_shape(lambda s, depth, **_: s + (int(depth),)))
one_hot.dtype(lambda d, a: as_dtype(a["dtype"]), index={0})


@one_hot.impl("default")
def _(indices, depth, on_value, off_value, dtype):
    if not isinstance(depth, (int, np.integer)) or depth < 0:
        raise ShapeError(f"one_hot: depth={depth!r} must be a non-negative integer")
    idx = _int_indices(indices, "one_hot").reshape(-1)
    out = np.full((idx.size, int(depth)), off_value, dtype=as_dtype(dtype))
    valid = np.flatnonzero((idx >= 0) & (idx < depth))
    out[valid, idx[valid]] = on_value
    return _dense(indices, out.reshape(indices.shape + (int(depth),)))


one_hot.vjp(lambda node, g: None)  # indices have no gradient
one_hot.grad_stype(lambda indices, **attrs: (None,))


where = Op("where", ("condition", "x", "y"), doc="""\
Elements of ``x`` where ``condition`` is non-zero, else of ``y``.

``x`` and ``y`` have one shape; ``condition`` has that shape too, or is 1-D
of length ``x.shape[0]`` and then picks whole rows (MXNet). ``where(csr,
default, default)`` reads only the stored entries of the condition.
""")


@where.shape
def _(ins, attrs):
    value = next((s for s in ins[1:] if s is not None), None)
    return [ins[0], value, value], [value]


where.dtype(lambda d, a: np.result_type(d[1], d[2]), index={0})


def _where_check(condition, x, y):
    if x.shape != y.shape:
        raise ShapeError(f"where: x has shape {x.shape} and y has shape {y.shape}; they "
                         f"must be equal")
    if condition.shape != x.shape and not (condition.ndim == 1 and x.ndim >= 1
                                           and condition.shape[0] == x.shape[0]):
        raise ShapeError(f"where: condition has shape {condition.shape}; it must be x's shape "
                         f"{x.shape} or ({x.shape[0] if x.ndim else '?'},)")


@where.impl("csr", "default", "default")
def _(condition, x, y):
    _where_check(condition, x, y)
    out = y.values.astype(np.result_type(x.dtype, y.dtype), order="C", copy=True)
    nz = condition.values != 0
    r, c = row_ids(condition.indptr_array)[nz], condition.index_array[nz]
    out[r, c] = x.values[r, c]
    return _dense(x, out)


@where.impl("default", "default", "default")
def _(condition, x, y):
    _where_check(condition, x, y)
    cond = condition.values.reshape(condition.shape + (1,) * (x.ndim - condition.ndim))
    return _dense(x, np.where(cond != 0, x.values, y.values))


@_vjp(where, "condition")
def _(node, g):
    g = as_dense(g)
    zero = zeros_like(g)
    return None, where(node.inputs[0], g, zero), where(node.inputs[0], zero, g)


pick = Op("pick", ("data", "index"), {"axis": -1, "keepdims": False, "mode": "clip"}, doc="""\
Pick one element along ``axis`` per position: ``out[i, j] = data[i, index[i, j], j]``
for ``axis=1``. ``index`` has ``data``'s shape without ``axis`` (MXNet); ``mode``
'clip'/'wrap'/'raise' treats out-of-range indices as in ``take``. This is the
class-probability gather of a softmax cross-entropy.
""")


@pick.shape
def _(ins, attrs):
    data = ins[0]
    if data is None:
        return ins, [None]
    axis = _axis(attrs["axis"], len(data))
    kept = (1,) if attrs["keepdims"] else ()
    return ins, [data[:axis] + kept + data[axis + 1:]]


pick.dtype(lambda d, a: d[0], index={1})


def _pick_indices(shape, index, axis, mode):
    """(axis, in-range int64 indices of shape ``shape`` without ``axis``) after ``mode``."""
    axis = _axis(axis, len(shape))
    expected = shape[:axis] + shape[axis + 1:]
    if index.size != int(np.prod(expected)):
        raise ShapeError(f"pick: index has shape {index.shape}; expected {expected} (data shape "
                         f"{shape} without axis {axis})")
    return axis, _mode_indices(_int_indices(index, "pick", "index").reshape(expected),
                               shape[axis], mode, "pick", f"axis {axis}")


@pick.impl("default", "default")
def _(data, index, axis, keepdims, mode):
    axis, idx = _pick_indices(data.shape, index, axis, mode)
    out = np.take_along_axis(data.values, np.expand_dims(idx, axis), axis)
    return _dense(data, _copy(out if keepdims else np.squeeze(out, axis)))


@_vjp(pick, "index")
def _(node, g):
    data, index = node.inputs[0], as_dense(node.inputs[1])  # (a sparse index fell back)
    axis, idx = _pick_indices(data.shape, index, node.attrs["axis"], node.attrs["mode"])
    # one_hot(idx) * g puts each gradient at its picked position along a new last axis,
    # which the transpose moves to `axis`.
    hot = one_hot(_dense(index, np.asarray(idx)), depth=data.shape[axis], dtype=g.dtype)
    grad = multiply(hot, reshape(as_dense(g), shape=idx.shape + (1,)))
    last = data.ndim - 1
    return transpose(grad, axes=tuple(range(axis)) + (last,) + tuple(range(axis, last))), None
