"""The one random source of nets: ``seed(n)`` makes initializers, ``nd.random``,
dropout and shuffling reproducible."""
import numpy as np

_state = {"rng": np.random.default_rng()}


def seed(seed_state):
    """Seed every random source nets uses."""
    _state["rng"] = np.random.default_rng(seed_state)


def generator():
    """The current ``numpy.random.Generator`` (replaced by ``seed``)."""
    return _state["rng"]
