"""``kernels.elemwise`` pattern merges called directly on edge cases, checked against sets
(run by test_boundscheck.py with NUMBA_BOUNDSCHECK=1 too)."""
import numpy as np
import pytest

from nets import kernels, nd


def pattern(rows):
    """(indptr, indices) int64 of a list of per-row sorted column lists."""
    indptr = np.zeros(len(rows) + 1, np.int64)
    np.cumsum([len(r) for r in rows], out=indptr[1:])
    return indptr, np.array([c for r in rows for c in r], np.int64)


CASES = {
    "no rows": ([], []),
    "both empty": ([[], [], []], [[], [], []]),
    "lhs empty": ([[], [], []], [[0, 3], [], [4]]),
    "rhs empty": ([[1], [0, 2], []], [[], [], []]),
    "identical": ([[0, 1, 2], [], [4]], [[0, 1, 2], [], [4]]),
    "disjoint": ([[0, 2], [1]], [[1, 3], [0, 2]]),
    "interleaved": ([[0, 2, 4, 6]], [[1, 2, 3, 6, 7]]),
    "one row, last column": ([[9]], [[0, 9]]),
    "full rows": ([[0, 1, 2], [0, 1, 2]], [[0, 1, 2], [0, 1, 2]]),
    "last row only": ([[], [], [5]], [[], [], [0, 5]]),
    "lhs longer": ([[0, 1, 2, 3, 8]], [[3]]),
}


@pytest.mark.parametrize("a_rows, b_rows", CASES.values(), ids=CASES.keys())
def test_union_pattern(a_rows, b_rows):
    (a_ptr, a_idx), (b_ptr, b_idx) = pattern(a_rows), pattern(b_rows)
    indptr, indices, a_pos, b_pos = kernels.elemwise.union_pattern(a_ptr, a_idx, b_ptr, b_idx)
    want_ptr, want_idx = pattern([sorted(set(a) | set(b)) for a, b in zip(a_rows, b_rows)])
    assert np.array_equal(indptr, want_ptr) and np.array_equal(indices, want_idx)
    assert indices.dtype == indptr.dtype == a_pos.dtype == b_pos.dtype == np.int64
    for ptr, idx, pos in ((a_ptr, a_idx, a_pos), (b_ptr, b_idx, b_pos)):
        assert np.array_equal(indices[pos], idx)  # every entry lands on its own column...
        for r in range(len(ptr) - 1):  # ...within its own row
            assert np.all((pos[ptr[r]:ptr[r + 1]] >= indptr[r])
                          & (pos[ptr[r]:ptr[r + 1]] < indptr[r + 1]))


@pytest.mark.parametrize("a_rows, b_rows", CASES.values(), ids=CASES.keys())
def test_intersect_pattern(a_rows, b_rows):
    (a_ptr, a_idx), (b_ptr, b_idx) = pattern(a_rows), pattern(b_rows)
    indptr, a_sel, b_sel = kernels.elemwise.intersect_pattern(a_ptr, a_idx, b_ptr, b_idx)
    want_ptr, want_idx = pattern([sorted(set(a) & set(b)) for a, b in zip(a_rows, b_rows)])
    assert np.array_equal(indptr, want_ptr)
    assert np.array_equal(a_idx[a_sel], want_idx) and np.array_equal(b_idx[b_sel], want_idx)
    rows = np.repeat(np.arange(len(a_rows)), np.diff(want_ptr))
    assert np.array_equal(np.searchsorted(a_ptr, a_sel, "right") - 1, rows)  # same row
    assert np.array_equal(np.searchsorted(b_ptr, b_sel, "right") - 1, rows)


@pytest.mark.parametrize("a_rows, b_rows", [([0, 3, 4], [1, 3, 5]), ([], [0]), ([7], [])])
def test_row_sparse_ids_are_a_one_row_pattern(a_rows, b_rows):
    a = nd.sparse.row_sparse_array((np.ones((len(a_rows), 2)), a_rows), shape=(8, 2))
    b = nd.sparse.row_sparse_array((np.full((len(b_rows), 2), 2.0), b_rows), shape=(8, 2))
    total, prod = a + b, a * b
    assert total.indices.asnumpy().tolist() == sorted(set(a_rows) | set(b_rows))
    assert prod.indices.asnumpy().tolist() == sorted(set(a_rows) & set(b_rows))
    assert np.array_equal(total.asnumpy(), a.asnumpy() + b.asnumpy())
    assert np.array_equal(prod.asnumpy(), a.asnumpy() * b.asnumpy())
