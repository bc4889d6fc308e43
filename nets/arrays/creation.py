"""Array creation: ``array``, ``zeros``, ``ones``, ``full``, ``empty``, ``arange``,
``from_numpy`` and the sparse constructors ``csr_matrix`` and ``row_sparse_array``.

Everything built from user data is validated here (then trusted downstream).
"""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base import (DEFAULT_DTYPE, INDEX_DTYPE, ShapeError, SparseFormatError,
                    StorageTypeError, as_dtype, check_dtype, check_stype, current_context,
                    normalize_shape)
from . import aligned
from .base_sparse import as_index
from .csr import CSRNDArray, canonicalize_csr, dense_to_csr_parts
from .dense import NDArray
from .row_sparse import RowSparseNDArray, check_rsp_parts, dense_to_rsp_parts

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike

    from ..base import Context


def _is_scipy_sparse(x):
    return type(x).__module__.startswith("scipy.sparse")


def _source_dtype(source, dtype, name):
    """MXNet's rule for the sparse constructors: keep an array source's dtype (numpy, scipy
    or nets), otherwise float32; ``dtype`` overrides it. A numpy or scipy source (the
    argument ``name``) must hold real numbers (``check_dtype``), and one of a dtype nets
    does not hold (object, string) is refused unless ``dtype`` says what to convert it to."""
    if isinstance(source, np.ndarray) or _is_scipy_sparse(source):
        what = f"{name} ({type(source).__name__})"
        if dtype is None:
            return check_dtype(source.dtype, what)
        check_dtype(source.dtype, what, converted=True)
    elif dtype is None:
        return source.dtype if isinstance(source, NDArray) else DEFAULT_DTYPE
    return as_dtype(dtype)


def _as_numpy(source, dtype, name, copy=False):
    """``source`` (array-like, not an ``NDArray``) as a numpy array of the supported
    ``dtype`` (a fresh one when ``copy``), converted by numpy (numeric strings parse, as in
    MXNet). A numpy source of complex, datetime or void values raises ``DTypeError``,
    values that do not convert (ragged lists, non-numeric strings) ``ShapeError``."""
    if isinstance(source, np.ndarray):
        check_dtype(source.dtype, name, converted=True)
    try:
        return np.array(source, dtype=dtype, copy=True if copy else None)
    except (TypeError, ValueError) as e:
        raise ShapeError(f"{name} of type {type(source).__name__} cannot be converted "
                         f"to an array of {dtype}: {e}") from e


def array(source_array: ArrayLike | NDArray | Any, ctx: Context | None = None,
          dtype: DTypeLike | None = None) -> NDArray:
    """An array from a list, scalar, numpy array, scipy.sparse matrix or nets array.

    A scipy.sparse source gives a ``CSRNDArray`` (sharing its values when no cast is
    needed), a sparse nets array keeps its storage type (copied); everything else gives
    a dense ``NDArray`` (always a copy).

    Parameters
    ----------
    source_array : array_like, scipy.sparse matrix or NDArray
        The values: a (nested) list, a Python scalar, a numpy array, a scipy.sparse
        matrix (any format; converted to CSR) or a nets array of any storage type.
    ctx : Context, optional
        The device; default the current context (``cpu()``).
    dtype : str or numpy dtype, optional
        The element type. The default is MXNet 1.x's rule: the source's dtype for a nets
        array or a scipy.sparse matrix, and **float32** for everything else -- numpy
        arrays of any dtype (float64, int64, bool, ...), lists and Python scalars. So
        ``array(np.zeros(3))`` is float32; pass ``dtype=`` (e.g. ``dtype=x.dtype``) to
        keep a numpy array's dtype.

    Returns
    -------
    NDArray
        A dense ``NDArray``, a ``CSRNDArray`` (scipy.sparse or CSR source) or a
        ``RowSparseNDArray`` (row_sparse source).
    """
    ctx = current_context(ctx)
    if _is_scipy_sparse(source_array) or isinstance(source_array, NDArray):
        dtype = _source_dtype(source_array, dtype, "source_array")
        if _is_scipy_sparse(source_array):
            return csr_matrix(source_array, ctx=ctx, dtype=dtype)
        return source_array.astype(dtype).as_in_context(ctx)
    dtype = as_dtype(dtype)
    source = _as_numpy(source_array, dtype, "source_array")
    values = aligned.empty(source.shape, dtype)
    values[...] = source
    return NDArray(values, ctx)


