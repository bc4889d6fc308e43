"""``nets.nd.sparse`` (MXNet's ``mx.nd.sparse``): every operator plus the sparse classes
and constructors of ``nets.ndarray.sparse`` (whose ``array``, ``zeros`` and ``empty``
take a storage type)."""
from ..ops import *
from ..ops import __all__ as _op_names
from ..ndarray.sparse import *
from ..ndarray.sparse import __all__ as _array_names

__all__ = sorted(set(_op_names) | set(_array_names))
