"""Checked hyper-parameters: ``check_number`` and ``Hyper``, an attribute that applies it at
every assignment.

A learning rate, decay, batch size or moment coefficient that is NaN, infinite or out of
its range trains silently into NaNs (``learning_rate=nan``, ``beta1=1``), in the wrong
direction (a negative learning rate, weight decay or batch size is gradient ascent) or
fails far from its cause (``batch_size=0``). Each is refused where it enters - an
optimizer's or scheduler's constructor, a setter, ``Trainer.step`` - with a ``NetsError``
naming the argument and the value.
"""
from ..base import check_number

__all__ = ["check_number", "Hyper"]


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