def _filled(shape, fill, ctx, dtype, stype=None):
    if stype not in (None, "default"):
        if fill != 0:
            raise StorageTypeError(f"only zeros can be created with stype={stype!r}")
        return zeros_sparse(stype, shape, ctx, dtype)
    values = aligned.zeros(normalize_shape(shape), as_dtype(dtype))
    if fill != 0:
        values[...] = fill
    return NDArray(values, current_context(ctx))


def zeros(shape: int | tuple[int, ...], ctx: Context | None = None,
          dtype: DTypeLike | None = None, stype: str | None = None) -> NDArray:
    """An array of zeros.

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape.
    ctx : Context, optional
        The device; default the current context.
    dtype : str or numpy dtype, optional
        The element type; default float32.
    stype : {'default', 'csr', 'row_sparse'}, optional
        The storage type; default ``'default'`` (dense). A sparse array of zeros stores
        no values.

    Returns
    -------
    NDArray
        An ``NDArray``, ``CSRNDArray`` or ``RowSparseNDArray`` of zeros.
    """
    return _filled(shape, 0, ctx, dtype, stype)


def ones(shape: int | tuple[int, ...], ctx: Context | None = None,
         dtype: DTypeLike | None = None) -> NDArray:
    """A dense array of ones.

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape.
    ctx : Context, optional
        The device; default the current context.
    dtype : str or numpy dtype, optional
        The element type; default float32.

    Returns
    -------
    NDArray
        A dense array filled with 1.
    """
    return _filled(shape, 1, ctx, dtype)


def full(shape: int | tuple[int, ...], val: float, ctx: Context | None = None,
         dtype: DTypeLike | None = None) -> NDArray:
    """A dense array filled with ``val``.

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape.
    val : scalar
        The value of every element (converted to ``dtype``).
    ctx : Context, optional
        The device; default the current context.
    dtype : str or numpy dtype, optional
        The element type; default float32.

    Returns
    -------
    NDArray
        A dense array filled with ``val``.
    """
    return _filled(shape, val, ctx, dtype)


def empty(shape: int | tuple[int, ...], ctx: Context | None = None,
          dtype: DTypeLike | None = None, stype: str | None = None) -> NDArray:
    """An array to be overwritten (zero-filled: nets never hands out uninitialised memory).

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape.
    ctx : Context, optional
        The device; default the current context.
    dtype : str or numpy dtype, optional
        The element type; default float32.
    stype : {'default', 'csr', 'row_sparse'}, optional
        The storage type; default ``'default'`` (dense).

    Returns
    -------
    NDArray
        An array of zeros, as ``zeros`` gives.
    """
    return zeros(shape, ctx, dtype, stype)


def from_numpy(ndarray: np.ndarray, zero_copy: bool = True) -> NDArray:
    """A dense ``NDArray`` over a numpy array's values.

    Parameters
    ----------
    ndarray : numpy.ndarray
        The source; its dtype is kept (a dtype nets does not support raises
        ``DTypeError``).
    zero_copy : bool, default True
        Share memory with ``ndarray`` (when its byte order is the machine's); False
        copies it.

    Returns
    -------
    NDArray
        A dense array of ``ndarray``'s shape and dtype.
    """
    dtype = check_dtype(ndarray.dtype, "ndarray")
    return NDArray(np.asarray(ndarray, dtype) if zero_copy else np.array(ndarray, dtype))


