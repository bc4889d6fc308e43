"""``nets.data.make_sparse_dataset``: the synthetic sparse problems of examples and the CLI,
checked against numpy computations on the returned arrays."""
import numpy as np
import pytest

import nets
from nets.base import NetsError
from nets.data import make_sparse_dataset


def _rows(X):
    indptr, indices = X.indptr.asnumpy(), X.indices.asnumpy()
    return [indices[indptr[i]:indptr[i + 1]] for i in range(X.shape[0])]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rows_hold_exactly_nnz_distinct_sorted_features(dtype):
    X, y, w = make_sparse_dataset(300, 50, 7, seed=1, dtype=dtype)
    assert X.stype == "csr" and X.shape == (300, 50) and X.dtype == np.dtype(dtype)
    for cols in _rows(X):
        assert len(cols) == 7 and np.all(np.diff(cols) > 0) and cols.min() >= 0
        assert cols.max() < 50
    values = X.data.asnumpy()
    assert np.all((values > 0) & (values <= 1))
    assert y.shape == (300,) and w.shape == (50,) and y.dtype == w.dtype == np.dtype(dtype)
    X.check_format(full_check=True)


def test_every_feature_when_nnz_equals_the_feature_count():
    X, _, _ = make_sparse_dataset(5, 6, 6, seed=0)
    for cols in _rows(X):
        np.testing.assert_array_equal(cols, np.arange(6))


def test_no_features():
    X, y, _ = make_sparse_dataset(4, 10, 0, seed=0)
    assert X.shape == (4, 10) and X.nnz == 0 and y.shape == (4,)


def test_feature_frequencies_follow_a_power_law():
    X, _, _ = make_sparse_dataset(4000, 1000, 5, seed=2)
    counts = np.sort(np.bincount(X.indices.asnumpy(), minlength=1000))[::-1]
    # rank 1 is drawn with probability 1 / H(1000, 1.05) ~ 0.15 per draw: in most rows
    assert counts[0] > 0.3 * 4000
    assert counts[0] > 10 * counts[99]  # (100 ** 1.05 ~ 126 times rarer per draw)


def test_labels_follow_the_hidden_model():
    X, y, w = make_sparse_dataset(3000, 40, 6, task="regression", seed=3)
    scores = X.asnumpy().astype(np.float64) @ w.asnumpy()
    residual = y.asnumpy() - scores
    assert abs(residual.mean()) < 0.02 and 0.08 < residual.std() < 0.12

    X, y, w = make_sparse_dataset(500, 40, 6, task="multiclass", n_classes=4, seed=4)
    assert w.shape == (40, 4)
    np.testing.assert_array_equal(y.asnumpy(), np.argmax(X.asnumpy() @ w.asnumpy(), axis=1))

    X, y, w = make_sparse_dataset(4000, 40, 6, task="binary", seed=5)
    labels, scores = y.asnumpy(), X.asnumpy() @ w.asnumpy()
    assert set(np.unique(labels)) <= {0.0, 1.0}
    assert labels[scores > 2].mean() > 0.8 and labels[scores < -2].mean() < 0.2


def test_seeds_make_it_reproducible():
    a, b = make_sparse_dataset(50, 30, 4, seed=7), make_sparse_dataset(50, 30, 4, seed=7)
    nets.random.seed(11)
    c = make_sparse_dataset(50, 30, 4)
    nets.random.seed(11)
    d = make_sparse_dataset(50, 30, 4)
    for first, second in ((a, b), (c, d)):
        for u, v in zip(first, second):
            np.testing.assert_array_equal(u.asnumpy(), v.asnumpy())


@pytest.mark.parametrize("kwargs, message", [
    ({"task": "ranking"}, "task='ranking'"),
    ({"nnz_per_row": 11}, "nnz_per_row=11"),
    ({"nnz_per_row": -1}, "nnz_per_row=-1"),
])
def test_bad_arguments_are_named(kwargs, message):
    args = {"n_samples": 3, "n_features": 10, "nnz_per_row": 2, **kwargs}
    with pytest.raises(NetsError, match=message):
        make_sparse_dataset(**args)
