"""``Optimizer``: the base class of every optimizer, the registry (``register``/``create``) and
the row plan that makes updates with a row_sparse gradient lazy.

An update reads and writes nets arrays in place: the weight and the states (dense or
row_sparse, in any mix) are viewed as ``(rows, cols)`` numpy arrays and handed to one numba
kernel per optimizer (``nets.kernels.optim``) together with the rows to update. With a
row_sparse gradient and ``lazy_update=True`` those are the gradient's rows only: no other row
of the weight or of any state is read or written. Otherwise (a dense gradient, or
``lazy_update=False``) every row is updated and an absent gradient row counts as zero.
"""
import functools
import math
import weakref
import numbers
import warnings

import numpy as np

from .. import kernels, parallel
from ..base import FLOAT_DTYPES, DTypeError, NetsError, ShapeError, StorageTypeError
from ..ndarray import aligned
from ..ndarray.creation import zeros
from ..ndarray.dense import NDArray

__all__ = ["Optimizer", "register", "create", "WD_MODES"]

WD_MODES = ("lazy", "catchup", "dense")
_INDEX = np.int64


class Optimizer:
    """Base class of the optimizers (MXNet's ``mx.optimizer.Optimizer``).

    Parameters
    ----------
    learning_rate : float, optional
        The step size. ``None`` takes the ``lr_scheduler``'s ``base_lr`` when one is given,
        else the optimizer's default (``default_lr``); a value given together with a
        scheduler becomes the scheduler's ``base_lr``.
    wd : float
        Weight decay (L2 penalty) coefficient, scaled per parameter by ``wd_mult``.
    rescale_grad : float
        The gradient is multiplied by this first (typically ``1 / batch_size``), then clipped.
    clip_gradient : float or None
        Clip each rescaled gradient element to ``[-clip_gradient, clip_gradient]``; ``None``
        disables it. Any number ``>= 0`` clips, 0 included (MXNet silently ignored 0).
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
    """

    opt_registry = {}
    default_lr = 0.01
    _kernel_states = 0  # how many states this optimizer's kernel takes (unused ones: None)
    # False for optimizers whose weight decay is not a decay step (FTRL): wd_mode must be lazy
    _decays = True

    @property
    def _states_read(self):
        """How many of the kernel's states (the first ones) an update reads: each must be
        given. All of them unless an optimizer's settings leave some out."""
        return self._kernel_states

    def __init__(self, learning_rate=None, wd=0.0, rescale_grad=1.0, clip_gradient=None,
                 lr_scheduler=None, multi_precision=False, param_dict=None, lazy_update=True,
                 wd_mode="lazy"):
        self.lr_scheduler = lr_scheduler
        if learning_rate is None:
            learning_rate = self.default_lr if lr_scheduler is None else lr_scheduler.base_lr
        elif lr_scheduler is not None:
            lr_scheduler.base_lr = learning_rate
        self.lr = learning_rate
        self.wd = wd
        self.rescale_grad = rescale_grad
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.param_dict = param_dict if param_dict else {}
        self.lazy_update = lazy_update
        self.wd_mode = wd_mode
        self.lr_mult, self.wd_mult = {}, {}
        self.num_update = 0
        self._index_update_count = {}
        self._log_decay = {}  # index -> sum over steps of log(1 - lr * wd)   (wd_mode='catchup')
        self._row_log_decay = {}  # index -> per row: that sum when the row was last updated
        self._last_operands = {}  # index -> its last dense _Operands, reused while they match

    # -- registry ------------------------------------------------------------------------
    @staticmethod
    def register(klass):
        """Register an optimizer class under its lower-cased name (a class decorator)."""
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
    def create_optimizer(name, **kwargs):
        """An instance of the optimizer registered as ``name`` (case-insensitive)."""
        klass = Optimizer.opt_registry.get(str(name).lower())
        if klass is None:
            raise NetsError(f"unknown optimizer {name!r}; registered: "
                            f"{sorted(Optimizer.opt_registry)}")
        return klass(**kwargs)

    # -- hyper-parameters ----------------------------------------------------------------
    @property
    def clip_gradient(self):
        return self._clip_gradient

    @clip_gradient.setter
    def clip_gradient(self, value):
        if value is not None and not (isinstance(value, numbers.Real) and value >= 0):
            raise NetsError(f"clip_gradient={value!r}: expected None (no clipping) or a "
                            f"number >= 0")
        self._clip_gradient = value

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
    def learning_rate(self):
        """The current learning rate (the scheduler's value at ``num_update``, if any)."""
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    @learning_rate.setter
    def learning_rate(self, lr):
        self.set_learning_rate(lr)

    def set_learning_rate(self, lr):
        """Set the learning rate (not allowed while an ``lr_scheduler`` decides it)."""
        if self.lr_scheduler is not None:
            raise NetsError(f"set_learning_rate({lr!r}): the learning rate comes from the "
                            f"lr_scheduler; change the scheduler instead")
        self.lr = lr

    def set_lr_mult(self, args_lr_mult):
        """Per-parameter learning-rate multipliers: ``{index or parameter name: mult}``.

        These override a ``Parameter``'s own ``lr_mult`` (MXNet let ``param_dict`` win,
        so ``set_lr_mult`` silently did nothing for Gluon parameters)."""
        self.lr_mult = dict(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        """Per-parameter weight-decay multipliers: ``{index or parameter name: mult}``
        (they override a ``Parameter``'s own ``wd_mult``)."""
        self.wd_mult = dict(args_wd_mult)

    def _mult(self, table, attr, index, param):
        if index in table:
            return table[index]
        if param is None:
            return 1.0
        return table.get(param.name, getattr(param, attr))

    def _rates(self, index):
        """Parameter ``index``'s learning rate and weight decay: the optimizer's times the
        parameter's multipliers (``set_lr_mult``/``set_wd_mult`` first, then its own)."""
        param = self.param_dict.get(index)
        if not (self.lr_mult or self.wd_mult):  # (the common case: the parameter's own)
            if param is None:
                return self.learning_rate, self.wd
            return self.learning_rate * param.lr_mult, self.wd * param.wd_mult
        return (self.learning_rate * self._mult(self.lr_mult, "lr_mult", index, param),
                self.wd * self._mult(self.wd_mult, "wd_mult", index, param))

    def _update_count(self, index):
        """Count one update of parameter ``index``; ``num_update`` is the largest count."""
        count = self._index_update_count.get(index, 0) + 1
        self._index_update_count[index] = count
        if count > self.num_update:
            self.num_update = count

    # -- states --------------------------------------------------------------------------
    def create_state(self, index, weight):
        """The optimizer state of one weight: None, an array or a tuple of arrays."""
        return None

    def _zeros_like(self, weight):
        """A zero state for ``weight``: its storage type when updates are lazy, else dense."""
        stype = weight.stype if self.lazy_update else "default"
        return zeros(weight.shape, weight.context, weight.dtype, stype)

    def create_state_multi_precision(self, index, weight):
        """``create_state``, plus a float32 master copy of a float16 weight when
        ``multi_precision``: the state is then ``(master, state)``."""
        if self.multi_precision and weight.dtype == np.float16:
            master = weight.astype(np.float32)
            return master, self.create_state(index, master)
        return self.create_state(index, weight)

    # -- updates -------------------------------------------------------------------------
    def update(self, index, weight, grad, state):
        """Update ``weight`` (and ``state``) in place from ``grad``.

        ``index`` identifies the parameter (its update count, multipliers); lists of
        indices, weights, gradients and states update several parameters. ``state`` is
        what ``create_state(index, weight)`` made: a missing array the update reads, or
        more arrays than the optimizer keeps, raise ``NetsError``.
        """
        if isinstance(index, (list, tuple)):
            for args in zip(index, weight, grad, state):
                self.update(*args)
            return
        self._update_count(index)
        lr, wd = self._rates(index)
        operands = self._last_operands.get(index)
        if operands is None or not operands.match(weight, state, self._states_read):
            operands = self._operands(index, weight, state)
        rows = _RowPlan(operands, weight, grad, self.lazy_update)
        wd_mode = self._wd_mode
        if wd_mode == "catchup":
            self._catch_up(index, rows, lr * wd)
        self._step(index, rows, lr, wd)
        if wd_mode == "dense" and wd and rows.ids is not None:
            rows.decay_untouched(1.0 - lr * wd)

    def _operands(self, index, weight, state):
        """The checked ``_Operands`` of parameter ``index``, kept for the next update when
        they are all dense (``update`` reuses them while they ``match``: the same weight and
        state arrays, holding the same buffers, come back and the checks are not repeated)."""
        states = _as_tuple(state)
        if len(states) > self._kernel_states:
            raise NetsError(f"{type(self).__name__}.update: parameter {index} has "
                            f"{len(states)} state arrays, at most {self._kernel_states} expected; "
                            f"pass create_state(index, weight)")
        for i in range(self._states_read):
            if i >= len(states) or states[i] is None:  # the kernel would read a missing state
                raise NetsError(f"{type(self).__name__}.update: parameter {index} has no state "
                                f"{i} (got state={state!r}); pass create_state(index, weight)")
        operands = _Operands(weight, states + (None,) * (self._kernel_states - len(states)))
        if operands.arrays is not None:
            operands.watch(weight, states, self, index)
            self._last_operands[index] = operands
        return operands

    def update_multi_precision(self, index, weight, grad, state):
        """``update``, through the float32 master copy for a float16 weight when
        ``multi_precision``; the master is then copied back to the weight (only the
        gradient's rows for a dense weight updated lazily)."""
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
            rows = grad._indices
            _view2d(weight._np, "weight")[rows] = _view2d(master._np, "master weight")[rows]
        else:
            weight[:] = master

    def _step(self, index, rows, lr, wd):
        """Run this optimizer's kernel on ``rows`` (a ``_RowPlan``) with these rates."""
        raise NotImplementedError(f"{type(self).__name__} does not implement updates")

    @property
    def _clip(self):
        """``clip_gradient`` as the kernels take it (inf disables)."""
        return np.inf if self._clip_gradient is None else self._clip_gradient

    # -- weight decay of skipped rows ------------------------------------------------------
    def _catch_up(self, index, rows, decay):
        """Apply to each row about to be updated the decay steps it missed (wd_mode='catchup').

        ``_log_decay[index]`` sums ``log(1 - lr * wd)`` over this parameter's steps and each
        row records that sum when it is updated, so a row's missed decay is one factor
        ``exp(sum now - sum then)``, exact under any learning-rate schedule.
        """
        stamps = self._row_log_decay.get(index)
        if stamps is None:
            if not decay:
                return
            stamps = self._row_log_decay[index] = np.zeros(rows.nrows)
        if decay >= 1:
            raise NetsError(f"wd_mode='catchup' needs lr * wd < 1, got lr * wd = {decay}")
        total = self._log_decay.get(index, 0.0)
        ids = rows.ids if rows.ids is not None else slice(None)
        missed = total - stamps[ids]
        if missed.any():
            rows.scale_weight(np.exp(missed))
        total += math.log1p(-decay)
        self._log_decay[index] = total
        stamps[ids] = total

    def catch_up(self, index, weight):
        """Apply every decay step that rows of ``weight`` (parameter ``index``) have missed
        under ``wd_mode='catchup'``, e.g. before saving or evaluating the model."""
        stamps = self._row_log_decay.get(index)
        if stamps is None:
            return
        total = self._log_decay[index]
        if weight.stype == "row_sparse":  # absent rows are zero: nothing to decay
            ids, w = weight._indices, _storage2d(weight)
        else:
            ids, w = slice(None), _view2d(weight._np, "weight")
        _scale_rows(w, np.arange(len(w), dtype=_INDEX), np.exp(total - stamps[ids]))
        stamps[:] = total

    def counters(self):
        """``(config, arrays)``: the update counters and catch-up records, JSON-able config
        plus per-parameter numpy arrays (saved by ``Trainer.save_states``)."""
        config = {"num_update": self.num_update,
                  "index_update_count": {str(k): v for k, v in self._index_update_count.items()},
                  "log_decay": {str(k): v for k, v in self._log_decay.items()}}
        return config, {str(k): v for k, v in self._row_log_decay.items()}

    def load_counters(self, config, arrays):
        """Restore what ``counters`` returned."""
        self.num_update = int(config["num_update"])
        self._index_update_count = {int(k): int(v)
                                    for k, v in config["index_update_count"].items()}
        self._log_decay = {int(k): float(v) for k, v in config["log_decay"].items()}
        self._row_log_decay = {int(k): np.array(v, dtype=np.float64) for k, v in arrays.items()}


def _as_tuple(state):
    if state is None:
        return ()
    return tuple(state) if isinstance(state, (tuple, list)) else (state,)


def _view2d(a, what):
    """Dense ``a`` (C-contiguous) as ``(rows, cols)``, sharing memory (0-d: one row)."""
    if not a.flags.c_contiguous:
        raise NetsError(f"the {what} must be C-contiguous to be updated in place")
    return a.reshape(a.shape[0] if a.ndim else 1, math.prod(a.shape[1:]))


def _storage2d(a):
    """Row_sparse ``a``'s stored rows as ``(nnz_rows, cols)``, sharing memory."""
    if not a._data.flags.c_contiguous:
        a._data = np.ascontiguousarray(a._data)
    return a._data.reshape(len(a._indices), math.prod(a.shape[1:]))


class _Operands:
    """The weight and its states (padded with None to the kernel's count), checked.

    ``nrows`` and ``dtype``: the weight's; ``given``: which states are not None;
    ``arrays``: when the weight and every state are dense, their 2-D views as the kernels
    take them (a ``(0, cols)`` placeholder for a None state), else None: a row_sparse one
    may gain rows before the update views it, so ``states`` keeps the states themselves.
    A cached ``_Operands`` (dense) refers to its arrays only weakly, so it never keeps a
    dropped weight alive.
    """

    def __init__(self, weight, states):
        _check_operand(weight, "weight", weight)
        for i, state in enumerate(states):
            if state is not None:
                _check_operand(state, f"state {i}", weight)
        self.nrows = weight.shape[0] if weight.ndim else 1
        self.dtype = weight.dtype
        self.given = given = tuple(state is not None for state in states)
        self._reads = given.index(False) if False in given else len(given)  # states given first
        self.arrays = self.states = self._refs = None
        if all(a is None or a.stype == "default" for a in (weight, *states)):
            w = _view2d(weight._np, "weight")
            self.arrays = [w] + [_placeholder(w.dtype, w.shape[1]) if state is None
                                 else _view2d(state._np, f"state {i}")
                                 for i, state in enumerate(states)]
        else:
            self.states = states

    def watch(self, weight, states, optimizer, index):
        """Refer weakly to ``weight`` and ``states`` (as the update was given them, unpadded)
        for ``match``, and drop these from ``optimizer._last_operands[index]`` as soon as one
        of them is garbage. Only weak references: no cycle keeps the views (and buffers)
        alive."""
        owner, me = weakref.ref(optimizer), weakref.ref(self)

        def forget(_):
            cache = getattr(owner(), "_last_operands", {})
            if me() is not None and cache.get(index) is me():
                del cache[index]
        key = (weight, *states)
        self._refs = tuple(None if a is None else weakref.ref(a, forget) for a in key)
        # (ids of the buffers: the views in ``arrays`` keep them alive, so no id is reused)
        self._buffers = tuple(None if a is None else id(a._np) for a in key)

    def match(self, weight, state, reads):
        """Whether ``weight`` and ``state`` are the dense arrays these were made of, still
        holding the same buffers, and the first ``reads`` states (those the optimizer's
        settings read now) are given."""
        refs = self._refs
        if refs[0]() is not weight or id(weight._np) != self._buffers[0] or reads > self._reads:
            return False
        if state is None:
            return len(refs) == 1
        states = state if state.__class__ is tuple else _as_tuple(state)
        if len(states) != len(refs) - 1:
            return False
        for a, r, buffer in zip(states, refs[1:], self._buffers[1:]):
            if (a is not None) if r is None else (r() is not a or id(a._np) != buffer):
                return False
        return True


class _RowPlan:
    """Which rows of the weight, the gradient and each state one update touches.

    ``arrays``: 2-D numpy views ``[weight, gradient, *states]``, the states padded with
    ``(0, cols)`` placeholders for absent (None) states; ``pos`` and ``count`` as
    ``nets.kernels.optim`` takes them; ``ids``: the weight's row ids being updated (None:
    every row); ``given``: which states are not None. A row_sparse weight or state lacking
    a row to update gets it inserted (zero), and a row_sparse state is filled to the rows
    the weight stores, as MXNet did, so that it grows once instead of on every step.
    """

    def __init__(self, operands, weight, grad, lazy):
        self.nrows = n = operands.nrows
        self.dtype, self.given = operands.dtype, operands.given
        if grad.__class__ is NDArray and operands.arrays is not None:
            # every operand dense: row k of each, no index array (the common small update)
            w, *views = operands.arrays
            g = grad._np
            if g.dtype != self.dtype or g.shape != weight._np.shape:
                _check_operand(grad, "grad", weight)  # raises
            if g.shape != w.shape or not g.flags.c_contiguous:  # (a bias: one column)
                g = np.ascontiguousarray(g).reshape(w.shape)
            self.ids, self.count, self.weight_rows = None, n, None
            self.arrays = [w, g, *views]
            self.pos = _no_positions(2 + len(views))
            return
        _check_operand(grad, "grad", weight)
        # Rows of a canonical RowSparseNDArray are sorted and unique by construction, so a
        # lazy update never sees a row twice and needs no coalescing.
        if grad.stype == "row_sparse" and lazy and operands.arrays is not None:
            # every operand dense, the gradient's rows only (the common lazy update): row
            # ids[k] of the weight and of each state, row k of the gradient's storage
            w, *views = operands.arrays
            self.ids = self.weight_rows = ids = grad._indices
            self.count = k = len(ids)
            self.arrays = [w, _storage2d(grad), *views]
            self.pos = pos = np.empty((2 + len(views), k), _INDEX)
            pos[0] = ids
            pos[1] = np.arange(k)
            pos[2:] = ids  # (a placeholder state's line is never read)
            return
        self.ids = grad._indices if grad.stype == "row_sparse" and lazy else None
        self.count = n if self.ids is None else len(self.ids)
        if grad.stype == "default":
            grad_line, grad_data = None, _view2d(np.ascontiguousarray(grad._np), "gradient")
        else:
            k = len(grad._indices)
            grad_data = _storage2d(grad)
            if self.ids is not None:
                grad_line = np.arange(k, dtype=_INDEX)
            else:  # every row: an absent gradient row reads an appended zero row
                grad_line = np.full(n, k, dtype=_INDEX)
                grad_line[grad._indices] = np.arange(k, dtype=_INDEX)
                grad_data = np.concatenate([grad_data, np.zeros((1, grad_data.shape[1]),
                                                                grad_data.dtype)])
        if operands.arrays is not None:  # all dense: row k is row k of each storage
            w, *views = operands.arrays
            lines = [self.ids] * (1 + len(views))  # a placeholder's line is never read
        else:
            states = operands.states
            fill = weight._indices if weight.stype == "row_sparse" else None
            lines = [self._line(weight, None)]
            w = self._array(weight, "weight")
            views = []
            for i, state in enumerate(states):
                lines.append(None if state is None else self._line(state, fill))
                views.append(_placeholder(w.dtype, w.shape[1]) if state is None
                             else self._array(state, f"state {i}"))
        self.arrays = [w, grad_data, *views]
        lines.insert(1, grad_line)
        self.weight_rows = lines[0]
        self.pos = _positions(lines, self.count)

    def _line(self, a, fill):
        """Positions in ``a``'s storage of the rows to update (None: row k is row k)."""
        if a.stype == "default":
            return self.ids
        wanted = self.ids if self.ids is not None else np.arange(self.nrows, dtype=_INDEX)
        _insert_rows(a, wanted, fill)
        if self.ids is None and len(a._indices) == self.nrows:
            return None  # all rows stored: storage row k is row k
        return np.searchsorted(a._indices, wanted).astype(_INDEX, copy=False)

    @staticmethod
    def _array(a, what):
        return _view2d(a._np, what) if a.stype == "default" else _storage2d(a)

    def run(self, kernel, floats, *flags):
        """``kernel(pos, lo, hi, *arrays, *floats, *flags)`` over the updates,
        ``floats`` (the learning rate first) cast to the dtype. A lazy update waits on memory
        latency (scattered rows), so the cores share a large one: each keeps its own rows in
        flight. A dense pass streams memory at the bandwidth one core already gets: one
        call."""
        dtype = self.dtype
        try:
            rest = _typed(floats[1:], dtype)
        except TypeError:  # an unhashable rate (a 0-d array): converted, not cached
            rest = tuple(np.array(floats[1:], dtype))
        pos, count = self.pos, self.count
        args = (*self.arrays, dtype.type(floats[0]), *rest, *flags)
        if not pos.shape[1]:
            kernel(pos, 0, count, *args)
            return
        parallel.parallel_for(lambda lo, hi: kernel(pos, lo, hi, *args), count,
                              work=count * sum(a.shape[1] for a in self.arrays if len(a)))

    def _weight_positions(self):
        line = self.weight_rows
        return np.arange(self.count, dtype=_INDEX) if line is None else line

    def scale_weight(self, factors):
        """Multiply each updated row ``k`` of the weight by ``factors[k]``."""
        _scale_rows(self.arrays[0], self._weight_positions(), factors)

    def decay_untouched(self, factor):
        """Multiply every stored weight row that this update does not touch by ``factor``."""
        keep = np.ones(len(self.arrays[0]), dtype=bool)
        keep[self._weight_positions()] = False
        rows = np.flatnonzero(keep).astype(_INDEX)
        _scale_rows(self.arrays[0], rows, np.full(len(rows), factor))


@functools.lru_cache(maxsize=256)
def _typed(floats, dtype):
    """``floats`` as numpy scalars of ``dtype``, as the kernels take them (so each kernel
    compiles once per weight dtype). Cached: every parameter and every step passes the same
    rates after the learning rate (which ``run`` converts itself: a schedule or Adam's bias
    correction changes it on every step), and converting them cost ~0.9 us per update."""
    return tuple(np.array(floats, dtype))


@functools.cache
def _placeholder(dtype, cols):
    """The ``(0, cols)`` array standing for an absent state (never read nor written)."""
    return np.empty((0, cols), dtype=dtype)


@functools.cache
def _no_positions(lines):
    """The empty ``pos`` of an update of every row, in order."""
    return np.empty((lines, 0), dtype=_INDEX)


def _positions(lines, count):
    """``pos`` from one line per operand (None: every row, in order); no columns when every
    line is None."""
    if all(line is None for line in lines):
        return _no_positions(len(lines))
    pos = np.empty((len(lines), count), _INDEX)
    for i, line in enumerate(lines):
        pos[i] = np.arange(count) if line is None else line
    return pos


def _scale_rows(w, rows, factors):
    """``w[rows[k]] *= factors[k]`` for 2-D ``w``."""
    kernels.optim.scale_rows(w, rows, factors.astype(w.dtype))


def _check_operand(a, what, weight):
    if a.__class__ is NDArray and weight.__class__ is NDArray:  # the common dense operand
        x, w = a._np, weight._np
        if x.dtype == w.dtype and x.shape == w.shape and x.dtype in FLOAT_DTYPES:
            return
    if not isinstance(a, NDArray):
        raise NetsError(f"{what} must be a nets array, got {type(a).__name__}")
    if a.stype not in ("default", "row_sparse"):
        raise StorageTypeError(f"{what} has stype {a.stype!r}; optimizers update dense and "
                               f"row_sparse arrays")
    if a.shape != weight.shape:
        raise ShapeError(f"{what} has shape {tuple(a.shape)}, the weight {tuple(weight.shape)}")
    if a.dtype not in FLOAT_DTYPES:
        hint = "; use multi_precision=True for float16" if a.dtype == np.float16 else ""
        raise DTypeError(f"{what} has dtype {a.dtype}: optimizers update float32 and float64 "
                         f"arrays{hint}")
    if a.dtype != weight.dtype:
        raise DTypeError(f"{what} has dtype {a.dtype}, the weight {weight.dtype}")


def _insert_rows(a, rows, fill=None):
    """Make row_sparse ``a`` store every row in ``rows`` (sorted unique), and the rows of
    ``fill`` too when some are missing; inserted rows are zero."""
    idx = a._indices
    at = np.searchsorted(idx, rows)
    present = at < len(idx)
    present[present] = idx[at[present]] == rows[present]
    if present.all():
        return
    new = np.union1d(idx, rows if fill is None else np.union1d(rows, fill)).astype(_INDEX)
    data = aligned.zeros((len(new),) + a._data.shape[1:], a._data.dtype)
    data[np.searchsorted(new, idx)] = a._data
    a._data, a._indices = data, new


register = Optimizer.register
create = Optimizer.create_optimizer
