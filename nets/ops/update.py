"""The optimizer update operators (MXNet's ``sgd_update``, ``adam_update``, ...) and the
update machinery they share with ``nets.optim``: ``RowSelection``, the rows one update
touches in every operand's storage, and one function per optimizer rule (``sgd_rows``,
``adam_rows``, ...) running its numba kernel (``nets.kernels.optim``) on a selection. An
optimizer's ``update_rows`` and the operator of the same rule call the same function, so
each rule is written once.

An update operator takes the weight, the gradient and the states as array inputs, in
MXNet's order, and MXNet's attributes (``lr`` required; ``wd``, ``rescale_grad``,
``clip_gradient``, where a negative ``clip_gradient`` turns clipping off, and per operator
``lazy_update``, ``momentum``, ...). It updates the states in place, and the weight in place
when called with ``out=weight`` (MXNet programs' call); without ``out`` the weight is left
as it is and the updated weight is a new array (the states are still updated in place).
``out`` must be the weight. With a row_sparse gradient, ``lazy_update=True`` updates only
the gradient's rows of the weight and of every state (dense or row_sparse: a row_sparse
weight or state gains the rows it lacks); ``lazy_update=False``, and the operators without
a ``lazy_update`` attribute that MXNet runs densely (``signsgd_update``, ``signum_update``,
``rmsprop_update``, ``rmspropalex_update``), update every row, an absent gradient row
counting as zero. ``adagrad_update``, ``ftrl_update`` and ``group_adagrad_update`` are
always lazy with a row_sparse gradient (MXNet's sparse implementations of them are).
Operands are dense or row_sparse, float32 or float64, all of the weight's dtype; anything
else, and a hyper-parameter that is NaN or out of range, raises a ``NetsError`` naming the
operator and the argument.
"""
import itertools
import math

import numpy as np

from .. import kernels, parallel
from ..base import (FLOAT_DTYPES, DTypeError, NetsError, ShapeError, StorageTypeError,
                    check_number)
from ..arrays.dense import NDArray
from .registry import REQUIRED, Op, log_storage, storage_verbose

__all__ = ["sgd_update", "sgd_mom_update", "adam_update", "adagrad_update", "ftrl_update",
           "signsgd_update", "signum_update", "rmsprop_update", "rmspropalex_update"]
# (``group_adagrad_update``, declared as ``_contrib_group_adagrad_update``, is a contrib
# operator: ``nets.nd.contrib.group_adagrad_update``, not a ``nets.nd`` name)

_INDEX = np.int64


# -- the rules, shared with nets.optim -----------------------------------------------------
# Each runs one kernel of ``nets.kernels.optim`` on the rows ``rows`` selects; the float
# arguments are as the kernel takes them (``clip``: inf for no clipping).

def sgd_rows(rows, lr, wd, momentum, rescale_grad, clip):
    """SGD, with momentum when the selection was given the momentum state."""
    rows.run(kernels.optim.sgd, (lr, wd, momentum, rescale_grad, clip), rows.given[0])


def adam_rows(rows, lr, beta1, beta2, epsilon, wd, rescale_grad, clip, decoupled=False):
    """Adam (``lr`` carrying any bias correction); ``decoupled``: AdamW's weight decay."""
    rows.run(kernels.optim.adam, (lr, beta1, beta2, epsilon, wd, rescale_grad, clip),
             decoupled)


def adagrad_rows(rows, lr, wd, epsilon, rescale_grad, clip):
    """AdaGrad, ``epsilon`` under the square root."""
    rows.run(kernels.optim.adagrad, (lr, wd, epsilon, rescale_grad, clip))


def rowwise_adagrad_rows(rows, lr, wd, epsilon, rescale_grad, clip, eps_inside):
    """Row-wise AdaGrad (one accumulator per row); ``eps_inside``: ``sqrt(history +
    epsilon)`` (MXNet's group AdaGrad), else ``sqrt(history) + epsilon`` (FBGEMM's)."""
    rows.run(kernels.optim.rowwise_adagrad, (lr, wd, epsilon, rescale_grad, clip), eps_inside)


