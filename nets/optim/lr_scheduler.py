"""Learning-rate schedules (MXNet's ``mx.lr_scheduler``): the learning rate as a function of
``num_update``, the number of updates of the most-updated parameter.

Every scheduler may warm up first: for ``num_update < warmup_steps`` the rate rises linearly
from ``warmup_begin_lr`` to ``base_lr`` (``warmup_mode='linear'``) or stays at
``warmup_begin_lr`` (``'constant'``). Unlike MXNet's, these schedulers are pure functions of
``num_update`` (MXNet mutated ``base_lr`` as it went, so it could not step back after loading
an earlier state, and a ``base_lr`` set later by the optimizer missed the warm-up target).
Every rate is a finite number ``>= 0`` (``base_lr`` at any later assignment too); MXNet took
any value.
"""
import math
import numbers

from ..base import NetsError
from .hyper import Hyper, check_number

__all__ = ["LRScheduler", "FactorScheduler", "MultiFactorScheduler", "PolyScheduler",
           "CosineScheduler"]


def _check(ok, name, value, expected):
    if not ok:
        raise NetsError(f"{name}={value!r}: expected {expected}")


def _factor(factor):
    """The decay ``factor``, checked: a number in ``(0, 1]`` (the rate decreases)."""
    return check_number("factor", factor, low=0, high=1, low_open=True)


def _is_int(x):
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


class LRScheduler:
    """Base class: ``scheduler(num_update)`` returns the learning rate.

    Subclasses implement ``_decayed(num_update)`` for ``num_update >= warmup_steps``.

    Parameters
    ----------
    base_lr : float
        The rate after warm-up, a finite number ``>= 0`` (an optimizer given its own
        ``learning_rate`` sets it).
    warmup_steps : int
        Updates of warm-up before the schedule, ``>= 0``.
    warmup_begin_lr : float
        The rate warm-up starts at, ``<= base_lr``.
    warmup_mode : {'linear', 'constant'}
        Rise linearly to ``base_lr``, or stay at ``warmup_begin_lr``, during warm-up.
    """

    base_lr = Hyper(low=0)

    def __init__(self, base_lr: float = 0.01, warmup_steps: int = 0,
                 warmup_begin_lr: float = 0, warmup_mode: str = "linear"):
        self.base_lr = base_lr
        check_number("warmup_begin_lr", warmup_begin_lr, low=0)
        _check(_is_int(warmup_steps) and warmup_steps >= 0, "warmup_steps", warmup_steps,
               "an integer >= 0")
        _check(warmup_mode in ("linear", "constant"), "warmup_mode", warmup_mode,
               "'linear' or 'constant'")
        _check(warmup_begin_lr <= base_lr, "warmup_begin_lr", warmup_begin_lr,
               f"a rate <= base_lr={base_lr}")
        self.warmup_steps = warmup_steps
        self.warmup_begin_lr = warmup_begin_lr
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update: int) -> float:
        """The warm-up rate at ``num_update < warmup_steps``.

        Parameters
        ----------
        num_update : int
            Updates so far.

        Returns
        -------
        float
            The learning rate.
        """
        if self.warmup_mode == "constant":
            return self.warmup_begin_lr
        return self.warmup_begin_lr + ((self.base_lr - self.warmup_begin_lr)
                                       * num_update / self.warmup_steps)

    def __call__(self, num_update: int) -> float:
        """The learning rate after ``num_update`` updates (of the most-updated parameter).

        Parameters
        ----------
        num_update : int
            The optimizer's ``num_update``.
        """
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        return self._decayed(num_update)

    def _decayed(self, num_update):
        raise NotImplementedError(f"{type(self).__name__} must implement _decayed")


