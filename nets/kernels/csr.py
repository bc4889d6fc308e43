"""CSR x dense products: the forward pass and the weight gradient of a sparse first layer.

Invariants every kernel here trusts (the operator validates first):
- a CSR matrix comes as ``(indptr, indices, data)``: int64 ``indptr`` of length rows + 1,
  non-decreasing from 0 to nnz; int64 ``indices`` in range, sorted and unique within a row;
- the dense operand ``w`` is 2-D, C-contiguous, of ``data``'s dtype, and its contracted axis
  matches the CSR matrix (``w.shape[0] == cols`` or ``== rows``, as each kernel says).

No ``parallel=True``: on 2 cores it won at best 0.1 ms on the 512 x 10^6 benchmark batch,
and when another process held the second core the OpenMP barrier made ``csr_dense`` 50x
slower (12 ms vs 0.23 ms; see benchmarks/README.md); the operator shares ``csr_dense``'s
rows between threads instead (``nets.kernels.threads``). What a loop over
scattered rows of a large weight waits for is memory latency, not bandwidth:
``prefetch_row`` asks for the rows a few iterations ahead (also used by the lazy optimizer
kernels).
"""
import numpy as np

from ._jit import PREFETCH_AHEAD, jit, prefetch_row
from .embedding import unique_slots
from .threads import claim


@jit
def csr_dense(indptr, indices, data, w, out, counter):
    """``out += X @ w`` for ``out`` of shape ``(rows, w.shape[1])``; ``w.shape[0] == cols``.

    Each output row is a sum of scaled contiguous rows of ``w``. The rows come in chunks
    from ``counter`` (``nets.kernels.threads``: threads share one call).
    """
    rows, n = len(indptr) - 1, w.shape[1]
    a, b = claim(counter, rows, 0)
    while a < b:
        end = indptr[b]
        for i in range(a, b):
            o = out[i]
            for p in range(indptr[i], indptr[i + 1]):
                if p + PREFETCH_AHEAD < end:
                    prefetch_row(w, indices[p + PREFETCH_AHEAD])
                v, wr = data[p], w[indices[p]]
                for j in range(n):
                    o[j] += v * wr[j]
        a, b = claim(counter, rows, b - a)


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


@jit
def csr_t_dense(indptr, indices, data, w, n_cols):
    """``X.T @ w`` restricted to the touched columns -> ``(cols, block)``: the sorted unique
    column ids of ``X`` (all in ``[0, n_cols)``) and ``block[k] = (X.T @ w)[cols[k]]``;
    ``w.shape[0] == rows``. Memory is O(nnz + touched * n), never O(cols * n).

    ``unique_slots`` numbers the column ids in linear time (what
    ``np.unique(indices, return_inverse=True)`` did in O(nnz log nnz), 0.3 ms on a 512 x
    10^6 batch with 15,000 entries); the rows of ``X`` are then scattered in order, each
    row of ``w`` read once.
    """
    n, nnz = w.shape[1], len(indices)
    cols, slot = unique_slots(indices, n_cols)
    block = np.zeros((len(cols), n), dtype=w.dtype)
    for i in range(len(indptr) - 1):
        wr = w[i]
        for p in range(indptr[i], indptr[i + 1]):
            if p + PREFETCH_AHEAD < nnz:
                prefetch_row(block, slot[p + PREFETCH_AHEAD])
            v, out = data[p], block[slot[p]]
            for j in range(n):
                out[j] += v * wr[j]
    return cols, block
