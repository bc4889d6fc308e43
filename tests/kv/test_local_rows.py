"""The local store's row paths: ``row_sparse_pull`` of a batch's rows and ``training.step``'s
merge of what a push changed into a row_sparse weight, checked against numpy."""
import numpy as np
import pytest

import nets
from nets import nd
from nets.base import NetsError
from nets.kv import training


def _rsp(dense, rows):
    rows = np.asarray(rows, np.int64)
    return nd.sparse.row_sparse_array((dense[rows], rows), shape=dense.shape)


def _store(value):
    store = nets.kv.create("local")
    store.init(0, value)
    store.set_optimizer(nets.optim.SGD(learning_rate=1.0))  # w -= g, lazily by rows
    return store


@pytest.mark.parametrize("held", [range(10), [1, 4, 7, 8]])
def test_row_sparse_pull_copies_the_sorted_unique_rows_it_holds(held):
    table = np.random.default_rng(0).normal(size=(10, 3)).astype(np.float32)
    store = _store(_rsp(table, held))
    out = nd.sparse.zeros("row_sparse", (10, 3))
    store.row_sparse_pull(0, out=out, row_ids=nd.array([7, 1, 7, 9, 4], dtype="int64"))
    want = sorted({7, 1, 9, 4} & set(held))
    np.testing.assert_array_equal(out.indices.asnumpy(), want)
    np.testing.assert_array_equal(out.data.asnumpy(), table[want])
    out.data.asnumpy()[:] = 0  # a copy: the store's value is its own
    again = nd.sparse.zeros("row_sparse", (10, 3))
    store.row_sparse_pull(0, out=again, row_ids=nd.array(want, dtype="int64"))
    np.testing.assert_array_equal(again.data.asnumpy(), table[want])


@pytest.mark.parametrize("bad, why", [(10, r"row_ids\[2\]=10 is out of range \[0, 10\)"),
                                      (-1, r"row_ids\[2\]=-1 is out of range"),
                                      (2.5, r"row_ids\[2\]=2.5 is not a whole number")])
def test_row_sparse_pull_names_a_bad_row_id(bad, why):
    store = _store(nd.zeros((10, 3)).tostype("row_sparse"))
    out = nd.sparse.zeros("row_sparse", (10, 3))
    ids = nd.array([1, 2, bad], dtype="float64" if bad == 2.5 else "int64")
    with pytest.raises(NetsError, match=r"row_sparse_pull: " + why):
        store.row_sparse_pull(0, out=out, row_ids=ids)


def test_step_merges_the_changed_rows_into_the_rows_the_weight_holds():
    """The weight keeps its rows and gains the gradient's; changed rows take the store's
    values after the update, the other held rows keep the weight's own (here stale)."""
    rng = np.random.default_rng(1)
    table = rng.normal(size=(10, 3)).astype(np.float32)
    store = _store(_rsp(table, range(10)))
    stale = table.copy()
    stale[7] += 5  # a held row the update does not touch keeps this value
    weight = _rsp(stale, [1, 4, 7])
    g = rng.normal(size=(10, 3)).astype(np.float32)
    grad = _rsp(g, [0, 4])  # row 0 is new to the weight, row 4 held
    training.step(store, [(0, grad, weight)])
    np.testing.assert_array_equal(weight.indices.asnumpy(), [0, 1, 4, 7])
    want = np.stack([table[0] - g[0], stale[1], table[4] - g[4], stale[7]])
    np.testing.assert_allclose(weight.data.asnumpy(), want, rtol=1e-6)


def test_merge_ignores_changed_rows_the_weight_neither_holds_nor_updated():
    """Under ``dist_sync`` the answer lists every worker's rows: a row this worker neither
    held nor updated stays absent."""
    weight = _rsp(np.arange(12, dtype=np.float32).reshape(6, 2), [2, 5])
    grad = _rsp(np.ones((6, 2), np.float32), [5])
    answer = _rsp(np.full((6, 2), -1, np.float32), [3, 5])
    training._merge_rows(weight, grad, answer.indices.asnumpy(), answer)
    np.testing.assert_array_equal(weight.indices.asnumpy(), [2, 5])
    np.testing.assert_array_equal(weight.data.asnumpy(), [[4, 5], [-1, -1]])


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("grad_stype", ["row_sparse", "default"])
def test_merge_on_random_rows_equals_its_dense_reference(seed, grad_stype):
    """Random held, touched and answered rows (each set possibly empty or full): the weight
    ends holding held | touched; an answered row among them takes the answer's values, a
    held one the weight's own, a touched-only one the answer's (or zero if unanswered)."""
    rng = np.random.default_rng(seed)
    n, cols = int(rng.integers(1, 30)), int(rng.integers(1, 4))
    pick = [np.flatnonzero(rng.random(n) < rng.choice([0.0, 0.4, 1.0])) for _ in range(3)]
    held, touched, answered = pick
    own = rng.normal(size=(n, cols))
    new = rng.normal(size=(n, cols))
    weight = _rsp(own, held)
    grad = _rsp(np.ones((n, cols)), touched) if grad_stype == "row_sparse" else \
        nd.array(np.ones((n, cols)))
    if grad_stype == "default":
        touched = np.arange(n)
    training._merge_rows(weight, grad, answered.astype(np.int64), _rsp(new, answered))
    keep = np.union1d(held, touched)
    want = np.zeros((n, cols))
    want[held] = own[held]
    want[answered] = new[answered]
    np.testing.assert_array_equal(weight.indices.asnumpy(), keep)
    np.testing.assert_array_equal(weight.data.asnumpy(), want[keep])
