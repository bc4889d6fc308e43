"""What the shape families (``reshaping``, ``joining``, ``slicing``, ``indexing``) share:
axis and tuple arguments, C-contiguous copies, CSR row gathers and transposes, the shape
rule of a one-input operator and the vjp registration that gives indices, conditions and
CSR inputs no gradient.

Every operator of these families returns a new array (MXNet's operators do), never a view
of its input.
"""
import numpy as np

from ..base import INDEX_DTYPE, ShapeError
from ..arrays.csr import CSRNDArray
from ..arrays.dense import NDArray


def _axis(axis, ndim, name="axis", extra=0):
    """``axis`` normalised to [0, ndim + extra) (``extra=1`` for a new axis)."""
    n = ndim + extra
    if not isinstance(axis, (int, np.integer)) or not -n <= axis < n:
        raise ShapeError(f"{name}={axis!r} is out of range for an array with {ndim} dimensions")
    return int(axis) % n


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


def _dense(x, a):
    return NDArray(a, x.context)


def _copy(a):
    """A C-contiguous copy of numpy ``a`` (ops never return views of their input)."""
    return np.array(a, order="C", copy=True)


def _vjp(op, *constant, keeps_rows=False):
    """Register ``fn(node, *out_grads) -> one gradient per input`` as ``op``'s vjp.

    Inputs named in ``constant`` (indices, conditions) get None, and ``fn`` is not called
    when no other input is left; the others' gradients are dense, or row_sparse where the
    output is and ``keeps_rows`` (``fn`` passes a row_sparse ``g``'s rows back): the
    declared ``grad_stype``, unless ``op`` declares its own after this. A CSR input's
    gradient is dense too (``fn`` reads only its shape; a csr gradient buffer keeps it at
    the input's stored entries, ``nets.autograd``), as MXNet's fallback computes it.
    """
    @op.grad_stype
    def _(*stypes, **attrs):
        names = op.inputs * len(stypes) if op.variadic else op.inputs
        rows = keeps_rows and op.infer_stype(*stypes, **attrs)[0] == "row_sparse"
        return tuple(None if s is None or n in constant else
                     "row_sparse" if rows and s != "csr" else "default"
                     for s, n in zip(stypes, names))

    def register(fn):
        @op.vjp
        def vjp(node, *out_grads):
            names = op.inputs * len(node.inputs) if op.variadic else op.inputs
            live = [x is not None and n not in constant for x, n in zip(node.inputs, names)]
            if not any(live):
                return (None,) * len(live)
            grads = fn(node, *out_grads)
            grads = tuple(grads) if isinstance(grads, (tuple, list)) else (grads,)
            return tuple(g if ok else None for g, ok in zip(grads, live))
        return vjp
    return register


def _csr_rows(x, rows):
    """Rows ``rows`` (int64 in range, any order, repeats allowed) of CSR ``x``, as a new CSR."""
    starts = x.indptr_array[rows]
    counts = x.indptr_array[rows + 1] - starts
    indptr = np.zeros(len(rows) + 1, INDEX_DTYPE)
    np.cumsum(counts, out=indptr[1:])
    pos = np.repeat(starts - indptr[:-1], counts) + np.arange(indptr[-1], dtype=INDEX_DTYPE)
    return CSRNDArray(x.values[pos], x.index_array[pos], indptr, (len(rows), x.shape[1]), x.context)


def _csr_transpose(x):
    # scipy's csr->csc is a linear counting sort: columns come out sorted within each row.
    t = x.asscipy().T.tocsr()
    return CSRNDArray(t.data, t.indices.astype(INDEX_DTYPE), t.indptr.astype(INDEX_DTYPE),
                      t.shape, x.context)


def _unary_shape(fn):
    """A shape rule for a one-input operator whose output shape is ``fn(shape, **attrs)``."""
    def rule(ins, attrs):
        return ins, [None if ins[0] is None else tuple(fn(ins[0], **attrs))]
    return rule
