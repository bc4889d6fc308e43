"""nets: fast sparse training on a CPU, with MXNet Gluon's API.

``import nets`` is cheap: it neither imports numba nor compiles kernels; those
load and compile on first use (and are cached on disk). The subpackages load on first
use too (PEP 562): ``nets.sym``, ``import nets.kv``, ``from nets import Trainer`` import
what they name, so a program (``nets train``) pays only for the parts it uses.
"""
import importlib as _importlib
import importlib.abc as _abc
import importlib.util as _util
import sys as _sys

# the arrays with their operators and autograd methods, which nets.ops and nets.autograd
# install onto the array classes: every program uses them
from . import arrays, autograd, nd
from .base import (Context, DenseResultWarning, NetsError, StorageFallbackWarning, cpu,
                   current_context, gpu, lazy_attributes, num_gpus)
from .parallel import get_num_threads, set_num_threads

__version__ = "0.2.0"

_SUBMODULES = ("arrays", "autograd", "callback", "data", "gluon", "init", "kv", "layers",
               "loss", "metric", "model", "module", "name", "nd", "operator", "optim", "random",
               "symbol", "test_utils", "utils")
# MXNet's other names of the same modules: `nets.sym`, `import nets.sym`, `from
# nets.kvstore import ...`, `import nets.ndarray.sparse`, `nets.io.LibSVMIter`,
# `nets.optimizer.Adam` reach the modules themselves (so `mx.` -> `nets.` is the whole port)
_ALIASES = {"context": "base", "initializer": "init", "io": "data", "kvstore": "kv",
            "lr_scheduler": "optim.lr_scheduler", "mod": "module", "ndarray": "nd",
            "optimizer": "optim", "sym": "symbol"}
# submodules, their aliases and `Trainer`, imported on first use
_LAZY = {**{name: (name, None) for name in _SUBMODULES},
         **{alias: (name, None) for alias, name in _ALIASES.items()},
         "Trainer": ("trainer", "Trainer")}


class _AliasLoader(_abc.Loader):
    """Loads an alias's module as the module it names (one module object, two names)."""

    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        return _importlib.import_module(self.target)

    def exec_module(self, module):
        pass  # the target module is already executed


class _AliasFinder(_abc.MetaPathFinder):
    """``import nets.<alias>[.sub]`` imports ``nets.<module>[.sub]`` under the alias too."""

    def find_spec(self, fullname, path=None, target=None):
        root, _, rest = fullname.partition(".")
        head, _, tail = rest.partition(".")
        if root != __name__ or head not in _ALIASES:
            return None
        real = ".".join([root, _ALIASES[head]] + ([tail] if tail else []))
        return _util.spec_from_loader(fullname, _AliasLoader(real))


if not any(isinstance(f, _AliasFinder) for f in _sys.meta_path):
    _sys.meta_path.insert(0, _AliasFinder())

__all__ = ["Context", "DenseResultWarning", "NetsError", "StorageFallbackWarning", "Trainer",
           "__version__",
           "arrays", "autograd", "callback", "cpu", "current_context", "data",
           "get_num_threads", "gpu", "init", "initializer", "kv", "kvstore", "layers", "loss",
           "metric", "mod", "model", "module", "name", "nd", "ndarray", "num_gpus", "operator",
           "optim",
           "random", "set_num_threads", "sym", "symbol", "test_utils", "utils"]

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
del lazy_attributes
