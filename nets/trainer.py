"""``Trainer``: applies an optimizer to a set of parameters (MXNet Gluon's).

The Trainer is local: ``allreduce_grads`` has nothing to reduce on one device.
Distributed storage (a KVStore with row-sparse push/pull) would plug in as a
separate layer, never woven into this class. Row-sparse gradients reach the
optimizer as they are, so a lazy update touches only their rows; after a step
they are emptied, so the next batch starts from no rows.
"""
from . import optim
from .base import NetsError
from .layers.parameter import Parameter, ParameterDict
from .optim.states import load_states, save_states

__all__ = ["Trainer"]


def _as_param_list(params):
    if isinstance(params, (ParameterDict, dict)):
        params = list(params.values())
    elif isinstance(params, Parameter):
        params = [params]
    params = list(params)
    for p in params:
        if not isinstance(p, Parameter):
            raise NetsError(f"Trainer: params must be Parameters (e.g. net.collect_params()), "
                            f"got {type(p).__name__}")
    names = [p.name for p in params]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise NetsError(f"Trainer: parameters listed twice: {sorted(dup)}")
    return params


class Trainer:
    """``Trainer(params, optimizer, optimizer_params=None)``: ``step(batch_size)`` after
    ``backward()`` rescales gradients by ``1/batch_size`` and updates every parameter.

    ``optimizer`` is a name (``'sgd'``, ``'adam'``...) created with ``optimizer_params``,
    or an ``Optimizer`` instance. Each parameter's ``lr_mult``/``wd_mult`` apply.
    """

    def __init__(self, params, optimizer, optimizer_params=None, kvstore=None):
        if kvstore not in (None, "local", "device"):
            raise NetsError(f"Trainer: kvstore={kvstore!r}; nets' Trainer is local (use None)")
        self._params = _as_param_list(params)
        param_dict = dict(enumerate(self._params))
        if isinstance(optimizer, optim.Optimizer):
            if optimizer_params:
                raise NetsError("Trainer: optimizer_params must be None when optimizer is an "
                                "Optimizer instance")
            self._optimizer = optimizer
            self._optimizer.param_dict = param_dict
        else:
            self._optimizer = optim.create(optimizer, param_dict=param_dict,
                                           **(optimizer_params or {}))
        self._scale = self._optimizer.rescale_grad
        self._states = [None] * len(self._params)
        self._created = [False] * len(self._params)  # (a state may be None: SGD's)

    @property
    def optimizer(self):
        return self._optimizer

    @property
    def learning_rate(self):
        """The optimizer's current learning rate."""
        return self._optimizer.learning_rate

    def set_learning_rate(self, lr):
        """Set the optimizer's learning rate (not allowed with an lr_scheduler)."""
        self._optimizer.set_learning_rate(lr)

    def step(self, batch_size, ignore_stale_grad=False):
        """``allreduce_grads()`` then ``update(batch_size)``."""
        self.allreduce_grads()
        self.update(batch_size, ignore_stale_grad)

    def allreduce_grads(self):
        """Sum gradients across devices: nothing to do on one device."""

    def update(self, batch_size, ignore_stale_grad=False):
        """Update each parameter with its gradient rescaled by ``1/batch_size``.

        A gradient not recomputed by ``backward`` since the last update is stale: it
        raises unless ``ignore_stale_grad``, in which case that parameter is skipped.
        """
        optimizer = self._optimizer
        optimizer.rescale_grad = self._scale / batch_size
        for i, p in enumerate(self._params):
            if p.grad_req == "null":
                continue
            weight = p.data()
            if not getattr(weight, "_fresh_grad", False):
                if ignore_stale_grad:
                    continue
                raise NetsError(
                    f"Trainer: gradient of Parameter {p.name!r} is stale: it was not computed "
                    f"by backward() since the last step (is it used in the forward pass under "
                    f"autograd.record()?). Pass ignore_stale_grad=True to skip such parameters")
            if not self._created[i]:
                self._states[i] = optimizer.create_state_multi_precision(i, weight)
                self._created[i] = True
            grad = weight.grad
            optimizer.update_multi_precision(i, weight, grad, self._states[i])
            weight._fresh_grad = False
            if grad.stype == "row_sparse":  # empty it: no rows until the next backward
                grad._clear()

    # -- states -------------------------------------------------------------------------
    def save_states(self, fname):
        """Save optimizer states (sparse ones stay sparse) and update counters."""
        save_states(fname, self._optimizer, [p.name for p in self._params], self._states)

    def load_states(self, fname):
        """Load states saved by ``save_states`` for the same parameters and optimizer."""
        self._states = load_states(fname, self._optimizer, [p.name for p in self._params])
        self._created = [s is not None for s in self._states]  # None: made at the next step
