"""Sparse-specific operators: storage casts and sparse utilities."""
import math

import numpy as np

from .. import kernels
from ..base import INDEX_DTYPE, NetsError, ShapeError, StorageTypeError, check_stype
from ..arrays.creation import zeros_sparse
from ..arrays.csr import CSRNDArray, dense_to_csr_parts, row_ids
from ..arrays.dense import NDArray
from ..arrays.row_sparse import RowSparseNDArray, dense_to_rsp_parts
from .registry import REQUIRED, Op, all_same_shape, same_shape

__all__ = ["cast_storage", "retain", "add_n", "ElementWiseSum", "zeros_like", "ones_like"]

cast_storage = Op("cast_storage", ("data",), {"stype": REQUIRED}, doc="""\
Convert ``data`` to storage type ``stype`` (always a new array).

``csr`` needs a 2-D input; ``row_sparse`` keeps the rows that hold a non-zero.
""")


@cast_storage.infer
def _(data, stype):
    return check_stype(stype)


cast_storage.shape(same_shape)
cast_storage.grad_stype(lambda data, stype: (data,))  # cast back to the input's stype


def _csr_to_rsp(x):
    counts = np.diff(x.indptr_array)
    rows = np.flatnonzero(counts)
    block = np.zeros((len(rows), x.shape[1]), dtype=x.dtype)
    block[np.repeat(np.arange(len(rows)), counts[rows]), x.index_array] = x.values
    return RowSparseNDArray(block, rows.astype(np.int64), x.shape, x.context)


def _rsp_to_csr(x):
    if x.ndim != 2:
        raise ShapeError(f"cast_storage to csr needs a 2-D array, got shape {x.shape}")
    data, cols, block_ptr = dense_to_csr_parts(x.values)
    counts = np.zeros(x.shape[0], dtype=np.int64)
    counts[x.index_array] = np.diff(block_ptr)
    indptr = np.concatenate(([0], np.cumsum(counts)))
    return CSRNDArray(data, cols, indptr, x.shape, x.context)


def _dense_to_csr(x):
    if x.ndim != 2:
        raise ShapeError(f"cast_storage to csr needs a 2-D array, got shape {x.shape}")
    return CSRNDArray(*dense_to_csr_parts(x.values), x.shape, x.context)


_CONVERT = {
    ("default", "csr"): _dense_to_csr,
    ("default", "row_sparse"): lambda x: RowSparseNDArray(*dense_to_rsp_parts(x.values), x.shape,
                                                          x.context),
    ("csr", "default"): lambda x: NDArray(x.asnumpy(), x.context),
    ("row_sparse", "default"): lambda x: NDArray(x.asnumpy(), x.context),
    ("csr", "row_sparse"): _csr_to_rsp,
    ("row_sparse", "csr"): _rsp_to_csr,
}


@cast_storage.impl("default")
@cast_storage.impl("csr")
@cast_storage.impl("row_sparse")
def _(data, stype):
    if data.stype == stype:
        return data.copy()
    return _CONVERT[data.stype, stype](data)


@cast_storage.vjp
def _(node, g):
    """The gradient in the input's storage type (a cast back)."""
    stype = node.inputs[0].stype
    return g if g.stype == stype else cast_storage(g, stype=stype)


def as_row_ids(ids, n, op, arg):
    """``ids`` (numpy, integer or whole-number float) as int64 row ids checked to lie in
    ``[0, n)``; otherwise ``NetsError`` naming the first bad id and its position."""
    ids = np.asarray(ids)
    if ids.dtype.kind not in "iu":
        bad = np.flatnonzero(ids != np.floor(ids))  # fractions and NaN (inf fails the range)
        if bad.size:
            _bad_id(ids, bad[0], op, arg, "is not a whole number")
    if ids.size and (ids.min() < 0 or ids.max() >= n):  # (two reductions, no mask)
        bad = np.flatnonzero((ids < 0) | (ids >= n))
        _bad_id(ids, bad[0], op, arg, f"is out of range [0, {n})")
    return ids.astype(INDEX_DTYPE, copy=False)


