"""CSR x dense products: the forward pass and the weight gradient of a sparse first layer.

Invariants every kernel here trusts (the operator validates first):
- a CSR matrix comes as ``(indptr, indices, data)``: int64 ``indptr`` of length rows + 1,
  non-decreasing from 0 to nnz; int64 ``indices`` in range, sorted and unique within a row;
- the dense operand ``w`` is 2-D, C-contiguous, of ``data``'s dtype, and its contracted axis
  matches the CSR matrix (``w.shape[0] == cols`` or ``== rows``, as each kernel says).

``csr_dense`` computes a row range ``[lo, hi)`` of its output, so the operator splits its
rows between threads (``nets.parallel``). What a loop over scattered rows of a large weight
waits for is memory latency, not bandwidth: ``prefetch_row`` asks for the rows a few
iterations ahead (also used by the lazy optimizer kernels).
"""
import numpy as np

from ._jit import PREFETCH_AHEAD, jit, prefetch_row
from .embedding import unique_slots


@jit
def csr_dense(indptr, indices, data, w, out, lo, hi):
    """``out[lo:hi] += (X @ w)[lo:hi]`` for ``out`` of shape ``(rows, w.shape[1])``;
    ``w.shape[0] == cols``, ``0 <= lo <= hi <= rows``; no other row of ``out`` is touched.

    Each output row is a sum of scaled contiguous rows of ``w``. A one-column ``w`` (a
    linear model's weight) sums each row in a register, adding in the same order: the
    general loop stores the running sum back at every entry, since ``out`` and ``w`` may
    share memory as far as the compiler knows.
    """
    n, end = w.shape[1], indptr[hi]
    if n == 1:
        for i in range(lo, hi):
            acc = out[i, 0]
            for p in range(indptr[i], indptr[i + 1]):
                if p + PREFETCH_AHEAD < end:
                    prefetch_row(w, indices[p + PREFETCH_AHEAD])
                acc += data[p] * w[indices[p], 0]
            out[i, 0] = acc
        return
    for i in range(lo, hi):
        o = out[i]
        for p in range(indptr[i], indptr[i + 1]):
            if p + PREFETCH_AHEAD < end:
                prefetch_row(w, indices[p + PREFETCH_AHEAD])
            v, wr = data[p], w[indices[p]]
            for j in range(n):
                o[j] += v * wr[j]


@jit
def dense_csr_t(w, indptr, indices, data):
    """``w @ X.T`` -> dense ``(w.shape[0], rows)``; ``w.shape[1] == cols``.

    This is ``(X @ w.T).T`` for MXNet's FullyConnected weight layout ``(units, in_units)``.
    Row by row of ``w``: the gathers stay inside one contiguous row instead of striding
    over all of ``w`` for every CSR entry.
    """
    units, rows = w.shape[0], len(indptr) - 1
    out = np.zeros((units, rows), dtype=w.dtype)
    for u in range(units):
        wu = w[u]
        for i in range(rows):
            acc = out[u, i]  # zero, of the output dtype
            for p in range(indptr[i], indptr[i + 1]):
                acc += data[p] * wu[indices[p]]
            out[u, i] = acc
    return out


def csr_t_dense(indptr, indices, data, w, n_cols):
    """``X.T @ w`` restricted to the touched columns -> ``(cols, block)``: the sorted unique
    column ids of ``X`` (all in ``[0, n_cols)``) and ``block[k] = (X.T @ w)[cols[k]]``;
    ``w.shape[0] == rows``. Memory is O(nnz + touched * n), never O(cols * n).

    ``unique_slots`` numbers the column ids in linear time (``np.unique(indices,
    return_inverse=True)`` takes O(nnz log nnz)); ``scatter_rows`` then adds the rows of
    ``X`` in order, each row of ``w`` read once. Two compiled kernels joined here, not one
    calling the other: numba compiles a kernel's callees into it again, and
    ``unique_slots`` also serves other operators.
    """
    cols, slot = unique_slots(indices, n_cols)
    return cols, scatter_rows(indptr, data, w, slot, len(cols))


@jit
def scatter_rows(indptr, data, w, slot, groups):
    """``block`` of shape ``(groups, w.shape[1])``: ``block[slot[p]] += data[p] * w[i]`` for
    every stored entry ``p`` of row ``i`` of the CSR pattern ``indptr``; ``slot`` has one
    value in ``[0, groups)`` per entry."""
    n, nnz = w.shape[1], len(slot)
    block = np.zeros((groups, n), dtype=w.dtype)
    for i in range(len(indptr) - 1):
        wr = w[i]
        for p in range(indptr[i], indptr[i + 1]):
            if p + PREFETCH_AHEAD < nnz:
                prefetch_row(block, slot[p + PREFETCH_AHEAD])
            v, out = data[p], block[slot[p]]
            for j in range(n):
                out[j] += v * wr[j]
    return block


@jit(reassoc=True)
def csr_sampled_dot(indptr, indices, a, b, out, lo, hi):
    """``out[p] = a[i] . b[indices[p]]`` for every stored entry ``p`` of rows ``[lo, hi)``
    (row ``i``): ``a @ b.T`` sampled at the CSR pattern, the gradient of ``dot(X, W)``
    with respect to ``X``'s stored values (``a = g``, ``b = W``). ``a`` is ``(rows, n)``,
    ``b`` is ``(cols, n)``, both C-contiguous of ``out``'s dtype; ``out`` has length nnz.
    Only the entries of rows ``[lo, hi)`` are written. O(nnz * n), never O(rows * cols)."""
    n, end = a.shape[1], indptr[hi]
    for i in range(lo, hi):
        ar = a[i]
        for p in range(indptr[i], indptr[i + 1]):
            if p + PREFETCH_AHEAD < end:
                prefetch_row(b, indices[p + PREFETCH_AHEAD])
            br = b[indices[p]]
            out[p] = 0
            acc = out[p]  # zero, of the output dtype
            for j in range(n):
                acc += ar[j] * br[j]
            out[p] = acc
