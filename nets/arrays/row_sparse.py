"""``RowSparseNDArray``: an n-d array whose non-zero rows (slices along axis 0) are stored.

Canonical form, guaranteed by construction: ``indices`` is int64, sorted and
unique, and ``data[k]`` is row ``indices[k]``. Kernels rely on it.
"""
import numpy as np

from .. import kernels
from ..base import INDEX_DTYPE, NetsError, ShapeError, SparseFormatError
from . import aligned
from .base_sparse import BaseSparseNDArray, as_index


def _check_rsp(data, indices, shape, full_check=True):
    if len(shape) < 1:
        raise ShapeError("a row_sparse array needs at least one dimension")
    if indices.ndim != 1:
        raise ShapeError(f"indices must be 1-D, got shape {indices.shape}")
    if data.shape != (len(indices),) + tuple(shape[1:]):
        raise ShapeError(f"data has shape {data.shape}; with {len(indices)} indices and "
                         f"shape={tuple(shape)} it must be {(len(indices),) + tuple(shape[1:])}")
    if not full_check or indices.size == 0:
        return
    bad = np.flatnonzero((indices < 0) | (indices >= shape[0]))
    if bad.size:
        raise SparseFormatError(f"row index indices[{bad[0]}]={indices[bad[0]]} is out of range "
                                f"for {shape[0]} rows")
    bad = np.flatnonzero(np.diff(indices) <= 0)
    if bad.size:
        k = bad[0]
        what = "duplicate" if indices[k] == indices[k + 1] else "unsorted"
        raise SparseFormatError(f"row_sparse indices must be sorted and unique: {what} at "
                                f"indices[{k}]={indices[k]}, indices[{k + 1}]={indices[k + 1]}")


def dense_to_rsp_parts(a):
    """``(data, indices)`` of the rows of numpy ``a`` that hold a non-zero."""
    keep = np.flatnonzero(np.any(a != 0, axis=tuple(range(1, a.ndim))))
    data = aligned.empty((len(keep),) + a.shape[1:], a.dtype)
    # mode="clip" (exact: every id is in range) because numpy buffers ``out`` for "raise"
    return np.take(a, keep, axis=0, out=data, mode="clip"), keep.astype(INDEX_DTYPE)


def check_rsp_parts(data, indices, shape):
    """Validate user-given ``(data, indices)`` for ``shape``; return them normalised."""
    indices = as_index(indices, "indices").reshape(-1)
    _check_rsp(data, indices, shape)
    return data, indices


class RowSparseNDArray(BaseSparseNDArray):
    """Rows ``indices`` (sorted unique int64) of an array of ``shape``; ``data`` holds them.

    Build with ``nets.nd.sparse.row_sparse_array``, which validates (the class constructor
    trusts its buffers: see ``BaseSparseNDArray``).
    """

    stype = "row_sparse"
    _parts = ("_indices",)

    def __init__(self, data, indices, shape, ctx=None):
        self._init_meta(ctx)
        self._data, self._indices = data, indices
        self._shape = tuple(shape)

    _validate = staticmethod(_check_rsp)

    @classmethod
    def zeros(cls, shape, dtype, ctx=None):
        """An all-zero array of ``shape`` and ``dtype`` (no rows stored)."""
        return cls(np.zeros((0,) + tuple(shape[1:]), dtype), np.zeros(0, INDEX_DTYPE), shape, ctx)

    def _scatter_into(self, dense):
        dense[self._indices] = self._data

    def __getitem__(self, key):
        """Only ``x[:]`` (the array itself); use ``nd.sparse.retain`` to select rows."""
        if isinstance(key, slice) and key == slice(None):
            return self
        raise NetsError(f"a row_sparse array supports only x[:]; use nets.nd.sparse.retain(x, "
                        f"row_ids) to select rows, got key {key!r}")

    def insert_rows(self, rows):
        """Store every row in ``rows`` (integers in ``[0, shape[0])``, any order, repeats
        allowed): a row not stored yet is inserted as zeros, so the array's values do not
        change; ``indices`` stay sorted and unique. Returns whether any row was inserted
        (False: every row was stored already and nothing changed).

        Optimizer states that are row_sparse grow this way when a gradient names new rows.
        Cost: nothing when every row is stored; else a binary search of each row, and when
        some are new one linear merge of the sorted stored and new ids
        (``kernels.elemwise.union_pattern``), never a sort of their union. Unsorted
        ``rows`` are sorted first (the optimizers pass sorted unique ids).
        """
        stored, rows = self._indices, as_index(rows, "rows").reshape(-1)
        if len(stored) == self._shape[0]:  # every row is stored: none can be new
            bad = np.flatnonzero((rows < 0) | (rows >= self._shape[0]))
            if bad.size:
                raise SparseFormatError(f"insert_rows: row {rows[bad[0]]} is out of range "
                                        f"for {self._shape[0]} rows")
            return False
        at = np.searchsorted(stored, rows)
        present = at < len(stored)
        present[present] = stored[at[present]] == rows[present]
        if present.all():
            return False
        new = rows[~present]
        bad = np.flatnonzero((new < 0) | (new >= self._shape[0]))
        if bad.size:
            raise SparseFormatError(f"insert_rows: row {new[bad[0]]} is out of range for "
                                    f"{self._shape[0]} rows")
        if len(new) > 1 and not (new[1:] > new[:-1]).all():
            new = np.unique(new)
        ends = np.array([0, len(stored)], INDEX_DTYPE), np.array([0, len(new)], INDEX_DTYPE)
        _, indices, at, _ = kernels.elemwise.union_pattern(
            ends[0], stored, ends[1], new.astype(INDEX_DTYPE, copy=False))
        indices = indices.copy()  # (the merge's buffer is larger: keep only the ids)
        data = aligned.zeros((len(indices),) + self._data.shape[1:], self._data.dtype)
        data[at] = self._data
        self._data, self._indices = data, indices
        return True
