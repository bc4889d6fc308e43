"""``nets.nd``: the array classes, array creation and every operator."""
import numpy as _np

from .base_sparse import BaseSparseNDArray
from .creation import arange, array, empty, full, ones, zeros
from .csr import CSRNDArray
from .dense import NDArray
from .row_sparse import RowSparseNDArray

from ..ops import *
from ..ops import __all__ as _op_names
from . import random, sparse


def waitall():
    """No-op: nets computes synchronously (kept for MXNet code)."""


def concatenate(arrays, axis=0):
    """``concat(*arrays, dim=axis)`` (MXNet's list-taking alias)."""
    return concat(*arrays, dim=axis)


def from_numpy(ndarray, zero_copy=True):
    """A dense ``NDArray`` sharing memory with ``ndarray`` when ``zero_copy``."""
    return NDArray(ndarray if zero_copy else _np.array(ndarray))


__all__ = ["NDArray", "BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray", "array", "zeros",
           "ones", "full", "empty", "arange", "waitall", "random", "sparse", "concatenate",
           "from_numpy"] + list(_op_names)
