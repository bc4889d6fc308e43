"""Joining operators: concat, stack, split.

Storage rules (MXNet's, plus the native sparse paths marked +):

=========================================  ==============  =================================
call                                       output          how
=========================================  ==============  =================================
concat(csr, ..., csr), dim 0 or 1          csr             stacked indptr / merged rows (+ 1)
concat(rsp, ..., rsp), any dim             row_sparse      offset indices / row union (+)
anything else with a sparse input          default         dense fallback (warns)
=========================================  ==============  =================================

Gradients (the vjp beside each op): concat slices, stack unstacks, split concatenates
(stacks with ``squeeze_axis``). A row_sparse gradient stays row_sparse where the op maps
rows to rows (concat, split); otherwise gradients are dense (a CSR input's too).
"""
import builtins

import numpy as np

from ..base import INDEX_DTYPE, ShapeError
from ..arrays.csr import CSRNDArray, row_ids
from ..arrays.row_sparse import RowSparseNDArray
from .registry import REQUIRED, Op
from .shape_helpers import _axis, _copy, _dense, _vjp
from .slicing import slice_axis
from .unary import as_dense

__all__ = ["concat", "Concat", "stack", "split"]


concat = Op("concat", ("*data",), {"dim": 1}, doc="""\
Join arrays along axis ``dim`` (all other dimensions must match).

Storage: all CSR with ``dim`` 0 or 1 -> CSR; all row_sparse -> row_sparse (any
``dim``); anything else -> default (a mix of storage types falls back).
""")


@concat.shape
def _(ins, attrs):
    if None in ins:
        return ins, [None]
    dim = _axis(attrs["dim"], len(ins[0]), "dim")
    out = list(ins[0])
    out[dim] = sum(s[dim] for s in ins)
    return ins, [tuple(out)]


@concat.infer
def _(*data, dim):
    if not data:
        raise ShapeError("concat needs at least one input array")
    if all(s == "csr" for s in data):
        return "csr"
    return "row_sparse" if all(s == "row_sparse" for s in data) else "default"


def _concat_check(data, dim):
    """``dim`` normalised, after checking the shapes agree off ``dim``; returns (dim, out shape)."""
    first = data[0].shape
    dim = _axis(dim, len(first), "dim")
    for k, x in enumerate(data):
        if len(x.shape) != len(first) or any(a != b for j, (a, b) in
                                             enumerate(zip(x.shape, first)) if j != dim):
            raise ShapeError(f"concat: data[{k}] has shape {x.shape}, data[0] has {first}; "
                             f"they must match except along dim={dim}")
    out = list(first)
    out[dim] = sum(x.shape[dim] for x in data)
    return dim, tuple(out)


@concat.impl("csr", ...)
def _(*data, dim):
    dim, shape = _concat_check(data, dim)
    values = np.concatenate([x.values for x in data])
    if dim == 0:
        offsets = np.cumsum([0] + [x.nnz for x in data[:-1]])
        indptr = np.concatenate([[0]] + [x.indptr_array[1:] + o for x, o in zip(data, offsets)])
        return CSRNDArray(values, np.concatenate([x.index_array for x in data]),
                          indptr.astype(INDEX_DTYPE), shape, data[0].context)
    # dim 1: gather every entry with its row and shifted column, then order by row;
    # a stable sort keeps the inputs' order within a row, so columns stay sorted.
    offsets = np.cumsum([0] + [x.shape[1] for x in data[:-1]])
    cols = np.concatenate([x.index_array + o for x, o in zip(data, offsets)])
    order = np.argsort(np.concatenate([row_ids(x.indptr_array) for x in data]), kind="stable")
    indptr = np.sum([x.indptr_array for x in data], axis=0, dtype=INDEX_DTYPE)
    return CSRNDArray(values[order], cols[order], indptr, shape, data[0].context)


@concat.impl("row_sparse", ...)
def _(*data, dim):
    dim, shape = _concat_check(data, dim)
    if dim == 0:
        offsets = np.cumsum([0] + [x.shape[0] for x in data[:-1]])
        return RowSparseNDArray(np.concatenate([x.values for x in data]),
                                np.concatenate([x.index_array + o for x, o in zip(data, offsets)]),
                                shape, data[0].context)
    # dim >= 1: the output stores the union of the inputs' rows; each input fills its block.
    rows = np.unique(np.concatenate([x.index_array for x in data]))
    out = np.zeros((len(rows),) + shape[1:], np.result_type(*[x.dtype for x in data]))
    start = 0
    for x in data:
        block = (np.searchsorted(rows, x.index_array),) + (builtins.slice(None),) * (dim - 1)
        out[block + (builtins.slice(start, start + x.shape[dim]),)] = x.values
        start += x.shape[dim]
    return RowSparseNDArray(out, rows.astype(INDEX_DTYPE), shape, data[0].context)