def rmsprop_rows(rows, lr, gamma1, gamma2, epsilon, wd, rescale_grad, clip, clip_weights,
                 centered):
    """RMSProp, Graves' centered variant when ``centered`` (``clip_weights``: inf for none)."""
    rows.run(kernels.optim.rmsprop, (lr, gamma1, gamma2, epsilon, wd, rescale_grad, clip,
                                     clip_weights), bool(centered))


def ftrl_rows(rows, lr, lamda1, beta, wd, rescale_grad, clip):
    """FTRL-proximal (``lr > 0``)."""
    rows.run(kernels.optim.ftrl, (lr, lamda1, beta, wd, rescale_grad, clip))


def signum_rows(rows, lr, momentum, wd, wd_lh, rescale_grad, clip):
    """Signum with the momentum state when the selection was given it, else signSGD."""
    rows.run(kernels.optim.signum, (lr, momentum, wd, wd_lh, rescale_grad, clip),
             rows.given[0])


# -- the rows an update touches --------------------------------------------------------------

# The state object of a selection that serves no later update: one made from a list (its
# items may change) or by an update operator (which keeps none). No update passes it.
_UNKEPT = object()


class RowSelection:
    """The rows one update touches, in every operand's storage.

    ``ids``: the weight rows selected, sorted and unique (the row_sparse gradient's rows of
    a lazy update), or None for every row; ``nrows``: the weight's row count; ``count``: how
    many rows are selected. ``weight``, ``grad`` and ``states``: ``(rows, cols)`` numpy
    views of the storages, a state the update was not given being a ``(0, cols)``
    placeholder; ``given``: which states were given; ``pos``: the index lines the kernels
    take (``nets.kernels.optim``: line 0 the weight, 1 the gradient, then the states; no
    columns when the k-th selected row is row k of every storage).

    Making one checks the operands: each a dense or row_sparse nets array of the weight's
    shape (a state flagged in ``row_states``: ``(rows,)`` or ``(rows, 1)``, one value per
    weight row, seen as ``(rows, 1)``) and (float32 or float64) dtype, the storage of the
    weight and of each state
    C-contiguous so that the kernels update it in place. A row_sparse weight or state
    lacking a selected row gets it inserted (zero, ``RowSparseNDArray.insert_rows``); a
    row_sparse state that grows is also given every row the weight stores, as MXNet did,
    so that it grows once rather than on every step. A gradient row absent from a
    row_sparse gradient, when every row is selected, reads an appended zero row.

    ``lazy_update``: select the gradient's rows when it is row_sparse. A row_sparse
    gradient listing every row selects every row (``ids`` None): the update is the dense
    pass, costing what a dense gradient's does.

    ``operands``: ``(weight, grad, *states)`` when every operand is dense and viewed here in
    its own storage (no copy), so that the selection serves every later update of these
    arrays while their storages stay (``serves``); else None. A lazy selection of a
    row_sparse gradient's rows over a dense weight and dense states also serves later
    updates of them by other row_sparse gradients (``serves`` selects the new gradient's
    rows): only the rows and the gradient change, the checks of the weight and the states
    stand while their storages do. ``state``: the optimizer's state object the ``states``
    were checked and padded from (``Optimizer._check_states``), which a later update must
    pass again to be served; a selection given none, or a list, serves no later update.
    """

    def __init__(self, weight, grad, states, lazy_update, row_states=(), names=None,
                 state=_UNKEPT):
        w = storage(weight, "weight")
        self.dtype = dtype = w.dtype
        if dtype not in FLOAT_DTYPES:
            hint = "; use multi_precision=True for float16" if dtype == np.float16 else ""
            raise DTypeError(f"weight has dtype {dtype}: optimizers update float32 and "
                             f"float64 arrays{hint}")
        self._shape = shape = weight.shape
        g = storage(grad, "grad", shape, dtype, written=False)
        lazy = lazy_update and grad.stype == "row_sparse"
        self.nrows = n = shape[0] if shape else 1
        ids = grad.index_array if lazy else None
        if ids is not None and len(ids) == n:
            ids = None  # (sorted unique: it lists every row) the dense pass, at its cost
        self.ids = ids
        self.count = n if ids is None else len(ids)
        self.weight, weight_line = _selected(weight, w, ids, n, None)
        self.grad, grad_line = _selected_grad(grad, g, lazy, n)
        fill = weight.index_array if weight.stype == "row_sparse" else None
        lines, views, given = [weight_line, grad_line], [], []
        for i, a in enumerate(states):
            if a is None:  # an empty placeholder, never read
                view, line = self.weight[:0], None
            else:
                what = f"state {i}" if names is None else names[i]
                want = shape
                if i < len(row_states) and row_states[i]:  # (rows,) or (rows, 1)
                    want = shape[:1] + ((1,) if a.shape == shape[:1] + (1,) else ())
                view, line = _selected(a, storage(a, what, want, dtype), ids, n, fill)
            views.append(view)
            lines.append(line)
            given.append(a is not None)
        self.states, self.given = tuple(views), tuple(given)
        # the elements one update touches (every operand has the weight's columns)
        self._cols = self.weight.shape[1] * (2 + sum(given))
        self._arrays = (self.weight, self.grad, *views)  # (the kernels' array arguments)
        self._cast = ((), ())  # (the latest float arguments, and as cast: ``run``)
        self._weight_line = weight_line
        self.operands = self._kept = None
        # (a list may change its items: a selection made from one serves no later update)
        self._state = _UNKEPT if isinstance(state, list) else state
        operands = (weight, grad, *states)
        kept = (weight, *states)
        # (their checks stand: a dense array keeps the buffer it was made over for life)
        if all(a is None or a.stype == "default" for a in kept):
            if grad.stype == "default" and g.flags.c_contiguous:
                self.operands = operands
            elif lazy:
                self._kept = kept
        self.pos = _positions(lines, self.count)

    @property
    def reusable(self):
        """Whether this selection may serve later updates (``serves``)."""
        return self.operands is not None or self._kept is not None

    def _reselect(self, grad):
        """Select the rows of the row_sparse ``grad`` (the weight's shape and dtype, its
        storage checked here) over the dense weight and states this lazy selection holds."""
        g = view2d(np.ascontiguousarray(storage(grad, "grad", self._shape, self.dtype,
                                                written=False)))
        ids = grad.index_array
        if len(ids) == self.nrows:
            ids = None
        self.ids, self.count = ids, self.nrows if ids is None else len(ids)
        self.grad = g
        self._arrays = (self.weight, g, *self.states)
        self._weight_line = ids
        self.pos = _positions([ids, None, *[ids if given else None for given in self.given]],
                              self.count)

    def serves(self, weight, grad, state):
        """Whether this selection is the one an update of ``weight`` by ``grad`` with the
        optimizer state ``state`` (what ``Optimizer._check_states`` checked and padded into
        ``states`` when this selection was made: the ``state`` given then) would build: it
        was made from these very dense arrays and this very state object (a tuple or an
        array; a list never serves, its items may change), each of which still holds the
        buffer it validated and views (a dense nets array keeps its buffer for life). A lazy
        selection of a row_sparse gradient's rows serves ``weight`` and ``state`` when it
        was made from these very dense arrays and ``grad`` is row_sparse: it then selects
        ``grad``'s rows (checking ``grad``)."""
        if state is not self._state:
            return False
        if self.operands is not None:
            kept = self.operands
            return weight is kept[0] and grad is kept[1]
        if self._kept is None or weight is not self._kept[0] or grad.stype != "row_sparse":
            return False
        self._reselect(grad)
        return True

    def run(self, kernel, floats, *flags):
        """Run optimizer ``kernel`` (one of ``nets.kernels.optim``) over the selected rows,
        with ``floats`` (its float scalars, cast to the weight's dtype: each kernel compiles
        once per dtype) and ``flags``. Every optimizer kernel is called here. A selection
        serving several updates casts ``floats`` again only when they differ from the
        previous update's (a numpy scalar costs more to make than the kernel call).

        A lazy update waits on memory latency (scattered rows), so the cores share a large
        one, each keeping its own rows in flight; a dense pass (an empty ``pos``)
        streams memory at the bandwidth one core already gets: one call."""
        pos, count = self.pos, self.count
        cast = self._cast
        if cast[0] != floats:
            cast = self._cast = (floats, tuple(np.array(floats, self.dtype)))
        args = (*self._arrays, *cast[1], *flags)
        if not pos.size:
            kernel(pos, 0, count, *args)
            return
        parallel.parallel_for(lambda lo, hi: kernel(pos, lo, hi, *args), count,
                              work=count * self._cols)

    def _weight_positions(self):
        line = self._weight_line
        return np.arange(self.count, dtype=_INDEX) if line is None else line

    def scale_weight(self, factors):
        """Multiply the weight's ``k``-th selected row by ``factors[k]``."""
        self.weight[self._weight_positions()] *= factors.astype(self.dtype)[:, None]

    def decay_untouched(self, factor):
        """Multiply every stored weight row that is not selected by ``factor``."""
        rows = self._weight_positions()
        touched = self.weight[rows]
        self.weight *= self.dtype.type(factor)
        self.weight[rows] = touched


