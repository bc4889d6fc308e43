"""Checkpoints: a graph and its parameters, ``<prefix>-symbol.json`` and
``<prefix>-<epoch:04d>.params.npz`` (nets' ``.npz`` format, keys ``arg:<name>`` and
``aux:<name>`` as MXNet's, for the arguments and the auxiliary states; loading either never
executes code).

They live beside the graphs so that both writers sit above them: ``nets.mod`` (``Module``)
and ``HybridBlock.export`` of ``nets.layers``, which does not depend on ``nets.mod``.
"""
from ..base import NetsError
from ..serialization import load_arrays, save_arrays
from .symbol import load as load_symbol

__all__ = ["save_checkpoint", "load_checkpoint"]


def _params_file(prefix, epoch):
    return f"{prefix}-{int(epoch):04d}.params.npz"


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params=None):
    """Write ``symbol`` to ``<prefix>-symbol.json`` and the parameters and auxiliary
    states to ``<prefix>-<epoch:04d>.params.npz`` (sparse ones stay sparse)."""
    aux_params = aux_params or {}
    extra = sorted(set(aux_params) - set(symbol.list_auxiliary_states()))
    if extra:
        raise NetsError(f"save_checkpoint: aux_params has {extra}, which are not auxiliary "
                        f"states of the symbol {symbol.list_auxiliary_states()}")
    symbol.save(f"{prefix}-symbol.json")
    arrays = {f"arg:{k}": v for k, v in arg_params.items()}
    arrays.update({f"aux:{k}": v for k, v in aux_params.items()})
    save_arrays(_params_file(prefix, epoch), arrays, {"kind": "checkpoint", "epoch": int(epoch)})


def load_checkpoint(prefix, epoch):
    """``(symbol, arg_params, aux_params)`` from the files ``save_checkpoint`` wrote."""
    symbol = load_symbol(f"{prefix}-symbol.json")
    fname = _params_file(prefix, epoch)
    arrays, config = load_arrays(fname)
    if config.get("kind") != "checkpoint":
        raise NetsError(f"{fname}: not a checkpoint parameters file")
    bad = [k for k in arrays if not k.startswith(("arg:", "aux:"))]
    if bad:
        raise NetsError(f"{fname}: unexpected entries {bad} (expected 'arg:<name>' or "
                        f"'aux:<name>')")
    return tuple([symbol] + [{k[4:]: v for k, v in arrays.items() if k.startswith(kind)}
                             for kind in ("arg:", "aux:")])
