"""Initializers (MXNet names): ``Zero``, ``One``, ``Constant``, ``Uniform``, ``Normal``, ``Xavier``.

An initializer fills an array in place: ``init(name, arr)``. Like MXNet, the
base class routes by parameter name: names ending in ``bias``/``beta`` get
zeros, ``gamma`` ones, everything else the initializer's own rule, so the
default ``Uniform(0.07)`` leaves biases at zero. Random draws come from
``nets.random`` and are reproducible after ``nets.random.seed``.

A built-in initializer's rule is data (``Initializer.rule``: ``('uniform', scale)``...,
``Xavier``'s scale read from the whole array's shape). An array of
``nets.random.BLOCK_ROWS`` rows or more whose rule is data is drawn by row blocks
(``nets.random.fill_rows``): ONE seed is taken from the global stream (none for a
constant), and its values are a function of its ``spec`` - ``(rule, shape, dtype,
seed)`` - that ``nets.kv.shard.generate`` reproduces for any row range in another
process: a distributed store's servers make their rows from the spec instead of receiving
them. Smaller arrays, and initializers whose rule is not data (a subclass that
implements ``_init_weight``), draw from the global stream directly.
"""
import numpy as np

from . import random
from .arrays import aligned
from .arrays.row_sparse import RowSparseNDArray
from .base import INDEX_DTYPE, NetsError

__all__ = ["Initializer", "Zero", "One", "Constant", "Uniform", "Normal", "Xavier", "create",
           "register", "draw"]

_REGISTRY = {}


def register(cls):
    """Make ``cls`` creatable by its lower-case name (``init.create('xavier')``)."""
    _REGISTRY[cls.__name__.lower()] = cls
    return cls


class Initializer:
    """Base class: a subclass gives its rule as data (``_weight_rule(shape)``), or
    implements ``_init_weight(name, values)`` on a numpy array."""

    def __call__(self, name, arr):
        """Fill ``arr`` (any storage type) in place; returns ``arr``."""
        draw(self, name, arr)
        return arr

    def rule(self, name, shape):
        """The rule that fills parameter ``name`` of ``shape``, as data for
        ``nets.random.fill`` - ``('constant', value)``, ``('uniform', scale)`` or
        ``('normal', sigma)`` - or None when a subclass's ``_init_weight`` fills it."""
        constant = _routed(str(name))
        if constant is not None:
            return ("constant", constant)
        if type(self)._init_weight is not Initializer._init_weight:
            return None
        return self._weight_rule(tuple(int(d) for d in shape))

    def _weight_rule(self, shape):
        raise NotImplementedError

    def _init_weight(self, name, values):
        random.fill(self._weight_rule(values.shape), values)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


@register
class Zero(Initializer):
    """All zeros."""

    def _weight_rule(self, shape):
        return ("constant", 0)


@register
class One(Initializer):
    """All ones."""

    def _weight_rule(self, shape):
        return ("constant", 1)


@register
class Constant(Initializer):
    """Every element set to ``value``."""

    def __init__(self, value):
        self.value = value

    def _weight_rule(self, shape):
        return ("constant", self.value)


@register
class Uniform(Initializer):
    """Samples from U(-scale, scale) (MXNet's default weight initializer with scale 0.07)."""

    def __init__(self, scale=0.07):
        self.scale = scale

    def _weight_rule(self, shape):
        return ("uniform", self.scale)


@register
class Normal(Initializer):
    """Samples from N(0, sigma**2)."""

    def __init__(self, sigma=0.01):
        self.sigma = sigma

    def _weight_rule(self, shape):
        return ("normal", self.sigma)


@register
class Xavier(Initializer):
    """Glorot initialisation: scale = sqrt(magnitude / factor) with factor the fan-in,
    fan-out or their mean (``factor_type`` 'in'/'out'/'avg'), uniform or gaussian; the
    fans are the whole array's, also when it is drawn by row blocks."""

    def __init__(self, rnd_type="uniform", factor_type="avg", magnitude=3):
        if rnd_type not in ("uniform", "gaussian"):
            raise NetsError(f"Xavier: rnd_type={rnd_type!r}, expected 'uniform' or 'gaussian'")
        if factor_type not in ("avg", "in", "out"):
            raise NetsError(f"Xavier: factor_type={factor_type!r}, expected 'avg', 'in' or 'out'")
        self.rnd_type, self.factor_type, self.magnitude = rnd_type, factor_type, magnitude

    def _weight_rule(self, shape):
        if len(shape) < 2:
            raise NetsError(f"Xavier needs a parameter with at least 2 dimensions; got shape "
                            f"{tuple(shape)}")
        receptive = int(np.prod(shape[2:], dtype=np.int64))
        fan_out, fan_in = shape[0] * receptive, shape[1] * receptive
        factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[self.factor_type]
        return ("uniform" if self.rnd_type == "uniform" else "normal",
                float(np.sqrt(self.magnitude / factor)))


def _routed(name):
    """The constant a parameter ``name`` gets whatever the initializer (0 for biases and
    means, 1 for scales and variances), or None: the initializer's own rule."""
    if name.endswith(("bias", "beta", "moving_mean", "running_mean")):
        return 0
    if name.endswith(("gamma", "moving_var", "running_var")):
        return 1
    return None


def draw(initializer, name, arr):
    """Fill ``arr`` (any storage type) in place with ``initializer`` as parameter ``name``;
    returns the array's spec - ``(rule, shape, dtype, seed)``, from which
    ``nets.kv.shard.generate`` makes the same values - when it was drawn by row blocks
    (see the module's docstring), else None."""
    name = str(name)
    shape = tuple(int(d) for d in arr.shape)
    values = arr.values if arr.stype == "default" else aligned.zeros(shape, arr.dtype)
    rule = initializer.rule(name, shape)
    spec = None
    if rule is None:
        initializer._init_weight(name, values)
    elif shape and shape[0] >= random.BLOCK_ROWS and random.is_data(rule):
        seed = 0 if rule[0] == "constant" else int(random.generator().integers(2**63))
        spec = (rule, shape, np.dtype(arr.dtype).str, seed)
        random.fill_rows(rule, values, shape, seed, 0)
    else:
        random.fill(rule, values)
    if arr.stype != "default":  # (keeps arr's storage type)
        if arr.stype == "row_sparse" and values.ndim and np.all(values.any(
                axis=tuple(range(1, values.ndim)))):  # every row stored: adopt values
            arr.assign_result(RowSparseNDArray(values, np.arange(len(values),
                                                                 dtype=INDEX_DTYPE),
                                               arr.shape, arr.context))
        else:
            arr[:] = values
    return spec


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