# ``pos`` of a selection of every row, row k of every storage (the kernels read no line)
_EVERY_ROW = np.empty((0, 0), _INDEX)


def _positions(lines, count):
    """``pos`` for the kernels: ``lines`` (per operand, its rows' positions, None for row k
    of update k) as one ``(operands, count)`` array, without the trailing None lines (the
    kernels read row k for an operand past the last line): ``_EVERY_ROW`` when every line
    is None, and a lazy update whose only line is the weight's passes that line itself."""
    n = len(lines)
    while n and lines[n - 1] is None:
        n -= 1
    if not n:
        return _EVERY_ROW
    if n == 1:
        return np.ascontiguousarray(lines[0], _INDEX).reshape(1, count)
    pos = np.empty((n, count), _INDEX)
    for k in range(n):
        line = lines[k]
        pos[k] = np.arange(count) if line is None else line
    return pos


def _selected(a, x, ids, nrows, fill):
    """Weight or state ``a``'s storage ``x`` as ``(rows, cols)`` and the positions there of
    the selected rows ``ids`` (every row when None); positions None: row k is row k. A
    row_sparse ``a`` first gains the selected rows it lacks (and ``fill``'s when it grows)."""
    if a.stype == "default":
        return view2d(x), ids
    wanted = np.arange(nrows, dtype=_INDEX) if ids is None else ids
    if a.insert_rows(wanted) and fill is not None:
        a.insert_rows(fill)
    line = ids if len(a.index_array) == nrows else np.searchsorted(a.index_array, wanted)
    return view2d(a.values), line  # (the storage after any insertion)


