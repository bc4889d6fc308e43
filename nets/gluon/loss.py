"""``gluon.loss``: the names of ``nets.loss``."""
from ..loss import *
from ..loss import __all__
