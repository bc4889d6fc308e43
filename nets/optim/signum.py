"""Signum and signSGD (MXNet's ``Signum``; ``signsgd``, Signum without momentum)."""
from typing import Optional, Union

from ..arrays.dense import NDArray
from ..ops.update import RowSelection, signum_rows
from .hyper import Hyper
from .optimizer import Optimizer, register

__all__ = ["Signum", "SignSGD"]


@register
class Signum(Optimizer):
    """Signum (Bernstein et al., https://arxiv.org/abs/1802.04434), MXNet's ``Signum``: the
    sign of a momentum of the gradients, with MXNet's sign convention for the state::

        mom = momentum * mom - (1 - momentum) * (wd * w + clip(rescale_grad * grad, clip_gradient))
        w = (1 - lr * wd_lh) * w + lr * sign(mom)

    ``wd`` enters the momentum, ``wd_lh`` is a decoupled decay (Loshchilov & Hutter). With
    ``momentum=0`` there is no state and the update is signSGD (``SignSGD``), both decays
    then decoupled: ``w = (1 - lr * (wd + wd_lh)) * w - lr * sign(clip(rescale_grad * grad))``
    (MXNet's Signum then calls ``signsgd_update``, which takes ``wd`` so). ``sign`` is 0 at
    0. With a row_sparse gradient and ``lazy_update=True`` only the gradient's rows of ``w``
    and ``mom`` are updated (MXNet densified the gradient); the same rule as
    ``nd.signum_update`` and ``nd.signsgd_update``.

    Parameters
    ----------
    learning_rate : float, optional
        The step size (default 0.01).
    momentum : float
        The momentum's decay, in ``[0, 1)``; 0 keeps no state (signSGD).
    wd_lh : float
        The decoupled weight decay, ``>= 0``.
    **kwargs
        The ``Optimizer`` arguments: ``wd``, ``rescale_grad``, ``clip_gradient``,
        ``lr_scheduler``, ``multi_precision``, ``param_dict``, ``lazy_update``,
        ``wd_mode``.
    """

    state_names = ("mom",)
    momentum = Hyper(low=0, high=1, high_open=True)
    wd_lh = Hyper(low=0)

    def __init__(self, learning_rate: Optional[float] = None, momentum: float = 0.9,
                 wd_lh: float = 0.0, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum, self.wd_lh = momentum, wd_lh

    def create_state(self, index: Union[int, str], weight: NDArray) -> Optional[NDArray]:
        """The momentum (zeros of the weight's shape and dtype; its storage type when
        ``lazy_update``), or None with ``momentum=0``.

        Parameters
        ----------
        index : int or str
            The parameter's index.
        weight : NDArray
            The weight.
        """
        return self._zeros_like(weight) if self.momentum != 0 else None

    def states_read(self) -> int:
        """0: the momentum is read only when given (as SGD's)."""
        return 0

    def update_rows(self, rows: RowSelection, lr: float, wd: float, step: int) -> None:
        """The rule (``nets.ops.update.signum_rows``, ``nd.signum_update``'s) on ``rows``.

        Parameters
        ----------
        rows : RowSelection
            The rows to update.
        lr : float
            The learning rate.
        wd : float
            The weight decay entering the momentum (decoupled without momentum).
        step : int
            The parameter's update count (unused).
        """
        signum_rows(rows, lr, self.momentum, wd, self.wd_lh, self.rescale_grad, self.clip)


@register
class SignSGD(Signum):
    """signSGD (Bernstein et al., https://arxiv.org/abs/1802.04434), registered as
    ``'signsgd'``: ``Signum`` without momentum, keeping no state::

        w = (1 - lr * (wd + wd_lh)) * w - lr * sign(clip(rescale_grad * grad, clip_gradient))

    the rule of ``nd.signsgd_update`` (``wd_lh`` 0). See ``Signum``.

    Parameters
    ----------
    learning_rate : float, optional
        The step size (default 0.01).
    wd_lh : float
        A decoupled weight decay added to ``wd``, ``>= 0``.
    **kwargs
        The ``Optimizer`` arguments: ``wd``, ``rescale_grad``, ``clip_gradient``,
        ``lr_scheduler``, ``multi_precision``, ``param_dict``, ``lazy_update``,
        ``wd_mode``.
    """

    def __init__(self, learning_rate: Optional[float] = None, wd_lh: float = 0.0, **kwargs):
        super().__init__(learning_rate=learning_rate, momentum=0.0, wd_lh=wd_lh, **kwargs)
