"""Checked hyper-parameters: ``check_number`` and ``Hyper``, an attribute that applies it at
every assignment.

A learning rate, decay, batch size or moment coefficient that is NaN, infinite or out of
its range trains silently into NaNs (``learning_rate=nan``, ``beta1=1``), in the wrong
direction (a negative learning rate, weight decay or batch size is gradient ascent) or
fails far from its cause (``batch_size=0``). Each is refused where it enters - an
optimizer's or scheduler's constructor, a setter, ``Trainer.step`` - with a ``NetsError``
naming the argument and the value.
"""
import math
import numbers

import numpy as np

from ..base import NetsError

__all__ = ["check_number", "Hyper"]


def _bounds(low, high, low_open, high_open):
    """The allowed range in words: ``>= 0``, ``> 0``, ``in [0, 1)``..."""
    if low is not None and high is not None:
        return f" in {'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
    if low is not None:
        return f" {'>' if low_open else '>='} {low}"
    if high is not None:
        return f" {'<' if high_open else '<='} {high}"
    return ""


def check_number(name, value, low=None, high=None, low_open=False, high_open=False,
                 optional=False):
    """``value``, checked to be a finite real number (not a bool) within ``[low, high]``
    (an open end with ``low_open``/``high_open``; a bound None is no bound); ``optional``
    admits None too. A 0-d numpy array of integers or floats counts as its number (and is
    returned as that numpy scalar). Otherwise ``NetsError``: ``"learning_rate=nan: must be
    a finite number >= 0"``."""
    kind = type(value)
    if kind is float or kind is int:  # (the common case, without the numbers.Real check)
        ok = math.isfinite(value)
    else:
        if value is None and optional:
            return value
        if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
            value = value[()]
        ok = (isinstance(value, numbers.Real) and not isinstance(value, bool)
              and math.isfinite(value))
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    if not ok:
        shown = value if isinstance(value, numbers.Real) else repr(value)
        rule = "a finite number" + _bounds(low, high, low_open, high_open)
        raise NetsError(f"{name}={shown}: must be {'None or ' if optional else ''}{rule}")
    return value


class Hyper:
    """A class attribute whose every assignment goes through ``check_number`` with these
    bounds: ``lr = Hyper(low=0, name='learning_rate')`` checks the constructor's
    ``self.lr = learning_rate`` and any later ``opt.lr = x`` alike. ``name`` (default: the
    attribute's) is the name errors show; the value is kept as ``check_number`` returns
    it, in the instance's ``__dict__`` under the attribute's name. Having ``__set__`` but no
    ``__get__``, the descriptor checks writes while reads find the value in the instance's
    dictionary directly (the kernels' arguments are read at every update)."""

    def __init__(self, low=None, high=None, low_open=False, high_open=False, optional=False,
                 name=None):
        self._rule = dict(low=low, high=high, low_open=low_open, high_open=high_open,
                          optional=optional)
        self._name = name

    def __set_name__(self, owner, attr):
        self._attr = attr
        self._name = self._name or attr

    def __set__(self, obj, value):
        obj.__dict__[self._attr] = check_number(self._name, value, **self._rule)
