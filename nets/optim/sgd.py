"""SGD with momentum and weight decay (MXNet's ``SGD``)."""
from ..ops.update import sgd_rows
from .hyper import Hyper
from .optimizer import Optimizer, register

__all__ = ["SGD"]


@register
class SGD(Optimizer):
    """Stochastic gradient descent with momentum and weight decay::

        mom = momentum * mom - lr * (wd * w + clip(rescale_grad * grad, clip_gradient))
        w += mom

    (without momentum: ``w -= lr * (wd * w + clip(rescale_grad * grad))``). With a
    row_sparse gradient and ``lazy_update=True`` only the gradient's rows of ``w`` and
    ``mom`` are updated (MXNet's lazy update); see ``Optimizer`` for the rest.
    ``momentum`` is in ``[0, 1)`` (at 1 the velocity never decays).

    Parameters
    ----------
    momentum : float
        The velocity's decay, in ``[0, 1)``; 0 keeps no state.
    lazy_update : bool
        With a row_sparse gradient, update only its rows of the weight and of every state.
    **kwargs
        The ``Optimizer`` arguments: ``learning_rate``, ``wd``, ``rescale_grad``,
        ``clip_gradient``, ``lr_scheduler``, ``multi_precision``, ``param_dict``,
        ``wd_mode``.
    """

    state_names = ("mom",)
    momentum = Hyper(low=0, high=1, high_open=True)

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, **kwargs):
        super().__init__(lazy_update=lazy_update, **kwargs)
        self.momentum = momentum

    def create_state(self, index, weight):
        return self._zeros_like(weight) if self.momentum != 0 else None

    def states_read(self):
        return 0  # the momentum is read only when given (``has_mom``), as MXNet

    def update_rows(self, rows, lr, wd, step):
        sgd_rows(rows, lr, wd, self.momentum, self.rescale_grad, self.clip)