def _selected_grad(grad, g, lazy, nrows):
    """The gradient's storage ``g`` as ``(rows, cols)`` and the positions there of the
    selected rows. A canonical row_sparse gradient has sorted unique rows, so no row is
    updated twice and none needs coalescing."""
    g = view2d(np.ascontiguousarray(g))
    if grad.stype == "default" or lazy:  # (lazy: the k-th stored row is the k-th selected)
        return g, None
    stored = grad.index_array
    line = np.full(nrows, len(stored), dtype=_INDEX)  # absent rows: the appended zero row
    line[stored] = np.arange(len(stored))
    return np.concatenate([g, np.zeros((1, g.shape[1]), g.dtype)]), line


def view2d(a):
    """Numpy ``a`` as ``(rows, cols)``, sharing memory (0-d: one row)."""
    if a.ndim == 2:
        return a
    if a.ndim == 1:
        return a[:, None]
    return a.reshape(a.shape[0] if a.ndim else 1, math.prod(a.shape[1:]))


def storage(a, what, shape=None, dtype=None, written=True):
    """The numpy storage of ``a`` (a dense array's values, a row_sparse one's stored rows),
    checked: ``a`` is a dense or row_sparse nets array (of ``shape`` and ``dtype`` when
    given), and its storage is C-contiguous when it is ``written`` in place."""
    if not isinstance(a, NDArray):
        raise NetsError(f"{what} must be a nets array, got {type(a).__name__}")
    stype = a.stype
    if stype != "default" and stype != "row_sparse":
        raise StorageTypeError(f"{what} has stype {stype!r}; optimizers update dense and "
                               f"row_sparse arrays")
    x = a.values
    if shape is not None and a.shape != shape:
        raise ShapeError(f"{what} has shape {tuple(a.shape)}, the weight {tuple(shape)}")
    if dtype is not None and x.dtype != dtype:
        raise DTypeError(f"{what} has dtype {x.dtype}, the weight {dtype}")
    if written and not x.flags.c_contiguous:
        raise NetsError(f"the {what} must be C-contiguous to be updated in place")
    return x



