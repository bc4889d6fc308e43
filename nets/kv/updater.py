"""``Updater``: an optimizer applied by a store, with one state per key (MXNet's
``optimizer.get_updater``), and its states file - the one ``Trainer.save_states`` writes."""
from ..base import NetsError
from ..optim import Optimizer
from ..optim.states import load_states, save_states

__all__ = ["Updater"]


class Updater:
    """``updater(key, grad, weight)``: ``optimizer``'s update of ``weight`` with ``grad``,
    the key serving as the optimizer's parameter index (its ``lr_mult``/``wd_mult`` and
    update count); the state is created at the key's first update."""

    def __init__(self, optimizer):
        if not isinstance(optimizer, Optimizer):
            raise NetsError(f"set_optimizer: expected a nets.optim.Optimizer, got "
                            f"{type(optimizer).__name__}")
        self.optimizer = optimizer
        self.states = {}

    def __call__(self, key, grad, weight):
        opt = self.optimizer
        if key not in self.states:  # (a state may be None: SGD's)
            self.states[key] = opt.create_state_multi_precision(key, weight)
        opt.update_multi_precision(key, weight, grad, self.states[key])

    def changed_rows(self, grad):
        """The sorted row ids an update with ``grad`` writes (the optimizer's lazy update
        of a row_sparse gradient writes exactly its rows), or None when it may write
        every row (a dense gradient, ``lazy_update=False``, or ``wd_mode='dense'``, which
        decays the rows the gradient lacks)."""
        opt = self.optimizer
        if grad.stype != "row_sparse" or not opt.lazy_update or opt.wd_mode == "dense":
            return None
        return grad.indices.asnumpy()

    def _names(self, keys, what):
        """The parameter names of ``keys`` (0 .. n-1: the optimizer's indices) for a states
        file: each key's ``param_dict`` entry's name, else the key itself."""
        if sorted(keys) != list(range(len(keys))) or not all(isinstance(k, int) for k in keys):
            raise NetsError(f"{what}: the states file numbers parameters 0 .. n-1 (as Trainer "
                            f"and Module key them); this store's keys are {sorted(keys)}")
        params = self.optimizer.param_dict
        return [getattr(params.get(k), "name", str(k)) for k in range(len(keys))]

    def save(self, fname, keys):
        """Write the states of ``keys`` (``Trainer.save_states``' file)."""
        names = self._names(keys, "save_optimizer_states")
        save_states(fname, self.optimizer, names, [self.states.get(k) for k in range(len(names))])

    def load(self, fname, values):
        """Read the states of the store's ``values`` (``{key: value}``; each state is checked
        against the one the optimizer makes for the value) written by ``save`` or
        ``Trainer.save_states``."""
        names = self._names(list(values), "load_optimizer_states")
        states = load_states(fname, self.optimizer, names, [values[k] for k in range(len(names))])
        self.states = {k: s for k, s in enumerate(states) if s is not None}
