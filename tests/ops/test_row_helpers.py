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
