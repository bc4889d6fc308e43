"""``nets.nd.sparse`` (MXNet's ``mx.nd.sparse``): every operator plus the sparse classes
and constructors of ``nets.arrays.sparse`` (whose ``array``, ``zeros`` and ``empty``
take a storage type)."""
from ..ops import *
from ..ops import __all__ as _op_names
from ..arrays.sparse import *
from ..arrays.sparse import __all__ as _array_names

__all__ = sorted(set(_op_names) | set(_array_names))