# -- the operators ---------------------------------------------------------------------------

_STYPES = ("default", "row_sparse")

# The range of each attribute, as ``check_number`` bounds: (low, high, low_open, high_open).
# ``clip_gradient`` and ``clip_weights`` take any finite number (negative: no clipping) or
# None.
_RANGES = {"lr": (0, None, False, False), "wd": (0, None, False, False),
           "rescale_grad": (0, None, False, False), "momentum": (0, 1, False, True),
           "beta1": (0, 1, False, True), "beta2": (0, 1, False, True),
           "gamma1": (0, 1, False, True), "gamma2": (0, 1, False, True),
           "epsilon": (0, None, True, False), "lamda1": (0, None, False, False),
           "beta": (0, None, False, False), "wd_lh": (0, None, False, False),
           "clip_gradient": (None, None, False, False), "clip_weights": (None, None, False, False)}
_BOUNDS = ("low", "high", "low_open", "high_open")
_COMMON = {"wd": 0.0, "rescale_grad": 1.0, "clip_gradient": -1.0}


def _number(op, name, value, low=None, high=None, low_open=False, high_open=False):
    """``value`` as a float, checked by ``base.check_number`` (errors name ``op``)."""
    return float(check_number(f"{op}: {name}", value, low, high, low_open, high_open))


