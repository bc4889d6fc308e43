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
from .ndarray.creation import zeros_sparse
from .ndarray.dense import NDArray
from .serialization import load_arrays, save_arrays

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
        self._optimizer.rescale_grad = self._scale / batch_size
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
            if self._states[i] is None:
                self._states[i] = self._optimizer.create_state_multi_precision(i, weight)
            grad = weight.grad
            self._optimizer.update_multi_precision(i, weight, grad, self._states[i])
            weight._fresh_grad = False
            if grad.stype == "row_sparse":
                grad[:] = zeros_sparse("row_sparse", grad.shape, grad.context, grad.dtype)

    # -- states -------------------------------------------------------------------------
    def save_states(self, fname):
        """Save optimizer states (sparse ones stay sparse) and update counters."""
        arrays, layout = {}, {}
        for i, (p, state) in enumerate(zip(self._params, self._states)):
            flat = []
            layout[p.name] = _structure(state, flat)
            arrays.update({f"{i}/{k}": a for k, a in enumerate(flat)})
        counters, stamps = self._optimizer.counters()
        arrays.update({f"stamps/{k}": NDArray(v) for k, v in stamps.items()})
        config = {"kind": "trainer_states", "optimizer": type(self._optimizer).__name__,
                  "params": [p.name for p in self._params], "layout": layout,
                  "counters": counters}
        save_arrays(fname, arrays, config)

    def load_states(self, fname):
        """Load states saved by ``save_states`` for the same parameters and optimizer."""
        arrays, config = load_arrays(fname)
        if config.get("kind") != "trainer_states":
            raise NetsError(f"{fname}: not a trainer-states file")
        names = [p.name for p in self._params]
        if config.get("params") != names:
            raise NetsError(f"{fname}: saved for parameters {config.get('params')}, this Trainer "
                            f"has {names}")
        if config.get("optimizer") != type(self._optimizer).__name__:
            raise NetsError(f"{fname}: saved for optimizer {config.get('optimizer')}, this "
                            f"Trainer uses {type(self._optimizer).__name__}")
        try:
            for i, p in enumerate(self._params):
                count = sum(k.startswith(f"{i}/") for k in arrays)
                flat = iter([arrays[f"{i}/{k}"] for k in range(count)])
                self._states[i] = _rebuild(config["layout"][p.name], flat)
        except (KeyError, StopIteration, TypeError) as e:
            raise NetsError(f"{fname}: optimizer states do not match their layout "
                            f"({e!r})") from None
        stamps = {k[len("stamps/"):]: a.asnumpy() for k, a in arrays.items()
                  if k.startswith("stamps/")}
        self._optimizer.load_counters(config["counters"], stamps)


def _structure(state, flat):
    """A JSON-able description of ``state`` (None, an array, or nested tuples of those),
    appending its arrays to ``flat`` in order."""
    if state is None:
        return None
    if isinstance(state, NDArray):
        flat.append(state)
        return "array"
    return [_structure(s, flat) for s in state]


def _rebuild(layout, flat):
    """Inverse of ``_structure``: the state from its description and an iterator of arrays."""
    if layout is None:
        return None
    if layout == "array":
        return next(flat)
    return tuple(_rebuild(sub, flat) for sub in layout)
