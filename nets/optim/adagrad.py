"""AdaGrad (MXNet's ``AdaGrad``)."""
from .. import kernels
from .hyper import Hyper
from .optimizer import Optimizer, register

__all__ = ["AdaGrad"]


@register
class AdaGrad(Optimizer):
    """AdaGrad (Duchi et al., http://www.jmlr.org/papers/volume12/duchi11a/duchi11a.pdf)::

        x = clip(rescale_grad * grad, clip_gradient)
        history += x**2
        w -= lr * (x / sqrt(history + eps) + wd * w)

    ``eps > 0`` keeps the division finite. MXNet's sparse AdaGrad refused ``wd > 0``; here the
    same rule runs on the gradient's rows (``lazy_update=True``) or on every row.
    """

    state_names = ("history",)
    float_stable_eps = Hyper(low=0, low_open=True, name="eps")

    def __init__(self, eps=1e-7, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        return self._zeros_like(weight)  # history

    def update_rows(self, rows, lr, wd, step):
        rows.run(kernels.optim.adagrad, (lr, wd, self.float_stable_eps, self.rescale_grad,
                                         self.clip))
