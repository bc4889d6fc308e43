"""nets: fast sparse training on a CPU, with MXNet Gluon's API.

``import nets`` is cheap: it neither imports numba nor compiles kernels; those
load and compile on first use (and are cached on disk).
"""
import sys as _sys

from . import (arrays, autograd, callback, data, init, kv, layers, loss, metric, model, module,
               nd, operator, optim, random, symbol, test_utils, utils)
from . import init as initializer
from . import kv as kvstore
from . import module as mod
from . import nd as ndarray
from . import symbol as sym
from .base import (Context, DenseResultWarning, NetsError, StorageFallbackWarning, cpu,
                   current_context, gpu, num_gpus)
from .parallel import get_num_threads, set_num_threads
from .trainer import Trainer

# MXNet's other names of the same modules: `import nets.sym`, `from nets.kvstore import ...`
_sys.modules[__name__ + ".ndarray"] = nd
_sys.modules[__name__ + ".ndarray.sparse"] = nd.sparse
_sys.modules[__name__ + ".ndarray.random"] = nd.random
_sys.modules[__name__ + ".sym"] = symbol
_sys.modules[__name__ + ".mod"] = module
_sys.modules[__name__ + ".kvstore"] = kv
_sys.modules[__name__ + ".initializer"] = init

__version__ = "0.1.0"

__all__ = ["Context", "DenseResultWarning", "NetsError", "StorageFallbackWarning", "Trainer",
           "__version__",
           "arrays", "autograd", "callback", "cpu", "current_context", "data",
           "get_num_threads", "gpu", "init", "initializer", "kv", "kvstore", "layers", "loss",
           "metric", "mod", "model", "module", "nd", "ndarray", "num_gpus", "operator", "optim",
           "random", "set_num_threads", "sym", "symbol", "test_utils", "utils"]
