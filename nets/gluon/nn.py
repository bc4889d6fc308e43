"""``gluon.nn``: the names of ``nets.layers``."""
from .. import layers as _source
from ..layers import *

__all__ = list(_source.__all__)
