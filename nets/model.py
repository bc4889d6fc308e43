"""``nets.model`` (MXNet's ``mx.model``): what programs use of it with modules.

``BatchEndParam(epoch, nbatch, eval_metric, locals)`` is the namedtuple a batch-end or
score-end callback receives. ``save_checkpoint(prefix, epoch, symbol, arg_params,
aux_params=None)`` writes ``<prefix>-symbol.json`` and ``<prefix>-<epoch:04d>.params.npz``
(nets' ``.npz`` + JSON format, no pickle; sparse parameters stay sparse), and
``load_checkpoint(prefix, epoch)`` returns ``(symbol, arg_params, aux_params)`` from them;
both live in ``nets.module`` and are the same functions here.
"""
from .module import BatchEndParam, load_checkpoint, save_checkpoint

__all__ = ["BatchEndParam", "save_checkpoint", "load_checkpoint"]
