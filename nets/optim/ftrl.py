"""FTRL-proximal (MXNet's ``Ftrl``)."""
from typing import Optional

from ..base import NetsError
from ..ops.update import ftrl_rows
from .hyper import Hyper
from .optimizer import Optimizer, register

__all__ = ["FTRL", "Ftrl"]


@register
class FTRL(Optimizer):
    """FTRL-proximal (McMahan et al., "Ad Click Prediction: a View from the Trenches")::

        x = clip(rescale_grad * grad, clip_gradient)
        z += x - (sqrt(n + x**2) - sqrt(n)) * w / lr
        n += x**2
        w = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd)   if |z| > lamda1, else 0

    ``lamda1`` is the L1 strength and ``wd`` an L2 term of the closed form (not a decay
    step, so ``wd_mode`` must stay ``'lazy'``). A row with a zero gradient keeps ``z`` and
    ``n``, so a dense update only recomputes its weight from them.

    The update divides by the learning rate, so it must be ``> 0`` (a zero rate, or a
    parameter's ``lr_mult`` of 0, would fill ``z`` and ``w`` with NaNs: freeze a parameter
    with ``grad_req='null'`` instead); ``lamda1`` and ``beta`` are ``>= 0``.

    Parameters
    ----------
    lamda1 : float
        The L1 strength, ``>= 0``.
    learning_rate : float, optional
        The step size, ``> 0`` (default 0.1).
    beta : float
        Added to ``sqrt(n)`` in the per-coordinate rate, ``>= 0``.
    **kwargs
        The ``Optimizer`` arguments: ``learning_rate``, ``wd``, ``rescale_grad``,
        ``clip_gradient``, ``lr_scheduler``, ``multi_precision``, ``param_dict``,
        ``lazy_update``, ``wd_mode``.
    """

    default_lr = 0.1
    state_names = ("z", "n")
    _decays = False
    lr = Hyper(low=0, low_open=True, name="learning_rate")
    lamda1 = Hyper(low=0)
    beta = Hyper(low=0)

    def __init__(self, lamda1: float = 0.01, learning_rate: Optional[float] = None,
                 beta: float = 1.0, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.lamda1, self.beta = lamda1, beta

    def create_state(self, index, weight):
        return self._zeros_like(weight), self._zeros_like(weight)  # z, n

    def update_rows(self, rows, lr, wd, step):
        if not lr > 0:
            raise NetsError(f"FTRL: learning rate {lr} (learning_rate times the parameter's "
                            f"lr_mult, or the lr_scheduler's): FTRL divides by it, so it must "
                            f"be > 0")
        ftrl_rows(rows, lr, self.lamda1, self.beta, wd, self.rescale_grad, self.clip)


Ftrl = FTRL  # MXNet's spelling
