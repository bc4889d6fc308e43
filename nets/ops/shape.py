"""Shape operators: reshape, transpose, concat/stack/split, slicing, take, broadcast, where.

Every operator returns a new array (MXNet's operators do), never a view of its input.

Storage rules (MXNet's, plus the native sparse paths marked +):

=========================================  ==============  =================================
call                                       output          how
=========================================  ==============  =================================
slice / slice_axis (csr), any axis/step    csr             row slicing, vectorised column
                                                           filter (+ steps other than 1)
concat(csr, ..., csr), dim 0 or 1          csr             stacked indptr / merged rows (+ 1)
concat(rsp, ..., rsp), any dim             row_sparse      offset indices / row union (+)
transpose(csr)                             csr             scipy's linear-time transpose
flatten(csr) / flatten(rsp)                same stype      copy / reshape of stored rows (+)
take(csr, default), any axis, 1-D indices  csr             row gather (+ axis 1, via transpose)
take(rsp, default)                         default         lookup of the stored rows, absent
                                                           rows are zeros (+; the embedding
                                                           gather, never densifies the rsp)
where(csr, default, default)               default         copy y, write x at stored places
anything else with a sparse input          default         dense fallback (warns)
=========================================  ==============  =================================

Gradients (the vjp beside each op): reshape / flatten / expand_dims reshape back,
transpose applies the inverse permutation, concat slices, stack unstacks, split
concatenates (stacks with ``squeeze_axis``), slice / slice_axis / take / pick scatter
the gradient into zeros of the input's shape (``take`` adds repeated indices; clipped
or wrapped indices send their gradient to the position they read), broadcast_to sums
over the broadcast axes, where routes it to ``x`` or ``y``. Indices, conditions and
CSR inputs get none (a CSR array is data - a batch - never a parameter, as in MXNet).
A row_sparse gradient stays row_sparse where the op maps rows to rows (concat, split,
flatten); ``take(row_sparse, indices)`` along axis 0 gives the embedding gradient: row_sparse,
holding the taken rows with repeated ones summed. Otherwise gradients are dense.
"""
import builtins
import math

import numpy as np

from ..base import INDEX_DTYPE, NetsError, ShapeError, as_dtype
from ..arrays.csr import CSRNDArray, row_ids
from ..arrays.dense import NDArray
from ..arrays.row_sparse import RowSparseNDArray
from .elemwise import _sum_to, multiply
from .registry import REQUIRED, RECORDER, Op, shape_attr
from .sparse_ops import _sum_by_key, zeros_like
from .unary import as_dense

__all__ = ["reshape", "Reshape", "transpose", "concat", "Concat", "stack", "split", "slice",
           "slice_axis", "take", "expand_dims", "broadcast_to", "flatten", "Flatten", "one_hot",
           "where", "pick"]


# -- helpers ------------------------------------------------------------------------------

def _axis(axis, ndim, name="axis", extra=0):
    """``axis`` normalised to [0, ndim + extra) (``extra=1`` for a new axis)."""
    n = ndim + extra
    if not isinstance(axis, (int, np.integer)) or not -n <= axis < n:
        raise ShapeError(f"{name}={axis!r} is out of range for an array with {ndim} dimensions")
    return int(axis) % n


def _dense(x, a):
    return NDArray(a, x.context)


def _copy(a):
    """A C-contiguous copy of numpy ``a`` (ops never return views of their input)."""
    return np.array(a, order="C", copy=True)


def _vjp(op, *constant, keeps_rows=False):
    """Register ``fn(node, *out_grads) -> one gradient per input`` as ``op``'s vjp.

    Inputs named in ``constant`` (indices, conditions) and CSR inputs (data, never
    parameters) get None, and ``fn`` is not called when no other input is left; the
    others' gradients are dense, or row_sparse where the output is and ``keeps_rows``
    (``fn`` passes a row_sparse ``g``'s rows back): the declared ``grad_stype``, unless
    ``op`` declares its own after this.
    """
    @op.grad_stype
    def _(*stypes, **attrs):
        names = op.inputs * len(stypes) if op.variadic else op.inputs
        rows = keeps_rows and op.infer_stype(*stypes, **attrs)[0] == "row_sparse"
        return tuple(None if s in (None, "csr") or n in constant else
                     "row_sparse" if rows else "default" for s, n in zip(stypes, names))

    def register(fn):
        @op.vjp
        def vjp(node, *out_grads):
            names = op.inputs * len(node.inputs) if op.variadic else op.inputs
            live = [x is not None and x.stype != "csr" and n not in constant
                    for x, n in zip(node.inputs, names)]
            if not any(live):
                return (None,) * len(live)
            grads = fn(node, *out_grads)
            grads = tuple(grads) if isinstance(grads, (tuple, list)) else (grads,)
            return tuple(g if ok else None for g, ok in zip(grads, live))
        return vjp
    return register


