"""Errors, warnings, dtype/stype constants, the device ``Context`` and the reading of
nets' numeric environment variables.

This module is the bottom of the dependency graph: everything in nets may
import it and it imports nothing from nets.
"""
import contextvars
import math
import numbers
import os
import threading

import numpy as np

__all__ = [
    "NetsError", "ShapeError", "StorageTypeError", "SparseFormatError", "DTypeError",
    "ContextError", "OperatorArgumentError", "StorageFallbackWarning", "DenseResultWarning",
    "STYPES", "DEFAULT_DTYPE",
    "INDEX_DTYPE", "FLOAT_DTYPES", "SUPPORTED_DTYPES",
    "Context", "cpu", "gpu", "num_gpus", "current_context", "as_dtype", "check_dtype",
    "check_number",
    "check_stype", "normalize_shape", "env_number", "MXNetError", "mx_real_t", "py_str",
]

# Autograd state lives here, at the bottom of the graph, so arrays and operators can read it
# without importing nets.autograd (which sets it): RECORDER holds the tape's recording
# callable inside autograd.record(), TRAINING the train/predict flag (Dropout).
RECORDER = contextvars.ContextVar("nets_recorder", default=None)
TRAINING = contextvars.ContextVar("nets_training", default=False)

DEFAULT_DTYPE = np.dtype(np.float32)
INDEX_DTYPE = np.dtype(np.int64)  # every sparse index array is int64: one kernel specialisation
FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))  # what float kernels are written for
# Every dtype a nets array may hold (native byte order). float16 is stored as such and
# computed in float32 (``nets.ops.registry``: numba has no float16 arithmetic). Object,
# string, datetime, complex, void and extended-precision dtypes are refused where they
# enter (``as_dtype``, ``check_dtype``): the kernels are not written for them.
SUPPORTED_DTYPES = tuple(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float16, np.float32, np.float64))
_SUPPORTED_NAMES = ", ".join(d.name for d in SUPPORTED_DTYPES)
STYPES = ("default", "csr", "row_sparse")


class NetsError(Exception):
    """Base class of every error nets raises on purpose."""


MXNetError = NetsError  # MXNet's name, so ``except mx.base.MXNetError`` ports by renaming
mx_real_t = np.float32  # MXNet's default real type


def py_str(x):
    """``x`` as a Python str (bytes decoded as UTF-8), as MXNet's ``base.py_str``."""
    return x.decode("utf-8") if isinstance(x, bytes) else str(x)


class ShapeError(NetsError, ValueError):
    """A shape, length or ndim does not fit."""


class StorageTypeError(NetsError, ValueError):
    """An unknown storage type, or one an operation does not accept."""


class SparseFormatError(NetsError, ValueError):
    """Sparse indices or indptr that break the format (range, order, duplicates)."""


class DTypeError(NetsError, TypeError):
    """A dtype that cannot be used where it was given."""


class OperatorArgumentError(NetsError, TypeError):
    """An operator called with an argument it does not take, or without one it needs (the
    message names the operator and the argument). A ``TypeError``, as for any Python
    function, and a ``NetsError`` (MXNet's ``MXNetError``, which MXNet raises there)."""


class ContextError(NetsError):
    """A device that nets cannot run on."""


class StorageFallbackWarning(UserWarning):
    """An operator densified sparse inputs because it has no sparse implementation."""


class DenseResultWarning(UserWarning):
    """An operator gave a dense result the size of a sparse input, larger than any of its
    dense inputs (``csr + 1``, ``exp(csr)``, ``broadcast_add(csr, row)``): the values are
    not zero where the input stores none, so no sparse result can hold them."""


def as_dtype(dtype, default=DEFAULT_DTYPE, name="dtype"):
    """Normalise ``dtype`` (None, str, numpy dtype or type) to one of ``SUPPORTED_DTYPES``.

    A byte order other than the machine's is normalised to it (values are converted when
    stored); a dtype nets does not support raises ``DTypeError`` naming the argument
    ``name``, the dtype and the supported ones.
    """
    if dtype is None:
        return np.dtype(default)
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise DTypeError(f"{name}={dtype!r} is not a numpy dtype") from e
    if not dt.isnative:
        dt = dt.newbyteorder("=")
    if dt not in SUPPORTED_DTYPES:
        raise DTypeError(f"{name}={dtype!r}: dtype {dt} is not supported; nets arrays hold "
                         f"{_SUPPORTED_NAMES}")
    return dt