class FactorScheduler(LRScheduler):
    """``base_lr * factor**k`` after ``k`` whole periods of ``step`` updates, i.e. for
    ``num_update`` in ``(k * step, (k + 1) * step]``, never below ``stop_factor_lr``.

    Parameters
    ----------
    step : int
        The period, in updates, ``>= 1``.
    factor : float
        The decay per period, in ``(0, 1]``.
    stop_factor_lr : float
        The rate never goes below this, ``>= 0``.
    base_lr : float
        The initial rate.
    warmup_steps : int
        Updates of warm-up before the schedule, ``>= 0``.
    warmup_begin_lr : float
        The rate warm-up starts at, ``<= base_lr``.
    warmup_mode : {'linear', 'constant'}
        Rise linearly to ``base_lr``, or stay at ``warmup_begin_lr``, during warm-up.
    """

    def __init__(self, step: int, factor: float = 1, stop_factor_lr: float = 1e-8,
                 base_lr: float = 0.01, warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        _check(_is_int(step) and step >= 1, "step", step, "an integer >= 1")
        self.step, self.factor = step, _factor(factor)
        self.stop_factor_lr = check_number("stop_factor_lr", stop_factor_lr, low=0)

    def _decayed(self, num_update):
        k = max(0, (num_update - 1) // self.step)
        if k == 0:
            return self.base_lr
        return max(self.base_lr * self.factor ** k, self.stop_factor_lr)


class MultiFactorScheduler(LRScheduler):
    """``base_lr * factor**k`` where ``k`` counts the entries of ``step`` (an increasing
    list) that ``num_update`` has passed (``num_update > step[i]``).

    Parameters
    ----------
    step : list of int
        The updates after which the rate decays, increasing, each ``>= 1``.
    factor : float
        The decay at each, in ``(0, 1]``.
    base_lr : float
        The initial rate.
    warmup_steps : int
        Updates of warm-up before the schedule, ``>= 0``.
    warmup_begin_lr : float
        The rate warm-up starts at, ``<= base_lr``.
    warmup_mode : {'linear', 'constant'}
        Rise linearly to ``base_lr``, or stay at ``warmup_begin_lr``, during warm-up.
    """

    def __init__(self, step: list, factor: float = 1, base_lr: float = 0.01,
                 warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        step = list(step) if isinstance(step, (list, tuple)) else step
        _check(isinstance(step, list) and step and all(_is_int(s) and s >= 1 for s in step)
               and all(a < b for a, b in zip(step, step[1:])), "step", step,
               "a non-empty increasing list of integers >= 1")
        self.step, self.factor = step, _factor(factor)

    def _decayed(self, num_update):
        return self.base_lr * self.factor ** sum(num_update > s for s in self.step)


class _Annealing(LRScheduler):
    """A rate falling from ``base_lr`` to ``final_lr`` over the ``max_update -
    warmup_steps`` updates after the warm-up, then staying at ``final_lr``."""

    def __init__(self, max_update: int, base_lr: float = 0.01, final_lr: float = 0,
                 warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        _check(_is_int(max_update) and max_update > warmup_steps, "max_update", max_update,
               f"an integer > warmup_steps={warmup_steps}")
        self.max_update = max_update
        self.final_lr = check_number("final_lr", final_lr, low=0)

    def _decayed(self, num_update):
        done = (min(num_update, self.max_update) - self.warmup_steps) / (
            self.max_update - self.warmup_steps)
        return self.final_lr + (self.base_lr - self.final_lr) * self._shape(done)


class PolyScheduler(_Annealing):
    """``final_lr + (base_lr - final_lr) * (1 - progress)**pwr`` (progress in [0, 1] over
    the updates after warm-up, reaching 1 at ``max_update``).

    Parameters
    ----------
    max_update : int
        The update at which the rate reaches ``final_lr``, ``> warmup_steps``.
    base_lr : float
        The rate after warm-up.
    pwr : float
        The polynomial's power, ``>= 0``.
    final_lr : float
        The rate from ``max_update`` on, ``>= 0``.
    warmup_steps : int
        Updates of warm-up before the schedule, ``>= 0``.
    warmup_begin_lr : float
        The rate warm-up starts at, ``<= base_lr``.
    warmup_mode : {'linear', 'constant'}
        Rise linearly to ``base_lr``, or stay at ``warmup_begin_lr``, during warm-up.
    """

    def __init__(self, max_update: int, base_lr: float = 0.01, pwr: float = 2,
                 final_lr: float = 0, warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear"):
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr,
                         warmup_mode)
        self.power = check_number("pwr", pwr, low=0)

    def _shape(self, done):
        return (1.0 - done) ** self.power


class CosineScheduler(_Annealing):
    """``final_lr + (base_lr - final_lr) * (1 + cos(pi * progress)) / 2`` (progress as in
    ``PolyScheduler``).

    Parameters
    ----------
    max_update : int
        The update at which the rate reaches ``final_lr``, ``> warmup_steps``.
    base_lr : float
        The rate after warm-up.
    final_lr : float
        The rate from ``max_update`` on, ``>= 0``.
    warmup_steps : int
        Updates of warm-up before the schedule, ``>= 0``.
    warmup_begin_lr : float
        The rate warm-up starts at, ``<= base_lr``.
    warmup_mode : {'linear', 'constant'}
        Rise linearly to ``base_lr``, or stay at ``warmup_begin_lr``, during warm-up.
    """

    def _shape(self, done):
        return (1.0 + math.cos(math.pi * done)) / 2
