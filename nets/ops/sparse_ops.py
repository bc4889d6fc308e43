"""Sparse-specific operators: storage casts and sparse utilities."""
import numpy as np

from ..base import ShapeError, check_stype
from ..ndarray.csr import CSRNDArray, dense_to_csr_parts
from ..ndarray.dense import NDArray
from ..ndarray.row_sparse import RowSparseNDArray, dense_to_rsp_parts
from .registry import _EMPTY, Op

__all__ = ["cast_storage"]

cast_storage = Op("cast_storage", ("data",), {"stype": _EMPTY}, doc="""\
Convert ``data`` to storage type ``stype`` (always a new array).

``csr`` needs a 2-D input; ``row_sparse`` keeps the rows that hold a non-zero.
""")


@cast_storage.infer
def _(data, stype):
    return check_stype(stype)


def _csr_to_rsp(x):
    counts = np.diff(x._indptr)
    rows = np.flatnonzero(counts)
    block = np.zeros((len(rows), x.shape[1]), dtype=x.dtype)
    block[np.repeat(np.arange(len(rows)), counts[rows]), x._indices] = x._data
    return RowSparseNDArray(block, rows.astype(np.int64), x.shape, x.context)


def _rsp_to_csr(x):
    x._require_2d("cast_storage to csr")
    data, cols, block_ptr = dense_to_csr_parts(x._data)
    counts = np.zeros(x.shape[0], dtype=np.int64)
    counts[x._indices] = np.diff(block_ptr)
    indptr = np.concatenate(([0], np.cumsum(counts)))
    return CSRNDArray(data, cols, indptr, x.shape, x.context)


def _dense_to_csr(x):
    if x.ndim != 2:
        raise ShapeError(f"cast_storage to csr needs a 2-D array, got shape {x.shape}")
    return CSRNDArray(*dense_to_csr_parts(x._np), x.shape, x.context)


_CONVERT = {
    ("default", "csr"): _dense_to_csr,
    ("default", "row_sparse"): lambda x: RowSparseNDArray(*dense_to_rsp_parts(x._np), x.shape,
                                                          x.context),
    ("csr", "default"): lambda x: NDArray(x.asnumpy(), x.context),
    ("row_sparse", "default"): lambda x: NDArray(x.asnumpy(), x.context),
    ("csr", "row_sparse"): _csr_to_rsp,
    ("row_sparse", "csr"): _rsp_to_csr,
}


@cast_storage.impl("*")
def _(data, stype):
    if data.stype == stype:
        return data.copy()
    return _CONVERT[data.stype, stype](data)