def check_dtype(dtype, what, converted=False):
    """Return ``dtype`` (a numpy dtype, e.g. of a source array) in native byte order if nets
    supports it, else raise ``DTypeError`` saying that ``what`` has it, and what is
    supported. With ``converted`` (the values are converted to a supported dtype by numpy)
    only dtypes whose values are not real numbers are refused: complex (a cast would drop
    the imaginary parts), datetime, timedelta and void."""
    dt = dtype if dtype.isnative else dtype.newbyteorder("=")
    if dt.kind in "cMmV" if converted else dt not in SUPPORTED_DTYPES:
        raise DTypeError(f"{what} has dtype {dtype}, which nets does not support; nets arrays "
                         f"hold {_SUPPORTED_NAMES} (convert it first, e.g. with .astype)")
    return dt


def check_stype(stype, name="stype"):
    """Return ``stype`` if it is one of ``STYPES``, else raise ``StorageTypeError``."""
    if stype not in STYPES:
        raise StorageTypeError(f"{name}={stype!r} is not a storage type; expected one of {STYPES}")
    return stype


def normalize_shape(shape, name="shape"):
    """Return ``shape`` as a tuple of non-negative ints (an int means a 1-D shape)."""
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        out = tuple(int(d) for d in shape)
        ok = not isinstance(shape, str) and all(0 <= d == s for d, s in zip(out, shape))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ShapeError(f"{name}={shape!r} is not a shape (a tuple of non-negative integers)")
    return out


class Context:
    """A device: ``Context('cpu', 0)``. Usable as ``with ctx:`` to set the default.

    Only the CPU runs today; ``gpu()`` contexts can be created and compared, but
    placing an array on one raises ``ContextError``.
    """

    _local = threading.local()

    def __init__(self, device_type="cpu", device_id=0):
        if isinstance(device_type, Context):
            device_type, device_id = device_type.device_type, device_type.device_id
        if device_type not in ("cpu", "gpu", "cpu_pinned"):
            raise ContextError(f"device_type={device_type!r}: expected 'cpu' or 'gpu'")
        self.device_type = device_type
        self.device_id = int(device_id)

    def __eq__(self, other):
        return (isinstance(other, Context) and self.device_type == other.device_type
                and self.device_id == other.device_id)

    def __hash__(self):
        return hash((self.device_type, self.device_id))

    def __repr__(self):
        return f"{self.device_type}({self.device_id})"

    def __enter__(self):
        stack = Context._stack()
        stack.append(self)
        return self

    def __exit__(self, *exc):
        Context._stack().pop()

    @staticmethod
    def _stack():
        if not hasattr(Context._local, "stack"):
            Context._local.stack = []
        return Context._local.stack

    def check(self):
        """Return self if arrays can live here, else raise ``ContextError``."""
        if self.device_type == "gpu":
            raise ContextError(f"{self!r}: nets has no GPU backend yet; use nets.cpu()")
        return self


Context.default_ctx = Context("cpu", 0)  # MXNet's class attribute: the default context


def cpu(device_id=0):
    """The CPU context."""
    return Context("cpu", device_id)


def gpu(device_id=0):
    """A GPU context (nets has no GPU backend: arrays cannot be placed on it)."""
    return Context("gpu", device_id)


def num_gpus():
    """Number of GPUs nets can use (always 0: no GPU backend)."""
    return 0


def current_context(ctx=None):
    """``ctx`` checked, or the innermost ``with Context`` block's, or ``cpu()``."""
    if ctx is None:
        stack = Context._stack()
        ctx = stack[-1] if stack else cpu()
    elif not isinstance(ctx, Context):
        raise ContextError(f"ctx={ctx!r} is not a nets.Context")
    return ctx.check()


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
    a finite number >= 0"``. The one check of hyper-parameters: the optimizers' and the
    update operators' arguments."""
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


def env_number(name, kind=int, environ=None):
    """The positive number (``kind``: ``int`` or ``float``) in the environment variable
    ``name`` (of ``environ``, default ``os.environ``), or None when it is unset or blank;
    any other text raises ``NetsError`` naming the variable and its value."""
    text = (os.environ if environ is None else environ).get(name, "").strip()
    if not text:
        return None
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or not value > 0:
        rule = "an integer >= 1" if kind is int else "a number > 0"
        raise NetsError(f"{name}={text!r}: expected {rule}")
    return value


def lazy_attributes(package, names, exported):
    """PEP 562 ``(__getattr__, __dir__)`` for the package named ``package``: attribute
    ``name`` of ``names`` is imported on first use, then kept in the package. ``names`` maps
    each name to ``(module, attribute)``: the submodule ``package.module`` itself when
    ``attribute`` is None, else that attribute of it. ``exported``: the package's
    ``__all__``, which ``dir()`` lists with what is already loaded."""
    import importlib
    import sys

    def __getattr__(name):
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = names[name]
        value = importlib.import_module(f"{package}.{module}")
        if attribute is not None:
            value = getattr(value, attribute)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(exported))

    return __getattr__, __dir__
