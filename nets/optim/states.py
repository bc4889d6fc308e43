"""Saving and loading an optimizer's ``state`` (``Optimizer.state``: one ``Record`` per
parameter key), for ``Trainer``, ``Module`` and the stores.

A file holds one entry per key - each key of the optimizer's ``param_dict``, then each
other key of its ``state`` - with the key's state (None, an array, or nested tuples of
arrays - sparse ones stay sparse) and its record's update count and catch-up decay, plus
the optimizer's ``num_update``, in nets' ``.npz`` format (no pickle). Its JSON config:

- ``keys``: the keys, each an int or a str (JSON keeps the two apart; a file without
  ``keys`` numbers its entries ``0 .. n-1``);
- ``params``: each entry's name, the ``param_dict`` parameter's name for a key that has
  one, else ``str(key)``; loading into an optimizer with a ``param_dict`` checks them;
- ``records``: ``{name: {"state": layout, "step": n, "log_decay": x}}`` (``{"state":
  layout}`` for a key never updated); entry ``i``'s arrays are ``i/0``, ``i/1``, ... in
  the layout's order, and ``i/stamps`` its per-row decay record.
"""
import itertools
import math
from collections.abc import Mapping

import numpy as np

from ..base import NetsError
from ..arrays.dense import NDArray
from ..serialization import check_stored, load_arrays, save_arrays
from .optimizer import Optimizer, Record

__all__ = ["save_states", "load_states"]

_RECORD_KEYS = {"state", "step", "log_decay"}  # a record's entry (``{"state"}``: no count yet)


def _key_name(optimizer, key):
    """The name of ``key`` in a states file: its parameter's, else ``str(key)``."""
    name = getattr(optimizer.param_dict.get(key), "name", None)
    return str(key) if name is None else name


def _is_key(key):
    """Whether ``key`` is a key a states file holds: an int (not a bool) or a str."""
    return type(key) is str or (isinstance(key, int) and not isinstance(key, bool))


def save_states(fname: str, optimizer: Optimizer) -> None:
    """Write ``optimizer.state`` (each key's state arrays and record) and ``num_update``.

    Parameters
    ----------
    fname : str
        The file to write (nets' ``.npz`` format, read without pickle).
    optimizer : Optimizer
        The optimizer whose state is written: an entry for each key of its
        ``param_dict`` (a state not made yet is written as None) and each other key of its
        ``state``. Keys are ints or strs (MXNet's key types).
    """
    keys = list(optimizer.param_dict)
    keys += [k for k in optimizer.state if k not in optimizer.param_dict]
    bad = [k for k in keys if not _is_key(k)]
    if bad:
        raise NetsError(f"save_states({fname!r}): keys must be ints or strs, got {bad[0]!r}")
    names = [_key_name(optimizer, k) for k in keys]
    if len(set(names)) < len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise NetsError(f"save_states({fname!r}): keys {keys} give the names {dup} twice")
    arrays, records = {}, {}
    for i, (key, name) in enumerate(zip(keys, names)):
        record = optimizer.state.get(key)
        flat = []
        state = record.state if record is not None and record.has_state else None
        entry = records[name] = {"state": _structure(state, flat)}
        arrays.update({f"{i}/{k}": a for k, a in enumerate(flat)})
        if record is not None:
            entry.update(step=record.step, log_decay=record.log_decay)
            if record.stamps is not None:
                arrays[f"{i}/stamps"] = NDArray(record.stamps)
    save_arrays(fname, arrays, {"kind": "optimizer_states", "optimizer": type(optimizer).__name__,
                                "keys": keys, "params": names, "records": records,
                                "num_update": optimizer.num_update})