def arange(start: float, stop: float | None = None, step: float = 1.0, repeat: int = 1,
           ctx: Context | None = None, dtype: DTypeLike | None = None) -> NDArray:
    """Evenly spaced values in ``[start, stop)``, each repeated ``repeat`` times (MXNet).

    Parameters
    ----------
    start : number
        The first value; with ``stop`` omitted, the end (the values start at 0).
    stop : number, optional
        The end of the interval (excluded).
    step : number, default 1.0
        The spacing between values; must not be 0.
    repeat : int, default 1
        How many times each value is repeated (a positive integer).
    ctx : Context, optional
        The device; default the current context.
    dtype : str or numpy dtype, optional
        The element type; default float32.

    Returns
    -------
    NDArray
        A 1-D dense array.
    """
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ShapeError("arange: step=0 must not be 0")
    if not isinstance(repeat, numbers.Integral) or repeat < 1:
        raise ShapeError(f"arange: repeat={repeat!r} must be a positive integer")
    values = np.arange(start, stop, step, dtype=as_dtype(dtype))
    if repeat != 1:
        values = np.repeat(values, repeat)
    return NDArray(values, current_context(ctx))


# -- sparse ---------------------------------------------------------------------

def zeros_sparse(stype: str, shape: int | tuple[int, ...], ctx: Context | None = None,
                 dtype: DTypeLike | None = None) -> NDArray:
    """An all-zero array of storage type ``stype`` (no values stored); ``nd.sparse.zeros``.

    Parameters
    ----------
    stype : {'csr', 'row_sparse', 'default'}
        The storage type (a CSR array is 2-D; a row_sparse one has at least one
        dimension).
    shape : int or tuple of int
        The array's shape.
    ctx : Context, optional
        The device; default the current context.
    dtype : str or numpy dtype, optional
        The element type; default float32.

    Returns
    -------
    NDArray
        A ``CSRNDArray``, ``RowSparseNDArray`` (or, for ``'default'``, dense
        ``NDArray``) of zeros.
    """
    check_stype(stype)
    shape = normalize_shape(shape)
    ctx, dtype = current_context(ctx), as_dtype(dtype)
    if stype == "default":
        return NDArray(aligned.zeros(shape, dtype), ctx)
    if stype == "csr" and len(shape) != 2:
        raise ShapeError(f"a CSR array is 2-D; shape={shape} has {len(shape)} dimensions")
    if not shape:
        raise ShapeError("a row_sparse array needs at least one dimension; got shape=()")
    return (CSRNDArray if stype == "csr" else RowSparseNDArray).zeros(shape, dtype, ctx)


def _is_shape(arg):
    return isinstance(arg, tuple) and all(isinstance(d, numbers.Integral) for d in arg)


def _copy_np(a):
    """A fresh numpy array from an array-like or ``NDArray`` (user buffers are never kept)."""
    return a.asnumpy() if isinstance(a, NDArray) else np.array(a)


def _values(source, dtype, name):
    """A fresh numpy array of the values ``source`` (array-like or ``NDArray``, the argument
    ``name``) in the dtype of ``_source_dtype``."""
    dtype = _source_dtype(source, dtype, name)
    if isinstance(source, NDArray):
        return source.asnumpy().astype(dtype, copy=False)
    return _as_numpy(source, dtype, name, copy=True)


def _from_array(arg, stype, dtype, shape, ctx):
    """``arg`` (an ``NDArray`` of any stype, numpy array or list) converted to ``stype``."""
    if isinstance(arg, NDArray):  # a sparse source is converted, never densified
        dt = _source_dtype(arg, dtype, "arg1")
        out = arg.astype(dt) if arg.stype == stype else arg.tostype(stype).astype(dt, copy=False)
        return _check_shape_arg(out, shape).as_in_context(ctx)
    values = _as_numpy(arg, _source_dtype(arg, dtype, "arg1"), "arg1")
    if stype == "csr":
        if values.ndim != 2:
            raise ShapeError(f"a CSR array is 2-D; the source has shape {values.shape}")
        out = CSRNDArray(*dense_to_csr_parts(values), values.shape, ctx)
    else:
        if values.ndim < 1:
            raise ShapeError("a row_sparse array needs at least one dimension; got a scalar")
        out = RowSparseNDArray(*dense_to_rsp_parts(values), values.shape, ctx)
    return _check_shape_arg(out, shape)


