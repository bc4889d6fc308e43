"""``gluon.utils``: the names of ``nets.utils``."""
from .. import utils as _source
from ..utils import *

__all__ = list(_source.__all__)
