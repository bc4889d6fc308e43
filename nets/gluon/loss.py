"""``gluon.loss``: the names of ``nets.loss``."""
from .. import loss as _source
from ..loss import *

__all__ = list(_source.__all__)