def _int_indices(x, op, name="indices"):
    """The values of index array ``x`` as int64; floats must be whole numbers.

    (MXNet truncates float indices silently; a fractional index is a bug upstream.)
    """
    a = x._np
    if a.dtype.kind not in "iub":
        bad = np.flatnonzero(~np.isfinite(a) | (a != np.trunc(a)))
        if bad.size:
            raise NetsError(f"{op}: {name} must hold whole numbers, got {name}{_at(a, bad[0])}")
    return a.astype(INDEX_DTYPE, copy=False)


def _at(a, flat):
    """``"[i,j]=v"``: the position and value of flat element ``flat`` of numpy ``a``."""
    k = np.unravel_index(flat, a.shape)
    return f"[{','.join(str(int(i)) for i in k)}]={a[k].item()!r}"


def _csr_rows(x, rows):
    """Rows ``rows`` (int64 in range, any order, repeats allowed) of CSR ``x``, as a new CSR."""
    starts = x._indptr[rows]
    counts = x._indptr[rows + 1] - starts
    indptr = np.zeros(len(rows) + 1, INDEX_DTYPE)
    np.cumsum(counts, out=indptr[1:])
    pos = np.repeat(starts - indptr[:-1], counts) + np.arange(indptr[-1], dtype=INDEX_DTYPE)
    return CSRNDArray(x._data[pos], x._indices[pos], indptr, (len(rows), x.shape[1]), x.context)


def _csr_transpose(x):
    # scipy's csr->csc is a linear counting sort: columns come out sorted within each row.
    t = x.asscipy().T.tocsr()
    return CSRNDArray(t.data, t.indices.astype(INDEX_DTYPE), t.indptr.astype(INDEX_DTYPE),
                      t.shape, x.context)


def _csr_slice(x, rows, cols):
    """``x[rows, cols]`` for Python slices, as a new CSR (never densifies)."""
    r0, r1, rs = rows.indices(x.shape[0])
    out = x[r0:r1] if rs == 1 else _csr_rows(x, np.arange(r0, r1, rs, dtype=INDEX_DTYPE))
    c0, c1, cs = cols.indices(x.shape[1])
    if (c0, c1, cs) == (0, x.shape[1], 1):
        return out.copy() if rs == 1 else out
    c = out._indices
    if cs > 0:
        keep = (c >= c0) & (c < c1) & ((c - c0) % cs == 0)
    else:
        keep = (c <= c0) & (c > c1) & ((c0 - c) % -cs == 0)
    new_cols = (c[keep] - c0) // cs
    kept = np.concatenate(([0], np.cumsum(keep, dtype=INDEX_DTYPE)))
    indptr = kept[out._indptr]  # kept entries before each row start
    data = out._data[keep]
    if cs < 0 and data.size:
        # A negative step leaves each row's columns descending: reverse every row
        # segment (position p of row r <-> indptr[r] + indptr[r+1] - 1 - p).
        r = row_ids(indptr)
        src = indptr[r] + indptr[r + 1] - 1 - np.arange(data.size)
        data, new_cols = data[src], new_cols[src]
    n_cols = len(range(c0, c1, cs))
    return CSRNDArray(data, new_cols, indptr, (out.shape[0], n_cols), x.context)


def _unary_shape(fn):
    """A shape rule for a one-input operator whose output shape is ``fn(shape, **attrs)``."""
    def rule(ins, attrs):
        return ins, [None if ins[0] is None else tuple(fn(ins[0], **attrs))]
    return rule


def _sliced(shape, key):
    return tuple(len(range(*k.indices(d))) for k, d in zip(key, shape))


# -- reshape ---------------------------------------------------------------------------

