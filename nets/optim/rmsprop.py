"""RMSProp, plain and centered (MXNet's ``RMSProp``)."""
from typing import Optional

import numpy as np

from ..ops.update import rmsprop_rows
from .hyper import Hyper
from .optimizer import Optimizer, register

__all__ = ["RMSProp"]


@register
class RMSProp(Optimizer):
    """RMSProp. ``centered=False`` follows Tieleman & Hinton (2012)::

        x = clip(rescale_grad * grad + wd * w, clip_gradient)
        n = (1 - gamma1) * x**2 + gamma1 * n
        w -= lr * x / sqrt(n + epsilon)

    and ``centered=True`` Graves (2013, http://arxiv.org/abs/1308.0850, eq. 38-45)::

        n as above;  g = (1 - gamma1) * x + gamma1 * g
        delta = gamma2 * delta - lr * x / sqrt(n - g**2 + epsilon)
        w += delta

    ``clip_weights`` (if not None) then clips ``w`` to ``[-clip_weights, clip_weights]``.
    The state is ``(n,)`` or ``(n, g, delta)``. ``gamma1`` and ``gamma2`` are in ``[0, 1)``,
    ``epsilon > 0``.

    Parameters
    ----------
    learning_rate : float, optional
        The step size (default 0.001).
    gamma1 : float
        The decay of ``n`` (and ``g``), in ``[0, 1)``.
    gamma2 : float
        The momentum of ``delta`` (centered only), in ``[0, 1)``.
    epsilon : float
        Added under the square root, ``> 0``.
    centered : bool
        Graves' centered variant (three states instead of one).
    clip_weights : float, optional
        Clip the weights to ``[-clip_weights, clip_weights]`` after each update.
    **kwargs
        The ``Optimizer`` arguments: ``learning_rate``, ``wd``, ``rescale_grad``,
        ``clip_gradient``, ``lr_scheduler``, ``multi_precision``, ``param_dict``,
        ``lazy_update``, ``wd_mode``.
    """

    default_lr = 0.001
    state_names = ("n", "g", "delta")
    gamma1 = Hyper(low=0, high=1, high_open=True)
    gamma2 = Hyper(low=0, high=1, high_open=True)
    epsilon = Hyper(low=0, low_open=True)
    clip_weights = Hyper(low=0, optional=True)

    def __init__(self, learning_rate: Optional[float] = None, gamma1: float = 0.9,
                 gamma2: float = 0.9, epsilon: float = 1e-8, centered: bool = False,
                 clip_weights: Optional[float] = None, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1, self.gamma2, self.epsilon = gamma1, gamma2, epsilon
        self.centered, self.clip_weights = centered, clip_weights

    def create_state(self, index, weight):
        return tuple(self._zeros_like(weight) for _ in range(3 if self.centered else 1))

    def states_read(self):
        return 3 if self.centered else 1

    def update_rows(self, rows, lr, wd, step):
        clip_weights = np.inf if self.clip_weights is None else self.clip_weights
        rmsprop_rows(rows, lr, self.gamma1, self.gamma2, self.epsilon, wd, self.rescale_grad,
                     self.clip, clip_weights, self.centered)
