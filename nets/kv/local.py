"""``LocalKVStore``: the in-process store (MXNet's ``'local'``; ``'device'`` and the other
single-machine names are the same store here: one process, CPU arrays).

The store keeps its own copy of each key's value: ``init`` copies in, ``pull`` copies
out, so arrays outside the store change only when pulled into.
"""

import numpy as np

from ..base import NetsError
from ..arrays.row_sparse import RowSparseNDArray
from ..ops import add_n
from ..ops.sparse_ops import stored_positions, unique_rows
from .base import KVStore, Pending, register
from .compression import from_params
from .shard import generate
from ..optim import Updater, load_states, save_states

__all__ = ["LocalKVStore"]


def row_positions(value, rows):
    """``(positions, held)``: of rows ``rows`` (sorted unique int64 ids in range, which the
    caller checked or built: ``unique_rows``' result, a row_sparse array's indices) of a
    store's ``value``, those it holds (``held``: all of them, unless a row_sparse value
    lacks some) and where they lie in ``value.values``."""
    if value.stype == "row_sparse":
        return stored_positions(value, rows)
    return rows, rows  # (a dense value holds every row, row k at position k)


def rows_of(value, rows):
    """Rows ``rows`` (as for ``row_positions``) of a store's ``value``, copied into a
    row_sparse array (rows a row_sparse value does not hold stay absent)."""
    pos, held = row_positions(value, rows)
    return RowSparseNDArray(np.take(value.values, pos, axis=0), held, value.shape,
                            value.context)


@register
class LocalKVStore(KVStore):
    """The in-process store: ``nets.kv.create('local')``."""

    names = ("local", "device", "local_update_cpu", "local_allreduce_cpu",
             "local_allreduce_device")

    def __init__(self, name="local"):
        super().__init__(name)
        self._values = {}
        self._updater = None
        self._compression = None

    def _held(self, key):
        return self._values.get(key)

    # -- primitives -------------------------------------------------------------------------
    def _init(self, pairs):
        self._check_init(pairs)
        for key, array in pairs:
            self._values[key] = array.copy()

    def _adopt(self, key, array):
        """Hold ``array`` itself, not a copy, as the first value of ``key``: for an array
        its maker hands over and never uses again (a server's generated shard)."""
        self._check_init([(key, array)])
        self._values[key] = array

    def _init_generated(self, items):
        for key, spec, stype in items:
            self._values[key] = generate(spec, 0, spec[1][0], stype)

    def _push(self, pairs):
        self._check_push(pairs)
        for key, arrays in pairs:
            self._apply(key, arrays)

    def _push_changed(self, pairs, asks=None):
        self._check_push(pairs)  # (one worker: every changed row is among its asks)
        return [self._changed(key, self._apply(key, arrays)) for key, arrays in pairs]

    def _apply(self, key, arrays):
        """Merge the arrays pushed to ``key`` and apply the sum; returns the sum."""
        if self._compression is not None:
            arrays = [self._compression(key, i, a) for i, a in enumerate(arrays)]
        merged = arrays[0] if len(arrays) == 1 else add_n(*arrays)
        if self._updater is not None:
            self._updater(key, merged, self._values[key])
        else:  # the sum replaces the value, in the sum's storage type (MXNet's)
            held = self._values[key]
            if held.stype == merged.stype == "default" and held.dtype == merged.dtype:
                held[:] = merged  # (in place: the store's buffer is its own)
            else:
                self._values[key] = merged.copy() if len(arrays) == 1 else merged
        return merged

    def _changed(self, key, merged):
        """What applying ``merged`` changed in ``key``'s value: ``(rows, copy)``, the
        sorted row ids an optimizer's lazy update wrote and a row_sparse copy of those
        rows, or ``(None, copy of the whole value)`` when any row may have changed (a
        dense or non-lazy update, an ``_set_updater`` callable, no optimizer)."""
        value = self._values[key]
        rows = self._updater.optimizer.changed_rows(merged) \
            if isinstance(self._updater, Updater) else None
        if rows is None:
            return None, value.copy()
        return rows, rows_of(value, rows)

    def _pull(self, pairs, ignore_sparse):
        self._check_pull(pairs, "pull")
        for key, outs in pairs:
            for o in outs:
                if self._ignored(key, o, ignore_sparse):
                    continue
                o[:] = self._values[key]

    def _start_pull_rows(self, triples):
        """The pull runs now (in process); the ``Pending`` has nothing left to do."""
        for key, out, _ in triples:
            self._check_shape(key, out, self._known(key, "row_sparse_pull"), "row_sparse_pull",
                              "out")
        for key, out, row_ids in triples:
            value = self._values[key]
            rows = unique_rows(row_ids.values, value.shape[0], "row_sparse_pull", "row_ids")
            out.assign_result(rows_of(value, rows))
        return Pending()

    # -- optimizer and compression -------------------------------------------------------------
    def set_optimizer(self, optimizer):
        self._set_updater(Updater(optimizer))

    def _set_updater(self, updater):
        """Apply ``updater(key, pushed_sum, value)`` at each push instead of replacing the
        value (the value is the store's array: the updater changes it in place)."""
        if not callable(updater):
            raise NetsError(f"_set_updater: expected a callable, got {type(updater).__name__}")
        self._updater = updater

    def set_gradient_compression(self, compression_params):
        self._compression = from_params(compression_params)

    def _optimizer(self, what):
        if not isinstance(self._updater, Updater):
            raise NetsError(f"{what}: the store has no optimizer; call set_optimizer first")
        return self._updater.optimizer

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Write the optimizer's state (each key's, ``nets.optim.save_states``) to ``fname``
        - the file ``Trainer.save_states`` writes (the Trainer's keys 0 .. n-1 are its
        parameters in order, named by the optimizer's ``param_dict``). The optimizer itself
        is not stored (``dump_optimizer`` is accepted for MXNet's signature): the loading
        side brings it."""
        save_states(fname, self._optimizer("save_optimizer_states"))

    def load_optimizer_states(self, fname):
        """Read a file ``save_optimizer_states`` or ``Trainer.save_states`` wrote into the
        optimizer's state (each state checked against the one it makes for the key's
        value)."""
        load_states(fname, self._optimizer("load_optimizer_states"), self._values)
