"""Array creation: ``array``, ``zeros``, ``ones``, ``full``, ``empty``, ``arange`` and the
sparse constructors ``csr_matrix`` and ``row_sparse_array``.

Everything built from user data is validated here (then trusted downstream).
"""
import numbers

import numpy as np

from ..base import (DEFAULT_DTYPE, INDEX_DTYPE, ShapeError, SparseFormatError, StorageTypeError,
                    as_dtype, check_stype, current_context, normalize_shape)
from .csr import CSRNDArray, canonicalize_csr, dense_to_csr_parts
from .dense import NDArray
from .row_sparse import RowSparseNDArray, check_rsp_parts, dense_to_rsp_parts


def _is_scipy_sparse(x):
    return type(x).__module__.startswith("scipy.sparse")


def _source_dtype(source, dtype):
    """MXNet's rule: keep an array source's dtype, otherwise float32."""
    if dtype is not None:
        return as_dtype(dtype)
    if isinstance(source, (np.ndarray, NDArray)) or _is_scipy_sparse(source):
        return source.dtype
    return DEFAULT_DTYPE


def array(source_array, ctx=None, dtype=None):
    """An array from a list, scalar, numpy array, scipy.sparse matrix or nets array.

    A scipy.sparse source gives a ``CSRNDArray``, a sparse nets array keeps its
    storage type; everything else gives a dense ``NDArray`` (always a copy).
    """
    ctx = current_context(ctx)
    dtype = _source_dtype(source_array, dtype)
    if _is_scipy_sparse(source_array):
        return csr_matrix(source_array, ctx=ctx, dtype=dtype)
    if isinstance(source_array, NDArray):
        return source_array.astype(dtype).as_in_context(ctx)
    try:
        values = np.array(source_array, dtype=dtype)
    except (TypeError, ValueError) as e:
        raise ShapeError(f"source_array of type {type(source_array).__name__} cannot be "
                         f"converted to an array of {dtype}: {e}") from e
    return NDArray(values, ctx)


def _filled(shape, fill, ctx, dtype, stype=None):
    if stype not in (None, "default"):
        if fill != 0:
            raise StorageTypeError(f"only zeros can be created with stype={stype!r}")
        return zeros_sparse(stype, shape, ctx, dtype)
    shape = normalize_shape(shape)
    return NDArray(np.full(shape, fill, dtype=as_dtype(dtype)), current_context(ctx))


def zeros(shape, ctx=None, dtype=None, stype=None):
    """An array of zeros (``stype`` may be ``'csr'``/``'row_sparse'``)."""
    return _filled(shape, 0, ctx, dtype, stype)


def ones(shape, ctx=None, dtype=None):
    """A dense array of ones."""
    return _filled(shape, 1, ctx, dtype)


def full(shape, val, ctx=None, dtype=None):
    """A dense array filled with ``val``."""
    return _filled(shape, val, ctx, dtype)


def empty(shape, ctx=None, dtype=None, stype=None):
    """An array to be overwritten (zero-filled: nets never hands out uninitialised memory)."""
    return zeros(shape, ctx, dtype, stype)


