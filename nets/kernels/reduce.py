"""Sums of short dense rows (and of the products of two rows), rows scaled by a vector,
sums of squares of rows, and column reductions of a CSR matrix (implicit zeros
included).

CSR row reductions need no kernel: ``ufunc.reduceat`` over the non-empty rows' slices of
``data`` is vectorised and beats a scalar loop once rows hold a few dozen values.
Columns scatter into random positions; one pass here also counts the values per column,
where numpy needs ``np.bincount``/``np.maximum.at`` plus a separate count.

Invariants the caller guarantees (``csr_col_reduce``): ``data`` is 1-D float,
``indices`` int64 with every value in ``[0, ncols)``, ``len(indices) == len(data)``.
"""
import numpy as np

from ._jit import jit

SUM, MAX, MIN = 0, 1, 2


@jit(reassoc=True)
def row_sums(a):
    """``out[i] = a[i].sum()`` for 2-D float ``a``. Meant for short rows: numpy's reduce
    pays an inner-loop call per row there; each row is summed in one running sum per SIMD
    lane, as accurate as numpy's pairwise sum (8 running sums) on rows this short."""
    n, m = a.shape
    out = np.empty(n, a.dtype)
    for i in range(n):
        s = a.dtype.type(0)
        for j in range(m):
            s += a[i, j]
        out[i] = s
    return out


@jit(reassoc=True)
def row_dots(a, b):
    """``out[i] = (a[i] * b[i]).sum()`` for 2-D float ``a`` and ``b`` of one shape and
    dtype, without the product array: each product rounded to the dtype, then added as
    ``row_sums`` adds a row (the same loop, so the same running sums per SIMD lane; no
    contraction into fused multiply-adds), giving ``row_sums(a * b)`` bit for bit."""
    n, m = a.shape
    out = np.empty(n, a.dtype)
    for i in range(n):
        s = a.dtype.type(0)
        for j in range(m):
            s += a[i, j] * b[i, j]
        out[i] = s
    return out


@jit
def scale_rows(g, x):
    """``out[i, j] = g[i] * x[i, j]`` for 1-D ``g`` and 2-D ``x`` of one float dtype:
    numpy's ``g[:, None] * x`` without its inner-loop call per row."""
    n, m = x.shape
    out = np.empty((n, m), x.dtype)
    for i in range(n):
        gi = g[i]
        for j in range(m):
            out[i, j] = gi * x[i, j]
    return out


@jit(reassoc=True)
def row_square_sums(a, out, lo, hi):
    """``out[i] = (a[i] ** 2).sum()`` for ``i`` in ``[lo, hi)``; ``a`` 2-D C-contiguous float,
    ``out`` 1-D of ``a``'s dtype and length. One pass over ``a``'s rows, no squared copy;
    each row summed in one running sum per SIMD lane (the caller keeps rows short enough
    for that to be as accurate as numpy's pairwise sum)."""
    m = a.shape[1]
    for i in range(lo, hi):
        s = a.dtype.type(0)
        for j in range(m):
            x = a[i, j]
            s += x * x
        out[i] = s


@jit
def csr_col_reduce(data, indices, nrows, ncols, kind):
    """``out[j]`` reduces the ``nrows`` elements of column ``j`` (``kind``: SUM, MAX or MIN).

    A column with fewer than ``nrows`` stored values also holds a zero, so its
    max is ``max(0, stored max)``; an empty column gives 0. NaN propagates.
    """
    if kind == SUM:
        acc = np.zeros(ncols, dtype=np.float64)  # float64: long float32 columns keep precision
        for k in range(len(data)):
            acc[indices[k]] += data[k]
        return acc.astype(data.dtype)
    out = np.zeros(ncols, dtype=data.dtype)
    seen = np.zeros(ncols, dtype=np.int64)
    for k in range(len(data)):
        j = indices[k]
        v = data[k]
        # `not v <= m` is true for a larger v and for a NaN v; a NaN m is never replaced
        if seen[j] == 0 or (out[j] == out[j] and (not v <= out[j] if kind == MAX
                                                   else not v >= out[j])):
            out[j] = v
        seen[j] += 1
    for j in range(ncols):
        if 0 < seen[j] < nrows and (out[j] < 0 if kind == MAX else out[j] > 0):
            out[j] = 0
    return out
