"""``gluon.utils``: the names of ``nets.utils``."""
from ..utils import *
from ..utils import __all__