def csr_matrix(arg1: Any, shape: tuple[int, int] | None = None, ctx: Context | None = None,
               dtype: DTypeLike | None = None) -> CSRNDArray:
    """A ``CSRNDArray`` (compressed sparse rows) from its parts, a matrix or a shape.

    Parameters
    ----------
    arg1 : tuple, scipy.sparse matrix, NDArray or array_like
        One of:

        - ``(data, indices, indptr)`` with ``shape`` (columns inferred if omitted, which
          needs a stored value: empty ``indices`` without ``shape`` raise ``ShapeError``);
          columns are sorted within each row, a duplicate (row, column) is an error;
        - ``(data, (row, col))`` COO triplets -- duplicates are summed, as in scipy;
        - a ``scipy.sparse`` matrix (its values are shared when no cast is needed; its
          index arrays are copied, so later edits of the scipy matrix cannot break this
          array);
        - an array of any storage type (copied; a row_sparse one is converted, not
          densified), a numpy array or a nested list;
        - ``(M, N)``: an empty matrix of that shape.
    shape : tuple of int, optional
        ``(M, N)``; given beside any of the above it must agree with it (else
        ``ShapeError``).
    ctx : Context, optional
        The device; default the current context.
    dtype : str or numpy dtype, optional
        The values' type; default the source's for an array source (numpy, scipy or
        nets), else float32.

    Returns
    -------
    CSRNDArray
        The matrix, validated (out-of-range or duplicate indices raise
        ``SparseFormatError``).
    """
    ctx = current_context(ctx)
    if _is_shape(arg1):
        return _check_shape_arg(zeros_sparse("csr", arg1, ctx, dtype), shape)
    if _is_scipy_sparse(arg1):
        m = arg1.tocsr()
        if not m.has_canonical_format:
            m = m.copy()  # never reorder the caller's matrix in place
            m.sum_duplicates()
        data = m.data.astype(_source_dtype(arg1, dtype, "arg1"), copy=False)
        return _csr(data, m.indices.astype(INDEX_DTYPE), m.indptr.astype(INDEX_DTYPE), m.shape,
                    ctx, shape)
    if isinstance(arg1, tuple) and len(arg1) == 3:
        indices, indptr = (as_index(_copy_np(a), name) for a, name in
                           ((arg1[1], "indices"), (arg1[2], "indptr")))
        if shape is None:
            if not indices.size:  # no stored column tells the width (MXNet refuses too)
                raise ShapeError("csr_matrix((data, indices, indptr)) with empty indices "
                                 "needs shape=: the number of columns cannot be inferred")
            shape = (len(indptr) - 1, int(indices.max()) + 1)
        return _csr(_values(arg1[0], dtype, "data"), indices, indptr,
                    normalize_shape(shape), ctx)
    if isinstance(arg1, tuple) and len(arg1) == 2 and isinstance(arg1[1], tuple):
        return _csr_from_coo(arg1[0], *arg1[1], shape, ctx, dtype)
    return _from_array(arg1, "csr", dtype, shape, ctx)


def _csr_from_coo(data, row, col, shape, ctx, dtype):
    import scipy.sparse as sp
    values = _values(data, dtype, "data")
    row, col = as_index(row, "row"), as_index(col, "col")
    if not (values.ndim == row.ndim == col.ndim == 1 and len(values) == len(row) == len(col)):
        raise ShapeError(f"(data, (row, col)) must be 1-D and of one length, got shapes "
                         f"data {values.shape}, row {row.shape}, col {col.shape}")
    if shape is None:
        shape = tuple(int(ids.max()) + 1 if ids.size else 0 for ids in (row, col))
    shape = normalize_shape(shape)
    if len(shape) != 2:
        raise ShapeError(f"a CSR array is 2-D; shape={shape} has {len(shape)} dimensions")
    for name, ids, n in (("row", row, shape[0]), ("col", col, shape[1])):
        bad = np.flatnonzero((ids < 0) | (ids >= n))
        if bad.size:
            raise SparseFormatError(f"{name}[{bad[0]}]={ids[bad[0]]} is out of range for "
                                    f"shape={shape}")
    m = sp.coo_matrix((values, (row, col)), shape=shape).tocsr()
    m.sum_duplicates()
    return _csr(m.data, m.indices, m.indptr, shape, ctx)


