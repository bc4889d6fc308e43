"""The ``nets.nd.sparse`` namespace: sparse constructors plus every operator."""
from ..ops import *  # noqa: F401,F403
from ..ops import __all__ as _op_names
from .creation import csr_matrix, row_sparse_array  # noqa: F401
from .creation import sparse_array as array  # noqa: F401
from .creation import zeros_sparse as zeros  # noqa: F401
from .csr import CSRNDArray  # noqa: F401
from .row_sparse import RowSparseNDArray  # noqa: F401


def empty(stype, shape, ctx=None, dtype=None):
    """An all-zero array of storage type ``stype``."""
    return zeros(stype, shape, ctx, dtype)


__all__ = ["csr_matrix", "row_sparse_array", "zeros", "empty", "array", "CSRNDArray",
           "RowSparseNDArray"] + list(_op_names)
