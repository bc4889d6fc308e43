"""Adam and AdamW (MXNet's ``Adam`` and ``AdamW``)."""
import math
from typing import Optional

from ..ops.update import adam_rows
from .hyper import Hyper
from .optimizer import Optimizer, register

__all__ = ["Adam", "AdamW"]


@register
class Adam(Optimizer):
    """Adam (Kingma & Ba, https://arxiv.org/abs/1412.6980)::

        x = clip(rescale_grad * grad + wd * w, clip_gradient)
        mean = beta1 * mean + (1 - beta1) * x
        var = beta2 * var + (1 - beta2) * x**2
        w -= lr_t * mean / (sqrt(var) + epsilon),   lr_t = lr * sqrt(1 - beta2**t) / (1 - beta1**t)

    The bias correction is folded into ``lr_t`` (as MXNet), and ``t`` counts the updates of
    this parameter, not of a row: with lazy updates a row first touched at step 100 is
    corrected as at step 100 (MXNet's rule; PyTorch's SparseAdam does the same). With a
    row_sparse gradient and ``lazy_update=True`` only the gradient's rows of ``w``, ``mean``
    and ``var`` are updated; see ``Optimizer`` for the rest. ``beta1`` and ``beta2`` are in
    ``[0, 1)`` (``beta1 = 1`` divides by zero in the bias correction), ``epsilon > 0``.

    Parameters
    ----------
    learning_rate : float, optional
        The step size (default 0.001).
    beta1 : float
        The first moment's decay, in ``[0, 1)``.
    beta2 : float
        The second moment's decay, in ``[0, 1)``.
    epsilon : float
        Added to the denominator, ``> 0``.
    lazy_update : bool
        With a row_sparse gradient, update only its rows of the weight and of every state.
    **kwargs
        The ``Optimizer`` arguments: ``learning_rate``, ``wd``, ``rescale_grad``,
        ``clip_gradient``, ``lr_scheduler``, ``multi_precision``, ``param_dict``,
        ``wd_mode``.
    """

    default_lr = 0.001
    state_names = ("mean", "var")
    beta1 = Hyper(low=0, high=1, high_open=True)
    beta2 = Hyper(low=0, high=1, high_open=True)
    epsilon = Hyper(low=0, low_open=True)
    _decoupled = False

    def __init__(self, learning_rate: Optional[float] = None, beta1: float = 0.9,
                 beta2: float = 0.999, epsilon: float = 1e-8, lazy_update: bool = True,
                 **kwargs):
        super().__init__(learning_rate=learning_rate, lazy_update=lazy_update, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.correct_bias = True

    def create_state(self, index, weight):
        return self._zeros_like(weight), self._zeros_like(weight)  # mean, var

    def update_rows(self, rows, lr, wd, step):
        if self.correct_bias:
            lr *= math.sqrt(1.0 - self.beta2 ** step) / (1.0 - self.beta1 ** step)
        adam_rows(rows, lr, self.beta1, self.beta2, self.epsilon, wd, self.rescale_grad,
                  self.clip, self._decoupled)


@register
class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter,
    https://arxiv.org/abs/1711.05101), MXNet's ``AdamW``::

        x = clip(rescale_grad * grad, clip_gradient)
        mean, var as in Adam
        w -= lr_t * (mean / (sqrt(var) + epsilon) + wd * w)

    ``lr_t`` carries the bias correction unless ``correct_bias=False``.

    Parameters
    ----------
    learning_rate : float, optional
        The step size (default 0.001).
    beta1, beta2 : float
        The moments' decays, in ``[0, 1)``.
    epsilon : float
        Added to the denominator, ``> 0``.
    correct_bias : bool
        Fold Adam's bias correction into the step size.
    lazy_update : bool
        With a row_sparse gradient, update only its rows of the weight and of every state.
    **kwargs
        The ``Optimizer`` arguments: ``learning_rate``, ``wd``, ``rescale_grad``,
        ``clip_gradient``, ``lr_scheduler``, ``multi_precision``, ``param_dict``,
        ``wd_mode``.
    """

    _decoupled = True

    def __init__(self, learning_rate: Optional[float] = None, beta1: float = 0.9,
                 beta2: float = 0.999, epsilon: float = 1e-6, correct_bias: bool = True,
                 lazy_update: bool = True, **kwargs):
        super().__init__(learning_rate, beta1, beta2, epsilon, lazy_update, **kwargs)
        self.correct_bias = correct_bias
