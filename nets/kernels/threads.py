"""Running one kernel call on every core at once.

Kernels release the GIL (``jit`` compiles them with ``nogil=True``), so plain Python threads
run them at once. This is what the latency-bound kernels and the LibSVM parser use instead
of numba's ``parallel=True``: its OpenMP workers spin at a barrier, so when another process
holds a core the call ran 14-50x slower (benchmarks/README.md); a thread that finds its core
taken simply waits for it.

``share`` runs one call on every core, the threads taking chunks of its range from a shared
counter (``claim``) as they go. The calling thread starts at once and a worker joins when it
wakes: a sleeping thread takes ~45-70 us to wake on this VM, so a fixed split into halves made
the caller wait for the worker's late half, then wait again to be woken itself (~90 us of a
0.24 ms product). The caller polls the counter for the chunks still running elsewhere
instead of sleeping on them, and each worker keeps off the caller's CPU (``_avoid``).
``each`` hands out many parts to whichever core is free (the parser's line ranges, of
uneven cost, each a separate call).
``NETS_SERIAL_KERNELS=1`` (the bounds-checked test run) keeps every call in one piece.
"""
import ctypes
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ._jit import _SERIAL, fetch_add, jit, load_acquire

CORES = 1 if _SERIAL else len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
    else os.cpu_count() or 1
GRAIN = 1 << 17  # the least work (elements touched) worth a part: a hand-off costs ~20-40 us
CHUNKS = 16  # chunks per core: the caller waits at most for the one chunk a worker holds
SPINS = 1 << 16  # polls (~50 us, about a chunk) before sleeping on a worker that is held up


try:  # the CPU the calling thread runs on (glibc, musl); None: not known, workers not steered
    _getcpu = ctypes.CDLL(None).sched_getcpu if hasattr(os, "sched_setaffinity") else None
except (OSError, AttributeError):
    _getcpu = None
_local = threading.local()


def _new_pool():
    """The worker threads (none on one core); threads are started on first use."""
    global _POOL
    _POOL = ThreadPoolExecutor(CORES - 1, thread_name_prefix="nets-kernel") if CORES > 1 else None


_new_pool()
if hasattr(os, "register_at_fork"):
    # A forked child has none of its parent's threads, but a copy of the pool that thinks
    # they are there: give it a pool of its own, or its first shared call would wait forever.
    os.register_at_fork(after_in_child=_new_pool)


WHOLE = np.zeros(0, np.int64)  # the counter of a call that takes its whole range (never written)


def counter(chunk, workers=0):
    """A fresh counter for a call that threads share, handing out chunks of ``chunk`` items:
    ``[next start, items done, chunk]``, then one state per worker thread of ``share`` (0
    not started, 1 inside the call, 2 back)."""
    return np.array([0, 0, chunk] + [0] * workers, np.int64)


@jit
def claim(counter, count, finished):
    """Report ``finished`` items (the caller's last chunk) done and take the next chunk ``(a,
    b)`` of ``[0, count)``; empty (``a >= b``) when none is left. ``WHOLE`` hands out the
    whole range as one chunk. A kernel loops::

        a, b = claim(counter, count, 0)
        while a < b:
            ...                   # items a .. b-1
            a, b = claim(counter, count, b - a)
    """
    if not len(counter):
        return (count, count) if finished else (0, count)
    if finished:
        fetch_add(counter, 1, finished)
    a = fetch_add(counter, 0, counter[2])
    return a, min(a + counter[2], count)


@jit
def _settled(counter, count, spins):
    """Whether all ``count`` items are done and every worker that started is back, polled up
    to ``spins`` times."""
    for _ in range(spins):
        settled = load_acquire(counter, 1) >= count
        for i in range(3, len(counter)):
            settled &= load_acquire(counter, i) != 1
        if settled:
            return True
    return False


def _avoid(cpu):
    """Keep this worker thread off ``cpu``, its caller's (a no-op while that stays the same).

    After another process has run, Linux kept waking the worker on the caller's own vCPU
    (the other one idle) for whole runs of calls, so the two took turns on one core: the
    product took 0.40-0.44 ms instead of 0.29-0.31 (benchmarks/README.md)."""
    if cpu is None or getattr(_local, "avoided", None) == cpu:
        return
    _local.avoided = cpu
    try:
        allowed = os.sched_getaffinity(os.getpid())  # the process's (main thread's) CPUs
        os.sched_setaffinity(0, allowed - {cpu} or allowed)
    except OSError:  # a hint only: a sandbox that refuses it leaves the worker where it is
        pass


def _worker(run, shared, i, caller_cpu):
    """A worker's part of ``share``: ``run(shared)`` with its state ``shared[i]`` kept."""
    _avoid(caller_cpu)
    shared[i] = 1  # one writer per state: the worker's own
    try:
        run(shared)
    finally:
        shared[i] = 2


def share(run, count, work):
    """``run(counter)`` on every core at once, each call claiming chunks of ``[0, count)``
    (``claim``) until none are left; returns when all are done. One call does it all when
    the ``work`` (elements touched) is under ``GRAIN`` per extra core.

    The caller waits (polling, the GIL released) until each worker that joined is back in
    Python: a worker still returning from its call would take the GIL from the caller's
    next Python and hand it back only after a wake-up. A worker that has not started when
    the work is done is not waited for: it finds nothing left."""
    parts = min(CORES, count, work // GRAIN)
    if parts <= 1:
        run(WHOLE)
        return
    shared = counter(-(-count // (CHUNKS * parts)), parts - 1)
    cpu = _getcpu() if _getcpu else None
    futures = [_POOL.submit(_worker, run, shared, 3 + i, cpu) for i in range(parts - 1)]
    run(shared)
    if not _settled(shared, count, SPINS):  # a worker is held up: sleep on it (and get its errors)
        for f in futures:
            f.result()


def each(run, count):
    """``[run(0), ..., run(count - 1)]``, the cores taking the next index whenever they
    finish one (the calling thread included): a core that another process holds takes
    fewer, where a fixed split (OpenMP's static schedule) waits for its share."""
    todo = iter(range(count))  # shared: next() on it is atomic under the GIL

    def drain():
        return [(k, run(k)) for k in todo]
    futures = [_POOL.submit(drain) for _ in range(min(CORES, count) - 1)]
    done = drain()
    for f in futures:
        done += f.result()
    return [r for _, r in sorted(done, key=lambda kr: kr[0])]
