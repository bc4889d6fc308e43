"""``nets.nd`` (MXNet's ``mx.nd``/``mx.ndarray``): arrays, array creation and every
operator in one namespace, with ``nets.nd.sparse``, ``nets.nd.random`` and
``nets.nd.contrib``.

A face only: the arrays are ``nets.arrays`` (the array floor), the operators
``nets.ops`` (and ``Custom``, of ``nets.operator``), ``save``/``load``
``nets.serialization``; this package sits above them and defines nothing of its own
except the MXNet conveniences ``waitall`` and ``concatenate``, and ``_internal``: MXNet's
internal operator names (``nd._internal._square_sum``), built by ``internal_namespace``,
which ``nets.sym._internal`` uses too.
"""
import types as _types
from collections.abc import Callable as _Callable
from collections.abc import Iterable as _Iterable

from ..arrays import (BaseSparseNDArray, CSRNDArray, NDArray, RowSparseNDArray, arange, array,
                       empty, from_numpy, full, ones, zeros)
from ..ops import *
from ..ops import __all__ as _op_names
from ..operator import Custom
from ..ops.registry import OPS as _OPS
from ..serialization import load, save
from . import contrib, random, sparse  # the faces below, not the floor's modules of those names
from ..arrays.random import normal as random_normal, uniform as random_uniform


def waitall() -> None:
    """No-op: nets computes synchronously (kept for MXNet code)."""


def concatenate(arrays: _Iterable[NDArray], axis: int = 0) -> NDArray:
    """``concat(*arrays, dim=axis)`` (MXNet's list-taking alias).

    Parameters
    ----------
    arrays : iterable of NDArray
        The arrays to join; their shapes agree except along ``axis``.
    axis : int, default 0
        The axis along which they are joined.

    Returns
    -------
    NDArray
        The joined array.
    """
    return concat(*arrays, dim=axis)


#: MXNet's ``_internal`` names of operators nets declares under a public name.
INTERNAL_NAMES = {"_square_sum": "square_sum", "_sparse_retain": "retain",
                  "_maximum": "maximum", "_minimum": "minimum",
                  "_plus": "elemwise_add", "_Plus": "elemwise_add", "_add": "elemwise_add",
                  "_minus": "elemwise_sub", "_Minus": "elemwise_sub", "_sub": "elemwise_sub",
                  "_mul": "elemwise_mul", "_Mul": "elemwise_mul",
                  "_div": "elemwise_div", "_Div": "elemwise_div",
                  "_power": "power", "_Power": "power", "_mod": "modulo",
                  "_equal": "equal", "_not_equal": "not_equal", "_greater": "greater",
                  "_greater_equal": "greater_equal", "_lesser": "lesser",
                  "_lesser_equal": "lesser_equal",
                  "_sparse_adagrad_update": "adagrad_update"}


def internal_namespace(functions: dict[str, _Callable], doc: str) -> _types.ModuleType:
    """A module object of MXNet's ``_internal`` names over ``functions``.

    Parameters
    ----------
    functions : dict of str to callable
        The namespace's functions by public name (``nets.nd``'s or ``nets.sym``'s).
    doc : str
        The module object's docstring.

    Returns
    -------
    types.ModuleType
        Every operator of the op table whose name starts with ``_`` (the ``Op`` itself
        where ``functions`` lacks it), and each ``INTERNAL_NAMES`` alias of a public one.
    """
    ns = _types.ModuleType("_internal", doc)
    for name, op in _OPS.items():
        if name.startswith("_"):
            setattr(ns, name, functions.get(name, op))
    for alias, name in INTERNAL_NAMES.items():
        setattr(ns, alias, functions[name])
    return ns


_internal = internal_namespace(globals(), "MXNet's ``mx.nd._internal``: the operators of "
                               "nets.nd under their internal names (``_square_sum``, ...).")

__all__ = ["NDArray", "BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray", "array", "zeros",
           "ones", "full", "empty", "arange", "from_numpy", "waitall", "concatenate", "save",
           "load", "random", "sparse", "contrib", "Custom", "uniform", "normal",
           "random_uniform", "random_normal"] + list(_op_names)

uniform, normal = random_uniform, random_normal  # MXNet's older names of the samplers
