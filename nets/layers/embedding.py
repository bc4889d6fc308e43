"""``Embedding``: a lookup table of ``input_dim`` rows of size ``output_dim``."""
from __future__ import annotations

import types
from typing import TYPE_CHECKING

from .block import HybridBlock

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from ..arrays import NDArray
    from ..init import Initializer
    from ..symbol import Symbol
    from .parameter import ParameterDict

__all__ = ["Embedding"]


class Embedding(HybridBlock):
    """Maps integer ids (or whole-number floats) to rows of a dense weight.

    ``sparse_grad=True`` makes the weight's gradient row_sparse: it holds just the
    batch's unique ids (duplicates summed). Do sparse gradients require sparse
    weights? No: the weight stays dense and an optimizer with ``lazy_update``
    updates only the gradient's rows. An id outside ``[0, input_dim)`` raises.

    Parameters
    ----------
    input_dim : int
        The number of rows (ids ``0 .. input_dim - 1``).
    output_dim : int
        The size of each row.
    dtype : str or numpy dtype, default 'float32'
        The weight's element type.
    weight_initializer : Initializer or str, optional
        The weight's initializer; default the one ``initialize`` is given.
    sparse_grad : bool, default False
        Make the weight's gradient row_sparse (only the looked-up rows).
    prefix : str, optional
        The prefix of the weight's name; default ``embedding<n>_``.
    params : ParameterDict, optional
        Parameters to share with another block.
    """

    def __init__(self, input_dim: int, output_dim: int, dtype: DTypeLike = "float32",
                 weight_initializer: Initializer | str | None = None, sparse_grad: bool = False,
                 prefix: str | None = None, params: ParameterDict | None = None):
        super().__init__(prefix=prefix, params=params)
        self._input_dim, self._output_dim = input_dim, output_dim
        self._sparse_grad = sparse_grad
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(input_dim, output_dim), dtype=dtype,
                                          init=weight_initializer,
                                          grad_stype="row_sparse" if sparse_grad else "default")

    def hybrid_forward(self, F: types.ModuleType, x: NDArray | Symbol,
                       weight: NDArray | Symbol) -> NDArray | Symbol:
        """The rows of ``weight`` that ``x`` names.

        Parameters
        ----------
        F : module
            ``nets.nd`` (or ``nets.sym`` while tracing).
        x : NDArray or Symbol
            The ids, any shape (integers or whole-number floats).
        weight : NDArray or Symbol
            The table, ``(input_dim, output_dim)``.

        Returns
        -------
        NDArray or Symbol
            ``x.shape + (output_dim,)``.
        """
        return F.Embedding(x, weight, input_dim=self._input_dim, output_dim=self._output_dim,
                           sparse_grad=self._sparse_grad)

    def __repr__(self):
        return (f"Embedding({self._input_dim} -> {self._output_dim}, "
                f"sparse_grad={self._sparse_grad})")