def _csr(data, indices, indptr, shape, ctx, expected=None):
    data, indices, indptr = canonicalize_csr(data, indices, indptr, tuple(shape))
    return _check_shape_arg(CSRNDArray(data, indices, indptr, tuple(shape), ctx), expected)


def _check_shape_arg(arr, shape):
    if shape is not None and normalize_shape(shape) != arr.shape:
        raise ShapeError(f"shape={tuple(shape)} does not match the source's shape {arr.shape}")
    return arr


def row_sparse_array(arg1: Any, shape: tuple[int, ...] | None = None,
                     ctx: Context | None = None,
                     dtype: DTypeLike | None = None) -> RowSparseNDArray:
    """A ``RowSparseNDArray`` (a subset of rows stored) from its parts, an array or a shape.

    Parameters
    ----------
    arg1 : tuple, NDArray or array_like
        One of:

        - ``(data, indices)``: ``data[k]`` is row ``indices[k]``; ``indices`` sorted and
          unique; ``shape`` defaults to ``(max(indices) + 1,) + data.shape[1:]`` (empty
          ``indices`` then raise ``ShapeError``: the height cannot be inferred);
        - an array of any storage type (copied; a CSR one is converted, not densified),
          a numpy array or a nested list (the rows holding a non-zero are stored);
        - ``(D0, D1, ...)``: an all-zero array of that shape.
    shape : tuple of int, optional
        The full shape; given beside any of the above it must agree with it (else
        ``ShapeError``).
    ctx : Context, optional
        The device; default the current context.
    dtype : str or numpy dtype, optional
        The values' type; default the source's for an array source, else float32.

    Returns
    -------
    RowSparseNDArray
        The array, validated (unsorted, duplicate or out-of-range indices raise
        ``SparseFormatError``).
    """
    ctx = current_context(ctx)
    if _is_shape(arg1):
        return _check_shape_arg(zeros_sparse("row_sparse", arg1, ctx, dtype), shape)
    if isinstance(arg1, tuple) and len(arg1) == 2:
        data = _values(arg1[0], dtype, "data")
        indices = as_index(_copy_np(arg1[1]), "indices").reshape(-1)
        if shape is None:
            if not indices.size:  # no stored row tells the height (MXNet refuses too)
                raise ShapeError("row_sparse_array((data, indices)) with empty indices "
                                 "needs shape=: the number of rows cannot be inferred")
            shape = (int(indices.max()) + 1,) + data.shape[1:]
        shape = normalize_shape(shape)
        if data.ndim == 1 and len(shape) > 1 and data.size == 0:
            data = data.reshape((0,) + shape[1:])
        data, indices = check_rsp_parts(data, indices, shape)
        return RowSparseNDArray(data, indices, shape, ctx)
    return _from_array(arg1, "row_sparse", dtype, shape, ctx)


def sparse_array(source_array: Any, ctx: Context | None = None,
                 dtype: DTypeLike | None = None) -> CSRNDArray | RowSparseNDArray:
    """A sparse array from a scipy.sparse matrix or a sparse nets array (copied);
    ``nd.sparse.array``.

    Parameters
    ----------
    source_array : scipy.sparse matrix, CSRNDArray or RowSparseNDArray
        The source; dense data is refused (``StorageTypeError``): convert it with
        ``csr_matrix`` or ``row_sparse_array``.
    ctx : Context, optional
        The device; default the current context.
    dtype : str or numpy dtype, optional
        The values' type; default the source's.

    Returns
    -------
    CSRNDArray or RowSparseNDArray
        A CSR array for a scipy.sparse or CSR source, a row_sparse one for a row_sparse
        source.
    """
    if isinstance(source_array, CSRNDArray) or _is_scipy_sparse(source_array):
        return csr_matrix(source_array, ctx=ctx, dtype=dtype)
    if isinstance(source_array, RowSparseNDArray):
        return row_sparse_array(source_array, ctx=ctx, dtype=dtype)
    raise StorageTypeError(f"nd.sparse.array needs a scipy.sparse matrix or a sparse array, got "
                           f"{type(source_array).__name__}; use csr_matrix/row_sparse_array "
                           f"to convert dense data")
