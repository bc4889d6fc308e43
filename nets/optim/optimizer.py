"""``Optimizer``: the base class of every optimizer, the registry (``register``/``create``)
and the per-parameter ``Record``.

An optimizer is its hyper-parameters, its ``state`` - one ``Record`` per parameter index,
holding the parameter's state arrays and update count, as ``torch.optim.Optimizer.state``
holds each parameter's - and one method with the math, ``update_rows``. ``step(index,
weight, grad)`` is what the Trainer, the Module and a store's updater call: it makes the
parameter's state at its first step and applies ``update``, which checks the operands,
selects the rows to update - every row, or the row_sparse gradient's rows when
``lazy_update`` - and hands that ``RowSelection`` (``nets.ops.update``) to ``update_rows``,
which calls the optimizer's rule there (``sgd_rows``, ``adam_rows``, ...: the functions the
update operators ``nd.sgd_update``, ``nd.adam_update``, ... call too), running its numba
kernel (``nets.kernels.optim``) on the selected rows of the weight, the gradient and each
state, whether each is dense or row_sparse. With a lazy selection no
other row of the weight or of any state is read or written; with every row selected an
absent gradient row counts as zero.

MXNet's interface stays: ``create_state(index, weight)`` and ``update(index, weight, grad,
state)`` with a state the caller keeps, and a subclass may implement ``update`` itself
(MXNet's documented extension, using ``_update_count``, ``_get_lr`` and ``_get_wd``):
``step`` calls it with the state it keeps.
"""
import math
import warnings
from typing import Optional, Union

import numpy as np

from ..base import NetsError
from ..arrays.creation import zeros
from ..arrays.dense import NDArray
from ..ops.update import RowSelection, storage, view2d
from .hyper import Hyper, check_number
from .lr_scheduler import LRScheduler

Key = Union[int, str]  # a parameter's key in ``Optimizer.state``
State = Union[None, NDArray, tuple]  # what ``create_state`` makes

__all__ = ["Optimizer", "Record", "RowSelection", "register", "create", "WD_MODES"]

WD_MODES = ("lazy", "catchup", "dense")


class Record:
    """What an optimizer keeps about one parameter between its updates
    (``Optimizer.state[index]``).

    ``state``: the parameter's state arrays, as ``create_state_multi_precision`` made them
    (None, an array or a tuple of arrays), once ``has_state``: ``step`` makes them at the
    parameter's first step (a record an MXNet-style ``update`` made, whose caller keeps the
    state, only counts). ``step``: how many updates the parameter had (Adam's ``t``).
    Under ``wd_mode='catchup'``, ``log_decay``: the sum of ``log(1 - lr * wd)`` over its
    steps, and ``stamps``: per row, that sum when the row was last updated (None until a
    step decays).

    ``rows``: the ``RowSelection`` the parameter's latest update validated and built, kept
    while it can serve the next one (``RowSelection.serves``: the same dense weight,
    gradient and state object over the same storages, or the same dense weight and state
    object and another row_sparse gradient of a lazy update), else None. Operands are
    validated once, then trusted while they stay the ones validated (scipy's "validate at
    construction, then trust"); the record holds them strongly, as ``torch.optim`` holds its
    parameters and their ``state[p]``. A record copies and pickles as its counts, its state
    to be made afresh at the next ``step`` (an optimizer shipped to a store's servers takes
    no arrays along); ``nets.optim.save_states`` writes the arrays.
    """

    __slots__ = ("step", "log_decay", "stamps", "state", "has_state", "rows")

    def __init__(self, step: int = 0, log_decay: float = 0.0, stamps=None):
        self.step, self.log_decay, self.stamps = step, log_decay, stamps
        self.state, self.has_state = None, False
        self.rows = None

    def set_state(self, state):
        """Make ``state`` (what ``create_state_multi_precision`` makes) the parameter's."""
        self.state, self.has_state = state, True

    def __reduce__(self):
        return Record, (self.step, self.log_decay, self.stamps)