def load_states(fname: str, optimizer: Optimizer, weights: Mapping) -> None:
    """Replace ``optimizer.state`` and ``num_update`` by those ``save_states`` wrote for
    the same optimizer class.

    Each stored state must have the layout of the state ``optimizer`` creates for its
    weight (``create_state_multi_precision``), each array that state's shape and a dtype
    that converts to its dtype (``check_stored``), and is copied into such a new state (so
    it has that state's storage type and dtype); a state saved as None is made at the
    key's next ``step``. A per-row decay record holds one value per row of the weight.
    When ``optimizer`` has a ``param_dict``, the file must hold every key of it, each
    under its parameter's name. Anything else - a wrong layout, a missing or unnamed
    array, a count that is not a non-negative integer - raises ``NetsError`` before
    ``optimizer`` changes.

    Parameters
    ----------
    fname : str
        A file ``save_states`` wrote.
    optimizer : Optimizer
        The optimizer whose ``state`` is replaced.
    weights : Mapping
        ``{key: weight}`` for the file's keys: the arrays the states are for.
    """
    arrays, config = load_arrays(fname)
    if config.get("kind") != "optimizer_states":
        raise NetsError(f"{fname}: not an optimizer-states file")
    bad = f"{fname}: optimizer states do not match their layout"
    names = config.get("params")
    if not (isinstance(names, list) and all(type(n) is str for n in names)
            and len(set(names)) == len(names)):
        raise NetsError(f"{bad} ('params' must be a list of distinct names)")
    keys = config.get("keys", list(range(len(names))))
    if not (isinstance(keys, list) and len(keys) == len(names) and all(map(_is_key, keys))
            and len(set(keys)) == len(keys)):
        raise NetsError(f"{bad} ('keys' must be a list of distinct ints or strs, one per "
                        f"name)")
    params = optimizer.param_dict
    if params:
        expected = [_key_name(optimizer, k) for k in params]
        if set(params) - set(keys) or any(k in params and _key_name(optimizer, k) != n
                                          for k, n in zip(keys, names)):
            raise NetsError(f"{fname}: saved for parameters {names}, expected {expected}")
    if config.get("optimizer") != type(optimizer).__name__:
        raise NetsError(f"{fname}: saved for optimizer {config.get('optimizer')}, this one is "
                        f"{type(optimizer).__name__}")
    saved, num_update = config.get("records"), config.get("num_update")
    if not (isinstance(saved, dict) and _count(num_update)):
        raise NetsError(f"{bad} ('records' must be an object and 'num_update' a count)")
    used, state = set(), {}

    def take(key):
        if key not in arrays:
            raise NetsError(f"{bad} (no array {key!r})")
        used.add(key)
        return arrays[key]

    for i, (key, name) in enumerate(zip(keys, names)):
        entry = saved.get(name)
        if not (isinstance(entry, dict) and set(entry) in ({"state"}, _RECORD_KEYS)):
            raise NetsError(f"{bad} (parameter {name!r}: {entry!r:.80})")
        if "step" in entry:
            step, log_decay = entry["step"], entry["log_decay"]
            if not (_count(step) and type(log_decay) is float and math.isfinite(log_decay)):
                raise NetsError(f"{bad} (parameter {name!r}: step {step!r:.40}, log_decay "
                                f"{log_decay!r:.40})")
            record = Record(step, float(log_decay))
        else:
            record = Record()
        has_stamps = f"{i}/stamps" in arrays
        if entry["state"] is None and not has_stamps and "step" not in entry:
            continue  # nothing kept yet: the key starts afresh
        if entry["state"] is not None:
            keys_i = (f"{i}/{k}" for k in itertools.count())  # the state's arrays, in order
            record.set_state(_restore(
                entry["state"], optimizer.create_state_multi_precision(key, _weight(
                    weights, key, name, fname)),
                lambda keys_i=keys_i: take(next(keys_i)), f"{fname}: state of {name!r}", bad))
        if has_stamps:
            if "step" not in entry:
                raise NetsError(f"{bad} (parameter {name!r}: a decay record without a count)")
            stamps = take(f"{i}/stamps")
            shape = _weight(weights, key, name, fname).shape
            check_stored(f"{fname}: decay record of {name!r}", stamps,
                         (shape[0] if shape else 1,), np.float64)
            record.stamps = stamps.asnumpy().astype(np.float64)
        state[key] = record
    unused = sorted(set(arrays) - used)
    if unused:
        raise NetsError(f"{bad} (arrays {unused[:5]} belong to no state)")
    optimizer.state, optimizer.num_update = state, num_update


def _weight(weights, key, name, fname):
    """``weights[key]``: the weight whose state the file holds under ``name``."""
    if key not in weights:
        raise NetsError(f"{fname}: no weight for key {key!r} ({name!r}) to load its state for")
    return weights[key]


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
