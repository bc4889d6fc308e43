"""Layers for sparse inputs and sparse gradients: ``FullyConnectedSparse``, ``SparseEmbedding``."""
from __future__ import annotations

import types
from typing import TYPE_CHECKING

from ..ops.nn import dot_bias as _dot_bias
from .block import HybridBlock, op_in

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from ..arrays import NDArray
    from ..init import Initializer
    from ..symbol import Symbol
    from .parameter import ParameterDict

__all__ = ["FullyConnectedSparse", "SparseEmbedding"]


class FullyConnectedSparse(HybridBlock):
    """``y = x . W + b`` with W of shape ``(in_units, units)`` — the layout whose gradient
    for a CSR batch ``x`` is ``x^T . dy``: non-zero only in the rows of the features the
    batch touches. ``weight_grad_stype='row_sparse'`` delivers exactly those rows (a batch
    of 10 rows x 10 features over 10^6 x 128 gives a ~50 KB gradient instead of 512 MB).
    The weight itself stays dense: sparse gradients do not need sparse weights. The layer
    is one operator (``_dot_bias``): the bias fills the output the sparse kernel adds into.

    Parameters
    ----------
    in_units : int
        The number of input features (the weight's rows); 0 infers it from the first
        input.
    units : int
        The number of outputs (the weight's columns).
    weight_grad_stype : {'default', 'row_sparse'}, default 'default'
        The storage type of the weight's gradient.
    use_bias : bool, default True
        Add a bias vector of shape ``(units,)``.
    dtype : str or numpy dtype, default 'float32'
        The parameters' element type.
    weight_initializer : Initializer or str, optional
        The weight's initializer; default the one ``initialize`` is given.
    bias_initializer : Initializer or str, default 'zeros'
        The bias's initializer.
    prefix : str, optional
        The prefix of the parameters' names; default ``fullyconnectedsparse<n>_``.
    params : ParameterDict, optional
        Parameters to share with another block.
    """

    def __init__(self, in_units: int, units: int, weight_grad_stype: str = "default",
                 use_bias: bool = True, dtype: DTypeLike = "float32",
                 weight_initializer: Initializer | str | None = None,
                 bias_initializer: Initializer | str | None = "zeros",
                 prefix: str | None = None, params: ParameterDict | None = None):
        super().__init__(prefix=prefix, params=params)
        self._units = units
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(in_units, units), dtype=dtype,
                                          init=weight_initializer, allow_deferred_init=True,
                                          grad_stype=weight_grad_stype)
            self.bias = (self.params.get("bias", shape=(units,), dtype=dtype,
                                         init=bias_initializer, allow_deferred_init=True)
                         if use_bias else None)

    def infer_shape(self, x: NDArray, *args: NDArray) -> None:
        """Set the weight's unknown ``in_units`` from the first input.

        Parameters
        ----------
        x : NDArray
            The first input, ``(batch, in_units)``.
        *args : NDArray
            Ignored.
        """
        self.weight.shape = (x.shape[1], self._units)

    def hybrid_forward(self, F: types.ModuleType, x: NDArray | Symbol,
                       weight: NDArray | Symbol,
                       bias: NDArray | Symbol | None = None) -> NDArray | Symbol:
        """``x . weight + bias``.

        Parameters
        ----------
        F : module
            ``nets.nd`` (or ``nets.sym`` while tracing).
        x : NDArray or Symbol
            The input, dense or CSR, ``(batch, in_units)``.
        weight : NDArray or Symbol
            The weight, ``(in_units, units)``.
        bias : NDArray or Symbol, optional
            The bias, ``(units,)`` (None with ``use_bias=False``).

        Returns
        -------
        NDArray or Symbol
            The dense output, ``(batch, units)``.
        """
        # dot(x, weight) + bias as one operator: for a csr batch the bias fills the output
        # the sparse kernel adds into (one op, one tape node, one vjp instead of two)
        return op_in(F, _dot_bias)(x, weight, bias)

    def __repr__(self):
        return (f"FullyConnectedSparse({self.weight.shape[0]} -> {self._units}, "
                f"grad_stype={self.weight.grad_stype})")


class SparseEmbedding(HybridBlock):
    """Embedding whose weight AND gradient are row_sparse: only looked-up rows are stored
    in the gradient, and an optimizer touches only those rows.

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
    prefix : str, optional
        The prefix of the weight's name; default ``sparseembedding<n>_``.
    params : ParameterDict, optional
        Parameters to share with another block.
    """

    def __init__(self, input_dim: int, output_dim: int, dtype: DTypeLike = "float32",
                 weight_initializer: Initializer | str | None = None,
                 prefix: str | None = None, params: ParameterDict | None = None):
        super().__init__(prefix=prefix, params=params)
        self._input_dim, self._output_dim = input_dim, output_dim
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(input_dim, output_dim), dtype=dtype,
                                          init=weight_initializer, stype="row_sparse",
                                          grad_stype="row_sparse")

    def hybrid_forward(self, F: types.ModuleType, x: NDArray | Symbol,
                       weight: NDArray | Symbol) -> NDArray | Symbol:
        """The rows of ``weight`` that ``x`` names.

        Parameters
        ----------
        F : module
            ``nets.nd`` (or ``nets.sym`` while tracing).
        x : NDArray or Symbol
            The ids, any shape.
        weight : NDArray or Symbol
            The row_sparse table, ``(input_dim, output_dim)``.

        Returns
        -------
        NDArray or Symbol
            A dense array of shape ``x.shape + (output_dim,)``.
        """
        return F.Embedding(x, weight, input_dim=self._input_dim, output_dim=self._output_dim,
                           sparse_grad=True)

    def __repr__(self):
        return f"SparseEmbedding({self._input_dim} -> {self._output_dim})"