class Optimizer:
    """Base class of the optimizers (MXNet's ``mx.optimizer.Optimizer``).

    Parameters
    ----------
    learning_rate : float, optional
        The step size, a finite number ``>= 0`` (0 freezes the weights). ``None`` takes the
        ``lr_scheduler``'s ``base_lr`` when one is given, else the optimizer's default
        (``default_lr``); a value given together with a scheduler becomes the scheduler's
        ``base_lr``.
    wd : float
        Weight decay (L2 penalty) coefficient ``>= 0``, scaled per parameter by ``wd_mult``.
    rescale_grad : float
        The gradient is multiplied by this first (typically ``1 / batch_size``; ``>= 0``),
        then clipped.
    clip_gradient : float or None
        Clip each rescaled gradient element to ``[-clip_gradient, clip_gradient]``; ``None``
        disables it. Any finite number ``>= 0`` clips, 0 included (MXNet silently ignored 0).
    lr_scheduler : LRScheduler, optional
        Gives the learning rate as a function of ``num_update``.
    multi_precision : bool
        Keep a float32 master copy of float16 weights (``create_state_multi_precision`` /
        ``update_multi_precision``).
    param_dict : dict, optional
        Index -> ``Parameter`` (with ``name``, ``lr_mult``, ``wd_mult``), set by the Trainer.
    lazy_update : bool
        With a row_sparse gradient, update only the gradient's rows of the weight and of
        every state (states are created with the weight's storage type). ``False`` performs
        the standard dense update, and states are created dense.
    wd_mode : {'lazy', 'catchup', 'dense'}
        How weight decay treats rows a lazy update skips: ``'lazy'`` decays touched rows only
        (MXNet); ``'catchup'`` keeps a per-row record and applies the decay steps a row
        missed when it is next touched (see ``catch_up``); ``'dense'`` decays every untouched
        row each step. Both apply the decay term alone, ``w <- (1 - lr * wd) * w`` per missed
        step, so they reproduce ``lazy_update=False`` exactly for SGD without momentum and
        for AdaGrad; optimizers whose decay also passes through moments (momentum, Adam,
        RMSProp) get the plain decay for skipped rows.

    Every hyper-parameter is a ``Hyper`` attribute: NaN, infinite or out-of-range values
    raise ``NetsError`` naming it, in the constructor and at any later assignment (MXNet
    took any value; a negative rate or decay is gradient ascent).

    ``state`` maps each parameter index (any hashable key: an int for the Trainer and the
    Module, a store's key for a store) to its ``Record``: its state arrays and update count;
    ``num_update`` is the largest ``step`` among them. ``step(index, weight, grad)`` makes
    a parameter's state at its first step and updates it; ``nets.optim.save_states`` and
    ``load_states`` write and read ``state``.

    A subclass sets ``state_names`` (the states its kernel takes, in order; ``row_states``
    names those with one value per weight row, of shape ``(rows,)``), makes them in
    ``create_state`` and implements ``update_rows``. A subclass may instead implement
    MXNet's ``update(index, weight, grad, state)`` (calling ``self._update_count(index)``,
    ``self._get_lr(index)`` and ``self._get_wd(index)``): ``step`` calls it.
    """

    opt_registry = {}
    default_lr = 0.01
    state_names = ()  # the states the kernel takes, in order (an absent one: a placeholder)
    row_states = ()  # those of state_names holding one value per weight row (shape (rows,))
    # False for optimizers whose weight decay is not a decay step (FTRL): wd_mode must be lazy
    _decays = True
    # Whether the class keeps the base ``update`` and ``update_multi_precision`` (``step``
    # then runs the base update of one parameter directly), and the base ``_update_count``,
    # ``_get_lr`` and ``_get_wd`` (the base update then counts and computes the rates
    # itself, the parameter looked up once): ``__init_subclass__`` sets them
    _builtin_update = _builtin_rates = True
    lr = Hyper(low=0, name="learning_rate")
    wd = Hyper(low=0)
    rescale_grad = Hyper(low=0)
    clip_gradient = Hyper(low=0, optional=True)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        base = Optimizer
        cls._builtin_update = (cls.update is base.update and
                               cls.update_multi_precision is base.update_multi_precision)
        cls._builtin_rates = (cls._update_count is base._update_count and
                              cls._get_lr is base._get_lr and cls._get_wd is base._get_wd)

    def __init__(self, learning_rate: Optional[float] = None, wd: float = 0.0,
                 rescale_grad: float = 1.0, clip_gradient: Optional[float] = None,
                 lr_scheduler: Optional[LRScheduler] = None, multi_precision: bool = False,
                 param_dict: Optional[dict] = None, lazy_update: bool = True,
                 wd_mode: str = "lazy"):
        self.lr_scheduler = lr_scheduler
        if learning_rate is None:
            learning_rate = self.default_lr if lr_scheduler is None else lr_scheduler.base_lr
        self.lr = learning_rate
        if lr_scheduler is not None:
            lr_scheduler.base_lr = self.lr
        self.wd = wd
        self.rescale_grad = rescale_grad
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.param_dict = param_dict if param_dict else {}
        self.lazy_update = lazy_update
        self.wd_mode = wd_mode
        self.lr_mult, self.wd_mult = {}, {}
        self.num_update = 0
        self.state = {}

    # -- registry ------------------------------------------------------------------------
    @staticmethod
    def register(klass: type) -> type:
        """Register an optimizer class under its lower-cased name (a class decorator,
        MXNet's ``mx.optimizer.register``); ``create(name)`` then makes it.

        Parameters
        ----------
        klass : type
            A subclass of ``Optimizer``. A class registered under the same name before is
            replaced, with a warning.

        Returns
        -------
        type
            ``klass`` itself.
        """
        if not (isinstance(klass, type) and issubclass(klass, Optimizer)):
            raise NetsError(f"register needs an Optimizer subclass, got {klass!r}")
        name = klass.__name__.lower()
        old = Optimizer.opt_registry.get(name)
        if old is not None and old is not klass:
            warnings.warn(f"optimizer {klass.__module__}.{klass.__name__} overrides "
                          f"{old.__module__}.{old.__name__} registered as {name!r}", stacklevel=2)
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name: str, **kwargs) -> "Optimizer":
        """An instance of the optimizer registered as ``name`` (MXNet's
        ``mx.optimizer.create``).

        Parameters
        ----------
        name : str
            The registered name, case-insensitive: ``'sgd'``, ``'adam'``, ``'adamw'``,
            ``'adagrad'``, ``'rowwise_adagrad'``, ``'ftrl'``, ``'rmsprop'`` or one a program
            registered.
        **kwargs
            The optimizer's constructor arguments (``learning_rate``, ``wd``, ...).

        Returns
        -------
        Optimizer
        """
        klass = Optimizer.opt_registry.get(str(name).lower())
        if klass is None:
            raise NetsError(f"unknown optimizer {name!r}; registered: "
                            f"{sorted(Optimizer.opt_registry)}")
        return klass(**kwargs)

    # -- hyper-parameters ----------------------------------------------------------------
    @property
    def clip(self):
        """``clip_gradient`` as the kernels take it (``inf``: no clipping)."""
        return np.inf if self.clip_gradient is None else self.clip_gradient

    @property
    def wd_mode(self):
        return self._wd_mode

    @wd_mode.setter
    def wd_mode(self, value):
        if value not in WD_MODES:
            raise NetsError(f"wd_mode={value!r}: expected one of {WD_MODES}")
        if value != "lazy" and not self._decays:
            raise NetsError(f"wd_mode={value!r} does not apply to {type(self).__name__}: its "
                            f"weight decay is not a decay step; use wd_mode='lazy'")
        self._wd_mode = value

    @property
    def learning_rate(self) -> float:
        """The current learning rate (the scheduler's value at ``num_update``, if any)."""
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    @learning_rate.setter
    def learning_rate(self, lr):
        self.set_learning_rate(lr)

    def set_learning_rate(self, lr: float) -> None:
        """Set the learning rate (not allowed while an ``lr_scheduler`` decides it).

        Parameters
        ----------
        lr : float
            The new learning rate, a finite number ``>= 0``.
        """
        if self.lr_scheduler is not None:
            raise NetsError(f"set_learning_rate({lr!r}): the learning rate comes from the "
                            f"lr_scheduler; change the scheduler instead")
        self.lr = lr

    def set_lr_mult(self, args_lr_mult: dict) -> None:
        """Set per-parameter learning-rate multipliers.

        These override a ``Parameter``'s own ``lr_mult`` (MXNet let ``param_dict`` win,
        so ``set_lr_mult`` silently did nothing for Gluon parameters).

        Parameters
        ----------
        args_lr_mult : dict
            ``{index or parameter name: mult}``, each a finite number ``>= 0``; it replaces
            the multipliers set before.
        """
        self.lr_mult = _mults("lr_mult", args_lr_mult)

    def set_wd_mult(self, args_wd_mult: dict) -> None:
        """Set per-parameter weight-decay multipliers (they override a ``Parameter``'s own
        ``wd_mult``).

        Parameters
        ----------
        args_wd_mult : dict
            ``{index or parameter name: mult}``, each a finite number ``>= 0``; it replaces
            the multipliers set before.
        """
        self.wd_mult = _mults("wd_mult", args_wd_mult)

    @staticmethod
    def _mult(table, attr, index, param):
        """Parameter ``index``'s multiplier ``attr``: ``table``'s (``set_lr_mult`` /
        ``set_wd_mult``: by index, then by the parameter's name), else its ``Parameter``'s
        (``param``, from ``param_dict``), else 1."""
        if table:
            if index in table:
                return table[index]
            if param is not None and param.name in table:
                return table[param.name]
        return 1.0 if param is None else getattr(param, attr)

    # MXNet's extension points, which an optimizer implementing ``update`` itself calls
    def _get_lr(self, index):
        """Parameter ``index``'s learning rate: the current one times its multiplier
        (``set_lr_mult`` first, then its ``Parameter``'s ``lr_mult``)."""
        return self.learning_rate * self._mult(self.lr_mult, "lr_mult", index,
                                               self.param_dict.get(index))

    def _get_wd(self, index):
        """Parameter ``index``'s weight decay: ``wd`` times its multiplier (``set_wd_mult``
        first, then its ``Parameter``'s ``wd_mult``)."""
        return self.wd * self._mult(self.wd_mult, "wd_mult", index, self.param_dict.get(index))

    def _account(self, index, record):
        """Count one update of parameter ``index`` (its ``Record`` ``record``) and return
        its ``(lr, wd)``: ``_update_count``, ``_get_lr`` and ``_get_wd`` as defined here, in
        one call with the parameter looked up once."""
        record.step += 1
        if record.step > self.num_update:
            self.num_update = record.step
        param = self.param_dict.get(index)
        return (self.learning_rate * self._mult(self.lr_mult, "lr_mult", index, param),
                self.wd * self._mult(self.wd_mult, "wd_mult", index, param))

    def _update_count(self, index):
        """Count one update of parameter ``index`` (or of each index of a list): its
        record's ``step`` and ``num_update``, which the learning-rate schedule reads."""
        for i in index if isinstance(index, (list, tuple)) else (index,):
            record = self.state.get(i) or self._record(i)  # (a Record is never false)
            record.step += 1
            if record.step > self.num_update:
                self.num_update = record.step

    def _record(self, index):
        """Parameter ``index``'s ``Record`` in ``state``, made empty on first use."""
        record = self.state.get(index)
        if record is None:
            record = self.state[index] = Record()
        return record

    # -- states --------------------------------------------------------------------------
    def create_state(self, index: Key, weight: NDArray) -> State:
        """A new optimizer state for one weight (MXNet's): None, an array or a tuple of
        arrays. ``step`` calls it (through ``create_state_multi_precision``) at a
        parameter's first step; a program calling ``update`` itself keeps what it returns.

        Parameters
        ----------
        index : int or str
            The parameter's index (its multipliers; unused by the built-in optimizers).
        weight : NDArray
            The weight: states take its shape, dtype and context, and its storage type when
            ``lazy_update``.

        Returns
        -------
        None, NDArray or tuple of NDArray
            The state.
        """
        return None

    def _zeros_like(self, weight, shape=None):
        """A zero state for ``weight`` (of its shape, or ``shape``: ``weight.shape[:1]`` for
        a state in ``row_states``): its storage type when updates are lazy, else dense."""
        stype = weight.stype if self.lazy_update else "default"
        return zeros(weight.shape if shape is None else shape, weight.context, weight.dtype,
                     stype)

    def create_state_multi_precision(self, index: Key, weight: NDArray) -> State:
        """``create_state``, plus a float32 master copy of a float16 weight when
        ``multi_precision``: the state is then ``(master, state)``.

        Parameters
        ----------
        index : int or str
            The parameter's index.
        weight : NDArray
            The weight.

        Returns
        -------
        None, NDArray or tuple
            The state, or ``(master, state)``.
        """
        if self.multi_precision and weight.dtype == np.float16:
            master = weight.astype(np.float32)
            return master, self.create_state(index, master)
        return self.create_state(index, weight)

    def states_read(self) -> int:
        """How many of ``state_names`` (the first ones) an update reads: each must be given.
        All of them unless the optimizer's settings leave some out.

        Returns
        -------
        int
            The count.
        """
        return len(self.state_names)

    def _check_states(self, index, state):
        """``state`` as a tuple of ``len(state_names)`` (None for an absent state), every
        state the update reads given (``RowSelection`` checks each array)."""
        states = (() if state is None else tuple(state) if isinstance(state, (tuple, list))
                  else (state,))
        most = len(self.state_names)
        if len(states) > most:
            raise NetsError(f"{type(self).__name__}.update: parameter {index} has "
                            f"{len(states)} state arrays, at most {most} expected; pass "
                            f"create_state(index, weight)")
        states += (None,) * (most - len(states))
        for i in range(self.states_read()):
            if states[i] is None:
                raise NetsError(f"{type(self).__name__}.update: parameter {index} has no "
                                f"state {i} ({self.state_names[i]}; got state={state!r}); "
                                f"pass create_state(index, weight)")
        return states

    @property
    def _row_state_flags(self):
        """For each of ``state_names``: True when it holds one value per weight row (empty
        when none does: ``RowSelection`` reads an absent flag as False)."""
        row_states = self.row_states
        return row_states and tuple([name in row_states for name in self.state_names])

    # -- updates -------------------------------------------------------------------------
    def step(self, index: Key, weight: NDArray, grad: NDArray) -> None:
        """Update parameter ``index``'s ``weight`` in place from ``grad`` with the state
        the optimizer keeps for it (``state[index]``), made at its first step
        (``create_state_multi_precision``). The Trainer, the Module and a store's updater
        call this; it applies ``update_multi_precision``, so an optimizer implementing
        MXNet's ``update`` itself runs through it too.

        Parameters
        ----------
        index : int or str
            The parameter's key in ``state`` (its record, multipliers).
        weight : NDArray
            The weight, dense or row_sparse, updated in place.
        grad : NDArray
            Its gradient, dense or row_sparse (with ``lazy_update``, only its rows of the
            weight and of every state are read and written).
        """
        record = self.state.get(index) or self._record(index)  # (a Record is never false)
        if not record.has_state:
            record.set_state(self.create_state_multi_precision(index, weight))
        if self.multi_precision or not self._builtin_update:
            self.update_multi_precision(index, weight, grad, record.state)
        else:  # (what ``update`` does for one parameter)
            self._update(index, record, weight, grad, record.state)

    def update(self, index: Key | list, weight: NDArray, grad: NDArray, state: State) -> None:
        """Update ``weight`` (and ``state``) in place from ``grad`` with a state the caller
        keeps (MXNet's interface; ``step`` keeps the state in ``state[index]`` instead).

        Parameters
        ----------
        index : int or str, or a list of them
            The parameter's key (its record, multipliers); lists of indices, weights,
            gradients and states update several parameters.
        weight : NDArray
            The weight, dense or row_sparse, updated in place.
        grad : NDArray
            Its gradient, dense or row_sparse.
        state
            What ``create_state(index, weight)`` made: a missing array the update reads, or
            more arrays than the optimizer keeps, raise ``NetsError``.
        """
        if isinstance(index, (list, tuple)):
            for args in zip(index, weight, grad, state):
                self.update(*args)
            return
        self._update(index, self.state.get(index), weight, grad, state)

    def _update(self, index, record, weight, grad, state):
        """``update`` of one parameter, ``record`` its ``Record`` (None before its first
        update)."""
        rows = None if record is None else record.rows
        # A kept selection stands for the check of these operands and this state object;
        # the states the update reads depend on the settings too (RMSProp's ``centered``).
        reads = self.states_read()
        if rows is None or not rows.serves(weight, grad, state) or (
                reads and not all(rows.given[:reads])):
            states = self._check_states(index, state)
            rows = RowSelection(weight, grad, states, self.lazy_update, self._row_state_flags,
                                state=state)
            record = self._record(index)  # (once the operands are checked)
            record.rows = rows if rows.reusable else None
        if self._builtin_rates:
            lr, wd = self._account(index, record)
        else:  # (a subclass's own count or rates)
            self._update_count(index)
            lr, wd = self._get_lr(index), self._get_wd(index)
        if self._wd_mode == "catchup":
            _catch_up_rows(record, rows, lr * wd)
        self.update_rows(rows, lr, wd, record.step)
        if self._wd_mode == "dense" and wd and rows.ids is not None:
            rows.decay_untouched(1.0 - lr * wd)

    def update_rows(self, rows: RowSelection, lr: float, wd: float, step: int) -> None:
        """The optimizer's math: update the rows selected by ``rows`` with learning rate
        ``lr`` and weight decay ``wd``. Each optimizer overrides it (one function with the
        math, shared with its update operator in ``nets.ops.update``).

        Parameters
        ----------
        rows : RowSelection
            The weight, gradient and state arrays, and which rows to update (every row, or
            a row_sparse gradient's rows with ``lazy_update``).
        lr : float
            The learning rate of this update.
        wd : float
            The weight decay of this update.
        step : int
            How many updates this parameter has had, this one included.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement updates")

    def update_multi_precision(self, index: Key | list, weight: NDArray, grad: NDArray,
                               state: State) -> None:
        """``update``, through the float32 master copy for a float16 weight when
        ``multi_precision``; the master is then copied back to the weight (only the
        gradient's rows for a dense weight updated lazily).

        Parameters
        ----------
        index : int or str, or a list of them
            As for ``update``.
        weight : NDArray
            The weight, float16 with a master copy in ``state``.
        grad : NDArray
            Its gradient.
        state
            What ``create_state_multi_precision(index, weight)`` made.
        """
        if not self.multi_precision:  # (``update`` takes lists too)
            self.update(index, weight, grad, state)
            return
        if isinstance(index, (list, tuple)):
            for args in zip(index, weight, grad, state):
                self.update_multi_precision(*args)
            return
        if weight.dtype != np.float16:
            self.update(index, weight, grad, state)
            return
        master, inner = state
        self.update(index, master, grad.astype(np.float32), inner)
        lazy = grad.stype == "row_sparse" and self.lazy_update
        if weight.stype == "default" and lazy:
            rows = grad.index_array
            weight.values[rows] = master.values[rows]
        else:
            weight[:] = master

    def changed_rows(self, grad: NDArray) -> np.ndarray | None:
        """The sorted row ids (numpy) an update with ``grad`` writes, or None when it may
        write every row: the built-in lazy update of a row_sparse gradient writes exactly
        its rows; a dense gradient, ``lazy_update=False``, ``wd_mode='dense'`` (which
        decays the rows the gradient lacks) or an ``update`` of a subclass's own may write
        any.

        Parameters
        ----------
        grad : NDArray
            The gradient of the update.

        Returns
        -------
        numpy.ndarray or None
            The row ids, or None.
        """
        if (grad.stype != "row_sparse" or not self.lazy_update or self.wd_mode == "dense"
                or type(self).update is not Optimizer.update):
            return None
        return grad.indices.asnumpy()

    # -- weight decay of skipped rows ------------------------------------------------------
    def catch_up(self, index: Key, weight: NDArray) -> None:
        """Apply every decay step that rows of ``weight`` (parameter ``index``) have missed
        under ``wd_mode='catchup'``, e.g. before saving or evaluating the model.

        Parameters
        ----------
        index : int or str
            The parameter's key in ``state``.
        weight : NDArray
            Its weight, scaled in place.
        """
        record = self.state.get(index)
        if record is None or record.stamps is None:
            return
        if weight.stype == "row_sparse":  # absent rows are zero: nothing to decay
            ids = weight.index_array
        else:
            ids = slice(None)
        w = view2d(storage(weight, "weight"))
        w *= np.exp(record.log_decay - record.stamps[ids]).astype(w.dtype)[:, None]
        record.stamps[:] = record.log_decay


def _mults(what, table):
    """``table`` as a dict, each multiplier checked to be a finite number ``>= 0``."""
    table = dict(table)
    for key, mult in table.items():
        check_number(f"{what}[{key!r}]", mult, low=0)
    return table


def _catch_up_rows(record, rows, decay):
    """Apply to each selected row the decay steps it missed (``wd_mode='catchup'``), then
    count this step's decay ``1 - decay``.

    ``record.log_decay`` sums ``log(1 - lr * wd)`` over the parameter's steps and each row
    stamps that sum when it is updated, so a row's missed decay is one factor
    ``exp(sum now - sum then)``, exact under any learning-rate schedule.
    """
    if record.stamps is None:
        if not decay:
            return
        record.stamps = np.zeros(rows.nrows)
    if decay >= 1:
        raise NetsError(f"wd_mode='catchup' needs lr * wd < 1, got lr * wd = {decay}")
    ids = rows.ids if rows.ids is not None else slice(None)
    missed = record.log_decay - record.stamps[ids]
    if missed.any():
        rows.scale_weight(np.exp(missed))
    record.log_decay += math.log1p(-decay)
    record.stamps[ids] = record.log_decay


register = Optimizer.register
create = Optimizer.create_optimizer
