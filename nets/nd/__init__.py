"""``nets.nd`` (MXNet's ``mx.nd``/``mx.ndarray``): arrays, array creation and every
operator in one namespace, with ``nets.nd.sparse`` and ``nets.nd.random``.

A face only: the arrays are ``nets.ndarray`` (the array floor), the operators
``nets.ops``, ``save``/``load`` ``nets.serialization``; this package sits above them and
defines nothing of its own except the MXNet conveniences ``waitall`` and ``concatenate``.
"""
from ..ndarray import (BaseSparseNDArray, CSRNDArray, NDArray, RowSparseNDArray, arange, array,
                       empty, from_numpy, full, ones, zeros)
from ..ops import *
from ..ops import __all__ as _op_names
from ..serialization import load, save
from . import random, sparse  # the faces below, not the floor's modules of those names


def waitall():
    """No-op: nets computes synchronously (kept for MXNet code)."""


def concatenate(arrays, axis=0):
    """``concat(*arrays, dim=axis)`` (MXNet's list-taking alias)."""
    return concat(*arrays, dim=axis)


__all__ = ["NDArray", "BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray", "array", "zeros",
           "ones", "full", "empty", "arange", "from_numpy", "waitall", "concatenate", "save",
           "load", "random", "sparse"] + list(_op_names)
