"""Running one kernel call on every core at once.

Kernels release the GIL (``jit`` compiles them with ``nogil=True``), so plain Python threads
run them at once. This is what the latency-bound kernels and the LibSVM parser use instead
of numba's ``parallel=True``: its OpenMP workers spin at a barrier, so when another process
holds a core the call ran 14-50x slower (benchmarks/README.md); a thread that finds its core
taken simply waits for it.

``share`` runs one call on every core at once, the threads taking chunks of its range from a
shared counter (``claim``) as they go. The calling thread starts at once; the workers of
``share`` (its ``_Crew``) join as soon as they see the call. Between calls a worker keeps
polling for the next one in compiled code, the GIL released, for ``LINGER`` seconds before it
sleeps: a sleeping thread takes ~45-70 us to wake on this VM (its idle vCPU halts), so it
joined a 0.2 ms product a quarter of the way in, and a W2 step took ~11% longer. A worker
joins only once the caller's first claim shows the caller inside its kernel, so it finds
the GIL free: had it asked while the caller still held it, it would have slept on the GIL
instead, and woken as late. The caller polls the counter for the chunks still running
elsewhere instead of sleeping on them, and each worker keeps off the caller's CPU
(``_avoid``). Workers stop polling for a while when one is found held up by another
process (``_Crew.wait``): polling costs the CPU it holds, and the scheduler's favour.
``each`` hands out many parts to whichever core is free (the parser's line ranges, of
uneven cost, each a separate call).
``NETS_SERIAL_KERNELS=1`` (the bounds-checked test run) keeps every call in one piece.
"""
import ctypes
import itertools
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ._jit import (_SERIAL, compare_exchange, fetch_add, jit, load_acquire, pause,
                   store_release)

CORES = 1 if _SERIAL else len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
    else os.cpu_count() or 1
GRAIN = 1 << 17  # the least work (elements touched) worth a part of a shared call
CHUNKS = 16  # chunks per core: the caller waits at most for the one chunk a worker holds
LINGER = 2e-3  # seconds a worker of share polls for the next call before it sleeps
SETTLE = 50e-6  # seconds the caller polls for a chunk a worker holds before it sleeps
BEGIN = 10e-3  # seconds a worker polls for a posted call to begin (its caller held up)
SLOTS = 64  # counters share reuses in turn (one that a worker is still inside is skipped)
QUIET = 0.25  # seconds workers do not poll between calls after one was held up


try:  # the CPU the calling thread runs on (glibc, musl); None: not known, workers not steered
    _getcpu = ctypes.CDLL(None).sched_getcpu if hasattr(os, "sched_setaffinity") else None
except (OSError, AttributeError):
    _getcpu = None
_local = threading.local()


WHOLE = np.zeros(0, np.int64)  # the counter of a call that takes its whole range (never written)
# A worker's state in a counter of share: the number of the call times 4, plus its phase:
_OUT, _IN, _BACK, _FAILED = 0, 1, 2, 3  # not joined, inside the call, back, failed


def counter(chunk, workers=0):
    """A fresh counter handing out chunks of ``chunk`` items: ``[next start, items done,
    chunk]``, then one state per worker thread of ``share`` (``4 * call number + phase``:
    0 not joined, 1 inside the call, 2 back, 3 failed)."""
    return np.array([0, 0, chunk] + [_OUT] * workers, np.int64)


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
def _settled(counter, count, polls):
    """Whether all ``count`` items are done and no worker is inside the call any more, or a
    worker failed; polled up to ``polls`` times."""
    for _ in range(polls):
        done, failed = load_acquire(counter, 1) >= count, False
        for i in range(3, len(counter)):
            phase = load_acquire(counter, i) & 3
            done &= phase != _IN
            failed |= phase == _FAILED
        if done or failed:
            return True
        pause()
    return False


@jit
def _take(counter, number, chunk):
    """Make ``counter`` that of call ``number``, handing out chunks of ``chunk``; False
    (and unusable until taken again) if a worker is still inside its last call. Each state
    changes by compare-and-swap, so a worker that read an older number joins nothing."""
    for i in range(3, len(counter)):
        while True:
            old = load_acquire(counter, i)
            if old & 3 == _IN:
                return False
            if compare_exchange(counter, i, old, number * 4 + _OUT):
                break
    counter[0], counter[1] = 0, 0
    counter[2] = chunk
    return True


