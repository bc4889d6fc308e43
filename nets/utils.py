"""Training utilities (MXNet's ``gluon.utils``): ``clip_global_norm``."""
import math
import numbers
import warnings

import numpy as np

from . import kernels
from .base import NetsError
from .arrays.dense import NDArray

__all__ = ["clip_global_norm"]


def _stored(a):
    """The stored values of ``a``: every element of a dense array, the values of a sparse one."""
    return a._data if a.stype != "default" else a._np


def clip_global_norm(arrays, max_norm, check_isfinite=True):
    """Rescale ``arrays`` in place so that their joint 2-norm is at most ``max_norm``.

    The norm is ``sqrt(sum of squares of every array)``; sparse arrays (row_sparse or CSR)
    contribute their stored values and are scaled there, never densified. Sums are
    accumulated in float64. Arrays are multiplied by ``max_norm / (norm + 1e-8)`` when that
    is below 1 (MXNet's rule). Returns the norm before clipping, as a Python float. A NaN or
    infinite norm leaves the arrays unchanged (MXNet scaled them into NaNs) and, with
    ``check_isfinite``, warns.
    """
    arrays = list(arrays)
    if not arrays:
        raise NetsError("clip_global_norm needs at least one array, got none")
    for i, a in enumerate(arrays):
        if not isinstance(a, NDArray):
            raise NetsError(f"arrays[{i}] must be a nets array, got {type(a).__name__}")
    if not (isinstance(max_norm, numbers.Real) and max_norm >= 0):
        raise NetsError(f"max_norm={max_norm!r}: expected a number >= 0")
    total = math.sqrt(sum(kernels.optim.sum_squares(_stored(a).reshape(-1)) for a in arrays))
    if not math.isfinite(total):
        if check_isfinite:
            warnings.warn("clip_global_norm: the norm is NaN or infinite; the arrays are left "
                          "unclipped", UserWarning, stacklevel=2)
        return total
    scale = max_norm / (total + 1e-8)
    if scale < 1:
        for a in arrays:
            values = _stored(a)
            np.multiply(values, values.dtype.type(scale), out=values)
    return total
