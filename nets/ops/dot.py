"""``dot``: matrix products over every combination of dense, CSR and row-sparse operands."""
import math

import numpy as np

from .. import kernels, parallel
from ..base import FLOAT_DTYPES, DTypeError, ShapeError
from ..arrays.csr import CSRNDArray
from ..arrays.dense import NDArray
from ..arrays.row_sparse import RowSparseNDArray
from .registry import Op, get_op
from .reshaping import reshape

__all__ = ["dot"]


def _matmul(a, b):
    """``a @ b`` for 2-D numpy ``a``, ``b`` of one dtype. A contracted size of 1 (an outer
    product, e.g. the input gradient of a one-unit layer) goes to a numba kernel: numpy's
    matmul takes a slow non-BLAS loop for it."""
    if a.shape[1] == 1 and a.dtype in FLOAT_DTYPES and a.dtype == b.dtype:
        return kernels.dense.outer(a[:, 0], b[0])
    return a @ b

dot = Op("dot", ("lhs", "rhs"), {"transpose_a": False, "transpose_b": False,
                                 "forward_stype": None}, doc="""\
Dot product ``op(lhs) . op(rhs)``, ``op(x)`` being ``x.T`` when ``transpose_a``/``transpose_b``.

Dense operands follow MXNet: 1-D . 1-D is the inner product (shape ``(1,)``), 2-D the matrix
product, N-D a sum over the last axis of ``lhs`` and the first axis of ``rhs`` (with
``transpose_a`` the first axis of ``lhs``, with ``transpose_b`` the last axis of ``rhs``).
As soon as one operand is sparse, both must be 2-D. Both operands need the same dtype,
which the output keeps.

Output storage type, first rule that applies:

1. ``csr`` when ``rhs`` is an untransposed csr (the output columns are its touched columns),
   or both operands are csr (scipy's sparse product);
2. ``row_sparse`` when the output rows are sparse: ``lhs`` is a transposed csr (rows = its
   touched columns, the weight gradient of a sparse first layer) or an untransposed
   row_sparse (rows = its stored rows);
3. ``default`` otherwise.

This agrees with every rule MXNet documents: ``dense . dense``, ``csr . dense``,
``csr . row_sparse`` -> default, ``csr.T . dense``, ``csr.T . row_sparse`` -> row_sparse,
``dense . csr`` -> csr, ``dense . csr.T`` -> default (MXNet's ``forward_stype='default'``).
Where MXNet fell back to a dense output, nets keeps the sparsity instead (csr.T . x.T,
dense.T . csr, csr . csr, row_sparse . x, row_sparse.T . csr). MXNet's ``csr.T . dense``
also filled an n_features x n block before compacting it; here memory is
O(nnz + touched * n).

Every combination runs natively and no sparse operand is densified: ``csr . dense``,
``csr . dense.T`` and ``csr.T . dense`` are Numba kernels (``nets.kernels.csr``);
``dense . csr`` reuses them through ``a . b = (b.T . a.T).T``; ``csr . csr`` is scipy; a
row_sparse operand is reduced to its stored rows, gathering or scattering the matching
rows/columns of the other operand.

``forward_stype`` ('default', 'csr' or 'row_sparse'; MXNet's argument) casts the output
to that storage type instead of the rule above; None keeps the rule.
""", entrywise=False)


@dot.infer
def _(lhs, rhs, transpose_a, transpose_b, forward_stype=None):
    if forward_stype is not None:
        return forward_stype
    if (lhs == rhs == "csr") or (rhs == "csr" and not transpose_b):
        return "csr"
    if (lhs == "csr" and transpose_a) or (lhs == "row_sparse" and not transpose_a):
        return "row_sparse"
    return "default"


@dot.shape
def _(ins, attrs):
    a, b = ins
    if a is None or b is None:
        return ins, [None]
    ta, tb = attrs["transpose_a"], attrs["transpose_b"]
    k_a, k_b = (a[0] if ta else a[-1]), (b[-1] if tb else b[0])
    if k_a != k_b:
        raise ShapeError(f"dot: lhs {a} (transpose_a={ta}) and rhs {b} (transpose_b={tb}) "
                         f"do not share the contracted dimension")
    return ins, [(a[1:] if ta else a[:-1]) + (b[:-1] if tb else b[1:])]


