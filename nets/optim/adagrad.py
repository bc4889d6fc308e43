"""AdaGrad (MXNet's ``AdaGrad``), row-wise AdaGrad (FBGEMM's) and group AdaGrad (MXNet's
``GroupAdaGrad``, row-wise with ``eps`` under the square root)."""
from typing import Union

from ..arrays.dense import NDArray
from ..ops.update import adagrad_rows, rowwise_adagrad_rows
from .hyper import Hyper
from .optimizer import Optimizer, register

__all__ = ["AdaGrad", "RowWiseAdaGrad", "GroupAdaGrad"]


@register
class AdaGrad(Optimizer):
    """AdaGrad (Duchi et al., http://www.jmlr.org/papers/volume12/duchi11a/duchi11a.pdf)::

        x = clip(rescale_grad * grad, clip_gradient)
        history += x**2
        w -= lr * (x / sqrt(history + eps) + wd * w)

    ``eps > 0`` keeps the division finite. MXNet's sparse AdaGrad refused ``wd > 0``; here the
    same rule runs on the gradient's rows (``lazy_update=True``) or on every row.

    Parameters
    ----------
    eps : float
        Keeps the division finite, ``> 0``.
    **kwargs
        The ``Optimizer`` arguments: ``learning_rate``, ``wd``, ``rescale_grad``,
        ``clip_gradient``, ``lr_scheduler``, ``multi_precision``, ``param_dict``,
        ``lazy_update``, ``wd_mode``.
    """

    state_names = ("history",)
    float_stable_eps = Hyper(low=0, low_open=True, name="eps")

    def __init__(self, eps: float = 1e-7, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        return self._zeros_like(weight)  # history

    def update_rows(self, rows, lr, wd, step):
        adagrad_rows(rows, lr, wd, self.float_stable_eps, self.rescale_grad, self.clip)


@register
class RowWiseAdaGrad(Optimizer):
    """Row-wise AdaGrad (FBGEMM's ``EXACT_ROWWISE_ADAGRAD``, the default optimizer of
    TorchRec's embedding tables): one accumulator per row instead of one per entry, so a
    ``(rows, d)`` weight keeps a ``(rows,)`` state, ``d`` times less than AdaGrad's::

        x = clip(rescale_grad * grad, clip_gradient) + wd * w     (each row)
        history[row] += mean(x**2 over the row)
        w[row] -= lr * x / (sqrt(history[row]) + eps)

    Registered as ``'rowwise_adagrad'``. Lazy (only the gradient's rows, ``lazy_update=True``)
    on dense and row_sparse weights alike, as the other optimizers. A 1-D weight has one
    entry per row, so this is AdaGrad with ``eps`` outside the square root; ``eps > 0``.

    Parameters
    ----------
    eps : float
        Keeps the division finite, ``> 0``.
    **kwargs
        The ``Optimizer`` arguments: ``learning_rate``, ``wd``, ``rescale_grad``,
        ``clip_gradient``, ``lr_scheduler``, ``multi_precision``, ``param_dict``,
        ``lazy_update``, ``wd_mode``.
    """

    state_names = ("history",)
    row_states = ("history",)
    float_stable_eps = Hyper(low=0, low_open=True, name="eps")
    _eps_inside = False  # (GroupAdaGrad: sqrt(history + eps))

    def __init__(self, eps: float = 1e-7, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        return self._zeros_like(weight, weight.shape[:1])  # history: one value per row

    def update_rows(self, rows, lr, wd, step):
        rowwise_adagrad_rows(rows, lr, wd, self.float_stable_eps, self.rescale_grad, self.clip,
                             self._eps_inside)


Optimizer.opt_registry["rowwise_adagrad"] = RowWiseAdaGrad  # FBGEMM's name, beside the class's


@register
class GroupAdaGrad(RowWiseAdaGrad):
    """Group AdaGrad, MXNet's ``GroupAdaGrad`` (``mx.optimizer.contrib``), registered as
    ``'groupadagrad'``: AdaGrad with one accumulator per weight row, a ``(rows, 1)`` state::

        x = clip(rescale_grad * grad, clip_gradient) + wd * w     (each row)
        history[row] += mean(x**2 over the row)
        w[row] -= lr * x / sqrt(history[row] + eps)

    It is ``RowWiseAdaGrad`` but for ``eps``, here under the square root (default
    ``1e-5``), and the state's shape, ``(rows, 1)`` as MXNet's (row-wise AdaGrad keeps
    ``(rows,)``). MXNet refused ``wd > 0``; here it adds ``wd * w`` to the gradient as
    row-wise AdaGrad does. Lazy (only the gradient's rows, ``lazy_update=True``) on dense and
    row_sparse weights alike; the same rule as ``nd.contrib.group_adagrad_update``.

    Parameters
    ----------
    eps : float
        Added to the accumulator under the square root, ``> 0``.
    **kwargs
        The ``Optimizer`` arguments: ``learning_rate``, ``wd``, ``rescale_grad``,
        ``clip_gradient``, ``lr_scheduler``, ``multi_precision``, ``param_dict``,
        ``lazy_update``, ``wd_mode``.
    """

    _eps_inside = True

    def __init__(self, eps: float = 1e-5, **kwargs):
        super().__init__(eps=eps, **kwargs)

    def create_state(self, index: Union[int, str], weight: NDArray) -> NDArray:
        """The accumulator: zeros of shape ``(rows, 1)`` (MXNet's), the weight's dtype, and
        its storage type when ``lazy_update``.

        Parameters
        ----------
        index : int or str
            The parameter's index.
        weight : NDArray
            The weight.
        """
        return self._zeros_like(weight, weight.shape[:1] + (1,))
