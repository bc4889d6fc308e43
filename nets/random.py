"""The one random source of nets: ``seed(n)`` makes initializers, ``nd.random``,
dropout and shuffling reproducible.

It also holds the draws of the initializers' rules and the row-block scheme of a large
array: a ``rule`` is data - ``('constant', value)``, ``('uniform', scale)`` (U(-scale,
scale)) or ``('normal', sigma)`` (N(0, sigma**2)) - and ``fill_rows`` draws rows of an
array from a seed, row block ``b`` (rows ``[b * BLOCK_ROWS, (b + 1) * BLOCK_ROWS)``) whole
from a generator seeded with ``(seed, b)``: the same numbers for any row range, in any
process (``nets.init.draw`` fills a large parameter so; a distributed store's servers
make their rows so, ``nets.kv.shard.generate``).
"""
import contextlib

import numpy as np

__all__ = ["seed", "generator", "seeded", "fill", "fill_rows", "is_data", "BLOCK_ROWS",
           "RULES"]

_state = {"rng": np.random.default_rng()}
BLOCK_ROWS = 65_536  # rows drawn from one seeded generator by ``fill_rows``
RULES = ("constant", "uniform", "normal")  # the kinds of a rule


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


def _draw_target(values):
    """Where to draw: ``values`` itself when it is float32/float64 and C-contiguous (no
    temporary of its size; the same numbers as a draw of its shape), else a new float32
    array (a float64 temporary of a 512 MB float32 weight would double the peak memory)."""
    dtype = values.dtype if values.dtype in (np.float32, np.float64) else np.float32
    if values.dtype == dtype and values.flags.c_contiguous:
        return values
    return np.empty(values.shape, dtype)


def is_data(rule):
    """Whether ``rule`` is plain data that another process can be sent and draw alike: one
    of ``RULES`` with an int or float argument (not a numpy scalar or an array, whose
    arithmetic with the draw may differ)."""
    return (isinstance(rule, (tuple, list)) and len(rule) == 2 and rule[0] in RULES
            and type(rule[1]) in (int, float))


def fill(rule, values):
    """``values[...] =`` a draw of ``rule`` from the current generator, in ``values``'
    precision, in place."""
    kind, arg = rule
    if kind == "constant":
        values[...] = arg
        return
    draw = _draw_target(values)
    if kind == "uniform":
        generator().random(dtype=draw.dtype, out=draw)
        draw *= 2 * arg
        draw -= arg
    else:
        generator().standard_normal(dtype=draw.dtype, out=draw)
        draw *= arg
    if draw is not values:
        values[...] = draw


def fill_rows(rule, values, shape, seed_state, lo):
    """Fill ``values``, rows ``[lo, lo + len(values))`` of an array of ``shape``, by
    ``rule`` from ``seed_state``: row block ``b`` drawn whole from a generator seeded with
    ``(seed_state, b)`` (a block ``values`` holds whole is drawn in place: a draw fills
    its array in C order, so the numbers are those of a block of its own)."""
    hi = lo + len(values)
    for b in range(lo // BLOCK_ROWS, -(-hi // BLOCK_ROWS)):
        b_lo, b_hi = b * BLOCK_ROWS, min((b + 1) * BLOCK_ROWS, shape[0])
        a, z = max(lo, b_lo), min(hi, b_hi)
        whole = (a, z) == (b_lo, b_hi)
        block = values[a - lo:z - lo] if whole else \
            np.empty((b_hi - b_lo,) + tuple(shape[1:]), values.dtype)
        with seeded([seed_state, b]):
            fill(rule, block)
        if not whole:
            values[a - lo:z - lo] = block[a - b_lo:z - b_lo]
