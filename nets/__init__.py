"""nets: fast sparse training on a CPU, with MXNet Gluon's API.

``import nets`` is cheap: it neither imports numba nor compiles kernels; those
load and compile on first use (and are cached on disk).
"""
import sys as _sys

from . import (autograd, data, init, layers, loss, metric, module, nd, ndarray, operator, optim,
               random, symbol, test_utils, utils)
from . import init as initializer
from . import callback, model
from . import module as mod
from . import symbol as sym
from .base import (Context, NetsError, StorageFallbackWarning, cpu, current_context, gpu,
                   num_gpus)
from .parallel import get_num_threads, set_num_threads
from .trainer import Trainer

_sys.modules[__name__ + ".sym"] = symbol  # `import nets.sym` / `from nets.sym import sparse`
_sys.modules[__name__ + ".mod"] = module
_sys.modules[__name__ + ".initializer"] = init

__version__ = "0.1.0"

__all__ = ["Context", "NetsError", "StorageFallbackWarning", "Trainer", "__version__",
           "autograd", "cpu", "current_context", "data", "gpu", "init", "initializer",
           "layers", "loss", "metric", "mod", "module", "nd", "ndarray", "num_gpus",
           "operator", "optim", "random", "sym", "symbol", "test_utils", "utils", "callback",
           "model", "get_num_threads", "set_num_threads"]
