"""``nd.random``: random arrays drawn from the generator seeded by ``nets.random.seed``."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..base import as_dtype, current_context, normalize_shape
from ..random import generator
from .dense import NDArray

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from ..base import Context

__all__ = ["uniform", "normal", "randint"]


def _make(values, dtype, ctx):
    return NDArray(np.asarray(values).astype(as_dtype(dtype), copy=False), current_context(ctx))


def uniform(low: float = 0.0, high: float = 1.0, shape: int | tuple[int, ...] = (1,),
            dtype: DTypeLike | None = None, ctx: Context | None = None) -> NDArray:
    """Samples from U[low, high).

    Parameters
    ----------
    low : float, default 0.0
        The lower bound (included).
    high : float, default 1.0
        The upper bound (excluded).
    shape : int or tuple of int, default (1,)
        The array's shape.
    dtype : str or numpy dtype, optional
        The element type; default float32.
    ctx : Context, optional
        The device; default the current context.

    Returns
    -------
    NDArray
        A dense array of samples.
    """
    return _make(generator().uniform(low, high, normalize_shape(shape)), dtype, ctx)


def normal(loc: float = 0.0, scale: float = 1.0, shape: int | tuple[int, ...] = (1,),
           dtype: DTypeLike | None = None, ctx: Context | None = None) -> NDArray:
    """Samples from N(loc, scale**2).

    Parameters
    ----------
    loc : float, default 0.0
        The mean.
    scale : float, default 1.0
        The standard deviation.
    shape : int or tuple of int, default (1,)
        The array's shape.
    dtype : str or numpy dtype, optional
        The element type; default float32.
    ctx : Context, optional
        The device; default the current context.

    Returns
    -------
    NDArray
        A dense array of samples.
    """
    return _make(generator().normal(loc, scale, normalize_shape(shape)), dtype, ctx)


def randint(low: int, high: int, shape: int | tuple[int, ...] = (1,),
            dtype: DTypeLike = "int64", ctx: Context | None = None) -> NDArray:
    """Integers from [low, high).

    Parameters
    ----------
    low : int
        The smallest value (included).
    high : int
        The end of the range (excluded).
    shape : int or tuple of int, default (1,)
        The array's shape.
    dtype : str or numpy dtype, default 'int64'
        The element type.
    ctx : Context, optional
        The device; default the current context.

    Returns
    -------
    NDArray
        A dense array of integers.
    """
    return _make(generator().integers(low, high, normalize_shape(shape)), dtype, ctx)
