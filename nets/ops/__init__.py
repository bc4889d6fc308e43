"""Every operator of nets, declared once per family module (see ``registry``).

This namespace is what ``nets.nd`` and ``nets.nd.sparse`` re-export.
"""
from . import dot as _dot_mod, elemwise, nn, output, reduce, shape, sparse_ops, unary
from .dot import *
from .elemwise import *
from .nn import *
from .output import *
from .reduce import *
from .registry import OPS, Op  # noqa: F401
from .shape import *
from .sparse_ops import *
from .unary import *

__all__ = sorted(set(_dot_mod.__all__ + elemwise.__all__ + nn.__all__ + output.__all__
                     + reduce.__all__
                     + shape.__all__ + sparse_ops.__all__ + unary.__all__))