@dot.grad_stype
def _(lhs, rhs, transpose_a, transpose_b, forward_stype=None):
    """The stypes of the vjp's products (``g`` in the output's stype): ``dot(csr, W)``
    gives ``W`` a row_sparse gradient, and a csr ``lhs`` a dense one (MXNet's: what
    ``simple_bind`` allocates for a csr variable). A csr leaf whose own gradient slot is
    csr (``x.attach_grad()`` on a csr ``x``) receives instead the gradient w.r.t. its
    stored values, of its pattern (``nets.autograd``'s delivery rule)."""
    def out(a, b, ta, tb):
        return dot.infer_stype(a, b, transpose_a=ta, transpose_b=tb)[0]
    g = forward_stype or out(lhs, rhs, transpose_a, transpose_b)
    return (out(rhs, g, transpose_b, True) if transpose_a else out(g, rhs, False, not transpose_b),
            out(g, lhs, True, transpose_a) if transpose_b else out(lhs, g, not transpose_a, False))


def _check_dtypes(lhs, rhs):
    if lhs.dtype != rhs.dtype:
        raise DTypeError(f"dot: lhs has dtype {lhs.dtype} and rhs {rhs.dtype}; cast one "
                         f"(e.g. rhs.astype({str(lhs.dtype)!r}))")


def _shape_error(lhs, rhs, transpose_a, transpose_b, why):
    return ShapeError(f"dot: {why}: lhs {lhs.stype} {lhs.shape} (transpose_a={transpose_a}), "
                      f"rhs {rhs.stype} {rhs.shape} (transpose_b={transpose_b})")


def _as_forward_stype(out, forward_stype):
    """The product ``out`` cast to ``forward_stype`` (None: kept)."""
    if forward_stype is None or out.stype == forward_stype:
        return out
    if forward_stype not in ("default", "csr", "row_sparse"):
        raise ValueError(f"dot: forward_stype={forward_stype!r}; expected 'default', 'csr' "
                         f"or 'row_sparse'")
    return get_op("cast_storage").compute((out,), {"stype": forward_stype})[0]


@dot.impl("default", "default")
def _(lhs, rhs, transpose_a, transpose_b, forward_stype=None):
    if forward_stype not in (None, "default"):
        return _as_forward_stype(_product(lhs, rhs, transpose_a, transpose_b), forward_stype)
    _check_dtypes(lhs, rhs)
    a, b = lhs.values, rhs.values
    if a.ndim == 0 or b.ndim == 0:
        raise _shape_error(lhs, rhs, transpose_a, transpose_b, "operands must be at least 1-D")
    # MXNet's view: lhs as (free, k) or (k, free) with transpose_a; rhs as (k, free)/(free, k)
    a_free = a.shape[1:] if transpose_a else a.shape[:-1]
    b_free = b.shape[:-1] if transpose_b else b.shape[1:]
    a2 = (a.reshape(a.shape[0], math.prod(a_free)).T if transpose_a
          else a.reshape(math.prod(a_free), a.shape[-1]))
    b2 = (b.reshape(math.prod(b_free), b.shape[-1]).T if transpose_b
          else b.reshape(b.shape[0], math.prod(b_free)))
    if a2.shape[1] != b2.shape[0]:
        raise _shape_error(lhs, rhs, transpose_a, transpose_b,
                           f"contracted sizes differ ({a2.shape[1]} vs {b2.shape[0]})")
    out = _matmul(a2, b2).reshape(a_free + b_free or (1,))
    return NDArray(out, lhs.context)


