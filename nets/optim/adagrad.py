"""AdaGrad (MXNet's ``AdaGrad``) and row-wise AdaGrad (FBGEMM's)."""
from .. import kernels
from .hyper import Hyper
from .optimizer import Optimizer, register

__all__ = ["AdaGrad", "RowWiseAdaGrad"]


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
        ``clip_gradient``, ``lr_scheduler``, ``multi_precision``, ``param_dict``, ``lazy_update``, ``wd_mode``.
    """

    state_names = ("history",)
    float_stable_eps = Hyper(low=0, low_open=True, name="eps")

    def __init__(self, eps: float = 1e-7, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        return self._zeros_like(weight)  # history

    def update_rows(self, rows, lr, wd, step):
        rows.run(kernels.optim.adagrad, (lr, wd, self.float_stable_eps, self.rescale_grad,
                                         self.clip))


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
        ``clip_gradient``, ``lr_scheduler``, ``multi_precision``, ``param_dict``, ``lazy_update``, ``wd_mode``.
    """

    state_names = ("history",)
    row_states = ("history",)
    float_stable_eps = Hyper(low=0, low_open=True, name="eps")

    def __init__(self, eps: float = 1e-7, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        return self._zeros_like(weight, weight.shape[:1])  # history: one value per row

    def update_rows(self, rows, lr, wd, step):
        rows.run(kernels.optim.rowwise_adagrad, (lr, wd, self.float_stable_eps,
                                                 self.rescale_grad, self.clip))


Optimizer.opt_registry["rowwise_adagrad"] = RowWiseAdaGrad  # FBGEMM's name, beside the class's