def unique_rows(ids, n, op, arg):
    """The sorted unique row ids in ``ids`` (numpy, any shape, checked as ``as_row_ids``
    checks them), in linear time (``unique_slots``: a bitmap rank or a radix sort)."""
    ids = np.ascontiguousarray(as_row_ids(ids, n, op, arg).reshape(-1))
    return kernels.embedding.unique_slots(ids, n)[0]


# the id dtypes ``gather_rows`` takes as they are: every other converts to one of them
_GATHER_ID_DTYPES = (np.dtype(np.int64), np.dtype(np.float32), np.dtype(np.float64))


def take_rows(table, ids, op, arg):
    """``table[ids]`` for a 2-D numpy ``table``, the ``ids`` (numpy, any shape) checked as
    ``as_row_ids`` checks them, in the pass that gathers the rows (one kernel)."""
    flat = ids.ravel()
    if flat.dtype.kind not in "biuf":  # complex, object, ...: the generic check decides
        flat = as_row_ids(ids, len(table), op, arg).ravel()
    table = np.ascontiguousarray(table)
    # The gather only moves bits: viewed as unsigned ints of the item size (or a divisor of
    # it), every dtype of one size shares a kernel specialisation (and numba has no float16).
    if flat.dtype not in _GATHER_ID_DTYPES:  # (float ids stay float: the kernel checks them)
        flat = flat.astype(np.float64 if flat.dtype.kind == "f" else INDEX_DTYPE)
    rows, bad = kernels.embedding.gather_rows(table.view(f"u{math.gcd(table.itemsize, 8)}"),
                                              flat)
    if bad >= 0:
        as_row_ids(ids, len(table), op, arg)  # raises, naming the first bad id
        raise NetsError(f"internal: {op}: the gather refused {arg}[{bad}] but the id check "
                        f"accepts it")
    return rows.view(table.dtype).reshape(ids.shape + table.shape[1:])


def _bad_id(ids, flat, op, arg, why):
    pos = ", ".join(str(int(i)) for i in np.unravel_index(flat, ids.shape))
    raise NetsError(f"{op}: {arg}[{pos}]={ids.reshape(-1)[flat].item()!r} {why}")


# -- retain -------------------------------------------------------------------------------------

retain = Op("retain", ("data", "indices"), doc="""\
The rows of row_sparse ``data`` listed in ``indices`` (row ids in any order, repeats
allowed; integers or whole-number floats in range). Listed rows that ``data`` does not
store stay absent; the output is row_sparse. ``data`` of any other storage type raises
``StorageTypeError`` (as MXNet's ``sparse.retain``): there are no stored rows to keep.
""")


@retain.infer
def _(data, indices):
    return "row_sparse"


retain.shape(lambda ins, attrs: (ins, [ins[0]]))
retain.dtype(lambda d, a: d[0], index={1})
retain.grad_stype(lambda data, indices: ("row_sparse", None))


def _retain_rows(data, indices):
    ids = indices.values if indices.stype == "default" else indices.asnumpy()  # (a list of ids)
    return stored_rows(data, unique_rows(ids, data.shape[0], "retain", "indices"))


def stored_positions(data, rows):
    """``(positions, held)``: of the rows ``rows`` of row_sparse ``data``, those it stores
    (``held``, a sub-array of ``rows``; ``rows`` itself when it stores all of them) and
    their positions in ``data.values``. ``rows`` as for ``stored_rows``. One binary search
    of ``rows`` among the stored ids, none when ``data`` stores every row (its sorted
    unique ids are then ``0 .. n-1``)."""
    have = data.index_array
    if len(have) == data.shape[0]:
        return rows, rows
    pos = np.searchsorted(have, rows)
    hit = pos < len(have)
    hit[hit] = have[pos[hit]] == rows[hit]
    return (pos, rows) if hit.all() else (pos[hit], rows[hit])


def stored_rows(data, rows):
    """The rows ``rows`` of row_sparse ``data`` that it stores, copied into a new row_sparse
    array of ``data``'s shape (``retain`` without its checks).

    ``rows`` must be sorted unique int64 ids in ``[0, data.shape[0])``: ``unique_rows``'
    result, or the indices of a row_sparse array (valid by construction). Callers that
    built them that way (the stores, ``retain``) pass them without a second check; the
    result may share ``rows`` as its indices (index buffers are never written in place).
    ``stored_positions`` finds them; then one gather."""
    pos, rows = stored_positions(data, rows)
    return RowSparseNDArray(np.take(data.values, pos, axis=0), rows, data.shape, data.context)