def _sparse_impl(*patterns):
    """Register ``fn`` for each stype pair of ``patterns``, after the checks every product
    with a sparse operand needs (2-D operands of one dtype, matching contracted sizes)."""
    def register(fn):
        def impl(lhs, rhs, transpose_a, transpose_b, forward_stype=None):
            if forward_stype is not None:
                return _as_forward_stype(impl(lhs, rhs, transpose_a, transpose_b),
                                         forward_stype)
            _check_dtypes(lhs, rhs)
            if lhs.ndim != 2 or rhs.ndim != 2:
                raise _shape_error(lhs, rhs, transpose_a, transpose_b,
                                   "sparse dot needs 2-D operands")
            k_lhs, k_rhs = lhs.shape[0 if transpose_a else 1], rhs.shape[1 if transpose_b else 0]
            if k_lhs != k_rhs:
                raise _shape_error(lhs, rhs, transpose_a, transpose_b,
                                   f"contracted sizes differ ({k_lhs} vs {k_rhs})")
            return fn(lhs, rhs, transpose_a, transpose_b)
        for pattern in patterns:
            dot.impl(*pattern)(impl)
        return fn
    return register


def _product(lhs, rhs, ta, tb):
    """``op(lhs) . op(rhs)`` by the implementation the table lists for their stypes."""
    return dot.find_impl((lhs.stype, rhs.stype))(lhs, rhs, ta, tb)


@_sparse_impl(("csr", "default"))
def _(lhs, rhs, ta, tb):
    return _csr_dense(lhs, rhs, ta, tb)


@_sparse_impl(("default", "csr"))
def _(lhs, rhs, ta, tb):  # dense . csr = (csr.T . dense.T).T
    return _transpose(_csr_dense(rhs, lhs, not tb, not ta))


@_sparse_impl(("csr", "csr"))
def _(lhs, rhs, ta, tb):
    a, b = lhs.asscipy(), rhs.asscipy()
    return _from_scipy((a.T if ta else a) @ (b.T if tb else b), lhs.context)


@_sparse_impl(("row_sparse", "default"), ("row_sparse", "csr"), ("row_sparse", "row_sparse"))
def _(lhs, rhs, ta, tb):
    """A row_sparse ``lhs`` reduced to its stored rows."""
    rows = NDArray(lhs.values, lhs.context)
    if not ta:  # lhs rows are output rows
        return _scatter_rows(_product(rows, rhs, False, tb), lhs.index_array, lhs.shape[0])
    # lhs rows are contracted: only the matching rows of op(rhs) count
    return _product(rows, _take(rhs, lhs.index_array, axis=1 if tb else 0), True, tb)


@_sparse_impl(("default", "row_sparse"), ("csr", "row_sparse"))
def _(lhs, rhs, ta, tb):
    """A row_sparse ``rhs`` reduced to its stored rows."""
    rows = NDArray(rhs.values, rhs.context)
    if tb:  # rhs rows are output columns
        return _scatter_cols(_product(lhs, rows, ta, True), rhs.index_array, rhs.shape[0])
    return _product(_take(lhs, rhs.index_array, axis=0 if ta else 1), rows, ta, False)


def _csr_dense(x, w, ta, tb):
    """``op(x) . op(w)`` for CSR ``x`` and dense ``w``."""
    w, ctx = w.values, x.context
    if not ta:
        if tb:  # (w . x.T).T: w is (n, k), the FullyConnected weight layout
            out = kernels.csr.dense_csr_t(np.ascontiguousarray(w), x.indptr_array,
                                          x.index_array, x.values).T
            return NDArray(np.ascontiguousarray(out), ctx)
        out = np.zeros((x.shape[0], w.shape[1]), w.dtype)
        return NDArray(_csr_dense_into(x, w, out), ctx)
    cols, block = kernels.csr.csr_t_dense(  # touched columns
        x.indptr_array, x.index_array, x.values, np.ascontiguousarray(w.T if tb else w),
        x.shape[1])
    return RowSparseNDArray(block, cols, (x.shape[1], block.shape[1]), ctx)


