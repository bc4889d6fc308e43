"""``nd.random``: random arrays drawn from the generator seeded by ``nets.random.seed``."""
import numpy as np

from ..base import as_dtype, current_context, normalize_shape
from ..random import generator
from .dense import NDArray

__all__ = ["uniform", "normal", "randint"]


def _make(values, dtype, ctx):
    return NDArray(np.asarray(values).astype(as_dtype(dtype), copy=False), current_context(ctx))


def uniform(low=0.0, high=1.0, shape=(1,), dtype=None, ctx=None):
    """Samples from U[low, high)."""
    return _make(generator().uniform(low, high, normalize_shape(shape)), dtype, ctx)


def normal(loc=0.0, scale=1.0, shape=(1,), dtype=None, ctx=None):
    """Samples from N(loc, scale**2)."""
    return _make(generator().normal(loc, scale, normalize_shape(shape)), dtype, ctx)


def randint(low, high, shape=(1,), dtype="int64", ctx=None):
    """Integers from [low, high)."""
    return _make(generator().integers(low, high, normalize_shape(shape)), dtype, ctx)
