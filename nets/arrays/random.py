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

__all__ = ["uniform", "normal", "randint", "gamma"]


def _make(values, dtype, ctx, out=None):
    result = NDArray(np.asarray(values).astype(as_dtype(dtype), copy=False),
                     current_context(ctx))
    if out is None:
        return result
    out.assign_result(result)  # MXNet's ``out=``: the destination keeps its storage type
    return out


def _shape_of(shape, out):
    return out.shape if out is not None and shape == (1,) else normalize_shape(shape)


def uniform(low: float = 0.0, high: float = 1.0, shape: int | tuple[int, ...] = (1,),
            dtype: DTypeLike | None = None, ctx: Context | None = None,
            out: NDArray | None = None) -> NDArray:
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
    out : NDArray, optional
        Write the samples into this array (of any storage type, which it keeps; its
        shape is the default ``shape``) and return it.

    Returns
    -------
    NDArray
        A dense array of samples.
    """
    return _make(generator().uniform(low, high, _shape_of(shape, out)), dtype, ctx, out)


def normal(loc: float = 0.0, scale: float = 1.0, shape: int | tuple[int, ...] = (1,),
           dtype: DTypeLike | None = None, ctx: Context | None = None,
           out: NDArray | None = None) -> NDArray:
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
    out : NDArray, optional
        Write the samples into this array (of any storage type, which it keeps; its
        shape is the default ``shape``) and return it.

    Returns
    -------
    NDArray
        A dense array of samples.
    """
    return _make(generator().normal(loc, scale, _shape_of(shape, out)), dtype, ctx, out)


def randint(low: int, high: int, shape: int | tuple[int, ...] = (1,),
            dtype: DTypeLike = "int64", ctx: Context | None = None,
            out: NDArray | None = None) -> NDArray:
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
    out : NDArray, optional
        Write the samples into this array (of any storage type, which it keeps; its
        shape is the default ``shape``) and return it.

    Returns
    -------
    NDArray
        A dense array of integers.
    """
    return _make(generator().integers(low, high, _shape_of(shape, out)), dtype, ctx, out)


def gamma(alpha: float = 1.0, beta: float = 1.0, shape: int | tuple[int, ...] = (1,),
          dtype: DTypeLike | None = None, ctx: Context | None = None,
          out: NDArray | None = None) -> NDArray:
    """Samples from the gamma distribution of shape ``alpha`` and scale ``beta`` (MXNet's
    ``nd.random.gamma``).

    Parameters
    ----------
    alpha : float, default 1.0
        The shape parameter (> 0).
    beta : float, default 1.0
        The scale parameter (> 0).
    shape : int or tuple of int, default (1,)
        The array's shape.
    dtype : str or numpy dtype, optional
        The element type; default float32.
    ctx : Context, optional
        The device; default the current context.
    out : NDArray, optional
        Write the samples into this array (of any storage type, which it keeps; its
        shape is the default ``shape``) and return it.

    Returns
    -------
    NDArray
        A dense array of samples (or ``out``).
    """
    return _make(generator().gamma(alpha, beta, _shape_of(shape, out)), dtype, ctx, out)


def _install():
    """``nets.random.uniform``/``normal``/``randint``/``gamma`` (MXNet's ``mx.random``
    samplers): the bottom floor's random module gets them from here, above it."""
    from .. import random as bottom
    for name in __all__:
        setattr(bottom, name, globals()[name])


_install()