def _reshape_target(spec, src, reverse):
    """MXNet's reshape shape inference (codes 0, -1, -2, -3, -4), checked."""
    if type(spec) is tuple and all(type(d) is int and (d > 0 or d == -1) for d in spec):
        # plain dimensions, at most one -1 (the common calls): no codes to parse
        known, size, infer = math.prod(spec), math.prod(src), spec.count(-1)
        if not infer and known == size:
            return spec
        if infer == 1 and size % known == 0:
            return tuple(size // -known if d == -1 else d for d in spec)
    try:
        spec_t = tuple(int(d) for d in ((spec,) if isinstance(spec, (int, np.integer)) else spec))
    except (TypeError, ValueError) as e:
        raise ShapeError(f"reshape: shape={spec!r} is not a tuple of ints") from e
    codes, dims = list(spec_t), list(src)
    if reverse:
        codes.reverse()
        dims.reverse()

    def fail(why):
        return ShapeError(f"reshape: cannot reshape an array of shape {tuple(src)} to "
                          f"shape={spec_t} (reverse={reverse}): {why}")

    def need(k, n, code):
        if k + n > len(dims):
            raise fail(f"code {code} has no input dimension left to use")

    out, k, infer_at, i = [], 0, None, 0
    while i < len(codes):
        d = codes[i]
        if d == 0:
            need(k, 1, d)
            out.append(dims[k])
            k += 1
        elif d == -1:
            if infer_at is not None:
                raise fail("at most one dimension can be -1")
            infer_at = len(out)
            out.append(1)
            k += 1
        elif d == -2:
            out.extend(dims[k:])
            k = len(dims)
        elif d == -3:
            need(k, 2, d)
            out.append(dims[k] * dims[k + 1])
            k += 2
        elif d == -4:
            if i + 2 >= len(codes):
                raise fail("-4 must be followed by two dimensions")
            need(k, 1, d)
            d0, d1, d2 = dims[k], codes[i + 1], codes[i + 2]
            if d1 == -1 and d2 == -1 or d1 < -1 or d2 < -1 or 0 in (d1, d2):
                raise fail(f"-4 splits into ({d1}, {d2}); at most one may be -1, none 0")
            d1 = d0 // d2 if d1 == -1 else d1
            d2 = d0 // d1 if d2 == -1 else d2
            if d1 * d2 != d0:
                raise fail(f"-4 split ({d1}, {d2}) does not multiply to dimension {d0}")
            out += [d1, d2]
            k += 1
            i += 2
        elif d > 0:
            out.append(d)
            k += 1
        else:
            raise fail(f"{d} is not a dimension or a special code (0, -1, -2, -3, -4)")
        i += 1
    size = int(np.prod(src, dtype=np.int64))
    if infer_at is not None:
        known = int(np.prod(out, dtype=np.int64))
        if known == 0 or size % known:
            raise fail(f"the -1 dimension cannot be inferred (size {size}, other dims {known})")
        out[infer_at] = size // known
    if reverse:
        out.reverse()
    if int(np.prod(out, dtype=np.int64)) != size:
        raise fail(f"target shape {tuple(out)} has a different size than {size}")
    return tuple(out)


reshape = Op("reshape", ("data",), {"shape": REQUIRED, "reverse": False}, doc="""\
A copy of ``data`` with a new ``shape`` of the same size (MXNet's ``reshape``).

Special codes in ``shape``: ``0`` copies the input dimension at that position,
``-1`` infers one dimension from the size, ``-2`` copies all remaining input
dimensions, ``-3`` merges two consecutive input dimensions, ``-4, a, b`` splits
one input dimension into ``(a, b)`` (one of them may be -1). ``reverse=True``
matches the codes right to left: ``(10, 5, 4)`` with ``shape=(-1, 0)`` gives
``(40, 5)``, with ``reverse=True`` ``(50, 4)``. Sparse inputs fall back.
""")


reshape.shape(_unary_shape(lambda s, shape, reverse: _reshape_target(shape, s, reverse)))


@reshape.impl("default")
def _(data, shape, reverse):
    return _dense(data, _copy(data._np).reshape(_reshape_target(shape, data.shape, reverse)))


@_vjp(reshape)
def _(node, g):
    g, shape = as_dense(g), node.inputs[0].shape
    if RECORDER.get() is None:  # not differentiated again: numpy's reshape, no dispatch
        return NDArray(g._np.reshape(shape), g.context)
    return reshape(g, shape=shape)


Reshape = reshape  # MXNet's deprecated capitalised name


# -- transpose -------------------------------------------------------------------------

transpose = Op("transpose", ("data",), {"axes": None}, doc="""\
``data`` with its axes permuted by ``axes`` (reversed when None or ``()``).

``transpose(csr)`` is CSR (linear time, canonical sorted columns); other sparse inputs fall back.
""")


def _perm(axes, ndim):
    if axes is None or len(tuple(axes)) == 0:
        return tuple(range(ndim))[::-1]
    perm = tuple(_axis(a, ndim, "axes") for a in axes)
    if sorted(perm) != list(range(ndim)):
        raise ShapeError(f"transpose: axes={tuple(axes)} is not a permutation of the "
                         f"{ndim} axes")
    return perm


transpose.shape(_unary_shape(lambda s, axes: [s[p] for p in _perm(axes, len(s))]))


@transpose.infer
def _(data, axes):
    return "csr" if data == "csr" else "default"


@transpose.impl("csr")
def _(data, axes):
    return data.copy() if _perm(axes, 2) == (0, 1) else _csr_transpose(data)


@transpose.impl("default")
def _(data, axes):
    return _dense(data, _copy(data._np.transpose(_perm(axes, data.ndim))))


@_vjp(transpose)
def _(node, g):
    inverse = np.argsort(_perm(node.attrs["axes"], g.ndim))
    return transpose(as_dense(g), axes=tuple(int(a) for a in inverse))


# -- concat / stack / split --------------------------------------------------------------

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
    values = np.concatenate([x._data for x in data])
    if dim == 0:
        offsets = np.cumsum([0] + [x.nnz for x in data[:-1]])
        indptr = np.concatenate([[0]] + [x._indptr[1:] + o for x, o in zip(data, offsets)])
        return CSRNDArray(values, np.concatenate([x._indices for x in data]),
                          indptr.astype(INDEX_DTYPE), shape, data[0].context)
    # dim 1: gather every entry with its row and shifted column, then order by row;
    # a stable sort keeps the inputs' order within a row, so columns stay sorted.
    offsets = np.cumsum([0] + [x.shape[1] for x in data[:-1]])
    cols = np.concatenate([x._indices + o for x, o in zip(data, offsets)])
    order = np.argsort(np.concatenate([row_ids(x._indptr) for x in data]), kind="stable")
    indptr = np.sum([x._indptr for x in data], axis=0, dtype=INDEX_DTYPE)
    return CSRNDArray(values[order], cols[order], indptr, shape, data[0].context)


@concat.impl("row_sparse", ...)
def _(*data, dim):
    dim, shape = _concat_check(data, dim)
    if dim == 0:
        offsets = np.cumsum([0] + [x.shape[0] for x in data[:-1]])
        return RowSparseNDArray(np.concatenate([x._data for x in data]),
                                np.concatenate([x._indices + o for x, o in zip(data, offsets)]),
                                shape, data[0].context)
    # dim >= 1: the output stores the union of the inputs' rows; each input fills its block.
    rows = np.unique(np.concatenate([x._indices for x in data]))
    out = np.zeros((len(rows),) + shape[1:], np.result_type(*[x.dtype for x in data]))
    start = 0
    for x in data:
        block = (np.searchsorted(rows, x._indices),) + (builtins.slice(None),) * (dim - 1)
        out[block + (builtins.slice(start, start + x.shape[dim]),)] = x._data
        start += x.shape[dim]
    return RowSparseNDArray(out, rows.astype(INDEX_DTYPE), shape, data[0].context)


@concat.impl("default", ...)
def _(*data, dim):
    dim, _ = _concat_check(data, dim)
    return _dense(data[0], np.concatenate([x._np for x in data], axis=dim))


def _rsp_slice_axis(x, axis, begin, end):
    """``slice_axis`` of a row_sparse ``x`` as row_sparse (``0 <= begin <= end``)."""
    shape = x.shape[:axis] + (end - begin,) + x.shape[axis + 1:]
    if axis == 0:
        keep = (x._indices >= begin) & (x._indices < end)
        return RowSparseNDArray(x._data[keep], x._indices[keep] - begin, shape, x.context)
    key = (builtins.slice(None),) * axis + (builtins.slice(begin, end),)
    return RowSparseNDArray(_copy(x._data[key]), x._indices.copy(), shape, x.context)


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
    return _dense(data[0], np.stack([x._np for x in data], axis=axis))


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
    parts = np.split(data._np, n, axis=axis)
    return [_dense(data, _copy(np.squeeze(p, axis) if squeeze_axis else p)) for p in parts]


@_vjp(split)
def _(node, *grads):
    axis = node.attrs["axis"]
    if node.attrs["squeeze_axis"]:
        return stack(*map(as_dense, grads), axis=axis)
    if not all(g.stype == "row_sparse" for g in grads):  # all row_sparse: a row_sparse concat
        grads = map(as_dense, grads)
    return concat(*grads, dim=axis)


# -- slicing ------------------------------------------------------------------------

def _tuple(v, name, op="slice"):
    if v is None or isinstance(v, (int, np.integer)):
        return (v,)
    try:
        v = tuple(v)
    except TypeError as e:
        raise ShapeError(f"{op}: {name}={v!r} must be a tuple of integers") from e
    for e in v:
        if e is not None and not isinstance(e, (int, np.integer)):
            raise ShapeError(f"{op}: {name}={v!r} must hold integers or None")
    return v


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
    return _dense(data, _copy(data._np[_slice_key(data.shape, begin, end, step)]))


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
    out[_slice_key(shape, begin, end, step)] = data._np
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
    return _dense(data, _copy(data._np[_axis_key(data.shape, axis, begin, end)]))


@_vjp(slice_axis)
def _(node, g):
    shape, a = node.inputs[0].shape, node.attrs
    lead = (None,) * _axis(a["axis"], len(shape))
    return _backward_slice(as_dense(g), shape=shape, begin=lead + (a["begin"],),
                           end=lead + (a["end"],), step=None)


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
""")


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
        out[a._indices] = np.take(a._data, idx, axis=axis)
        return _dense(a, out)
    pos = np.searchsorted(a._indices, idx)
    found = pos < len(a._indices)
    found[found] = a._indices[pos[found]] == idx[found]
    out = np.zeros(idx.shape + a.shape[1:], a.dtype)
    out[found] = a._data[pos[found]]
    return _dense(a, out)


@take.impl("default", "default")
def _(a, indices, axis, mode):
    axis, idx = _take_indices(a.shape, indices, axis, mode)
    return _dense(a, np.take(a._np, idx, axis=axis))


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
    rows taken); otherwise dense (csr: none)."""
    return (None if a == "csr" else "row_sparse" if a == "row_sparse" and axis == 0
            else "default"), None


_backward_take = Op("_backward_take", ("data", "indices"),
                    {"shape": REQUIRED, "axis": 0, "mode": "clip", "stype": "default"}, doc="""\
The adjoint of ``take``: zeros of ``shape`` with the slices of ``data`` added at
``indices`` along ``axis`` (repeated indices add up). ``stype='row_sparse'`` (``axis``
0) stores only the rows taken: the embedding gradient. ``mode=None``: the indices are
known to be in range (an Embedding's, checked by its forward) and are not checked again.
Its own gradient is ``take``.
""")


_backward_take.shape(shape_attr)
_backward_take.dtype(lambda d, a: d[0], index={1})


@_backward_take.infer
def _(data, indices, shape, axis, mode, stype):
    return stype


@_backward_take.impl("default", "default")
def _(data, indices, shape, axis, mode, stype):
    if mode is None:  # in range already
        axis, idx = _axis(axis, len(shape)), _int_indices(indices, "take")
    else:
        axis, idx = _take_indices(shape, indices, axis, mode)
    # Sort the indices and add up the runs of equal ones (axis moved to the front).
    g = data._np.reshape(shape[:axis] + (idx.size,) + shape[axis + 1:])
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


# -- expand_dims / broadcast_to / flatten ---------------------------------------------------

expand_dims = Op("expand_dims", ("data",), {"axis": REQUIRED}, doc="""\
``data`` with a new axis of size 1 inserted at ``axis`` (in ``[-ndim-1, ndim]``).
Sparse inputs fall back.
""")


@expand_dims.shape
def _(ins, attrs):
    s = ins[0]
    if s is None:
        return ins, [None]
    axis = _axis(attrs["axis"], len(s), extra=1)
    return ins, [s[:axis] + (1,) + s[axis:]]


@expand_dims.impl("default")
def _(data, axis):
    return _dense(data, _copy(np.expand_dims(data._np, _axis(axis, data.ndim, extra=1))))


@_vjp(expand_dims)
def _(node, g):
    return reshape(as_dense(g), shape=node.inputs[0].shape)


broadcast_to = Op("broadcast_to", ("data",), {"shape": REQUIRED}, doc="""\
``data`` broadcast to ``shape`` (a copy). Dimensions of size 1 are repeated; a
``0`` in ``shape`` keeps the input's dimension (MXNet). ``shape`` may add
leading dimensions (numpy's rule). Sparse inputs fall back.
""")


@broadcast_to.shape
def _(ins, attrs):
    s = ins[0]
    if s is None:
        return ins, [None]
    target = tuple(attrs["shape"])
    lead = len(target) - len(s)
    return ins, [tuple(s[i - lead] if d == 0 and i >= lead else d for i, d in enumerate(target))]


@broadcast_to.impl("default")
def _(data, shape):
    target = _tuple(shape, "shape", "broadcast_to")
    src, lead = data.shape, len(target) - data.ndim
    if lead < 0 or any(d is None or d < 0 for d in target) or 0 in target[:lead]:
        raise ShapeError(f"broadcast_to: shape={target} must be non-negative ints with at least "
                         f"the {data.ndim} dimensions of the input shape {src} (0 keeps an "
                         f"input dimension, so it cannot stand in a new leading one)")
    full = tuple(src[i - lead] if d == 0 and i >= lead else int(d) for i, d in enumerate(target))
    if any(s not in (1, t) for s, t in zip(src, full[lead:])):
        raise ShapeError(f"broadcast_to: cannot broadcast shape {src} to shape={target}")
    out = np.empty(full, data.dtype)
    out[...] = data._np  # numpy broadcasts the (checked) source into the copy
    return _dense(data, out)


@_vjp(broadcast_to)
def _(node, g):
    return _sum_to(as_dense(g), shape=node.inputs[0].shape)


flatten = Op("flatten", ("data",), doc="""\
``data`` reshaped to 2-D ``(d0, d1*...*dk)`` (MXNet's ``Flatten``: the first axis
is kept; a 1-D input becomes ``(d0, 1)``). CSR stays CSR (a copy); row_sparse
stays row_sparse (its stored rows are flattened).
""")


def _flat_shape(shape):
    if not shape:
        raise ShapeError("flatten needs an array with at least one dimension, got a scalar")
    return shape[0], math.prod(shape[1:])


flatten.shape(_unary_shape(_flat_shape))


@flatten.infer
def _(data):
    return data


@flatten.impl("csr")
def _(data):
    return data.copy()


@flatten.impl("row_sparse")
def _(data):
    shape = _flat_shape(data.shape)
    return RowSparseNDArray(_copy(data._data).reshape(len(data._indices), shape[1]),
                            data._indices.copy(), shape, data.context)


@flatten.impl("default")
def _(data):
    return _dense(data, _copy(data._np).reshape(_flat_shape(data.shape)))


@_vjp(flatten, keeps_rows=True)
def _(node, g):
    shape = node.inputs[0].shape
    if g.stype == "row_sparse":  # rows stay rows: unflatten the stored ones
        return RowSparseNDArray(_copy(g._data).reshape((len(g._indices),) + shape[1:]),
                                g._indices.copy(), shape, g.context)
    return reshape(as_dense(g), shape=shape)


Flatten = flatten  # MXNet's deprecated capitalised name


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
    out = y._np.astype(np.result_type(x.dtype, y.dtype), order="C", copy=True)
    nz = condition._data != 0
    r, c = row_ids(condition._indptr)[nz], condition._indices[nz]
    out[r, c] = x._np[r, c]
    return _dense(x, out)


@where.impl("default", "default", "default")
def _(condition, x, y):
    _where_check(condition, x, y)
    cond = condition._np.reshape(condition.shape + (1,) * (x.ndim - condition.ndim))
    return _dense(x, np.where(cond != 0, x._np, y._np))


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
    out = np.take_along_axis(data._np, np.expand_dims(idx, axis), axis)
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
