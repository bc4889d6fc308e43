"""``NDArray``: a dense n-d array holding one numpy array.

``NDArray`` is also the base class of the sparse arrays (as in MXNet), so the
common interface — shape/dtype/stype, conversion, copying, assignment — lives here
once. The arrays import nothing above ``nets.base``: the methods that compute through
operators (Python arithmetic and comparisons, ``T``, ``tostype``, ``reshape`` and the
fluent methods such as ``x.sum()``) are installed onto ``NDArray`` by ``nets.ops`` when
it is imported (``nets.ops.methods``).
"""
import math

import numpy as np

from ..base import (INDEX_DTYPE, RECORDER, Context, DTypeError, NetsError, ShapeError,
                    SparseFormatError, as_dtype, check_dtype, cpu, current_context,
                    normalize_shape)
from . import aligned

_CPU = cpu()

# Writes through nets to any array: ``WRITES[0]`` counts them all, so "no array was
# written since" is one comparison of this count, and an array's ``last_write`` (the count
# its latest write made) tells whether it was written since a given count (autograd's
# check before running a vjp).
WRITES = [0]


class NDArray:
    """A dense array on a device (only the CPU today).

    Create with ``nets.nd.array``/``zeros``/...; ``asnumpy()`` returns a copy.
    Basic indexing returns views that share memory, as numpy (and MXNet) do.
    """

    stype = "default"
    __array_priority__ = 1000.0  # numpy defers `ndarray op NDArray` to our reflected ops
    # Autograd state; class-level defaults, set per array only when it joins a graph (an
    # array is created for every op result, so its constructor stays minimal). The methods
    # using it (attach_grad, grad, backward) are installed by nets.autograd.
    _grad_slot = None  # a leaf's GradSlot (nets.autograd.slot)
    _node = None  # the autograd node that produced this array, if recorded
    # Version counter: ``[n, w]``, shared by an array and the views ``detach()`` and
    # ``x[key]`` make of it, bumped by every write through ``x[key] = v`` (and so by
    # in-place arithmetic, ``copyto`` and ``out=``): ``n`` writes, the latest of which
    # made ``WRITES[0]`` ``w``. Autograd refuses to differentiate through a node's array
    # written after the node was recorded. None until the array is first viewed or
    # written (version 0).
    _versions = None

    def __init__(self, data, ctx=None):
        if not isinstance(data, np.ndarray):
            raise TypeError(f"NDArray wraps a numpy.ndarray, got {type(data).__name__}; "
                            f"use nets.nd.array(...) to convert")
        self._np = data
        self._ctx = _CPU if ctx is None else ctx

    def _init_meta(self, ctx):
        self._ctx = _CPU if ctx is None else ctx

    # -- attributes ------------------------------------------------------
    @property
    def shape(self):
        return self._np.shape

    @property
    def dtype(self):
        return self._np.dtype

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def context(self):
        return self._ctx

    ctx = context

    @property
    def nbytes(self):
        """Bytes held by this array's buffers."""
        return self._np.nbytes

    # -- the buffers, for operators and kernels --------------------------------
    @property
    def values(self):
        """The numpy array holding the values: the array's own buffer, not a copy (a
        sparse array's stored values, the buffer behind its ``data``). A dense array holds
        the same buffer for its whole life (a sparse array's is replaced when it is
        written).

        For operators and kernels (nets' own and custom ones), which read it and build
        their results from it; it is writable, since no value can make a kernel misbehave,
        but a write through it is not counted in ``version``, so autograd cannot see it:
        write an array with ``x[key] = value`` or an operator's ``out=``. ``asnumpy()``
        gives a copy to keep."""
        return self._np

    # -- conversion --------------------------------------------------------
    def asnumpy(self):
        """A numpy copy of the values (densifies a sparse array)."""
        return np.array(self._np, copy=True)

    def __array__(self, dtype=None, copy=None):
        out = self._np if dtype is None else self._np.astype(dtype, copy=False)
        return out.copy() if copy and out is self._np else out

    def asscalar(self):
        """The single value of a size-1 array as a Python scalar."""
        if self.size != 1:
            raise ShapeError(f"asscalar() needs an array of size 1, got shape {self.shape}")
        return self.asnumpy().reshape(-1)[0].item()

    def item(self):
        """Same as ``asscalar``."""
        return self.asscalar()

    def astype(self, dtype, copy=True):
        """Values cast to ``dtype``; with ``copy=False`` returns self when it already matches."""
        dtype = as_dtype(dtype)
        if not copy and dtype == self.dtype:
            return self
        return self._with_dtype(dtype)

    def _with_dtype(self, dtype):
        return NDArray(self._np.astype(dtype), self._ctx)

    def copy(self):
        """A deep copy with the same storage type."""
        return self._with_dtype(self.dtype)

    def copyto(self, other):
        """Copy into ``other`` (an array of the same shape, whose storage type and dtype are
        kept) or onto a ``Context`` (returns the new array)."""
        if isinstance(other, NDArray):
            other._check_same_shape(self, "copyto source")
            other[:] = self
            return other
        out = self.copy()
        out._ctx = current_context(other)
        return out

    def as_in_context(self, context):
        """This array on ``context`` (self when already there)."""
        context = current_context(context)
        if context == self._ctx:
            return self
        out = self.copy()
        out._ctx = context
        return out

    def wait_to_read(self):
        """No-op: nets computes synchronously."""

    @property
    def version(self):
        """How many times this array's memory was written through nets since it was
        created (counting writes through its views)."""
        v = self._versions
        return 0 if v is None else v[0]

    @property
    def last_write(self):
        """The count of writes to all arrays (``WRITES[0]``) that the latest write to this
        array's memory through nets made (0 when never written): autograd compares it with
        the count when an operator was recorded."""
        v = self._versions
        return 0 if v is None else v[1]

    def _bump_version(self):
        WRITES[0] += 1
        v = self._versions
        if v is None:
            self._versions = [1, WRITES[0]]
        else:
            v[0] += 1
            v[1] = WRITES[0]

    def _view(self, data):
        """A new array over ``data``, a view of this array's memory, sharing its version."""
        out = NDArray(data, self._ctx)
        v = self._versions
        if v is None:
            v = self._versions = [0, 0]
        out._versions = v
        return out

    def detach(self):
        """This array's values, cut from the autograd graph (shares memory and version)."""
        return self._view(self._np)

    # -- assignment ----------------------------------------------------------
    def _check_writable_in_record(self):
        """MXNet's rule: recorded nodes keep views of their inputs and outputs, so writing
        into an array of the graph (a leaf or a recorded result) would corrupt gradients."""
        if self._grad_slot is not None or self._node is not None:
            raise NetsError("in-place write to an array that is part of the autograd graph "
                            "inside autograd.record() would corrupt its gradients; compute a "
                            "new array instead (e.g. y = y + x)")

    def __setitem__(self, key, value):
        if RECORDER.get() is not None:
            self._check_writable_in_record()
        self._bump_version()
        if isinstance(value, NDArray):
            if value.stype != "default":
                if not (isinstance(key, slice) and key == slice(None)):
                    value = value.asnumpy()  # partial assignment needs the dense rows
                else:
                    self._check_same_shape(value, "value")
                    self._np[...] = 0
                    value._scatter_into(self._np)
                    return
            else:
                value = value._np
        if self._np.ndim == 0 and isinstance(key, slice) and key == slice(None):
            key = ...  # numpy cannot slice a 0-d array; x[:] = v means "all of x"
        self._np[key] = value

    def _check_same_shape(self, value, name):
        if tuple(value.shape) != tuple(self.shape):
            raise ShapeError(f"{name} has shape {tuple(value.shape)}, expected {self.shape}")

    def assign_result(self, result):
        """Make self hold the values of ``result``, an array nothing else holds (an
        operator's fresh result), keeping self's storage type and dtype: what in-place
        arithmetic and an operator's ``out=`` do. A sparse array of ``result``'s storage
        type takes ``result``'s buffers instead of copying them, so ``result`` must not be
        used after; a dense one copies (its views share its memory), as ``x[:] = result``."""
        self[:] = result

    def __getitem__(self, key):
        if isinstance(key, NDArray):
            key = key._np
        elif isinstance(key, tuple):
            key = tuple(k._np if isinstance(k, NDArray) else k for k in key)
        out = self._np[key]
        if not isinstance(out, np.ndarray):
            return NDArray(np.asarray(out), self._ctx)  # a scalar: a copy
        return self._view(out) if out.base is not None and np.may_share_memory(
            out, self._np) else NDArray(out, self._ctx)  # advanced indexing copies

    # -- Python protocol -------------------------------------------------------
    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __bool__(self):
        if self.size != 1:
            raise ValueError(f"the truth value of an array with shape {self.shape} is ambiguous")
        return bool(self.asscalar())

    def __float__(self):
        return float(self.asscalar())

    def __int__(self):
        return int(self.asscalar())

    def __index__(self):
        if not np.issubdtype(self.dtype, np.integer):
            raise TypeError("only integer arrays can be used as an index")
        return int(self.asscalar())

    __hash__ = object.__hash__  # nets.ops installs __eq__; arrays hash by identity

    def __repr__(self):
        body = np.array2string(self._np, threshold=200, edgeitems=3, separator=" ")
        shape = "x".join(str(d) for d in self.shape) or "scalar"
        return f"\n{body}\n<{type(self).__name__} {shape} @{self._ctx}>"

    def _scatter_into(self, dense):
        """Write own values into the numpy array ``dense`` (sparse classes override)."""
        dense[...] = self._np

    # -- pickling (in memory, e.g. for multiprocessing; nets' files never use pickle) ------
    def _buffers(self):
        return [self._np]

    def __getstate__(self):
        """The values, shape and context: a pickled array leaves its autograd graph and
        gradient behind (as MXNet's does); views are pickled as their own values."""
        return {"buffers": self._buffers(), "shape": tuple(self.shape), "ctx": self._ctx}

    def __setstate__(self, state):
        """Install a pickled state after the checks every constructor makes (a pickle may
        come from another process or a damaged payload): ``SparseFormatError`` names what
        is wrong, and nothing of the state is kept."""
        buffers, shape, ctx = unpickled_state(state, 1, type(self).__name__)
        values = buffers[0]
        if values.shape != shape:
            raise SparseFormatError(f"unpickling an NDArray: its values have shape "
                                    f"{values.shape}, its state says {shape}")
        self._np = aligned.copy(values)
        self._ctx = ctx


