"""CSR x dense products: the forward pass and the weight gradient of a sparse first layer.

Invariants every kernel here trusts (the operator validates first):
- a CSR matrix comes as ``(indptr, indices, data)``: int64 ``indptr`` of length rows + 1,
  non-decreasing from 0 to nnz; int64 ``indices`` in range, sorted and unique within a row
  (``csr_t_dense`` takes int64 ``slot`` in ``[0, n_slots)`` in place of ``indices``);
- the dense operand ``w`` is 2-D, C-contiguous, of ``data``'s dtype, and its contracted axis
  matches the CSR matrix (``w.shape[0] == cols`` or ``== rows``, as each kernel says).

All serial: on 2 cores ``parallel=True`` won at best 0.1 ms on the 512 x 10^6 benchmark
batch, and when another process held the second core the OpenMP barrier made ``csr_dense``
50x slower (12 ms vs 0.23 ms; see benchmarks/README.md).
"""
import numpy as np

from ._jit import jit


@jit
def csr_dense(indptr, indices, data, w):
    """``X @ w`` -> dense ``(rows, w.shape[1])``; ``w.shape[0] == cols``.

    Each output row is a sum of scaled contiguous rows of ``w``.
    """
    rows, n = len(indptr) - 1, w.shape[1]
    out = np.zeros((rows, n), dtype=w.dtype)
    for i in range(rows):
        for p in range(indptr[i], indptr[i + 1]):
            v, r = data[p], indices[p]
            for j in range(n):
                out[i, j] += v * w[r, j]
    return out


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
def csr_t_dense(indptr, slot, data, w, n_slots):
    """``X.T @ w`` restricted to the touched columns -> ``(n_slots, w.shape[1])``.

    ``slot[p]`` is the output row of CSR entry ``p`` (the position of its column among the
    sorted unique columns, from ``np.unique(indices, return_inverse=True)``), ``n_slots``
    the number of unique columns and ``w.shape[0] == rows``. Memory is O(nnz + touched * n),
    never O(cols * n).
    """
    n = w.shape[1]
    block = np.zeros((n_slots, n), dtype=w.dtype)
    for i in range(len(indptr) - 1):
        for p in range(indptr[i], indptr[i + 1]):
            v, k = data[p], slot[p]
            for j in range(n):
                block[k, j] += v * w[i, j]
    return block