@concat.impl("default", ...)
def _(*data, dim):
    dim, _ = _concat_check(data, dim)
    return _dense(data[0], np.concatenate([x.values for x in data], axis=dim))


def _rsp_slice_axis(x, axis, begin, end):
    """``slice_axis`` of a row_sparse ``x`` as row_sparse (``0 <= begin <= end``)."""
    shape = x.shape[:axis] + (end - begin,) + x.shape[axis + 1:]
    if axis == 0:
        keep = (x.index_array >= begin) & (x.index_array < end)
        return RowSparseNDArray(x.values[keep], x.index_array[keep] - begin, shape, x.context)
    key = (builtins.slice(None),) * axis + (builtins.slice(begin, end),)
    return RowSparseNDArray(_copy(x.values[key]), x.index_array.copy(), shape, x.context)


@_vjp(concat, keeps_rows=True)
def _(node, g):
    dim = _axis(node.attrs["dim"], g.ndim, "dim")
    piece = _rsp_slice_axis if g.stype == "row_sparse" else slice_axis
    g = g if g.stype == "row_sparse" else as_dense(g)
    cuts = np.cumsum([0] + [x.shape[dim] for x in node.inputs]).tolist()
    return tuple(piece(g, axis=dim, begin=b, end=e) for b, e in zip(cuts[:-1], cuts[1:]))


Concat = concat  # MXNet's deprecated capitalised name

stack = Op("stack", ("*data",), {"axis": 0}, doc="""\
Join arrays of one shape along a new axis ``axis``. Sparse inputs fall back.
""")


@stack.shape
def _(ins, attrs):
    s = next((s for s in ins if s is not None), None)
    if s is None:
        return ins, [None]
    axis = _axis(attrs["axis"], len(s), extra=1)
    return [s] * len(ins), [s[:axis] + (len(ins),) + s[axis:]]


@stack.infer
def _(*data, axis):
    if not data:
        raise ShapeError("stack needs at least one input array")
    return "default"


@stack.impl("default", ...)
def _(*data, axis):
    for k, x in enumerate(data):
        if x.shape != data[0].shape:
            raise ShapeError(f"stack: data[{k}] has shape {x.shape}, data[0] has "
                             f"{data[0].shape}; all must be equal")
    axis = _axis(axis, data[0].ndim, extra=1)
    return _dense(data[0], np.stack([x.values for x in data], axis=axis))


@_vjp(stack)
def _(node, g):
    parts = split(as_dense(g), num_outputs=len(node.inputs), axis=node.attrs["axis"],
                  squeeze_axis=True)
    return parts if isinstance(parts, list) else (parts,)


split = Op("split", ("data",), {"num_outputs": REQUIRED, "axis": 1, "squeeze_axis": False},
           doc="""\
Split ``data`` into ``num_outputs`` equal parts along ``axis`` (a list; one
array when ``num_outputs`` is 1, as MXNet). ``squeeze_axis=True`` drops the
split axis, which needs parts of size 1. Sparse inputs fall back.
""")


def _num_outputs(n):
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ShapeError(f"split: num_outputs={n!r} must be a positive integer")
    return int(n)


@split.shape
def _(ins, attrs):
    s, n = ins[0], int(attrs["num_outputs"])
    if s is None:
        return ins, [None] * n
    axis = _axis(attrs["axis"], len(s))
    part = () if attrs["squeeze_axis"] else (s[axis] // n,)
    return ins, [s[:axis] + part + s[axis + 1:]] * n


@split.infer
def _(data, num_outputs, axis, squeeze_axis):
    return ("default",) * _num_outputs(num_outputs)


@split.impl("default")
def _(data, num_outputs, axis, squeeze_axis):
    n, axis = _num_outputs(num_outputs), _axis(axis, data.ndim)
    size = data.shape[axis]
    if size % n:
        raise ShapeError(f"split: num_outputs={n} does not divide axis {axis} of shape "
                         f"{data.shape}")
    if squeeze_axis and size != n:
        raise ShapeError(f"split: squeeze_axis=True needs num_outputs == shape[axis], got "
                         f"num_outputs={n} and shape {data.shape} (axis={axis})")
    parts = np.split(data.values, n, axis=axis)
    return [_dense(data, _copy(np.squeeze(p, axis) if squeeze_axis else p)) for p in parts]


@_vjp(split)
def _(node, *grads):
    axis = node.attrs["axis"]
    if node.attrs["squeeze_axis"]:
        return stack(*map(as_dense, grads), axis=axis)
    if not all(g.stype == "row_sparse" for g in grads):  # all row_sparse: a row_sparse concat
        grads = map(as_dense, grads)
    return concat(*grads, dim=axis)