def _csr_dense_into(x, w, out):
    """``out += x . w`` for CSR ``x`` and numpy ``w`` (``out`` C-contiguous, of ``w``'s
    dtype), the cores sharing its rows; returns ``out``."""
    w, parts = np.ascontiguousarray(w), (x.indptr_array, x.index_array, x.values)
    parallel.parallel_for(lambda lo, hi: kernels.csr.csr_dense(*parts, w, out, lo, hi),
                          len(out), work=x.nnz * w.shape[1])
    return out


def _transpose(x):
    """Transpose a dense result, or a row_sparse one into the CSR of its stored columns."""
    if x.stype == "default":
        return NDArray(np.ascontiguousarray(x.values.T), x.context)
    block, cols = x.values, x.index_array
    rows, n = x.shape[1], len(cols)
    return CSRNDArray(np.ascontiguousarray(block.T).reshape(-1), np.tile(cols, rows),
                      np.arange(rows + 1, dtype=np.int64) * n, (rows, x.shape[0]), x.context)


def _from_scipy(m, ctx):
    m = m.tocsr()
    m.sort_indices()
    return CSRNDArray(m.data, m.indices.astype(np.int64), m.indptr.astype(np.int64), m.shape, ctx)


def _take(x, idx, axis):
    """Rows (axis 0) or columns (axis 1) ``idx`` (sorted unique) of 2-D ``x``, same stype;
    ``x`` itself when ``idx`` lists every one (a row_sparse operand storing every row)."""
    if len(idx) == x.shape[axis]:
        return x
    shape = (len(idx), x.shape[1]) if axis == 0 else (x.shape[0], len(idx))
    if x.stype == "default":
        return NDArray(np.take(x.values, idx, axis=axis), x.context)
    if x.stype == "row_sparse":
        if axis == 1:
            return RowSparseNDArray(x.values[:, idx], x.index_array, shape, x.context)
        pos, found = _lookup(x.index_array, idx)
        return RowSparseNDArray(x.values[pos[found]], np.flatnonzero(found), shape, x.context)
    if axis == 0:
        start, count = x.indptr_array[idx], np.diff(x.indptr_array)[idx]
        indptr = np.zeros(len(idx) + 1, np.int64)
        np.cumsum(count, out=indptr[1:])
        pick = np.repeat(start - indptr[:-1], count) + np.arange(indptr[-1])
        return CSRNDArray(x.values[pick], x.index_array[pick], indptr, shape, x.context)
    # columns: look each column up in idx, drop absent ones, renumber to positions in idx
    pos, found = _lookup(idx, x.index_array)
    if found.all():  # nothing to drop (idx holds every column x stores): the pattern stays
        return CSRNDArray(x.values, pos, x.indptr_array, shape, x.context)
    kept = np.concatenate(([0], np.cumsum(found)))
    return CSRNDArray(x.values[found], pos[found], kept[x.indptr_array], shape, x.context)


def _lookup(table, keys):
    """Positions of ``keys`` (int64 ids) in sorted unique int64 ``table`` and whether each
    key is there (a position is meaningful only where found). When the table's id range
    is narrow enough for a bitmap (``ranks_in_bitmap``), every key is answered by a bitmap
    rank in one pass; otherwise each key is a binary search."""
    if len(table) == 0:
        return np.zeros(len(keys), np.int64), np.zeros(len(keys), bool)
    upper = int(table[-1]) + 1
    emb = kernels.embedding
    if emb.ranks_in_bitmap(len(table) + len(keys), upper):
        return emb.bitmap_positions(table, keys, upper)
    pos = np.searchsorted(table, keys)
    return pos, table[np.minimum(pos, len(table) - 1)] == keys


def _scatter_rows(x, rows, n_rows):
    """A result for the stored rows of a row_sparse lhs, placed at ``rows`` of ``n_rows``."""
    shape = (n_rows, x.shape[1])
    if x.stype == "default":
        return RowSparseNDArray(x.values, rows.copy(), shape, x.context)  # never alias an input
    count = np.zeros(n_rows, np.int64)
    count[rows] = np.diff(x.indptr_array)
    return CSRNDArray(x.values, x.index_array, np.concatenate(([0], np.cumsum(count))), shape,
                      x.context)


