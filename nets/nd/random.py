"""``nets.nd.random`` (MXNet's ``mx.nd.random``): the random arrays of
``nets.arrays.random``, drawn from the generator ``nets.random.seed`` seeds."""
from ..arrays.random import *
