"""The array floor: ``NDArray``, ``CSRNDArray``, ``RowSparseNDArray``, array creation and
random arrays.

It imports nothing above ``nets.base``, ``nets.random`` and ``nets.kernels``. The
operators live in ``nets.ops``, which installs NDArray's arithmetic and fluent methods
when imported; the public namespace with arrays and operators together is ``nets.nd``
(MXNet's ``mx.nd`` and ``mx.ndarray`` are ``nets.nd`` and ``nets.ndarray``, one module).
"""
from . import random, sparse
from .base_sparse import BaseSparseNDArray
from .creation import arange, array, empty, from_numpy, full, ones, zeros
from .csr import CSRNDArray
from .dense import NDArray
from .row_sparse import RowSparseNDArray

__all__ = ["NDArray", "BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray", "array", "zeros",
           "ones", "full", "empty", "arange", "from_numpy", "random", "sparse"]
