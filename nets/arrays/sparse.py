"""The sparse array classes and their constructors (``nets.nd.sparse`` adds the operators)."""
from .creation import csr_matrix, row_sparse_array
from .creation import sparse_array as array
from .creation import zeros_sparse as zeros
from .csr import CSRNDArray
from .row_sparse import RowSparseNDArray


def empty(stype, shape, ctx=None, dtype=None):
    """An all-zero array of storage type ``stype``."""
    return zeros(stype, shape, ctx, dtype)


__all__ = ["csr_matrix", "row_sparse_array", "zeros", "empty", "array", "CSRNDArray",
           "RowSparseNDArray"]
