"""``CSRNDArray``: a 2-D compressed-sparse-row matrix.

Canonical form, guaranteed by construction: ``indices``/``indptr`` are int64,
column indices within a row are sorted and unique. Kernels rely on it.
"""
import numpy as np

from ..base import INDEX_DTYPE, NetsError, ShapeError, SparseFormatError
from .base_sparse import BaseSparseNDArray, as_index, read_only
from .dense import NDArray


def row_ids(indptr):
    """The row of every stored element (length nnz), from ``indptr``."""
    return np.repeat(np.arange(len(indptr) - 1, dtype=INDEX_DTYPE), np.diff(indptr))


def dense_to_csr_parts(a):
    """``(data, indices, indptr)`` of the 2-D numpy array ``a`` (canonical order)."""
    rows, cols = np.nonzero(a)
    indptr = np.zeros(a.shape[0] + 1, dtype=INDEX_DTYPE)
    np.cumsum(np.bincount(rows, minlength=a.shape[0]), out=indptr[1:])
    return a[rows, cols], cols.astype(INDEX_DTYPE), indptr


def canonicalize_csr(data, indices, indptr, shape):
    """Check ``(data, indices, indptr)`` against ``shape`` and return canonical parts.

    Columns are sorted within each row (lossless); a duplicate (row, column)
    pair is an error, since either value could be the intended one.
    """
    data = np.asarray(data)
    indices, indptr = as_index(indices, "indices"), as_index(indptr, "indptr")
    _check_csr(data, indices, indptr, shape, full_check=True, sortedness=False)
    rows = row_ids(indptr)
    if data.size > 1:
        step = np.diff(indices)
        same_row = rows[1:] == rows[:-1]
        if np.any(same_row & (step < 0)):
            order = np.lexsort((indices, rows))
            data, indices = data[order], indices[order]
            step = np.diff(indices)
        dup = np.flatnonzero(same_row & (step == 0))
        if dup.size:
            k = dup[0]
            raise SparseFormatError(f"duplicate entry at row {rows[k]}, column {indices[k]}; "
                                    f"sum duplicates first (e.g. build from (data, (row, col)))")
    return data, indices, indptr


def _check_csr(data, indices, indptr, shape, full_check, sortedness=True):
    if len(shape) != 2:
        raise ShapeError(f"a CSR array is 2-D; shape={shape} has {len(shape)} dimensions")
    if data.ndim != 1 or indices.ndim != 1 or indptr.ndim != 1:
        raise ShapeError(f"data, indices and indptr must be 1-D, got ndim "
                         f"{data.ndim}, {indices.ndim}, {indptr.ndim}")
    if len(data) != len(indices):
        raise ShapeError(f"len(data)={len(data)} != len(indices)={len(indices)}")
    if len(indptr) != shape[0] + 1:
        raise SparseFormatError(f"len(indptr)={len(indptr)} must be shape[0] + 1 = {shape[0] + 1}")
    if indptr[0] != 0 or indptr[-1] != len(indices):
        raise SparseFormatError(f"indptr must start at 0 and end at nnz={len(indices)}, "
                                f"got indptr[0]={indptr[0]}, indptr[-1]={indptr[-1]}")
    if not full_check:
        return
    bad = np.flatnonzero(np.diff(indptr) < 0)
    if bad.size:
        raise SparseFormatError(f"indptr must be non-decreasing; indptr[{bad[0] + 1}]="
                                f"{indptr[bad[0] + 1]} < indptr[{bad[0]}]={indptr[bad[0]]}")
    bad = np.flatnonzero((indices < 0) | (indices >= shape[1]))
    if bad.size:
        raise SparseFormatError(f"column index indices[{bad[0]}]={indices[bad[0]]} is out of "
                                f"range for {shape[1]} columns")
    if sortedness and data.size > 1:
        rows = row_ids(indptr)
        bad = np.flatnonzero((rows[1:] == rows[:-1]) & (np.diff(indices) <= 0))
        if bad.size:
            k = bad[0] + 1
            raise SparseFormatError(f"column indices of row {rows[k]} are not sorted and unique "
                                    f"(indices[{k - 1}]={indices[k - 1]}, "
                                    f"indices[{k}]={indices[k]})")


class CSRNDArray(BaseSparseNDArray):
    """A 2-D CSR matrix: ``data`` (nnz,), ``indices`` (nnz,) int64, ``indptr`` (rows+1,) int64.

    Build with ``nets.nd.sparse.csr_matrix``, which validates (the class constructor trusts
    its buffers: see ``BaseSparseNDArray``).
    """

    stype = "csr"
    _parts = ("_indices", "_indptr")

    def __init__(self, data, indices, indptr, shape, ctx=None):
        self._init_meta(ctx)
        self._data, self._indices, self._indptr = data, indices, indptr
        self._shape = tuple(shape)

    _validate = staticmethod(_check_csr)

    @classmethod
    def zeros(cls, shape, dtype, ctx=None):
        """An all-zero matrix of the 2-D ``shape`` and ``dtype`` (no values stored)."""
        return cls(np.zeros(0, dtype), np.zeros(0, INDEX_DTYPE),
                   np.zeros(shape[0] + 1, INDEX_DTYPE), shape, ctx)

    @property
    def indptr(self):
        """Row pointers as an int64 ``NDArray``: a read-only view, as ``indices`` is."""
        return NDArray(read_only(self._indptr), self._ctx)

    @property
    def indptr_array(self):
        """The int64 row pointers as the array's own numpy buffer (row ``i`` stores
        ``values[indptr_array[i]:indptr_array[i + 1]]``), under ``index_array``'s contract:
        never write it (kernels trust it); ``indptr`` is the read-only view."""
        return self._indptr

    @property
    def nnz(self):
        """Number of stored values."""
        return int(self._data.size)

    def asscipy(self):
        """This matrix as ``scipy.sparse.csr_matrix`` (values shared, not copied; its
        ``indices``/``indptr`` are read-only views, or copies when scipy narrows them to
        int32, so editing them cannot break this array)."""
        import scipy.sparse as sp
        return sp.csr_matrix((self._data, read_only(self._indices), read_only(self._indptr)),
                             shape=self._shape, copy=False)

    def _scatter_into(self, dense):
        dense[row_ids(self._indptr), self._indices] = self._data

    def __getitem__(self, key):
        """Row slicing: ``x[a:b]`` and ``x[i]`` return CSR (``x[i]`` has shape ``(1, n)``).

        The result's values and column indices are views of ``x``'s (O(1), like numpy
        basic slicing); ``copy()`` it to detach. Steps other than 1 are not supported.
        """
        n = self._shape[0]
        if isinstance(key, (int, np.integer)):
            i = int(key) + n if key < 0 else int(key)
            if not 0 <= i < n:
                raise IndexError(f"row index {key} is out of range for {n} rows")
            start, stop = i, i + 1
        elif isinstance(key, slice):
            start, stop, step = key.indices(n)
            if step != 1:
                raise NetsError(f"CSR row slicing needs step 1, got {key.step}")
            stop = max(start, stop)
        else:
            raise NetsError(f"a CSR array supports x[i] and x[a:b] row slicing, got key {key!r}")
        lo, hi = self._indptr[start], self._indptr[stop]
        return CSRNDArray(self._data[lo:hi], self._indices[lo:hi],
                          self._indptr[start:stop + 1] - lo, (stop - start, self._shape[1]),
                          self._ctx)