def union_rows(a, b):
    """``(union, a_at, b_at)`` of two sorted unique int64 id arrays: their sorted union and
    the position there of each id of ``a`` and of ``b``, by one linear merge
    (``kernels.elemwise.union_pattern``), never a sort."""
    ends = np.array([0, len(a)], INDEX_DTYPE), np.array([0, len(b)], INDEX_DTYPE)
    _, union, a_at, b_at = kernels.elemwise.union_pattern(ends[0], a, ends[1], b)
    return union.copy(), a_at, b_at  # (the merge's buffer is larger: keep only the ids)


def _retain_refused(data, indices):
    raise StorageTypeError(f"retain: data must be row_sparse, got stype={data.stype!r}; "
                           f"cast it first (data.tostype('row_sparse'))")


for _ids in ("default", "csr", "row_sparse"):
    retain.impl("row_sparse", _ids)(_retain_rows)
    retain.impl("default", _ids)(_retain_refused)
    retain.impl("csr", _ids)(_retain_refused)
del _ids


@retain.vjp
def _(node, g):
    """The gradient's retained rows (row_sparse); none for the indices."""
    if g.stype != "row_sparse":
        g = cast_storage(g, stype="row_sparse")
    return retain(g, node.inputs[1]), None


# -- add_n --------------------------------------------------------------------------------------

add_n = Op("add_n", ("*args",), doc="""\
The element-wise sum of any number of arrays of one shape (MXNet's ``ElementWiseSum``).

All row_sparse -> row_sparse over the union of their rows; all csr -> csr over the
union of their entries (never densified); otherwise dense, with sparse terms added
in place from their stored values.
""")
ElementWiseSum = add_n


@add_n.infer
def _(*args):
    if not args:
        raise NetsError("add_n needs at least one array")
    return args[0] if args[0] != "default" and all(a == args[0] for a in args) else "default"


add_n.shape(all_same_shape)
add_n.grad_stype(lambda *args: add_n.infer_stype(*args) * len(args))  # each term gets g


def _common(args):
    """Check every term has the shape of the first; return (shape, result dtype)."""
    for k, a in enumerate(args[1:], 1):
        if a.shape != args[0].shape:
            raise ShapeError(f"add_n: args[0] has shape {args[0].shape} but args[{k}] has "
                             f"shape {a.shape}")
    return args[0].shape, np.result_type(*[a.dtype for a in args])


def _sum_by_key(keys, values, upper=None):
    """``(unique sorted keys, sums)``: the slices ``values[i]`` added per int64 ``keys[i]``.

    Numba kernels serve every such merge: row_sparse and csr ``add_n`` (the engine's
    gradient merging) and the gradients of ``take`` and ``Embedding``. Keys known to lie in
    ``[0, upper)`` (row ids) are numbered in linear time (``unique_slots``: a bitmap rank,
    or a radix sort); others by numpy's stable sort, which merges the sorted runs of
    concatenated sparse terms in linear time. ``sum_rows_by_slot`` then adds the rows up.
    """
    dtype = values.dtype
    rows = np.ascontiguousarray(values.reshape(len(keys), math.prod(values.shape[1:])))
    emb = kernels.embedding
    keys, slot = (emb.slots_in_order(keys, np.argsort(keys, kind="stable")) if upper is None
                  else emb.unique_slots(keys, upper))
    sums = emb.sum_rows_by_slot(slot, len(keys), rows).astype(dtype, copy=False)
    shape = keys.shape + values.shape[1:]
    # New memory (a view only to restore the shape): the autograd engine hands a gradient
    # it merged by ``add_n`` to the leaf's buffer without copying it.
    return keys, sums if sums.shape == shape else sums.reshape(shape)


@add_n.impl("row_sparse", ...)
def _(*args):
    shape, dtype = _common(args)
    # Each term's rows are sorted and unique: the stable sort merges those runs linearly.
    rows, data = _sum_by_key(np.concatenate([a.index_array for a in args]),
                             np.concatenate([a.values.astype(dtype, copy=False) for a in args]))
    return RowSparseNDArray(data, rows, shape, args[0].context)


