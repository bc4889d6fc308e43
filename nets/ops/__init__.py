"""Every operator of nets, declared once per family module (see ``registry``).

This namespace is what ``nets.nd`` and ``nets.nd.sparse`` re-export. Importing it also
installs NDArray's Python operators and fluent methods (``methods.install``): the array
classes import nothing above them.
"""
import sys as _sys

from . import (dot as _dot_mod, elemwise, indexing, joining, methods, nn, ordering, output,
               reduce, reshaping, slicing, sparse_ops, unary, update)
from . import contrib  # noqa: F401  (MXNet's contrib operators: nets.nd.contrib, nets.sym.contrib)
from .dot import *
from .elemwise import *
from .indexing import *
from .joining import *
from .methods import FLUENT_METHODS  # noqa: F401  (public: nets.ops.FLUENT_METHODS)
from .nn import *
from .ordering import *
from .output import *
from .reduce import *
from .registry import OPS, Op  # noqa: F401
from .reshaping import *
from .slicing import *
from .sparse_ops import *
from .unary import *
from .update import *

__all__ = sorted(set(_dot_mod.__all__ + elemwise.__all__ + indexing.__all__ + joining.__all__
                     + nn.__all__ + ordering.__all__ + output.__all__ + reduce.__all__
                     + reshaping.__all__ + slicing.__all__ + sparse_ops.__all__
                     + unary.__all__ + update.__all__))

methods.install(_sys.modules[__name__])
