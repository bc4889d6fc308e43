"""``Trainer``: applies an optimizer to a set of parameters (MXNet Gluon's).

The Trainer is local: ``allreduce_grads`` has nothing to reduce on one device.
Distributed storage (a KVStore with row-sparse push/pull) would plug in as a
separate layer, never woven into this class. Row-sparse gradients reach the
optimizer as they are, so a lazy update touches only their rows.

Gradients are read through each parameter's gradient slot (``nets.autograd.slot``),
the same way whatever their storage type: a gradient is fresh once ``backward``
delivered into it and stale after an update used it; the Trainer neither clears nor
zeroes gradients (``grad_req='write'`` overwrites them at the next ``backward``,
``'add'`` accumulates until ``zero_grad()``), as in MXNet.
"""
from . import autograd, optim
from .base import NetsError
from .layers.parameter import Parameter, ParameterDict
from .optim.states import load_states, save_states

__all__ = ["Trainer", "StaleGradientError"]


class StaleGradientError(NetsError, UserWarning):
    """A parameter's gradient was not updated by ``backward`` since the last step.

    Also a ``UserWarning``, the class MXNet raises for it, so MXNet programs' handlers
    catch it."""


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

        A gradient that ``backward`` did not deliver since the last update is stale
        (MXNet's rule; dense and row_sparse alike): unless ``ignore_stale_grad``, any
        stale gradient raises ``StaleGradientError`` before a parameter is updated; with
        it, parameters with stale gradients are skipped. Each update makes the gradient
        it used stale.
        """
        optimizer = self._optimizer
        optimizer.rescale_grad = self._scale / batch_size
        for i, weight, slot in self._fresh(ignore_stale_grad):
            if not self._created[i]:
                self._states[i] = optimizer.create_state_multi_precision(i, weight)
                self._created[i] = True
            grad = slot.buffer
            optimizer.update_multi_precision(i, weight, grad, self._states[i])
            slot.fresh = False

    def _fresh(self, ignore_stale_grad):
        """``[(i, weight, gradient slot)]`` for the parameters to update: those with a
        gradient (``grad_req`` not 'null') whose gradient is fresh; a stale one raises
        unless ``ignore_stale_grad``. Every parameter is checked before any is updated."""
        out = []
        for i, p in enumerate(self._params):
            if p.grad_req == "null":
                continue
            weight = p.data()
            slot = autograd.grad_slot(weight)
            if slot.fresh:
                out.append((i, weight, slot))
            elif not ignore_stale_grad:
                raise StaleGradientError(
                    f"Trainer: the gradient of Parameter {p.name!r} is stale: backward() has "
                    f"not updated it since the last step, so the latest forward pass under "
                    f"autograd.record() did not use the parameter (a bug, unless the model "
                    f"uses a subset of its parameters on purpose: then pass "
                    f"ignore_stale_grad=True to step()/update() to skip such parameters)")
        return out

    # -- states -------------------------------------------------------------------------
    def save_states(self, fname):
        """Save optimizer states (sparse ones stay sparse) and update counters."""
        save_states(fname, self._optimizer, [p.name for p in self._params], self._states)

    def load_states(self, fname):
        """Load states saved by ``save_states`` for the same parameters and optimizer."""
        self._states = load_states(fname, self._optimizer, [p.name for p in self._params])
        self._created = [s is not None for s in self._states]  # None: made at the next step
