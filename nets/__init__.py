"""nets: fast sparse training on a CPU, with MXNet Gluon's API.

``import nets`` is cheap: it neither imports numba nor compiles kernels; those
load and compile on first use (and are cached on disk).
"""
import sys as _sys

from . import autograd, init, layers, loss, metric, ndarray, optim, random, test_utils, utils
from . import ndarray as nd
from .base import (Context, NetsError, StorageFallbackWarning, cpu, current_context, gpu,
                   num_gpus)
from .trainer import Trainer

_sys.modules[__name__ + ".nd"] = ndarray  # `import nets.nd` / `from nets.nd import sparse` work

__version__ = "0.1.0"

__all__ = ["Context", "NetsError", "StorageFallbackWarning", "Trainer", "__version__",
           "autograd", "cpu", "current_context", "gpu", "init", "layers", "loss", "metric", "nd",
           "ndarray", "num_gpus", "optim", "random", "test_utils", "utils"]
