"""Training utilities (MXNet's ``gluon.utils``): ``clip_global_norm``, ``split_data``,
``split_and_load``."""
import math
import numbers
import warnings

import numpy as np

from . import kernels
from .base import NetsError
from .arrays import array
from .arrays.dense import NDArray
from .base import Context

__all__ = ["clip_global_norm", "split_data", "split_and_load"]


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
    total = math.sqrt(sum(kernels.optim.sum_squares(a.values.reshape(-1)) for a in arrays))
    if not math.isfinite(total):
        if check_isfinite:
            warnings.warn("clip_global_norm: the norm is NaN or infinite; the arrays are left "
                          "unclipped", UserWarning, stacklevel=2)
        return total
    scale = max_norm / (total + 1e-8)
    if scale < 1:
        for a in arrays:
            values = a.values
            np.multiply(values, values.dtype.type(scale), out=values)
    return total


def split_data(data: NDArray, num_slice: int, batch_axis: int = 0,
               even_split: bool = True) -> list[NDArray]:
    """Split ``data`` into ``num_slice`` consecutive slices along ``batch_axis`` (MXNet's
    ``gluon.utils.split_data``).

    Parameters
    ----------
    data : NDArray
        The batch (dense, or CSR along axis 0: slices stay CSR).
    num_slice : int
        How many slices; at most the batch size.
    batch_axis : int, default 0
        The axis to split.
    even_split : bool, default True
        Require the batch size to be a multiple of ``num_slice``; otherwise the first
        ``size % num_slice`` slices get one row more.

    Returns
    -------
    list of NDArray
        The slices, in order.
    """
    if not isinstance(data, NDArray):
        raise NetsError(f"split_data: data must be a nets array, got {type(data).__name__}")
    if not (isinstance(num_slice, numbers.Integral) and num_slice >= 1):
        raise NetsError(f"split_data: num_slice={num_slice!r} must be a positive integer")
    if not (isinstance(batch_axis, numbers.Integral) and -data.ndim <= batch_axis < data.ndim):
        raise NetsError(f"split_data: batch_axis={batch_axis!r} is not an axis of an array "
                        f"of shape {data.shape}")
    batch_axis = int(batch_axis) % data.ndim
    size = data.shape[batch_axis]
    if even_split and size % num_slice:
        raise NetsError(f"split_data: data with shape {data.shape} cannot be split evenly "
                        f"into {num_slice} slices along axis {batch_axis} (use a batch size "
                        f"that is a multiple of {num_slice} or even_split=False)")
    if size < num_slice:
        raise NetsError(f"split_data: too many slices ({num_slice}) for data with shape "
                        f"{data.shape} along axis {batch_axis}")
    if num_slice == 1:
        return [data]
    step, extra = divmod(size, num_slice)
    bounds = np.cumsum([0] + [step + 1] * extra + [step] * (num_slice - extra))
    if batch_axis == 0:
        return [data[int(a):int(b)] for a, b in zip(bounds[:-1], bounds[1:])]
    from .ops import slice_axis
    return [slice_axis(data, axis=batch_axis, begin=int(a), end=int(b))
            for a, b in zip(bounds[:-1], bounds[1:])]


def split_and_load(data, ctx_list: list[Context], batch_axis: int = 0,
                   even_split: bool = True) -> list[NDArray]:
    """Split ``data`` into one slice per context of ``ctx_list`` along ``batch_axis`` and
    place each slice on its context (MXNet's ``gluon.utils.split_and_load``; nets runs on
    the CPU, so a GPU context raises ``ContextError``).

    Parameters
    ----------
    data : NDArray or array-like
        The batch; anything else is converted with ``nd.array`` first.
    ctx_list : list of Context
        The devices, one slice each.
    batch_axis : int, default 0
        The axis to split.
    even_split : bool, default True
        As in ``split_data``.

    Returns
    -------
    list of NDArray
        One slice per context.
    """
    if isinstance(ctx_list, Context):
        ctx_list = [ctx_list]
    ctx_list = list(ctx_list)
    if not ctx_list or not all(isinstance(c, Context) for c in ctx_list):
        raise NetsError(f"split_and_load: ctx_list={ctx_list!r} must be a non-empty list of "
                        f"Contexts")
    if not isinstance(data, NDArray):
        data = array(data)
    slices = split_data(data, len(ctx_list), batch_axis, even_split)
    return [s.as_in_context(c) for s, c in zip(slices, ctx_list)]

