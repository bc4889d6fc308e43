"""``nets.nd.random`` (MXNet's ``mx.nd.random``): the random arrays of
``nets.ndarray.random``, drawn from the generator ``nets.random.seed`` seeds."""
from ..ndarray.random import *
