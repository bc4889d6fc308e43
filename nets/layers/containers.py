"""Containers: ``Sequential``, ``HybridSequential``, ``Lambda``, ``HybridLambda``."""
from __future__ import annotations

import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import nd
from ..base import NetsError
from .block import Block, HybridBlock

if TYPE_CHECKING:
    from ..arrays import NDArray
    from ..symbol import Symbol

__all__ = ["Sequential", "HybridSequential", "Lambda", "HybridLambda"]


class _SequentialMixin:
    def add(self, *blocks: Block) -> None:
        """Append ``blocks`` in order.

        Parameters
        ----------
        *blocks : Block
            The blocks to append (a ``HybridSequential`` takes hybrid blocks).
        """
        for block in blocks:
            self.register_child(block)

    def forward(self, x: Any, *args: Any) -> Any:
        """Apply the children in order: the first gets ``(x, *args)``, each next one the
        previous one's output.

        Parameters
        ----------
        x : NDArray or Symbol
            The first input.
        *args : NDArray or Symbol
            More inputs of the first child.

        Returns
        -------
        NDArray, Symbol or tuple of them
            The last child's output (``x`` when there are no children).
        """
        for block in self._children.values():
            x = block(x, *args)
            args = ()
        return x

    def __getitem__(self, key):
        children = list(self._children.values())
        if isinstance(key, slice):
            out = type(self)(prefix=self._prefix)
            out.add(*children[key])
            return out
        return children[key]

    def __len__(self):
        return len(self._children)


class Sequential(_SequentialMixin, Block):
    """Blocks applied one after another: ``net.add(Dense(8), Activation('relu'))``.

    ``net[i]`` is the i-th child, ``net[a:b]`` a new container of those children,
    ``len(net)`` their number.

    Parameters
    ----------
    prefix : str, optional
        The prefix of the children's names; default ``sequential<n>_``.
    params : ParameterDict, optional
        Parameters to share with another block.
    """


class HybridSequential(_SequentialMixin, HybridBlock):
    """``Sequential`` of hybrid blocks (``hybridize()`` runs it as one graph).

    Parameters
    ----------
    prefix : str, optional
        The prefix of the children's names; default ``hybridsequential<n>_``.
    params : ParameterDict, optional
        Parameters to share with another block.
    """


def _resolve(function, name):
    if isinstance(function, str):
        if not hasattr(nd, function):
            raise NetsError(f"{name}: nets.nd has no function {function!r}")
        return getattr(nd, function)
    if not callable(function):
        raise NetsError(f"{name}: function={function!r} is neither callable nor an op name")
    return function


class Lambda(Block):
    """Wrap a function of the inputs as a block.

    Parameters
    ----------
    function : callable or str
        ``function(*inputs)``, or the name of a ``nets.nd`` function (``'relu'``).
    prefix : str, optional
        The prefix of the block's name; default ``lambda<n>_``.
    """

    def __init__(self, function: Callable[..., Any] | str, prefix: str | None = None):
        super().__init__(prefix=prefix)
        self._func = _resolve(function, "Lambda")

    def forward(self, *args: Any) -> Any:
        """``function(*args)``.

        Parameters
        ----------
        *args : NDArray
            The inputs.

        Returns
        -------
        NDArray or tuple of NDArray
            What the function returns.
        """
        return self._func(*args)


class HybridLambda(HybridBlock):
    """Wrap a function of the operator namespace and the inputs as a hybrid block.

    Parameters
    ----------
    function : callable or str
        ``function(F, *inputs)`` with ``F`` ``nets.nd`` or ``nets.sym``, or the name of
        a ``nets.nd`` function (``'relu'``).
    prefix : str, optional
        The prefix of the block's name; default ``hybridlambda<n>_``.
    """

    def __init__(self, function: Callable[..., Any] | str, prefix: str | None = None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            _resolve(function, "HybridLambda")  # validates the name
            self._func = lambda F, *args: getattr(F, function)(*args)  # nd or sym, as traced
        else:
            self._func = _resolve(function, "HybridLambda")

    def hybrid_forward(self, F: types.ModuleType, x: NDArray | Symbol,
                       *args: NDArray | Symbol) -> Any:
        """``function(F, x, *args)``.

        Parameters
        ----------
        F : module
            ``nets.nd`` (or ``nets.sym`` while tracing).
        x : NDArray or Symbol
            The first input.
        *args : NDArray or Symbol
            More inputs.

        Returns
        -------
        NDArray, Symbol or tuple of them
            What the function returns.
        """
        return self._func(F, x, *args)
