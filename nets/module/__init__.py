"""``nets.mod`` (MXNet's ``mx.mod``): the symbolic training API, ``Module``, and
checkpoints (``save_checkpoint``/``load_checkpoint``: a JSON graph plus ``.npz``
parameters)."""
from .base_module import BaseModule, BatchEndParam
from .module import Module, load_checkpoint, save_checkpoint

__all__ = ["BaseModule", "BatchEndParam", "Module", "save_checkpoint", "load_checkpoint"]