def unpickled_state(state, count, what):
    """``(buffers, shape, ctx)`` of a pickled array state ``{"buffers": [count numpy arrays
    of a supported dtype], "shape": non-negative ints, "ctx": Context}``, or
    ``SparseFormatError`` naming the class and the first bad part."""
    where = f"unpickling a {what}"
    if not isinstance(state, dict) or set(state) != {"buffers", "shape", "ctx"}:
        raise SparseFormatError(f"{where}: the state is not a dict with keys 'buffers', "
                                f"'shape', 'ctx' (got {type(state).__name__})")
    buffers = state["buffers"]
    if not isinstance(buffers, (list, tuple)) or len(buffers) != count or not all(
            type(b) is np.ndarray for b in buffers):
        raise SparseFormatError(f"{where}: 'buffers' must be {count} numpy arrays")
    try:
        check_dtype(buffers[0].dtype, f"{where}: its values")
    except DTypeError as e:
        raise SparseFormatError(str(e)) from None
    if any(b.dtype != INDEX_DTYPE for b in buffers[1:]):
        raise SparseFormatError(f"{where}: index buffers must be {INDEX_DTYPE}, got "
                                f"{[str(b.dtype) for b in buffers[1:]]}")
    try:
        shape = normalize_shape(state["shape"])
    except NetsError as e:
        raise SparseFormatError(f"{where}: {e}") from None
    if not isinstance(state["ctx"], Context):
        raise SparseFormatError(f"{where}: 'ctx' is a {type(state['ctx']).__name__}, not a "
                                f"Context")
    return list(buffers), shape, state["ctx"]


__all__ = ["NDArray"]
