"""Running one kernel call as several, over parts of its rows, on the cores of the machine.

Kernels release the GIL (``jit`` compiles them with ``nogil=True``), so plain Python threads
run their parts at once. This is what the latency-bound kernels and the LibSVM parser use
instead of numba's ``parallel=True``: its OpenMP workers spin at a barrier, so when another
process holds a core the call ran 14-50x slower (benchmarks/README.md); a thread that finds
its core taken simply waits for it, and a split call then costs about what the serial call
costs. ``split`` cuts a call into one part per core; ``each`` hands out many parts to
whichever core is free (the parser's line ranges, of uneven cost).
``NETS_SERIAL_KERNELS=1`` (the bounds-checked test run) keeps every call in one piece.
"""
import os
from concurrent.futures import ThreadPoolExecutor

from ._jit import _SERIAL

CORES = 1 if _SERIAL else len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
    else os.cpu_count() or 1
GRAIN = 1 << 17  # the least work (elements touched) worth a part: a hand-off costs ~20-40 us


def _new_pool():
    """The worker threads (none on one core); threads are started on first use."""
    global _POOL
    _POOL = ThreadPoolExecutor(CORES - 1, thread_name_prefix="nets-kernel") if CORES > 1 else None


_new_pool()
if hasattr(os, "register_at_fork"):
    # A forked child has none of its parent's threads, but a copy of the pool that thinks
    # they are there: give it a pool of its own, or its first split would wait forever.
    os.register_at_fork(after_in_child=_new_pool)


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


def each(run, count):
    """``[run(0), ..., run(count - 1)]``, the cores taking the next index whenever they
    finish one (the calling thread included): a core that another process holds takes
    fewer, where a fixed split (OpenMP's static schedule, ``split``) waits for its share."""
    todo = iter(range(count))  # shared: next() on it is atomic under the GIL

    def drain():
        return [(k, run(k)) for k in todo]
    futures = [_POOL.submit(drain) for _ in range(min(CORES, count) - 1)]
    done = drain()
    for f in futures:
        done += f.result()
    return [r for _, r in sorted(done, key=lambda kr: kr[0])]