@add_n.impl("csr", ...)
def _(*args):
    shape, dtype = _common(args)
    # An entry's key is its position in row-major order: sorted keys are canonical CSR.
    keys, data = _sum_by_key(
        np.concatenate([row_ids(a.indptr_array) * shape[1] + a.index_array for a in args]),
        np.concatenate([a.values.astype(dtype, copy=False) for a in args]))
    rows, cols = np.divmod(keys, max(shape[1], 1))
    indptr = np.zeros(shape[0] + 1, dtype=INDEX_DTYPE)
    np.cumsum(np.bincount(rows, minlength=shape[0]), out=indptr[1:])
    return CSRNDArray(data, cols, indptr, shape, args[0].context)


@add_n.impl("*", ...)  # any mix of stypes: each term is added natively, by its stype
def _(*args):
    shape, dtype = _common(args)
    out = np.zeros(shape, dtype=dtype)
    for a in args:
        if a.stype == "default":
            out += a.values
        elif a.stype == "row_sparse":
            out[a.index_array] += a.values  # rows are unique: no repeated index in one +=
        else:
            out[row_ids(a.indptr_array), a.index_array] += a.values  # (row, col) pairs are unique
    return NDArray(out, args[0].context)


@add_n.vjp
def _(node, g):
    """The output gradient, as is, for every term (the engine casts it at each leaf)."""
    return (g,) * len(node.inputs)


# -- zeros_like / ones_like ---------------------------------------------------------------------

zeros_like = Op("zeros_like", ("data",), doc="""\
Zeros of ``data``'s shape, dtype and storage type (a sparse result stores nothing).""")
ones_like = Op("ones_like", ("data",), doc="Dense ones of ``data``'s shape and dtype.")


@zeros_like.infer
def _(data):
    return data


@zeros_like.impl("default")
@zeros_like.impl("csr")
@zeros_like.impl("row_sparse")
def _(data):
    return zeros_sparse(data.stype, data.shape, data.context, data.dtype)


@ones_like.infer
def _(data):
    return "default"


@ones_like.impl("default")
@ones_like.impl("csr")
@ones_like.impl("row_sparse")
def _(data):
    return NDArray(np.ones(data.shape, dtype=data.dtype), data.context)


for _op in (zeros_like, ones_like):
    _op.shape(same_shape)
    _op.grad_stype(lambda data: (None,))
    _op.vjp(lambda node, g: None)  # the output does not depend on the input's values
del _op


# -- the gradient of a CSR leaf -----------------------------------------------------------------

def values_at(grad, like):
    """``grad`` (any stype, ``like``'s shape) sampled at the stored entries of CSR ``like``:
    a CSR array of ``like``'s pattern (explicit zeros kept) and ``grad``'s dtype. This is
    the gradient with respect to ``like``'s stored values, which a CSR leaf with a csr
    gradient slot receives (docs/mxnet-compat.md, "Gradient of a CSR input"). ``grad``
    already of that pattern is returned as it is. Reads O(nnz) values of ``grad`` (a row
    lookup when row_sparse); never densifies."""
    indptr, indices = like.indptr_array, like.index_array
    if grad.stype == "csr" and (grad.indptr_array is indptr
                                or np.array_equal(grad.indptr_array, indptr)) \
            and (grad.index_array is indices or np.array_equal(grad.index_array, indices)):
        return grad
    rows = row_ids(indptr)
    if grad.stype == "default":
        values = grad.values[rows, indices]
    elif grad.stype == "row_sparse":
        stored = grad.index_array
        pos = np.minimum(np.searchsorted(stored, rows), max(len(stored) - 1, 0))
        found = stored[pos] == rows if len(stored) else np.zeros(len(rows), bool)
        values = np.where(found, grad.values[pos, indices] if len(stored) else 0, 0)
    else:  # csr of another pattern: look each entry up in grad's row
        m = grad.asscipy()
        values = np.asarray(m[rows, indices]).ravel() if len(rows) else np.empty(0)
    return CSRNDArray(values.astype(grad.dtype, copy=False), indices.copy(), indptr.copy(),
                      like.shape, like.context)
