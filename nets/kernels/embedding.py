"""Rows summed per id: the Embedding / ``take`` weight gradient and the merge of
row_sparse (and csr) terms in ``add_n``, which is how autograd sums gradients.

Invariants (the operator checks first): ``ids`` is 1-D int64 (any values, any order,
repeats allowed: the kernel only compares them, never indexes with them); ``order`` is
a permutation of ``range(len(ids))`` (int64) listing ``ids`` in ascending order;
``rows`` is 2-D, C-contiguous, with ``len(ids)`` rows.
"""
import numpy as np

from ._jit import jit


@jit
def sum_rows_by_id(ids, order, rows):
    """``(uniq, sums)``: the sorted unique ``ids`` and, per id, the sum of its ``rows``.

    The sort is the caller's (``np.argsort(ids, kind="stable")``: numpy's is adaptive,
    so the sorted runs ``add_n`` concatenates merge in linear time, ~5x faster than
    numba's mergesort); one pass then adds each row into its group's sum. With 64
    columns this is 9x (1024 random ids) to 20x (two 10000-row terms) faster than
    gathering the sorted rows for ``np.add.reduceat``; 1-1.3x with one column (csr).
    """
    n, d = rows.shape
    groups = 0
    for k in range(n):
        if k == 0 or ids[order[k]] != ids[order[k - 1]]:
            groups += 1
    uniq = np.empty(groups, np.int64)
    sums = np.zeros((groups, d), rows.dtype)
    u = -1
    for k in range(n):
        i = order[k]
        if k == 0 or ids[i] != ids[order[k - 1]]:
            u += 1
            uniq[u] = ids[i]
        for j in range(d):
            sums[u, j] += rows[i, j]
    return uniq, sums
