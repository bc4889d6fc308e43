"""Running one kernel call as several, over parts of its rows, on the cores of the machine.

Kernels release the GIL (``jit`` compiles them with ``nogil=True``), so plain Python threads
run their parts at once. This is what the latency-bound kernels use instead of numba's
``parallel=True``: its OpenMP workers spin at a barrier, so when another process holds a
core the call ran 14-50x slower (benchmarks/README.md); a thread that finds its core taken
simply waits for it, and a split call then costs about what the serial call costs.
``NETS_SERIAL_KERNELS=1`` (the bounds-checked test run) keeps every call in one piece.
"""
import os
from concurrent.futures import ThreadPoolExecutor

from ._jit import _SERIAL

CORES = 1 if _SERIAL else len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
    else os.cpu_count() or 1
GRAIN = 1 << 17  # the least work (elements touched) worth a part: a hand-off costs ~20-40 us
_POOL = ThreadPoolExecutor(CORES - 1, thread_name_prefix="nets-kernel") if CORES > 1 else None


def split(run, count, work):
    """``[run(start, stop), ...]`` over ``[0, count)`` cut into consecutive parts, one per
    core but none with less than ``GRAIN`` of the call's ``work``; the last part runs in the
    calling thread. A single part is just ``[run(0, count)]``."""
    parts = min(CORES, count, work // GRAIN)
    if parts <= 1:
        return [run(0, count)]
    bounds = [count * i // parts for i in range(parts + 1)]
    futures = [_POOL.submit(run, a, b) for a, b in zip(bounds[:-2], bounds[1:-1])]
    last = run(bounds[-2], bounds[-1])
    return [f.result() for f in futures] + [last]
