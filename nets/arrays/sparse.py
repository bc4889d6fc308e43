"""The sparse array classes and their constructors (``nets.nd.sparse`` adds the operators)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .creation import csr_matrix, row_sparse_array
from .creation import sparse_array as array
from .creation import zeros_sparse as zeros
from .csr import CSRNDArray
from .row_sparse import RowSparseNDArray

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from ..base import Context
    from .dense import NDArray


def empty(stype: str, shape: int | tuple[int, ...], ctx: Context | None = None,
          dtype: DTypeLike | None = None) -> NDArray:
    """An all-zero array of storage type ``stype`` (nets never hands out uninitialised
    memory).

    Parameters
    ----------
    stype : {'csr', 'row_sparse', 'default'}
        The storage type.
    shape : int or tuple of int
        The array's shape.
    ctx : Context, optional
        The device; default the current context.
    dtype : str or numpy dtype, optional
        The element type; default float32.

    Returns
    -------
    NDArray
        A ``CSRNDArray`` or ``RowSparseNDArray`` (dense for ``'default'``) of zeros.
    """
    return zeros(stype, shape, ctx, dtype)


__all__ = ["csr_matrix", "row_sparse_array", "zeros", "empty", "array", "CSRNDArray",
           "RowSparseNDArray"]
