"""``RowSparseNDArray.insert_rows``: stored rows are added as zeros, values never change,
indices stay canonical (sorted, unique, int64)."""
import numpy as np
import pytest

import nets
from nets import nd

SHAPE = (8, 3)
ROWS = [1, 4, 6]


def _rsp(dtype=np.float32, shape=SHAPE, rows=ROWS):
    data = np.arange(len(rows) * int(np.prod(shape[1:])), dtype=dtype).reshape(
        (len(rows),) + shape[1:]) + 1
    return nd.sparse.row_sparse_array((data, rows), shape=shape), data


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("new", [[0], [7, 2], [2, 2, 5, 4], np.array([3.0, 5.0])])
def test_inserts_missing_rows_as_zeros(dtype, new):
    a, data = _rsp(dtype)
    before = a.asnumpy()
    assert a.insert_rows(new) is True
    expected_rows = sorted(set(ROWS) | {int(r) for r in new})
    assert a.indices.asnumpy().tolist() == expected_rows
    assert a.indices.dtype == np.int64 and a.dtype == dtype
    assert np.array_equal(a.asnumpy(), before)  # values unchanged: new rows are zero
    stored = a.data.asnumpy()
    for k, r in enumerate(expected_rows):
        want = data[ROWS.index(r)] if r in ROWS else np.zeros(SHAPE[1:], dtype)
        assert np.array_equal(stored[k], want)
    a.check_format(full_check=True)


@pytest.mark.parametrize("rows", [[], [4], [6, 1], [1, 1, 4]])
def test_stored_rows_change_nothing(rows):
    a, data = _rsp()
    storage = a.data.asnumpy()
    assert a.insert_rows(rows) is False
    assert a.indices.asnumpy().tolist() == ROWS
    assert np.array_equal(a.data.asnumpy(), storage)


def test_empty_array_and_higher_rank():
    a = nd.sparse.zeros("row_sparse", (5, 2, 3))
    assert a.insert_rows([3, 0]) is True
    assert a.indices.asnumpy().tolist() == [0, 3]
    assert a.data.shape == (2, 2, 3) and not a.data.asnumpy().any()
    a.check_format(full_check=True)


@pytest.mark.parametrize("bad, match", [([8], "row 8 is out of range for 8 rows"),
                                        ([-1, 2], "row -1 is out of range"),
                                        ([1.5], "rows must hold integers")])
def test_bad_rows_raise(bad, match):
    a, _ = _rsp()
    with pytest.raises(nets.NetsError, match=match):
        a.insert_rows(bad)
    assert a.indices.asnumpy().tolist() == ROWS  # unchanged


@pytest.mark.parametrize("stored", [[], [0, 2, 5, 7], list(range(8))])
@pytest.mark.parametrize("rows", [list(range(8)), [7, 0, 3, 3], [6]])
def test_merge_of_sorted_ids_against_a_set_oracle(stored, rows):
    """The stored rows after insertion are the set union (a linear merge of sorted ids);
    values stay where they were; a full array takes nothing and still checks the ids."""
    a, data = _rsp(np.float64, rows=stored)
    before = a.asnumpy()
    want = sorted(set(stored) | set(rows))
    assert a.insert_rows(rows) is (want != stored)
    assert a.indices.asnumpy().tolist() == want
    assert np.array_equal(a.asnumpy(), before)
    a.check_format(full_check=True)
    if len(want) == SHAPE[0]:
        with pytest.raises(nets.NetsError, match="row 8 is out of range for 8 rows"):
            a.insert_rows([1, 8])
