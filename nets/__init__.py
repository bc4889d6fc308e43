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
                   current_context, gpu, num_gpus)
from .parallel import get_num_threads, set_num_threads

__version__ = "0.1.0"

_SUBMODULES = ("arrays", "autograd", "callback", "data", "init", "kv", "layers", "loss",
               "metric", "model", "module", "nd", "operator", "optim", "random", "symbol",
               "test_utils", "utils")
# MXNet's other names of the same modules: `nets.sym`, `import nets.sym`, `from
# nets.kvstore import ...`, `import nets.ndarray.sparse` reach the modules themselves
_ALIASES = {"initializer": "init", "kvstore": "kv", "mod": "module", "ndarray": "nd",
            "sym": "symbol"}
_CLASSES = {"Trainer": "trainer"}  # names of the face that live in a submodule


def __getattr__(name):
    """A submodule, an alias of one, or a class of ``_CLASSES``, imported on first use."""
    if name in _CLASSES:
        value = getattr(_importlib.import_module(f"{__name__}.{_CLASSES[name]}"), name)
    elif name in _SUBMODULES or name in _ALIASES:
        value = _importlib.import_module(f"{__name__}.{_ALIASES.get(name, name)}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


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
           "metric", "mod", "model", "module", "nd", "ndarray", "num_gpus", "operator", "optim",
           "random", "set_num_threads", "sym", "symbol", "test_utils", "utils"]
