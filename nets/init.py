"""Initializers (MXNet names): ``Zero``, ``One``, ``Constant``, ``Uniform``, ``Normal``, ``Xavier``.

An initializer fills an array in place: ``init(name, arr)``. Like MXNet, the
base class routes by parameter name: names ending in ``bias``/``beta`` get
zeros, ``gamma`` ones, everything else the initializer's own rule, so the
default ``Uniform(0.07)`` leaves biases at zero. Random draws come from
``nets.random`` and are reproducible after ``nets.random.seed``.
"""
import numpy as np

from .arrays import aligned
from .arrays.row_sparse import RowSparseNDArray
from .base import INDEX_DTYPE, NetsError
from .random import generator

__all__ = ["Initializer", "Zero", "One", "Constant", "Uniform", "Normal", "Xavier", "create",
           "register"]

_REGISTRY = {}


def register(cls):
    """Make ``cls`` creatable by its lower-case name (``init.create('xavier')``)."""
    _REGISTRY[cls.__name__.lower()] = cls
    return cls


def _draw_dtype(values):
    """Draw random numbers directly in float32/float64 (a float64 temporary of a 512 MB
    float32 weight would double the peak memory of initialization)."""
    return values.dtype if values.dtype in (np.float32, np.float64) else np.float32


class Initializer:
    """Base class: subclasses implement ``_init_weight(name, values)`` on a numpy array."""

    # whether the rule reads the array's shape (a block of rows then differs from the same
    # rows of the whole array: ``nets.kv``'s server-side init refuses such initializers)
    shape_dependent = False

    def __call__(self, name, arr):
        """Fill ``arr`` (any storage type) in place; returns ``arr``."""
        dense = arr.stype == "default"
        values = arr.values if dense else aligned.zeros(arr.shape, arr.dtype)  # no copy if dense
        name = str(name)
        if name.endswith(("bias", "beta", "moving_mean", "running_mean")):
            values[...] = 0
        elif name.endswith(("gamma", "moving_var", "running_var")):
            values[...] = 1
        else:
            self._init_weight(name, values)
        if not dense:  # (keeps arr's storage type)
            if arr.stype == "row_sparse" and values.ndim and np.all(values.any(
                    axis=tuple(range(1, values.ndim)))):  # every row stored: adopt values
                arr.assign_result(RowSparseNDArray(values, np.arange(len(values),
                                                                     dtype=INDEX_DTYPE),
                                                   arr.shape, arr.context))
            else:
                arr[:] = values
        return arr

    def _init_weight(self, name, values):
        raise NotImplementedError

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


@register
class Zero(Initializer):
    """All zeros."""

    def _init_weight(self, name, values):
        values[...] = 0


@register
class One(Initializer):
    """All ones."""

    def _init_weight(self, name, values):
        values[...] = 1


@register
class Constant(Initializer):
    """Every element set to ``value``."""

    def __init__(self, value):
        self.value = value

    def _init_weight(self, name, values):
        values[...] = self.value


@register
class Uniform(Initializer):
    """Samples from U(-scale, scale) (MXNet's default weight initializer with scale 0.07)."""

    def __init__(self, scale=0.07):
        self.scale = scale

    def _init_weight(self, name, values):
        _uniform(values, self.scale)


@register
class Normal(Initializer):
    """Samples from N(0, sigma**2)."""

    def __init__(self, sigma=0.01):
        self.sigma = sigma

    def _init_weight(self, name, values):
        _normal(values, self.sigma)


@register
class Xavier(Initializer):
    """Glorot initialisation: scale = sqrt(magnitude / factor) with factor the fan-in,
    fan-out or their mean (``factor_type`` 'in'/'out'/'avg'), uniform or gaussian."""

    shape_dependent = True

    def __init__(self, rnd_type="uniform", factor_type="avg", magnitude=3):
        if rnd_type not in ("uniform", "gaussian"):
            raise NetsError(f"Xavier: rnd_type={rnd_type!r}, expected 'uniform' or 'gaussian'")
        if factor_type not in ("avg", "in", "out"):
            raise NetsError(f"Xavier: factor_type={factor_type!r}, expected 'avg', 'in' or 'out'")
        self.rnd_type, self.factor_type, self.magnitude = rnd_type, factor_type, magnitude

    def _init_weight(self, name, values):
        if values.ndim < 2:
            raise NetsError(f"Xavier needs a parameter with at least 2 dimensions; {name!r} "
                            f"has shape {values.shape}")
        receptive = int(np.prod(values.shape[2:], dtype=np.int64))
        fan_out, fan_in = values.shape[0] * receptive, values.shape[1] * receptive
        factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[self.factor_type]
        scale = np.sqrt(self.magnitude / factor)
        (_uniform if self.rnd_type == "uniform" else _normal)(values, scale)


def _draw_target(values):
    """Where to draw: ``values`` itself when it has the draw's dtype and is C-contiguous
    (no temporary of its size; the same numbers as a draw of its shape), else a new array."""
    dtype = _draw_dtype(values)
    if values.dtype == dtype and values.flags.c_contiguous:
        return values
    return np.empty(values.shape, dtype)


def _uniform(values, scale):
    """``values[...] = U(-scale, scale)`` drawn in ``values``' precision, in place."""
    draw = _draw_target(values)
    generator().random(dtype=draw.dtype, out=draw)
    draw *= 2 * scale
    draw -= scale
    if draw is not values:
        values[...] = draw


def _normal(values, sigma):
    """``values[...] = N(0, sigma**2)`` drawn in ``values``' precision, in place."""
    draw = _draw_target(values)
    generator().standard_normal(dtype=draw.dtype, out=draw)
    draw *= sigma
    if draw is not values:
        values[...] = draw


_ALIASES = {"zeros": "zero", "ones": "one"}


def create(init, **kwargs):
    """An initializer from an instance (returned as is), or a name such as ``'zeros'``,
    ``'ones'``, ``'uniform'``, ``'normal'``, ``'xavier'`` (kwargs go to its constructor)."""
    if isinstance(init, Initializer):
        return init
    if isinstance(init, str):
        key = _ALIASES.get(init.lower(), init.lower())
        if key in _REGISTRY:
            return _REGISTRY[key](**kwargs)
    raise NetsError(f"init={init!r} is not an initializer; use one of {sorted(_REGISTRY)} or "
                    f"'zeros'/'ones', or an Initializer instance")
