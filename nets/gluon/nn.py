"""``gluon.nn``: the names of ``nets.layers``."""
from ..layers import *
from ..layers import __all__
