"""The one random source of nets: ``seed(n)`` makes initializers, ``nd.random``,
dropout and shuffling reproducible."""
import contextlib

import numpy as np

_state = {"rng": np.random.default_rng()}


def seed(seed_state):
    """Seed every random source nets uses."""
    _state["rng"] = np.random.default_rng(seed_state)


def generator():
    """The current ``numpy.random.Generator`` (replaced by ``seed``)."""
    return _state["rng"]


@contextlib.contextmanager
def seeded(seed_state):
    """Within the block, every random source nets uses draws from a generator seeded with
    ``seed_state``; the current generator is restored after it."""
    saved = _state["rng"]
    _state["rng"] = np.random.default_rng(seed_state)
    try:
        yield
    finally:
        _state["rng"] = saved