def arange(start, stop=None, step=1.0, repeat=1, ctx=None, dtype=None):
    """Evenly spaced values in ``[start, stop)``, each repeated ``repeat`` times (MXNet)."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ShapeError("arange: step must not be 0")
    values = np.arange(start, stop, step, dtype=as_dtype(dtype))
    if repeat != 1:
        values = np.repeat(values, int(repeat))
    return NDArray(values, current_context(ctx))


# -- sparse ---------------------------------------------------------------------

def zeros_sparse(stype, shape, ctx=None, dtype=None):
    """An all-zero array of storage type ``stype`` (no values stored)."""
    check_stype(stype)
    shape = normalize_shape(shape)
    ctx, dtype = current_context(ctx), as_dtype(dtype)
    if stype == "default":
        return NDArray(np.zeros(shape, dtype=dtype), ctx)
    if stype == "csr":
        if len(shape) != 2:
            raise ShapeError(f"a CSR array is 2-D; shape={shape} has {len(shape)} dimensions")
        return CSRNDArray(np.zeros(0, dtype), np.zeros(0, INDEX_DTYPE),
                          np.zeros(shape[0] + 1, INDEX_DTYPE), shape, ctx)
    if len(shape) < 1:
        raise ShapeError("a row_sparse array needs at least one dimension")
    return RowSparseNDArray(np.zeros((0,) + shape[1:], dtype), np.zeros(0, INDEX_DTYPE), shape, ctx)


def _is_shape(arg):
    return isinstance(arg, tuple) and all(isinstance(d, numbers.Integral) for d in arg)


def _dense_source(arg, dtype):
    values = arg.asnumpy() if isinstance(arg, NDArray) else np.asarray(arg)
    return values.astype(_source_dtype(arg, dtype), copy=False)


def csr_matrix(arg1, shape=None, ctx=None, dtype=None):
    """A ``CSRNDArray`` from one of:

    - ``(data, indices, indptr)`` with ``shape`` (columns inferred if omitted);
    - ``(data, (row, col))`` COO triplets — duplicates are summed, as in scipy;
    - a ``scipy.sparse`` matrix, a ``CSRNDArray`` (copied), a dense array/list;
    - ``(M, N)``: an empty matrix of that shape.
    """
    ctx = current_context(ctx)
    if _is_shape(arg1):
        return zeros_sparse("csr", arg1, ctx, dtype)
    if _is_scipy_sparse(arg1):
        m = arg1.tocsr(copy=False)
        m.sum_duplicates()  # also sorts column indices
        data = m.data.astype(_source_dtype(arg1, dtype), copy=False)
        return _csr(data, m.indices, m.indptr, m.shape, ctx, shape)
    if isinstance(arg1, CSRNDArray):
        out = arg1.astype(_source_dtype(arg1, dtype))
        return _check_shape_arg(out, shape).as_in_context(ctx)
    if isinstance(arg1, tuple) and len(arg1) == 3:
        data, indices, indptr = (np.asarray(a.asnumpy() if isinstance(a, NDArray) else a)
                                 for a in arg1)
        if shape is None:
            shape = (len(indptr) - 1, int(indices.max()) + 1 if indices.size else 0)
        return _csr(data.astype(_source_dtype(arg1[0], dtype)), indices, indptr,
                    normalize_shape(shape), ctx)
    if isinstance(arg1, tuple) and len(arg1) == 2 and isinstance(arg1[1], tuple):
        import scipy.sparse as sp
        data, (row, col) = arg1
        data, row, col = (np.asarray(a.asnumpy() if isinstance(a, NDArray) else a)
                          for a in (data, row, col))
        for name, ids in (("row", row), ("col", col)):
            if ids.size and ids.min() < 0:
                raise SparseFormatError(f"{name} index {ids.min()} is negative")
        if shape is None:
            shape = (int(row.max()) + 1 if row.size else 0, int(col.max()) + 1 if col.size else 0)
        shape = normalize_shape(shape)
        for name, ids, n in (("row", row, shape[0]), ("col", col, shape[1])):
            if ids.size and ids.max() >= n:
                raise SparseFormatError(f"{name} index {ids.max()} is out of range for shape {shape}")
        m = sp.coo_matrix((data, (row, col)), shape=shape).tocsr()
        m.sum_duplicates()
        return _csr(m.data.astype(_source_dtype(arg1[0], dtype)), m.indices, m.indptr,
                    shape, ctx)
    values = _dense_source(arg1, dtype)
    if values.ndim != 2:
        raise ShapeError(f"a CSR array is 2-D; the source has shape {values.shape}")
    out = CSRNDArray(*dense_to_csr_parts(values), values.shape, ctx)
    return _check_shape_arg(out, shape)


def _csr(data, indices, indptr, shape, ctx, expected=None):
    data, indices, indptr = canonicalize_csr(data, indices, indptr, tuple(shape))
    return _check_shape_arg(CSRNDArray(data, indices, indptr, tuple(shape), ctx), expected)


def _check_shape_arg(arr, shape):
    if shape is not None and normalize_shape(shape) != arr.shape:
        raise ShapeError(f"shape={tuple(shape)} does not match the source's shape {arr.shape}")
    return arr


def row_sparse_array(arg1, shape=None, ctx=None, dtype=None):
    """A ``RowSparseNDArray`` from one of:

    - ``(data, indices)``: ``data[k]`` is row ``indices[k]``; ``indices`` sorted and
      unique; ``shape`` defaults to ``(max(indices) + 1,) + data.shape[1:]``;
    - a ``RowSparseNDArray`` (copied) or a dense array/list (rows with a non-zero kept);
    - ``(D0, D1, ...)``: an all-zero array of that shape.
    """
    ctx = current_context(ctx)
    if _is_shape(arg1):
        return zeros_sparse("row_sparse", arg1, ctx, dtype)
    if isinstance(arg1, RowSparseNDArray):
        out = arg1.astype(_source_dtype(arg1, dtype))
        return _check_shape_arg(out, shape).as_in_context(ctx)
    if isinstance(arg1, tuple) and len(arg1) == 2:
        data = _dense_source(arg1[0], dtype)
        indices = np.asarray(arg1[1].asnumpy() if isinstance(arg1[1], NDArray) else arg1[1])
        if shape is None:
            top = int(indices.max()) + 1 if indices.size else 0
            shape = (top,) + data.shape[1:]
        shape = normalize_shape(shape)
        if data.ndim == 1 and len(shape) > 1 and data.size == 0:
            data = data.reshape((0,) + shape[1:])
        data, indices = check_rsp_parts(data, indices, shape)
        return RowSparseNDArray(data, indices, shape, ctx)
    values = _dense_source(arg1, dtype)
    if values.ndim < 1:
        raise ShapeError("a row_sparse array needs at least one dimension")
    out = RowSparseNDArray(*dense_to_rsp_parts(values), values.shape, ctx)
    return _check_shape_arg(out, shape)


def sparse_array(source_array, ctx=None, dtype=None):
    """A sparse array from a scipy.sparse matrix or a sparse nets array (copied)."""
    if isinstance(source_array, CSRNDArray) or _is_scipy_sparse(source_array):
        return csr_matrix(source_array, ctx=ctx, dtype=dtype)
    if isinstance(source_array, RowSparseNDArray):
        return row_sparse_array(source_array, ctx=ctx, dtype=dtype)
    raise StorageTypeError(f"nd.sparse.array needs a scipy.sparse matrix or a sparse array, got "
                           f"{type(source_array).__name__}; use csr_matrix/row_sparse_array "
                           f"to convert dense data")
