"""``nets.kv`` (also ``nets.kvstore``): MXNet's KVStore API.

``create(name)`` makes a store: ``'local'`` (in-process; ``'device'`` and MXNet's other
single-machine names are aliases of it here) or, in a worker started by
``python -m nets.kv.launch``, ``'dist_sync'``/``'dist_async'`` (Ray, the ``nets[dist]``
extra; ``nets.kv.dist``, imported on first use). A store holds one value per key (``init``),
sums the values pushed to a key (``push``; row_sparse ones over the union of their rows),
applies an optimizer to the held value when one is set (``set_optimizer``: lazily for
row_sparse gradients) and copies it out (``pull``, ``row_sparse_pull``).

A complete distributed worker script, its launch command and what it prints:
``examples/distributed_quickstart.py`` and the quick start of ``docs/distributed.md``.

Backends are ``KVStore`` subclasses registered under their names (``register``).
``Trainer`` and ``Module`` take a store (or its name) through ``nets.kv.training``.
"""
from .base import DIST_NAMES, KVStore, KVStoreBase, create, register
from .compression import TwoBitCompression
from .local import LocalKVStore
from .updater import Updater

__all__ = ["KVStore", "KVStoreBase", "LocalKVStore", "Updater", "TwoBitCompression", "create",
           "register", "DIST_NAMES"]
