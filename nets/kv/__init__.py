"""``nets.kv`` (also ``nets.kvstore``): MXNet's KVStore API.

``create(name)`` makes a store: ``'local'`` (in-process; ``'device'`` and MXNet's other
single-machine names are aliases of it here). A store holds one value per key (``init``),
sums the values pushed to a key (``push``; row_sparse ones over the union of their rows),
applies an optimizer to the held value when one is set (``set_optimizer``: lazily for
row_sparse gradients) and copies it out (``pull``, ``row_sparse_pull``).

Backends are ``KVStore`` subclasses registered under their names (``register``); the
distributed ``dist_*`` stores come with the ``nets[dist]`` extra and are not available yet.
``Trainer`` and ``Module`` take a store (or its name) through ``nets.kv.training``.
"""
from .base import DIST_NAMES, KVStore, KVStoreBase, create, register
from .compression import TwoBitCompression
from .local import LocalKVStore
from .updater import Updater

__all__ = ["KVStore", "KVStoreBase", "LocalKVStore", "Updater", "TwoBitCompression", "create",
           "register", "DIST_NAMES"]
