"""Pattern merges for elementwise operators on two sparse arrays of one storage type.

Invariants every kernel here trusts (the operator validates first):
- a pattern comes as ``(indptr, indices)``: int64 ``indptr`` of length rows + 1,
  non-decreasing from 0 to nnz; int64 ``indices`` sorted and unique within each row;
- both patterns have the same number of rows.
A row-sparse array's row ids are a one-row pattern: ``indptr = [0, nnz]``.
Kernels return index arrays only; the operator applies the arithmetic with numpy on the
aligned values, so one compiled merge serves every operator and dtype.
"""
import numpy as np

from ._jit import jit


@jit
def union_pattern(a_indptr, a_indices, b_indptr, b_indices):
    """Merge two sorted patterns row by row (two pointers).

    Returns ``(indptr, indices, a_pos, b_pos)``: the union pattern (sorted, unique
    within a row) and, for every stored entry of ``a`` (of ``b``), its position in it.
    """
    rows = len(a_indptr) - 1
    indptr = np.empty(rows + 1, np.int64)
    indices = np.empty(len(a_indices) + len(b_indices), np.int64)
    a_pos = np.empty(len(a_indices), np.int64)
    b_pos = np.empty(len(b_indices), np.int64)
    indptr[0] = 0
    k = 0
    for r in range(rows):
        i, i_end = a_indptr[r], a_indptr[r + 1]
        j, j_end = b_indptr[r], b_indptr[r + 1]
        while i < i_end and j < j_end:
            ca, cb = a_indices[i], b_indices[j]
            if ca <= cb:
                indices[k] = ca
                a_pos[i] = k
                i += 1
                if ca == cb:
                    b_pos[j] = k
                    j += 1
            else:
                indices[k] = cb
                b_pos[j] = k
                j += 1
            k += 1
        while i < i_end:
            indices[k] = a_indices[i]
            a_pos[i] = k
            i += 1
            k += 1
        while j < j_end:
            indices[k] = b_indices[j]
            b_pos[j] = k
            j += 1
            k += 1
        indptr[r + 1] = k
    # a view: copying would cost a third of the merge; the buffer is at most twice k
    return indptr, indices[:k], a_pos, b_pos


@jit
def intersect_pattern(a_indptr, a_indices, b_indptr, b_indices):
    """Entries stored in both patterns, row by row (two pointers).

    Returns ``(indptr, a_sel, b_sel)``: the intersection's ``indptr`` and, for each of
    its entries in order, the positions of that entry in ``a`` and in ``b``.
    """
    rows = len(a_indptr) - 1
    indptr = np.empty(rows + 1, np.int64)
    a_sel = np.empty(min(len(a_indices), len(b_indices)), np.int64)
    b_sel = np.empty(len(a_sel), np.int64)
    indptr[0] = 0
    k = 0
    for r in range(rows):
        i, i_end = a_indptr[r], a_indptr[r + 1]
        j, j_end = b_indptr[r], b_indptr[r + 1]
        while i < i_end and j < j_end:
            ca, cb = a_indices[i], b_indices[j]
            if ca == cb:
                a_sel[k] = i
                b_sel[k] = j
                k += 1
            i += ca <= cb
            j += cb <= ca
        indptr[r + 1] = k
    return indptr, a_sel[:k], b_sel[:k]
