"""Deterministic data for ``benchmarks/run.py``: every framework of a workload trains on the
same arrays, generated once per run (seeded) and cached as ``.npz``/LibSVM files.

Sizes (``quick`` shrinks W2-W4 for a smoke run; W1 is small already):

- W1, MXNet's Gluon sparse tutorial: 1000 rows x 1,000,000 features, 10 distinct uniform
  columns per row, values uniform in (0, 1), label ``rowsum > mean(rowsum)``, written as a
  LibSVM file (nets reads it with ``LibSVMIter``).
- W2, click-through: 200,000 rows x 1,000,000 features, exactly 30 distinct features per
  row drawn from a truncated Zipf law (s = 1.05) scattered over the id space, values
  uniform in (0, 1), labels Bernoulli(sigmoid(x . w_true)): ``nets.test_utils.
  make_sparse_dataset``. Also written as a LibSVM file for W4 (~84 MB).
- W3, matrix factorization: 2,000,000 ratings of 100,000 users (uniform) x 50,000 items
  (popularity ~ 1 / rank^1.05 over a permuted id space), rating ``3 + u . v`` of hidden
  rank-8 factors plus N(0, 0.5^2) noise, clipped to [1, 5].

The arrays are plain numpy (CSR as ``indptr``/``indices``/``data``), so a reference
framework's worker never imports nets.
"""
import os
import tempfile

import numpy as np

W1 = {"rows": 1000, "features": 1_000_000, "nnz": 10, "batch": 10, "hidden": (128, 8)}
W2 = {"rows": 200_000, "quick_rows": 20_000, "features": 1_000_000, "nnz": 30, "zipf": 1.05,
      "batch": 512, "units": 64, "lr": 0.01}
W3 = {"users": 100_000, "items": 50_000, "ratings": 2_000_000, "quick_ratings": 200_000,
      "dim": 32, "batch": 1024, "zipf": 1.05, "sgd_lr": 0.05, "adam_lr": 0.01}
SEED = 20240601


def add_data_dir(parser):
    """The ``--data-dir`` option of a benchmark: where the generated workloads are cached
    between runs (one folder for every benchmark, so each is made once)."""
    parser.add_argument("--data-dir", default=os.path.join(tempfile.gettempdir(),
                                                           "nets-bench-data"),
                        help="where generated data is cached between runs")


def _path(data_dir, name):
    os.makedirs(data_dir, exist_ok=True)
    return os.path.join(data_dir, name)


def _cached(path, make):
    """The arrays saved at ``path``, made (and saved) by ``make()`` the first time."""
    if not os.path.exists(path):
        tmp = path + ".tmp.npz"
        np.savez(tmp, **make())
        os.replace(tmp, path)
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def w1_arrays(data_dir):
    """W1 as CSR arrays and labels (the tutorial's ``rand_ndarray(..., density=1e-5)``)."""
    def make():
        rng = np.random.default_rng(SEED + 1)
        rows, cols, nnz = W1["rows"], W1["features"], W1["nnz"]
        picked = []
        for draws in rng.integers(0, cols, (rows, 2 * nnz)):  # first nnz distinct draws
            picked.append(np.sort(np.fromiter(dict.fromkeys(draws.tolist()), np.int64)[:nnz]))
        data = rng.random(rows * nnz, dtype=np.float32)
        data[data == 0] = 0.5
        indptr = np.arange(rows + 1, dtype=np.int64) * nnz
        rowsum = np.add.reduceat(data, indptr[:-1])
        return {"indptr": indptr, "indices": np.concatenate(picked), "data": data,
                "label": (rowsum > rowsum.mean()).astype(np.float32)}
    return _cached(_path(data_dir, "w1.npz"), make)


def w1_libsvm(data_dir):
    """Path of W1 written as a LibSVM file (zero-based, as MXNet's LibSVMIter reads)."""
    path = _path(data_dir, "w1.libsvm")
    if not os.path.exists(path):
        _save_libsvm(path, w1_arrays(data_dir), W1["features"])
    return path


def w2_arrays(data_dir, quick):
    """W2 as CSR arrays and 0/1 labels (``make_sparse_dataset``, binary task)."""
    rows = W2["quick_rows"] if quick else W2["rows"]

    def make():
        from nets.test_utils import make_sparse_dataset
        X, y, _ = make_sparse_dataset(rows, W2["features"], W2["nnz"], task="binary",
                                      zipf_s=W2["zipf"], seed=SEED + 2)
        return {"indptr": X._indptr, "indices": X._indices, "data": X._data,
                "label": y.asnumpy()}
    return _cached(_path(data_dir, f"w2_{rows}.npz"), make)


def w2_libsvm(data_dir, quick):
    """Path of W2 written as a LibSVM file (W4 parses it)."""
    rows = W2["quick_rows"] if quick else W2["rows"]
    path = _path(data_dir, f"w2_{rows}.libsvm")
    if not os.path.exists(path):
        _save_libsvm(path, w2_arrays(data_dir, quick), W2["features"])
    return path


def w3_arrays(data_dir, quick):
    """W3 ratings: int64 ``user``/``item`` ids and float32 ``rating`` per sample."""
    n = W3["quick_ratings"] if quick else W3["ratings"]

    def make():
        rng = np.random.default_rng(SEED + 3)
        n_users, n_items, rank = W3["users"], W3["items"], 8
        p = 1.0 / np.arange(1, n_items + 1) ** W3["zipf"]
        ranks = np.searchsorted(np.cumsum(p / p.sum()), rng.random(n))
        items = rng.permutation(n_items)[np.minimum(ranks, n_items - 1)].astype(np.int64)
        users = rng.integers(0, n_users, n, dtype=np.int64)
        u = rng.normal(0, rank ** -0.25, (n_users, rank))
        v = rng.normal(0, rank ** -0.25, (n_items, rank))
        score = 3.0 + np.einsum("ij,ij->i", u[users], v[items]) + rng.normal(0, 0.5, n)
        return {"user": users, "item": items,
                "rating": np.clip(score, 1, 5).astype(np.float32)}
    return _cached(_path(data_dir, f"w3_{n}.npz"), make)


def _save_libsvm(path, arrays, n_features):
    from nets.data import save_libsvm
    from nets.arrays.csr import CSRNDArray
    X = CSRNDArray(arrays["data"], arrays["indices"], arrays["indptr"],
                   (len(arrays["indptr"]) - 1, n_features))
    tmp = path + ".tmp"
    save_libsvm(tmp, X, arrays["label"])
    os.replace(tmp, path)


def batches(arrays, batch):
    """``(start, stop)`` of each full batch of a workload's rows (the last partial one is
    dropped, so every framework sees the same batches)."""
    n = len(arrays["indptr"]) - 1 if "indptr" in arrays else len(arrays["rating"])
    return [(s, s + batch) for s in range(0, n - batch + 1, batch)]