@jit
def _publish(bell, slot, count, number):
    """Announce call ``number`` on counter ``slot``, over ``count`` items, to the workers."""
    bell[1], bell[2] = slot, count
    store_release(bell, 0, number)  # last: a worker that reads it sees the rest


@jit
def _await(bell, counters, state, back, seen, polls, begin):
    """A worker of share between calls (the GIL released): report it back from the call it
    was inside on ``counters[back]`` (none if ``back < 0``), then poll ``bell`` (``[calls
    posted, their counter, their count, stop]``) for a call after number ``seen`` that its
    caller has begun (its first claim taken) with chunks left to claim, and join it (its
    state set inside by compare-and-swap, from not joined in that very call). Returns
    ``(True, number, slot)`` for that call, else ``(False, number, -1)`` with the latest
    call seen, once ``polls`` polls found none posted (``seen``, on stop). A posted call is
    polled for up to ``begin`` times more to begin, then given up on (its caller failed
    first, or took every chunk)."""
    if back >= 0:
        store_release(counters[back], state, counters[back, state] - _IN + _BACK)
    while not load_acquire(bell, 3):
        number = load_acquire(bell, 0)
        if number != seen:
            slot = bell[1]
            row = counters[slot]
            started = load_acquire(row, 0)
            if started and started < bell[2] and compare_exchange(
                    row, state, number * 4 + _OUT, number * 4 + _IN):
                return True, number, slot
            begin -= 1
            if started or begin < 0:
                seen = number
        elif polls <= 0:
            break
        polls -= 1
        pause()
    return False, seen, -1


def _poll_rate():
    """Polls of ``_await`` per second on this machine (measured)."""
    bell, rows = np.zeros(4, np.int64), np.zeros((1, 4), np.int64)
    _await(bell, rows, 3, -1, 0, 1, 0)  # compiled (or loaded) before it is timed
    n = 1 << 12
    start = time.perf_counter()
    _await(bell, rows, 3, -1, 0, n, 0)
    return n / max(time.perf_counter() - start, 1e-9)


