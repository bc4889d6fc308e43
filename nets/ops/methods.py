"""NDArray's Python operators and fluent methods, installed by the operator layer.

The array classes (``nets.arrays``) import nothing above them, so the methods that
compute through operators are defined here and set onto ``NDArray`` by ``install``,
which ``nets.ops`` calls once at import (the arrow points from ops down to arrays, as
Chainer's ``install_variable_arithmetics`` does). The sparse classes inherit them.

``FLUENT_METHODS`` names the operators that are also methods (``x.sum(axis=1)`` is
``nd.sum(x, axis=1)``); ``nets.sym`` gives ``Symbol`` the same list.
"""
import numbers

from ..base import check_stype
from ..arrays.dense import NDArray
from ..arrays.row_sparse import RowSparseNDArray

__all__ = ["FLUENT_METHODS", "install"]

FLUENT_METHODS = (
    "transpose", "flatten", "expand_dims", "broadcast_to", "slice", "slice_axis", "take",
    "split", "one_hot", "sum", "mean", "max", "min", "norm", "argmax", "abs", "sign", "sqrt",
    "square", "exp", "log", "log1p", "expm1", "relu", "sigmoid", "tanh", "softsign", "clip",
    "round", "floor", "ceil", "softmax", "log_softmax", "zeros_like", "ones_like", "sort",
    "argsort", "topk", "broadcast_like", "rint", "fix", "trunc", "sin", "cos", "tan",
    "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh", "degrees",
    "radians", "log10", "log2", "rsqrt", "cbrt", "rcbrt", "reciprocal", "gamma", "gammaln",
)

# Python operator -> operator name; the reflected form (``2 - x``) swaps the operands.
# The broadcasting operators accept a scalar on either side.
_BINARY = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide",
           "pow": "power", "mod": "modulo"}
_COMPARISON = {"eq": "equal", "ne": "not_equal", "gt": "greater", "ge": "greater_equal",
               "lt": "lesser", "le": "lesser_equal"}
_INPLACE = ("add", "sub", "mul", "truediv", "mod")


def _binary(fn, dunder):
    def method(self, other):
        return fn(self, other)
    method.__name__ = dunder
    return method


def _reflected(fn, dunder):
    def method(self, other):
        return fn(other, self)
    method.__name__ = dunder
    return method


def _inplace(fn, dunder):
    def method(self, other):
        self.assign_result(fn(self, other))  # keeps self's storage type; guards autograd graphs
        return self
    method.__name__ = dunder
    return method


def _fluent(fn, name):
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"Fluent form of ``nets.nd.{name}(self, ...)``."
    return method


def install(ops):
    """Set NDArray's operator methods from the namespace ``ops`` (the ``nets.ops`` module,
    complete): arithmetic and reflected arithmetic, in-place arithmetic, comparisons,
    ``-x``, ``abs(x)``, ``x.T``, ``tostype``, ``reshape`` and ``FLUENT_METHODS``."""
    for py, name in _BINARY.items():
        fn = getattr(ops, name)
        setattr(NDArray, f"__{py}__", _binary(fn, f"__{py}__"))
        setattr(NDArray, f"__r{py}__", _reflected(fn, f"__r{py}__"))
        if py in _INPLACE:
            setattr(NDArray, f"__i{py}__", _inplace(fn, f"__i{py}__"))
    for py, name in _COMPARISON.items():
        setattr(NDArray, f"__{py}__", _binary(getattr(ops, name), f"__{py}__"))
    for name in FLUENT_METHODS:
        setattr(NDArray, name, _fluent(getattr(ops, name), name))
    RowSparseNDArray.retain = _fluent(ops.retain, "retain")  # MXNet: row_sparse arrays only
    negative, absolute, transpose = ops.negative, ops.abs, ops.transpose
    cast_storage, reshape = ops.cast_storage, ops.reshape

    def __neg__(self):
        return negative(self)

    def __abs__(self):
        return absolute(self)

    def T(self):
        """Transpose (reverses the axes)."""
        return transpose(self)

    def tostype(self, stype):
        """A copy in storage type ``stype`` (``'default'``, ``'csr'``, ``'row_sparse'``)."""
        return cast_storage(self, stype=check_stype(stype))

    def reshape_method(self, *shape, **kwargs):
        """Reshape; accepts ``reshape(2, 3)`` or ``reshape((2, 3))`` (MXNet codes 0, -1 too)."""
        if len(shape) == 1 and not isinstance(shape[0], numbers.Integral):
            shape = shape[0]
        if shape:
            kwargs["shape"] = tuple(shape)
        return reshape(self, **kwargs)

    reshape_method.__name__ = "reshape"
    NDArray.__neg__, NDArray.__abs__, NDArray.T = __neg__, __abs__, property(T)
    NDArray.tostype, NDArray.reshape = tostype, reshape_method
