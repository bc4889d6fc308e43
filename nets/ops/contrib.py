"""MXNet's ``contrib`` operators the sparse programs use: ``quadratic`` and ``getnnz``.

They are declared under MXNet's operator names (``_contrib_quadratic``,
``_contrib_getnnz``) and reach users as ``nets.nd.contrib.quadratic``/``getnnz`` and
``nets.sym.contrib.quadratic`` (with ``SparseEmbedding``), not as ``nets.nd`` names.
"""
import numpy as np

from ..base import INDEX_DTYPE, NetsError, StorageTypeError
from ..arrays.dense import NDArray
from .registry import Op
from .unary import map_op

__all__ = ["quadratic", "getnnz", "CONTRIB_NAMES"]

quadratic = map_op(
    "_contrib_quadratic", lambda x, a, b, c: a * x * x + b * x + c,
    {"a": 0.0, "b": 0.0, "c": 0.0},
    doc="Elementwise ``a * x**2 + b * x + c`` (MXNet's ``contrib.quadratic``); the gradient "
        "is ``2 * a * x + b``.",
    grad=lambda x, y, a, b, c: 2 * a * x + b)

getnnz = Op("_contrib_getnnz", ("data",), {"axis": None}, doc="""\
The number of stored values of a CSR array (MXNet's ``contrib.getnnz``): all of them
(``axis=None``, shape ``(1,)``), per column (``axis=0``) or per row (``axis=1``); int64,
dense. Stored zeros count, as in MXNet and scipy. No gradient.
""", entrywise=False)


@getnnz.shape
def _(ins, attrs):
    s, axis = ins[0], attrs["axis"]
    if s is None:
        return ins, [None]
    return ins, [(1,) if axis is None else (s[1 - (axis % 2)],)]


getnnz.dtype(lambda d, a: np.dtype(INDEX_DTYPE))


@getnnz.impl("csr")
def _(data, axis):
    if axis is None:
        out = np.array([data.values.size], INDEX_DTYPE)
    elif axis in (0, -2):
        out = np.bincount(data.index_array, minlength=data.shape[1]).astype(INDEX_DTYPE)
    elif axis in (1, -1):
        out = np.diff(data.indptr_array).astype(INDEX_DTYPE)
    else:
        raise NetsError(f"getnnz: axis={axis!r}; expected None, 0 or 1")
    return NDArray(out, data.context)


@getnnz.impl("default")
def _(data, axis):
    raise StorageTypeError(f"_contrib_getnnz: needs a csr array, got {data.stype} (MXNet's "
                           f"getnnz takes csr only)")


getnnz.impl("row_sparse")(getnnz.find_impl(("default",)))

#: MXNet's contrib name -> the operator's name in the table.
CONTRIB_NAMES = {"quadratic": "_contrib_quadratic", "getnnz": "_contrib_getnnz"}
