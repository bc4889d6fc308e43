"""Basic layers: ``Dense``, ``Activation``, ``Dropout``, ``Flatten``."""
from __future__ import annotations

import types
from typing import TYPE_CHECKING

import numpy as np

from .block import HybridBlock

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from ..arrays import NDArray
    from ..init import Initializer
    from ..symbol import Symbol
    from .parameter import ParameterDict

__all__ = ["Dense", "Activation", "Dropout", "Flatten"]


class Dense(HybridBlock):
    """Fully connected layer ``y = act(x . W^T + b)`` with W of shape ``(units, in_units)``.

    A CSR input runs the sparse kernel (never densified). Its weight gradient is
    dense: with this layout the touched entries are columns of W. For row_sparse
    weight gradients use ``FullyConnectedSparse`` (weight ``(in_units, units)``).
    ``in_units=0`` defers the weight's shape to the first forward pass.

    Parameters
    ----------
    units : int
        The number of outputs (the weight's rows).
    activation : str, optional
        An activation applied to the output (``'relu'``, ``'sigmoid'``, ``'tanh'``,
        ``'softrelu'``, ``'softsign'``); default none (linear).
    use_bias : bool, default True
        Add a bias vector ``b`` of shape ``(units,)``.
    flatten : bool, default True
        Flatten an N-D input to ``(batch, -1)``; False applies the layer to the last
        axis only (``in_units`` is then the last dimension).
    dtype : str or numpy dtype, default 'float32'
        The parameters' element type.
    weight_initializer : Initializer or str, optional
        The weight's initializer; default the one ``initialize`` is given.
    bias_initializer : Initializer or str, default 'zeros'
        The bias's initializer.
    in_units : int, default 0
        The number of input features; 0 infers it from the first input.
    prefix : str, optional
        The prefix of the parameters' names; default ``dense<n>_``.
    params : ParameterDict, optional
        Parameters to share with another block.

    Examples
    --------
    >>> net = Dense(4, activation="relu", in_units=8)
    """

    def __init__(self, units: int, activation: str | None = None, use_bias: bool = True,
                 flatten: bool = True, dtype: DTypeLike = "float32",
                 weight_initializer: Initializer | str | None = None,
                 bias_initializer: Initializer | str | None = "zeros", in_units: int = 0,
                 prefix: str | None = None, params: ParameterDict | None = None):
        super().__init__(prefix=prefix, params=params)
        self._units, self._flatten, self._act = units, flatten, activation
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(units, in_units), dtype=dtype,
                                          init=weight_initializer, allow_deferred_init=True)
            self.bias = (self.params.get("bias", shape=(units,), dtype=dtype,
                                         init=bias_initializer, allow_deferred_init=True)
                         if use_bias else None)

    def infer_shape(self, x: NDArray, *args: NDArray) -> None:
        """Set the weight's unknown ``in_units`` from the first input.

        Parameters
        ----------
        x : NDArray
            The first input.
        *args : NDArray
            Ignored.
        """
        in_units = int(np.prod(x.shape[1:])) if self._flatten else x.shape[-1]
        self.weight.shape = (self._units, in_units)

    def hybrid_forward(self, F: types.ModuleType, x: NDArray | Symbol,
                       weight: NDArray | Symbol,
                       bias: NDArray | Symbol | None = None) -> NDArray | Symbol:
        """``act(x . weight^T + bias)``.

        Parameters
        ----------
        F : module
            ``nets.nd`` (or ``nets.sym`` while tracing).
        x : NDArray or Symbol
            The input, dense or CSR, ``(batch, in_units)`` or N-D with ``flatten``.
        weight : NDArray or Symbol
            The weight, ``(units, in_units)``.
        bias : NDArray or Symbol, optional
            The bias, ``(units,)`` (None with ``use_bias=False``).

        Returns
        -------
        NDArray or Symbol
            The output, ``(batch, units)``.
        """
        out = F.FullyConnected(x, weight, bias, num_hidden=self._units, no_bias=bias is None,
                               flatten=self._flatten)
        return out if self._act is None else F.Activation(out, act_type=self._act)

    def __repr__(self):
        shape = self.weight.shape
        return f"Dense({shape[1] or None} -> {shape[0]}, {self._act or 'linear'})"


class Activation(HybridBlock):
    """Applies an activation function element-wise.

    Parameters
    ----------
    activation : str
        ``'relu'``, ``'sigmoid'``, ``'tanh'``, ``'softrelu'`` or ``'softsign'``.
    prefix : str, optional
        The prefix of the block's name; default ``activation<n>_``.
    """

    def __init__(self, activation: str, prefix: str | None = None):
        super().__init__(prefix=prefix)
        self._act = activation

    def hybrid_forward(self, F: types.ModuleType, x: NDArray | Symbol) -> NDArray | Symbol:
        """The activation of ``x``.

        Parameters
        ----------
        F : module
            ``nets.nd`` (or ``nets.sym`` while tracing).
        x : NDArray or Symbol
            The input.

        Returns
        -------
        NDArray or Symbol
            ``x``'s shape; a zero-preserving activation of a sparse input keeps its
            storage type.
        """
        return F.Activation(x, act_type=self._act)

    def __repr__(self):
        return f"Activation({self._act})"


class Dropout(HybridBlock):
    """Zeroes each element with probability ``rate`` while training (inverted scaling:
    the kept ones are divided by ``1 - rate``); the identity when predicting.

    Parameters
    ----------
    rate : float
        The probability of dropping an element, in ``[0, 1)``.
    axes : tuple of int, default ()
        Axes along which one mask is shared (broadcast); default an independent draw
        per element.
    prefix : str, optional
        The prefix of the block's name; default ``dropout<n>_``.
    """

    def __init__(self, rate: float, axes: tuple[int, ...] = (), prefix: str | None = None):
        super().__init__(prefix=prefix)
        self._rate, self._axes = rate, axes

    def hybrid_forward(self, F: types.ModuleType, x: NDArray | Symbol) -> NDArray | Symbol:
        """``x`` with dropped elements zeroed (while training).

        Parameters
        ----------
        F : module
            ``nets.nd`` (or ``nets.sym`` while tracing).
        x : NDArray or Symbol
            The input.

        Returns
        -------
        NDArray or Symbol
            ``x``'s shape.
        """
        return F.Dropout(x, p=self._rate, axes=self._axes)

    def __repr__(self):
        return f"Dropout(p={self._rate})"


class Flatten(HybridBlock):
    """Reshapes ``(batch, ...)`` to ``(batch, -1)``.

    Parameters
    ----------
    prefix : str, optional
        The prefix of the block's name; default ``flatten<n>_``.
    params : ParameterDict, optional
        Unused (the layer has no parameters).
    """

    def hybrid_forward(self, F: types.ModuleType, x: NDArray | Symbol) -> NDArray | Symbol:
        """``x`` reshaped to ``(batch, -1)``.

        Parameters
        ----------
        F : module
            ``nets.nd`` (or ``nets.sym`` while tracing).
        x : NDArray or Symbol
            The input, ``(batch, ...)``.

        Returns
        -------
        NDArray or Symbol
            The 2-D result.
        """
        return F.flatten(x)
