"""``Updater`` and ``get_updater`` (MXNet's ``mx.optimizer.Updater``/``get_updater``): an
optimizer called as ``updater(index, grad, weight)``, as a store applies it to its keys."""
from ..arrays.dense import NDArray
from ..base import NetsError
from .optimizer import Optimizer

__all__ = ["Updater", "get_updater"]


class Updater:
    """``updater(index, grad, weight)`` is ``optimizer.step(index, weight, grad)``: the
    optimizer keeps each index's state (``optimizer.state``); ``states`` shows them as
    MXNet's ``Updater.states`` (index -> state).

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer applied.
    """

    def __init__(self, optimizer: Optimizer):
        if not isinstance(optimizer, Optimizer):
            raise NetsError(f"Updater: expected a nets.optim.Optimizer, got "
                            f"{type(optimizer).__name__}")
        self.optimizer = optimizer

    def __call__(self, index, grad: NDArray, weight: NDArray) -> None:
        """Update ``weight`` in place from ``grad`` (``Optimizer.step``).

        Parameters
        ----------
        index : int or str, or a list of them
            The key: the optimizer's parameter index (its state, multipliers, count). A list
            or tuple of keys updates several parameters, ``grad`` and ``weight`` then being
            lists of the same length (MXNet's aggregated call).
        grad : NDArray
            The gradient.
        weight : NDArray
            The weight, updated in place.
        """
        if isinstance(index, (list, tuple)):
            if not (isinstance(grad, (list, tuple)) and isinstance(weight, (list, tuple))
                    and len(grad) == len(weight) == len(index)):
                raise NetsError(f"Updater: {len(index)} indices need as many gradients and "
                                f"weights, in lists")
            for i, g, w in zip(index, grad, weight):
                self.optimizer.step(i, w, g)
            return
        self.optimizer.step(index, weight, grad)

    @property
    def states(self) -> dict:
        """``{index: state}`` of the indices whose state the optimizer made (a view of
        ``optimizer.state``; change the optimizer's, not this)."""
        return {k: r.state for k, r in self.optimizer.state.items() if r.has_state}


def get_updater(optimizer: Optimizer) -> Updater:
    """An ``Updater`` applying ``optimizer`` (MXNet's ``mx.optimizer.get_updater``).

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer applied.

    Returns
    -------
    Updater
    """
    return Updater(optimizer)