class UpdateOp(Op):
    """An update operator: ``Op`` inputs ``(weight, grad, *states)`` whose call updates the
    states in place, and the weight too when ``out`` is the weight (see the module doc).

    ``rule(rows, attrs)`` applies the optimizer's rule to a ``RowSelection`` with the
    checked attributes (``clip_gradient`` and ``clip_weights`` as the kernels take them:
    inf for none); ``slots``: how many states the rule's kernel takes (those the operator
    lacks are placeholders); ``lazy``: whether a row_sparse gradient updates only its rows
    (``"attr"``: as the ``lazy_update`` attribute says); ``row_states``: the states holding
    one value per weight row; ``ranges``: bounds replacing ``_RANGES``' for this operator.
    Every combination of dense and row_sparse inputs runs natively; through the op table
    (a graph's executor) the result is a new weight.
    """

    def __init__(self, name, states, attrs, rule, lazy, doc, slots=0, row_states=(),
                 ranges=None):
        super().__init__(name, ("weight", "grad") + tuple(states), attrs, doc=doc,
                         entrywise=False)
        self.states, self.rule, self.lazy = tuple(states), rule, lazy
        self.slots = max(slots, len(states))
        self.row_flags = tuple(s in row_states for s in self.states)
        self.ranges = {k: _RANGES[k] for k in attrs if k in _RANGES}
        self.ranges.update(ranges or {})
        for stypes in itertools.product(_STYPES, repeat=len(self.inputs)):
            self.impl(*stypes)(self._fresh)
        self.infer(lambda weight, *others, **attrs: weight if weight in _STYPES else "default")
        self.shape(self._shapes)
        self.dtype(lambda dtypes, attrs: dtypes[0])
        if states:
            self.aux(lambda attrs: len(self.states))  # MXNet's mutated inputs

    def _shapes(self, shapes, attrs):
        flags = (False, False) + self.row_flags
        full = next((tuple(s) for s, f in zip(shapes, flags) if s is not None and not f), None)
        if full is None:
            return shapes, [None]
        out = []
        for name, s, flag in zip(self.inputs, shapes, flags):
            want = (full[:1], full[:1] + (1,)) if flag else (full,)
            if s is None:
                s = want[-1]
            elif tuple(s) not in want:
                raise ShapeError(f"{self.name}: {name} has shape {tuple(s)}, expected "
                                 f"{' or '.join(map(str, want))} for the weight's {full}")
            out.append(tuple(s))
        return out, [full]

    def checked(self, attrs):
        """``attrs`` checked, numbers as floats, the clipping bounds as the kernels take them."""
        out = dict(attrs)
        for name, bounds in self.ranges.items():
            value = attrs[name]
            if name in ("clip_gradient", "clip_weights"):
                value = -1.0 if value is None else _number(self.name, name, value)
                out[name] = np.inf if value < 0 else value
            else:
                out[name] = _number(self.name, name, value, **dict(zip(_BOUNDS, bounds)))
        if "lazy_update" in attrs:
            flag = attrs["lazy_update"]
            if not isinstance(flag, (bool, np.bool_)) and flag not in (0, 1):
                raise NetsError(f"{self.name}: lazy_update={flag!r}: must be True or False")
            out["lazy_update"] = bool(flag)
        return out

    def update(self, inputs, attrs):
        """Update ``inputs`` (weight, gradient, states) in place with the complete
        attributes ``attrs``."""
        for name, x in zip(self.inputs, inputs):
            if not isinstance(x, NDArray):
                raise NetsError(f"{self.name}: {name} must be a nets array, got "
                                f"{type(x).__name__}")
            if x.stype not in _STYPES:
                raise StorageTypeError(f"{self.name}: {name} has stype {x.stype!r}; update "
                                       f"operators take dense and row_sparse arrays")
        weight, grad = inputs[0], inputs[1]
        if weight.dtype not in FLOAT_DTYPES:
            raise DTypeError(f"{self.name}: weight has dtype {weight.dtype}; update operators "
                             f"take float32 and float64 arrays")
        attrs = self.checked(attrs)
        lazy = attrs["lazy_update"] if self.lazy == "attr" else self.lazy
        pad = self.slots - len(self.states)
        try:
            rows = RowSelection(weight, grad, tuple(inputs[2:]) + (None,) * pad, lazy,
                                self.row_flags, self.states + ("",) * pad)
        except NetsError as e:
            raise type(e)(f"{self.name}: {e}") from None
        self.rule(rows, attrs)
        if storage_verbose():
            log_storage(self.name, tuple(x.stype for x in inputs), (weight.stype,))

    def _fresh(self, *inputs, **attrs):
        """The implementation the op table holds: the update of a copy of the weight."""
        weight = inputs[0].copy()
        self.update((weight,) + inputs[1:], attrs)
        return weight

    def __call__(self, *args, out=None, **kwargs):
        named = list(zip(self.inputs, args)) + [(k, kwargs[k]) for k in self.inputs
                                                 if k in kwargs]
        for name, x in named:  # (a numpy input would be converted: its update lost)
            if not isinstance(x, NDArray):
                raise NetsError(f"{self.name}: {name} must be a nets array, got "
                                f"{type(x).__name__}")
        inputs, attrs = self._bind(args, kwargs)
        weight = inputs[0]
        if out is None:
            return self._fresh(*inputs, **attrs)
        if out is not weight:
            raise NetsError(f"{self.name}: out must be the weight (the update is in place), "
                            f"got another array")
        self.update(inputs, attrs)
        return out


def _doc(text, states=""):
    """An update operator's docstring: ``text`` and the arguments every one takes."""
    return text + f"""
Inputs: ``weight``, ``grad``{states}; attributes ``lr`` (required, ``>= 0``), ``wd``
(``>= 0``), ``rescale_grad`` (``>= 0``) and ``clip_gradient`` (a negative value or None:
no clipping) unless said otherwise. The states are updated in place; so is the weight
with ``out=weight``, else the updated weight is a new array. See ``nets.ops.update``.
"""


sgd_update = UpdateOp(
    "sgd_update", (), {"lr": REQUIRED, **_COMMON, "lazy_update": True},
    lambda rows, a: sgd_rows(rows, a["lr"], a["wd"], 0.0, a["rescale_grad"],
                             a["clip_gradient"]),
    "attr", _doc("""\
SGD (MXNet's ``sgd_update``)::

    weight -= lr * (clip(rescale_grad * grad, clip_gradient) + wd * weight)

With a row_sparse ``grad`` and ``lazy_update`` only its rows are updated.
"""), slots=1)

