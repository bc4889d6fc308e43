"""Saving and loading optimizer states, shared by ``Trainer`` and ``Module``.

A file holds, for parameters named ``names``, each state (None, an array, or nested
tuples of arrays - sparse ones stay sparse) plus the optimizer's update counters and
catch-up records, in nets' ``.npz`` format (no pickle).
"""
from ..base import NetsError
from ..ndarray.dense import NDArray
from ..serialization import load_arrays, save_arrays

__all__ = ["save_states", "load_states"]


def save_states(fname, optimizer, names, states):
    """Write ``states`` (one per name in ``names``) and ``optimizer``'s counters."""
    arrays, layout = {}, {}
    for i, (name, state) in enumerate(zip(names, states)):
        flat = []
        layout[name] = _structure(state, flat)
        arrays.update({f"{i}/{k}": a for k, a in enumerate(flat)})
    counters, stamps = optimizer.counters()
    arrays.update({f"stamps/{k}": NDArray(v) for k, v in stamps.items()})
    save_arrays(fname, arrays, {"kind": "optimizer_states", "optimizer": type(optimizer).__name__,
                                "params": list(names), "layout": layout, "counters": counters})


def load_states(fname, optimizer, names):
    """The states saved by ``save_states`` for the same ``names`` and optimizer class (a
    list, one per name); restores ``optimizer``'s counters."""
    arrays, config = load_arrays(fname)
    if config.get("kind") != "optimizer_states":
        raise NetsError(f"{fname}: not an optimizer-states file")
    if config.get("params") != list(names):
        raise NetsError(f"{fname}: saved for parameters {config.get('params')}, expected "
                        f"{list(names)}")
    if config.get("optimizer") != type(optimizer).__name__:
        raise NetsError(f"{fname}: saved for optimizer {config.get('optimizer')}, this one is "
                        f"{type(optimizer).__name__}")
    states = []
    try:
        for i, name in enumerate(names):
            count = sum(k.startswith(f"{i}/") for k in arrays)
            flat = iter([arrays[f"{i}/{k}"] for k in range(count)])
            states.append(_rebuild(config["layout"][name], flat))
    except (KeyError, StopIteration, TypeError) as e:
        raise NetsError(f"{fname}: optimizer states do not match their layout ({e!r})") from None
    stamps = {k[len("stamps/"):]: a.asnumpy() for k, a in arrays.items()
              if k.startswith("stamps/")}
    optimizer.load_counters(config["counters"], stamps)
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
    return tuple(_rebuild(sub, flat) for sub in layout)
