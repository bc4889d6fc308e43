"""Saving and loading optimizer states, shared by ``Trainer`` and ``Module``.

A file holds, for the parameters named ``names`` (parameter ``i`` is the optimizer's index
``i``), each one's state (None, an array, or nested tuples of arrays - sparse ones stay
sparse) and its ``Record`` (update count and catch-up decay), plus the optimizer's
``num_update``, in nets' ``.npz`` format (no pickle).
"""
import itertools
import math

import numpy as np

from ..base import NetsError
from ..arrays.dense import NDArray
from ..serialization import check_stored, load_arrays, save_arrays
from .optimizer import Record

__all__ = ["save_states", "load_states"]

_RECORD_KEYS = {"state", "step", "log_decay"}  # a record's entry (``{"state"}``: no count yet)


def save_states(fname, optimizer, names, states):
    """Write ``states`` (one per name in ``names``) and ``optimizer``'s records."""
    arrays, records = {}, {}
    for i, (name, state) in enumerate(zip(names, states)):
        flat = []
        entry = records[name] = {"state": _structure(state, flat)}
        arrays.update({f"{i}/{k}": a for k, a in enumerate(flat)})
        record = optimizer.records.get(i)
        if record is not None:
            entry.update(step=record.step, log_decay=record.log_decay)
            if record.stamps is not None:
                arrays[f"{i}/stamps"] = NDArray(record.stamps)
    save_arrays(fname, arrays, {"kind": "optimizer_states", "optimizer": type(optimizer).__name__,
                                "params": list(names), "records": records,
                                "num_update": optimizer.num_update})


def load_states(fname, optimizer, names, weights):
    """The states saved by ``save_states`` for the same ``names`` and optimizer class (a
    list, one per name), for the parameters' arrays ``weights`` (one per name); restores
    ``optimizer``'s records and ``num_update``.

    Each stored state must have the layout of the state ``optimizer`` creates for its
    weight (``create_state_multi_precision``), each array that state's shape and a dtype
    that converts to its dtype (``check_stored``), and is copied into such a new state (so
    it has that state's storage type and dtype); a state saved as None (not created yet)
    stays None. A per-row decay record holds one value per row of the weight. Anything
    else - a wrong layout, a missing or unnamed array, a count that is not a non-negative
    integer - raises ``NetsError`` before ``optimizer`` changes.
    """
    arrays, config = load_arrays(fname)
    if config.get("kind") != "optimizer_states":
        raise NetsError(f"{fname}: not an optimizer-states file")
    if config.get("params") != list(names):
        raise NetsError(f"{fname}: saved for parameters {config.get('params')}, expected "
                        f"{list(names)}")
    if config.get("optimizer") != type(optimizer).__name__:
        raise NetsError(f"{fname}: saved for optimizer {config.get('optimizer')}, this one is "
                        f"{type(optimizer).__name__}")
    bad = f"{fname}: optimizer states do not match their layout"
    saved, num_update = config.get("records"), config.get("num_update")
    if not (isinstance(saved, dict) and _count(num_update)):
        raise NetsError(f"{bad} ('records' must be an object and 'num_update' a count)")
    used, states, records = set(), [], {}

    def take(key):
        if key not in arrays:
            raise NetsError(f"{bad} (no array {key!r})")
        used.add(key)
        return arrays[key]

    for i, (name, weight) in enumerate(zip(names, weights)):
        entry = saved.get(name)
        if not (isinstance(entry, dict) and set(entry) in ({"state"}, _RECORD_KEYS)):
            raise NetsError(f"{bad} (parameter {name!r}: {entry!r:.80})")
        keys = (f"{i}/{k}" for k in itertools.count())  # the state's arrays, in order
        states.append(None if entry["state"] is None else _restore(
            entry["state"], optimizer.create_state_multi_precision(i, weight),
            lambda keys=keys: take(next(keys)), f"{fname}: state of {name!r}", bad))
        if "step" in entry:
            step, log_decay = entry["step"], entry["log_decay"]
            if not (_count(step) and type(log_decay) is float and math.isfinite(log_decay)):
                raise NetsError(f"{bad} (parameter {name!r}: step {step!r:.40}, log_decay "
                                f"{log_decay!r:.40})")
            stamps = None
            if f"{i}/stamps" in arrays:
                stamps = take(f"{i}/stamps")
                check_stored(f"{fname}: decay record of {name!r}", stamps,
                             (weight.shape[0] if weight.shape else 1,), np.float64)
                stamps = stamps.asnumpy().astype(np.float64)
            records[i] = Record(step, float(log_decay), stamps)
    unused = sorted(set(arrays) - used)
    if unused:
        raise NetsError(f"{bad} (arrays {unused[:5]} belong to no state)")
    optimizer.records, optimizer.num_update = records, num_update
    return states


def _count(value):
    """Whether ``value`` (from JSON) is a count: a non-negative int, not a bool."""
    return type(value) is int and value >= 0


def _restore(layout, template, take, what, bad):
    """The state ``layout`` describes (``_structure``'s description), its arrays from
    ``take()`` in order, copied into ``template`` (a new state of the same optimizer)."""
    if template is None and layout is None:
        return None
    if isinstance(template, NDArray) and layout == "array":
        value = take()
        check_stored(what, value, template.shape, template.dtype)
        template[:] = value
        return template
    if isinstance(template, (tuple, list)) and isinstance(layout, list) and len(
            layout) == len(template):
        return tuple([_restore(sub, t, take, f"{what}[{k}]", bad)
                      for k, (sub, t) in enumerate(zip(layout, template))])
    raise NetsError(f"{bad} ({what}: {layout!r:.80} where the optimizer keeps "
                    f"{_structure(template, [])!r:.80})")


def _structure(state, flat):
    """A JSON-able description of ``state`` (None, an array, or nested tuples of those),
    appending its arrays to ``flat`` in order."""
    if state is None:
        return None
    if isinstance(state, NDArray):
        flat.append(state)
        return "array"
    return [_structure(s, flat) for s in state]