sgd_mom_update = UpdateOp(
    "sgd_mom_update", ("mom",),
    {"lr": REQUIRED, "momentum": 0.0, **_COMMON, "lazy_update": True},
    lambda rows, a: sgd_rows(rows, a["lr"], a["wd"], a["momentum"], a["rescale_grad"],
                             a["clip_gradient"]),
    "attr", _doc("""\
SGD with momentum (MXNet's ``sgd_mom_update``), ``momentum`` in ``[0, 1)``::

    mom = momentum * mom - lr * (clip(rescale_grad * grad, clip_gradient) + wd * weight)
    weight += mom

With a row_sparse ``grad`` and ``lazy_update`` only its rows of ``weight`` and ``mom`` are
updated.
""", ", ``mom``"))

adam_update = UpdateOp(
    "adam_update", ("mean", "var"),
    {"lr": REQUIRED, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, **_COMMON,
     "lazy_update": True},
    lambda rows, a: adam_rows(rows, a["lr"], a["beta1"], a["beta2"], a["epsilon"], a["wd"],
                              a["rescale_grad"], a["clip_gradient"]),
    "attr", _doc("""\
Adam (MXNet's ``adam_update``; the bias correction is the caller's, folded into ``lr`` as
``nets.optim.Adam`` does), ``beta1`` and ``beta2`` in ``[0, 1)``, ``epsilon > 0``::

    x = clip(rescale_grad * grad + wd * weight, clip_gradient)
    mean = beta1 * mean + (1 - beta1) * x
    var = beta2 * var + (1 - beta2) * x**2
    weight -= lr * mean / (sqrt(var) + epsilon)

With a row_sparse ``grad`` and ``lazy_update`` only its rows of ``weight``, ``mean`` and
``var`` are updated.
""", ", ``mean``, ``var``"))

adagrad_update = UpdateOp(
    "adagrad_update", ("history",), {"lr": REQUIRED, "epsilon": 1e-7, **_COMMON},
    lambda rows, a: adagrad_rows(rows, a["lr"], a["wd"], a["epsilon"], a["rescale_grad"],
                                 a["clip_gradient"]),
    True, _doc("""\
AdaGrad (MXNet's ``nd.sparse.adagrad_update``, internally ``_sparse_adagrad_update``),
``epsilon > 0``::

    x = clip(rescale_grad * grad, clip_gradient)
    history += x**2
    weight -= lr * (x / sqrt(history + epsilon) + wd * weight)

A row_sparse ``grad`` updates only its rows of ``weight`` and ``history``; a dense one
every row (MXNet took row_sparse gradients and ``wd = 0`` only).
""", ", ``history``"))

ftrl_update = UpdateOp(
    "ftrl_update", ("z", "n"),
    {"lr": REQUIRED, "lamda1": 0.01, "beta": 1.0, **_COMMON},
    lambda rows, a: ftrl_rows(rows, a["lr"], a["lamda1"], a["beta"], a["wd"],
                              a["rescale_grad"], a["clip_gradient"]),
    True, _doc("""\
FTRL-proximal (MXNet's ``ftrl_update``), ``lr > 0``, ``lamda1`` and ``beta`` ``>= 0``::

    x = clip(rescale_grad * grad, clip_gradient)
    z += x - (sqrt(n + x**2) - sqrt(n)) * weight / lr
    n += x**2
    weight = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd)  if |z| > lamda1, else 0

A row_sparse ``grad`` updates only its rows of ``weight``, ``z`` and ``n``.
""", ", ``z``, ``n``"), ranges={"lr": (0, None, True, False)})

signsgd_update = UpdateOp(
    "signsgd_update", (), {"lr": REQUIRED, **_COMMON},
    lambda rows, a: signum_rows(rows, a["lr"], 0.0, 0.0, a["wd"], a["rescale_grad"],
                                a["clip_gradient"]),
    False, _doc("""\
signSGD (MXNet's ``signsgd_update``), with decoupled weight decay::

    weight = (1 - lr * wd) * weight - lr * sign(clip(rescale_grad * grad, clip_gradient))

(``sign`` is 0 at 0: with ``rescale_grad > 0`` and no clipping to 0 this is MXNet's
``sign(grad)``.) Every row is updated, a row_sparse ``grad`` lacking a row giving it 0.
"""), slots=1)

