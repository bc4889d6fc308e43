"""Saving and loading optimizer states, shared by ``Trainer`` and ``Module``.

A file holds, for the parameters named ``names`` (parameter ``i`` is the optimizer's index
``i``), each one's state (None, an array, or nested tuples of arrays - sparse ones stay
sparse) and its ``Record`` (update count and catch-up decay), plus the optimizer's
``num_update``, in nets' ``.npz`` format (no pickle).
"""
import numpy as np

from ..base import NetsError
from ..arrays.dense import NDArray
from ..serialization import load_arrays, save_arrays
from .optimizer import Record

__all__ = ["save_states", "load_states"]


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


def load_states(fname, optimizer, names):
    """The states saved by ``save_states`` for the same ``names`` and optimizer class (a
    list, one per name); restores ``optimizer``'s records and ``num_update``."""
    arrays, config = load_arrays(fname)
    if config.get("kind") != "optimizer_states":
        raise NetsError(f"{fname}: not an optimizer-states file")
    if config.get("params") != list(names):
        raise NetsError(f"{fname}: saved for parameters {config.get('params')}, expected "
                        f"{list(names)}")
    if config.get("optimizer") != type(optimizer).__name__:
        raise NetsError(f"{fname}: saved for optimizer {config.get('optimizer')}, this one is "
                        f"{type(optimizer).__name__}")
    states, records = [], {}
    try:
        num_update = int(config["num_update"])
        for i, name in enumerate(names):
            entry = config["records"][name]
            count = sum(k.startswith(f"{i}/") and k != f"{i}/stamps" for k in arrays)
            flat = iter([arrays[f"{i}/{k}"] for k in range(count)])
            states.append(_rebuild(entry["state"], flat))
            if "step" in entry:
                stamps = arrays.get(f"{i}/stamps")
                records[i] = Record(int(entry["step"]), float(entry["log_decay"]),
                                    None if stamps is None
                                    else stamps.asnumpy().astype(np.float64))
    except (KeyError, StopIteration, TypeError, ValueError) as e:
        raise NetsError(f"{fname}: optimizer states do not match their layout ({e!r})") from None
    optimizer.records, optimizer.num_update = records, num_update
    return states


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
    if not isinstance(layout, list):
        raise TypeError(f"state layout {layout!r}")
    # (a list, not a generator, so that a missing array's StopIteration reaches load_states)
    return tuple([_rebuild(sub, flat) for sub in layout])
