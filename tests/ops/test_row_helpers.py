"""``sparse_ops``' row helpers over ids already sorted and unique (``stored_rows``,
``union_rows``) and the id check they rely on callers for (``as_row_ids``), against
numpy."""
import numpy as np
import pytest

from nets import nd
from nets.base import NetsError
from nets.ops.sparse_ops import as_row_ids, stored_rows, union_rows


@pytest.mark.parametrize("held", [[1, 3, 6], list(range(8)), []])
def test_stored_rows_copies_the_listed_rows_that_are_stored(held):
    dense = np.arange(16, dtype=np.float32).reshape(8, 2) + 1
    held = np.asarray(held, np.int64)
    data = nd.sparse.row_sparse_array((dense[held], held), shape=(8, 2))
    rows = np.array([0, 3, 6, 7], np.int64)
    out = stored_rows(data, rows)
    want = [r for r in rows if r in set(held.tolist())]
    np.testing.assert_array_equal(out.indices.asnumpy(), want)
    np.testing.assert_array_equal(out.data.asnumpy(), dense[want].reshape(-1, 2))
    assert out.shape == (8, 2)
    out._data[:] = 0  # a copy: writing it leaves data alone
    np.testing.assert_array_equal(data.data.asnumpy(), dense[held].reshape(-1, 2))


@pytest.mark.parametrize("a, b", [([1, 4, 9], [0, 4, 10]), ([], [2, 3]), ([5], []),
                                  ([0, 1, 2], [0, 1, 2])])
def test_union_rows_is_the_sorted_union_with_each_ids_position(a, b):
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    union, a_at, b_at = union_rows(a, b)
    np.testing.assert_array_equal(union, np.union1d(a, b))
    np.testing.assert_array_equal(union[a_at], a)
    np.testing.assert_array_equal(union[b_at], b)


@pytest.mark.parametrize("ids, msg", [([0, 5, 3], r"op: arg\[1\]=5 is out of range \[0, 5\)"),
                                      ([[0, 1], [-2, 3]], r"arg\[1, 0\]=-2 is out of range"),
                                      ([0.0, np.nan], r"arg\[1\]=nan is not a whole number"),
                                      ([np.inf, 0.0], r"arg\[0\]=inf is out of range")])
def test_as_row_ids_names_the_first_bad_id(ids, msg):
    with pytest.raises(NetsError, match=msg):
        as_row_ids(np.asarray(ids), 5, "op", "arg")
    good = as_row_ids(np.array([4.0, 0.0]), 5, "op", "arg")
    assert good.dtype == np.int64 and good.tolist() == [4, 0]


@pytest.mark.parametrize("density", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", range(3))
def test_stored_rows_on_random_arrays_equals_the_dense_rows_it_holds(density, dtype, seed):
    """Random shapes, a held fraction ``density`` of the rows and a random sorted unique
    request: the result holds exactly the requested rows that are stored, with the dense
    reference's values (a row_sparse array's absent rows read as zero)."""
    rng = np.random.default_rng(seed)
    n, cols = int(rng.integers(1, 40)), int(rng.integers(1, 5))
    dense = rng.standard_normal((n, cols)).astype(dtype)
    held = np.flatnonzero(rng.random(n) < density) if density < 1 else np.arange(n)
    dense[np.setdiff1d(np.arange(n), held)] = 0
    data = nd.sparse.row_sparse_array((dense[held], held), shape=(n, cols))
    rows = np.unique(rng.integers(0, n, int(rng.integers(0, 2 * n)))).astype(np.int64)
    out = stored_rows(data, rows)
    want = np.intersect1d(rows, held)
    assert out.dtype == dtype and out.shape == (n, cols)
    np.testing.assert_array_equal(out.indices.asnumpy(), want)
    np.testing.assert_array_equal(out.data.asnumpy(), dense[want])
    reference = np.zeros_like(dense)
    reference[rows] = dense[rows]
    np.testing.assert_array_equal(out.asnumpy(), reference)


@pytest.mark.parametrize("seed", range(5))
def test_union_rows_on_random_id_sets_equals_numpys_union(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    a, b = (np.unique(rng.integers(0, n, int(rng.integers(0, n)))).astype(np.int64)
            for _ in range(2))
    union, a_at, b_at = union_rows(a, b)
    np.testing.assert_array_equal(union, np.union1d(a, b))
    np.testing.assert_array_equal(union[a_at], a)
    np.testing.assert_array_equal(union[b_at], b)