def _scatter_cols(x, cols, n_cols):
    """A result for the stored rows of a transposed row_sparse rhs, placed at columns ``cols``."""
    src = x.values
    out = np.zeros((src.shape[0], n_cols), src.dtype)
    out[:, cols] = src
    if x.stype == "default":
        return NDArray(out, x.context)
    return RowSparseNDArray(out, x.index_array, (x.shape[0], n_cols), x.context)


def _csr_values_grad(x, w, g, ta, tb):
    """The gradient of ``op(x) . op(w)`` w.r.t. the stored values of csr ``x``, given the
    output gradient ``g`` (numpy): ``x``'s pattern, each stored ``(i, j)`` holding
    ``dX[i, j]``. Untransposed, ``dX = g . op(w)^T``; transposed, ``dX = op(w) . g^T``;
    both are a row of one matrix times a row of the other, summed over the output columns
    (``kernels.csr.csr_sampled_dot``)."""
    w = w.T if tb else w  # op(w): (contracted, n)
    rows, cols = (w, g) if ta else (g, w)
    rows, cols = np.ascontiguousarray(rows), np.ascontiguousarray(cols)
    out = np.empty(x.nnz, g.dtype)
    indptr, indices = x.indptr_array, x.index_array
    parallel.parallel_for(
        lambda lo, hi: kernels.csr.csr_sampled_dot(indptr, indices, rows, cols, out, lo, hi),
        x.shape[0], work=x.nnz * g.shape[1])
    return CSRNDArray(out, indices.copy(), indptr.copy(), x.shape, x.context)


def _as_2d(x, shape):
    """``x`` reshaped to ``shape`` (sparse operands are 2-D already: returned as they are)."""
    return x if x.shape == shape else reshape(x, shape=shape)


@dot.vjp(fresh=True)
def _(node, g):
    """For ``y = op(A) . op(B)`` in the 2-D view the forward uses:
    ``dA = g . op(B)^T`` and ``dB = op(A)^T . g``, each laid out back in A's/B's orientation.
    With a csr ``A`` and dense ``g``, ``dB = dot(A, g, transpose_a=True)`` is row_sparse: only
    the rows of the features the batch touches (the sparse first layer's weight gradient).
    The storage types are those ``dot.grad_stype`` declares, except for a csr ``A`` that is
    a leaf with a csr gradient slot: it receives the gradient w.r.t. its stored values (its
    pattern, values of ``dA`` there), computed at the stored entries only
    (``_csr_values_grad``) when ``B`` and ``g`` are dense; otherwise the engine samples the
    dense ``dA`` at the leaf."""
    a, b = node.inputs
    ta, tb = node.attrs["transpose_a"], node.attrs["transpose_b"]
    a_free = a.shape[1:] if ta else a.shape[:-1]
    b_free = b.shape[:-1] if tb else b.shape[1:]
    a2 = _as_2d(a, (a.shape[0], math.prod(a_free)) if ta else (math.prod(a_free), a.shape[-1]))
    b2 = _as_2d(b, (math.prod(b_free), b.shape[-1]) if tb else (b.shape[0], math.prod(b_free)))
    g2 = _as_2d(g, (math.prod(a_free), math.prod(b_free)))
    da = db = None
    if (a.stype == "csr" and b.stype == g.stype == "default"
            and node.leaf_grad_stype(0) == "csr"):
        da = _csr_values_grad(a, b.values, g.values, ta, tb)
    elif node.parents[0] is not None:  # (None: a constant, no gradient)
        da = dot(b2, g2, transpose_a=tb, transpose_b=True) if ta else \
            dot(g2, b2, transpose_b=not tb)
        da = _as_2d(da, a.shape)
    if node.parents[1] is not None:
        db = dot(g2, a2, transpose_a=True, transpose_b=ta) if tb else \
            dot(a2, g2, transpose_a=not ta)
        db = _as_2d(db, b.shape)
    return da, db
