"""nets: fast sparse training on a CPU, with MXNet Gluon's API.

``import nets`` is cheap: it neither imports numba nor compiles kernels; those
load and compile on first use (and are cached on disk).
"""
from . import autograd, init, metric, ndarray, random, test_utils
from . import ndarray as nd
from .base import (Context, NetsError, StorageFallbackWarning, cpu, current_context,
                   gpu, num_gpus)

import sys as _sys

_sys.modules[__name__ + ".nd"] = ndarray  # `import nets.nd` / `from nets.nd import sparse` work

__version__ = "0.1.0"

__all__ = ["autograd", "init", "metric", "nd", "ndarray", "random", "test_utils", "Context", "cpu", "gpu", "num_gpus",
           "current_context", "NetsError", "StorageFallbackWarning", "__version__"]