def _avoid(cpu):
    """Keep this worker thread off ``cpu``, its caller's (a no-op while that stays the same).

    After another process had run, Linux kept waking the worker on the caller's own vCPU
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


class _Call:
    """One call of share, as its workers find it: ``run(counters[slot])``, the caller on
    ``cpu``, and the ``error`` a worker raised."""
    __slots__ = ("number", "slot", "run", "cpu", "error")

    def __init__(self, number, slot, run, cpu):
        self.number, self.slot, self.run, self.cpu, self.error = number, slot, run, cpu, None


class _Crew:
    """The worker threads of ``share`` and the memory they poll: ``bell`` announces each
    call, ``counters`` are the calls' counters, reused in turn (one cache line each), and
    ``calls[slot]`` the call on each. A counter a worker is still inside is not reused, and
    a worker joins only the call whose number it read (``_take``, ``_await``): one held up
    between reading the bell and joining never claims from a counter a later call reset."""

    def __init__(self, workers):
        width = -(-(3 + workers) // 8) * 8
        line = np.zeros(SLOTS * width + 8, np.int64)
        skip = (-line.ctypes.data % 64) // 8
        self.counters = line[skip:skip + SLOTS * width].reshape(SLOTS, width)[:, :3 + workers]
        self.bell = np.zeros(8, np.int64)
        self.calls = [None] * SLOTS
        self.workers, self.turn, self.sleepers = workers, 0, 0
        self.numbers = itertools.count(1)
        self.busy = set()  # the counters of calls whose callers have not returned
        self.lock = threading.Lock()  # callers in several threads take counters one at a time
        self.wake = threading.Condition()
        self.rate = self.threads = None  # on first use
        self.quiet_until = 0.0  # workers poll between calls from then on

    def post(self, run, count, chunk):
        """Announce a call of ``run`` over ``count`` items in chunks of ``chunk``; returns it
        with its counter (``None, WHOLE`` if every counter is in use)."""
        with self.lock:
            if self.threads is None:
                self.rate = _poll_rate()
                self.threads = [threading.Thread(target=self._serve, args=(3 + i,),
                                                 daemon=True, name=f"nets-kernel-{i}")
                                for i in range(self.workers)]
                for t in self.threads:
                    t.start()
            number = next(self.numbers)
            for _ in range(SLOTS):
                slot, self.turn = self.turn, (self.turn + 1) % SLOTS
                if slot not in self.busy and _take(self.counters[slot], number, chunk):
                    break
            else:  # every counter in use (as many callers at once): this call runs alone
                return None, WHOLE
            self.busy.add(slot)
        call = self.calls[slot] = _Call(number, slot, run, _getcpu() if _getcpu else None)
        _publish(self.bell, slot, count, number)
        if self.sleepers:
            with self.wake:
                self.wake.notify_all()
        return call, self.counters[slot]

    def wait(self, counter, count, ran):
        """Wait for the workers still inside a call whose caller ``ran`` for that many
        seconds and then polled ``SETTLE`` for them. A worker that has done its last chunk
        but waits for the GIL to return is polled for (it is back in ~50-70 us). A chunk
        still running after as long again has lost its CPU to another process: the caller
        sleeps to let it run, and workers sleep between calls for the next ``QUIET``
        seconds. A polling worker has used up its claim on the CPU, so the scheduler lets
        the other process run over it, chunk in hand; a sleeping one is run first when
        woken. (With a busy process on either CPU, polling made a W2 step ~15% slower.)"""
        late = time.perf_counter() + ran
        while not _settled(counter, count, self.polls(SETTLE)):
            if counter[1] < count and time.perf_counter() > late:
                self.quiet_until = time.perf_counter() + QUIET
                time.sleep(SETTLE)

    def polls(self, seconds):
        """How many polls take about ``seconds``."""
        return max(1, int(self.rate * seconds))

    def done(self, call):
        """The caller of ``call`` is back: its counter may be reused, and the call (with
        the arrays ``run`` holds) is let go of."""
        with self.lock:
            self.calls[call.slot] = None
            self.busy.discard(call.slot)

    def _serve(self, state):
        """A worker: join each call share posts, poll in between, sleep when none comes."""
        seen, back = 0, -1
        while True:
            linger = LINGER if time.perf_counter() >= self.quiet_until else SETTLE
            joined, seen, slot = _await(self.bell, self.counters, state, back, seen,
                                        self.polls(linger), self.polls(BEGIN))
            back = -1
            if self.bell[3]:
                return
            if not joined:
                with self.wake:
                    # counted before the bell is read: a call posted after the read sees
                    # a sleeper and notifies (share posts first, then counts sleepers)
                    self.sleepers += 1
                    if self.bell[0] == seen and not self.bell[3]:
                        self.wake.wait()
                    self.sleepers -= 1
                continue
            back = slot  # marked back once this thread has let go of the GIL
            call = self.calls[slot]
            if call is None or call.number != seen:  # its caller is back: nothing left
                continue
            _avoid(call.cpu)
            try:
                call.run(self.counters[slot])
            except BaseException as e:
                call.error = e
                self.counters[slot, state] = seen * 4 + _FAILED
                back = -1

    def close(self):
        """Stop the workers (tests: a crew of their own) and wait for them."""
        self.bell[3] = 1
        with self.wake:
            self.wake.notify_all()
        for t in self.threads or ():
            t.join()


def _new_workers():
    """Workers for share and a pool for each (none on one core); threads start on first
    use."""
    global _CREW, _POOL
    _CREW = _Crew(CORES - 1) if CORES > 1 else None
    _POOL = ThreadPoolExecutor(CORES - 1, thread_name_prefix="nets-kernel") if CORES > 1 else None


_new_workers()
if hasattr(os, "register_at_fork"):
    # A forked child has none of its parent's threads, but copies of the objects that think
    # they are there: it gets workers of its own, or its first shared call would wait forever.
    os.register_at_fork(after_in_child=_new_workers)


def share(run, count, work):
    """``run(counter)`` on every core at once, each call claiming chunks of ``[0, count)``
    (``claim``) until none are left; returns when all are done. One call does it all when
    the ``work`` (elements touched) is under ``GRAIN`` per extra core.

    The caller waits (polling, the GIL released) until each worker that joined is back with
    the GIL let go: a worker still returning from its call would take the GIL from the
    caller's next Python and hand it back only after a wake-up. A worker that has not
    joined when the work is done is not waited for: it finds nothing left."""
    parts = min(CORES, count, work // GRAIN)
    if parts <= 1:
        run(WHOLE)
        return
    call, row = _CREW.post(run, count, -(-count // (CHUNKS * parts)))
    try:
        start = time.perf_counter()
        run(row)
        if call and not _settled(row, count, _CREW.polls(SETTLE)):
            _CREW.wait(row, count, time.perf_counter() - start)
    finally:
        if call:
            _CREW.done(call)
    if call and call.error is not None:
        raise call.error


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
