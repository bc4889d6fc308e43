"""Synthetic sparse learning problems, for examples, the ``nets`` command and tests: a CSR
design matrix with power-law feature frequencies, the hidden model and its labels."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Tuple

import numpy as np

from ..base import NetsError, as_dtype
from ..arrays.csr import CSRNDArray
from ..arrays.dense import NDArray
from ..random import generator

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

__all__ = ["make_sparse_dataset"]


def make_sparse_dataset(n_samples: int, n_features: int, nnz_per_row: int,
                        task: str = "binary", n_classes: int = 2, zipf_s: float = 1.05,
                        seed: Optional[int] = None, dtype: DTypeLike = "float32",
                        signal: float = 1.0) -> Tuple[CSRNDArray, NDArray, NDArray]:
    """A synthetic sparse learning problem: ``(X, y, w)``.

    ``X`` is a CSR ``(n_samples, n_features)`` matrix with exactly ``nnz_per_row`` distinct
    features per row and values uniform in (0, 1). Features have power-law frequencies: the
    feature of popularity rank k is drawn with probability proportional to ``1 / k**zipf_s``
    (a truncated Zipf law; the ranks are spread over a random permutation of the ids), a row
    keeping its first ``nnz_per_row`` distinct draws. ``w`` is the hidden model, standard
    normal: ``(n_features,)``, or ``(n_features, n_classes)`` for ``task='multiclass'``.
    Labels: ``'binary'`` 0/1 drawn from ``sigmoid(signal * X @ w)``, ``'regression'``
    ``X @ w + N(0, 0.1**2)``, ``'multiclass'`` ``argmax(X @ w)``; a larger ``signal`` makes
    binary labels less noisy (more learnable). The draws are vectorised
    numpy; only rows still short of distinct features after four rounds are drawn one by
    one. ``seed=None`` draws from ``nets.random``.

    Parameters
    ----------
    n_samples : int
        Rows.
    n_features : int
        Columns.
    nnz_per_row : int
        Distinct features per row, in ``[0, n_features]``.
    task : {'binary', 'regression', 'multiclass'}
        How the labels are drawn.
    n_classes : int
        Classes, for ``'multiclass'``.
    zipf_s : float
        The power law's exponent (larger: a few features more popular).
    seed : int, optional
        Seeds a generator of its own (None: ``nets.random``).
    dtype : str or numpy dtype
        The float dtype of ``X``, ``y`` and ``w``.
    signal : float
        Scales the scores before binary labels are drawn.

    Returns
    -------
    (CSRNDArray, NDArray, NDArray)
        ``X``, ``y`` and ``w``.
    """
    if task not in ("binary", "regression", "multiclass"):
        raise NetsError(f"task={task!r}: expected 'binary', 'regression' or 'multiclass'")
    if not 0 <= nnz_per_row <= n_features:
        raise NetsError(f"nnz_per_row={nnz_per_row} must be in [0, n_features={n_features}]")
    rng = generator() if seed is None else np.random.default_rng(seed)
    dtype = as_dtype(dtype)
    cdf = np.cumsum(1.0 / np.arange(1, n_features + 1) ** zipf_s)
    cdf /= cdf[-1]
    guide = np.searchsorted(cdf, np.arange(n_features) / n_features)  # Chen's guide table
    ids = rng.permutation(n_features)

    def draw(shape):  # inverse-CDF sampling: the guide table's rank, then a short walk up
        u = rng.random(shape).reshape(-1)
        k = guide[(u * n_features).astype(np.int64)]
        todo = np.flatnonzero(cdf[k] < u)
        while todo.size:
            k[todo] += 1
            todo = todo[cdf[k[todo]] < u[todo]]
        return ids[k].reshape(shape)

    cols = np.zeros((n_samples, nnz_per_row), np.int64)
    todo, draws = np.arange(n_samples if nnz_per_row else 0), nnz_per_row * 3 // 2 + 8
    for _ in range(4):  # rows short of distinct features draw again, more
        if not todo.size:
            break
        cand = draw((todo.size, draws))
        key = np.sort(cand * draws + np.arange(draws), axis=1)  # by feature, then draw order
        first = np.ones(key.shape, bool)
        first[:, 1:] = key[:, 1:] // draws != key[:, :-1] // draws
        mark = np.zeros(key.shape, bool)  # first draws of each feature, in draw order
        mark[np.nonzero(first)[0], key[first] % draws] = True
        done = first.sum(axis=1) >= nnz_per_row
        keep = mark[done] & (np.cumsum(mark[done], axis=1) <= nnz_per_row)
        cols[todo[done]] = np.sort(cand[done][keep].reshape(-1, nnz_per_row), axis=1)
        todo, draws = todo[~done], 2 * draws
    p = np.diff(cdf, prepend=0.0)
    for i in todo:  # rare (n_features close to nnz_per_row): exact weighted draws
        cols[i] = np.sort(rng.choice(ids, nnz_per_row, replace=False, p=p))
    values = rng.random(cols.shape, dtype=np.float32)
    values[values == 0] = 0.5
    X = CSRNDArray(values.reshape(-1).astype(dtype), cols.reshape(-1),
                   np.arange(n_samples + 1, dtype=np.int64) * nnz_per_row, (n_samples, n_features))
    w = rng.normal(size=(n_features, n_classes) if task == "multiclass" else n_features)
    rows = np.repeat(np.arange(n_samples), nnz_per_row)
    contrib = values.reshape(-1, 1) * w.reshape(n_features, -1)[cols.reshape(-1)]
    scores = np.stack([np.bincount(rows, contrib[:, k], minlength=n_samples)
                       for k in range(contrib.shape[1])], axis=1)
    if task == "binary":
        y = (rng.random(n_samples) < 1.0 / (1.0 + np.exp(-signal * scores[:, 0]))).astype(dtype)
    elif task == "regression":
        y = (scores[:, 0] + rng.normal(0.0, 0.1, n_samples)).astype(dtype)
    else:
        y = np.argmax(scores, axis=1).astype(dtype)
    return X, NDArray(y), NDArray(w.astype(dtype))