signum_update = UpdateOp(
    "signum_update", ("mom",),
    {"lr": REQUIRED, "momentum": 0.0, **_COMMON, "wd_lh": 0.0},
    lambda rows, a: signum_rows(rows, a["lr"], a["momentum"], a["wd"], a["wd_lh"],
                                a["rescale_grad"], a["clip_gradient"]),
    False, _doc("""\
Signum (MXNet's ``signum_update``), ``momentum`` in ``[0, 1)``, ``wd_lh >= 0`` a decoupled
weight decay (Loshchilov & Hutter)::

    mom = momentum * mom - (1 - momentum) * (wd * weight + clip(rescale_grad * grad, clip_gradient))
    weight = (1 - lr * wd_lh) * weight + lr * sign(mom)

Every row is updated, a row_sparse ``grad`` lacking a row giving it 0.
""", ", ``mom``"))

rmsprop_update = UpdateOp(
    "rmsprop_update", ("n",),
    {"lr": REQUIRED, "gamma1": 0.95, "epsilon": 1e-8, **_COMMON, "clip_weights": -1.0},
    lambda rows, a: rmsprop_rows(rows, a["lr"], a["gamma1"], 0.0, a["epsilon"], a["wd"],
                                 a["rescale_grad"], a["clip_gradient"], a["clip_weights"],
                                 False),
    False, _doc("""\
RMSProp (MXNet's ``rmsprop_update``, Tieleman & Hinton), ``gamma1`` in ``[0, 1)``,
``epsilon > 0``, ``clip_weights`` (negative or None: none) clipping the result::

    x = clip(rescale_grad * grad + wd * weight, clip_gradient)
    n = (1 - gamma1) * x**2 + gamma1 * n
    weight = clip(weight - lr * x / sqrt(n + epsilon), clip_weights)

Every row is updated, a row_sparse ``grad`` lacking a row giving it 0.
""", ", ``n``"), slots=3)

rmspropalex_update = UpdateOp(
    "rmspropalex_update", ("n", "g", "delta"),
    {"lr": REQUIRED, "gamma1": 0.95, "gamma2": 0.9, "epsilon": 1e-8, **_COMMON,
     "clip_weights": -1.0},
    lambda rows, a: rmsprop_rows(rows, a["lr"], a["gamma1"], a["gamma2"], a["epsilon"],
                                 a["wd"], a["rescale_grad"], a["clip_gradient"],
                                 a["clip_weights"], True),
    False, _doc("""\
Centered RMSProp (MXNet's ``rmspropalex_update``, Graves 2013), ``gamma1`` and ``gamma2``
in ``[0, 1)``, ``epsilon > 0``::

    x = clip(rescale_grad * grad + wd * weight, clip_gradient)
    n = (1 - gamma1) * x**2 + gamma1 * n
    g = (1 - gamma1) * x + gamma1 * g
    delta = gamma2 * delta - lr * x / sqrt(n - g**2 + epsilon)
    weight = clip(weight + delta, clip_weights)

Every row is updated, a row_sparse ``grad`` lacking a row giving it 0.
""", ", ``n``, ``g``, ``delta``"))

group_adagrad_update = UpdateOp(
    "_contrib_group_adagrad_update", ("history",),
    {"lr": REQUIRED, "rescale_grad": 1.0, "clip_gradient": -1.0, "epsilon": 1e-5},
    lambda rows, a: rowwise_adagrad_rows(rows, a["lr"], 0.0, a["epsilon"], a["rescale_grad"],
                                         a["clip_gradient"], True),
    True, """\
Group AdaGrad (MXNet's ``nd.contrib.group_adagrad_update``, the operator
``_contrib_group_adagrad_update``): one accumulator per weight row, ``history`` of shape
``(rows, 1)`` (or ``(rows,)``), ``epsilon > 0``::

    x = clip(rescale_grad * grad, clip_gradient)
    history[row] += mean(x[row]**2)
    weight[row] -= lr * x[row] / sqrt(history[row] + epsilon)

Inputs: ``weight``, ``grad``, ``history``; attributes ``lr`` (required, ``>= 0``),
``rescale_grad`` (``>= 0``), ``clip_gradient`` (negative or None: no clipping),
``epsilon``; no weight decay. A row_sparse ``grad`` updates only its rows. ``history`` is
updated in place; so is the weight with ``out=weight``, else the updated weight is a new
array.
""", row_states=("history",))
