"""The one parallel layer: how many threads nets uses, and how a call over a range of rows
is split between them.

Every parallel kernel is a pure function over a row range ``[lo, hi)``, compiled with
``nogil=True``. ``parallel_for(body, count)`` runs ``body(lo, hi)`` over chunks covering
``[0, count)``; ``parallel_map(fn, count)`` runs ``fn(i)`` for each ``i`` (the LibSVM
parser's line ranges). The chunks go to a small pool of plain Python threads:

- the calling thread runs chunks itself, and up to ``get_num_threads() - 1`` workers join
  it; each thread takes the next chunk from the call's shared position until none is left,
  so a thread whose core another process holds simply takes fewer chunks;
- workers block on a queue between calls (no spin-waiting: an idle process uses no CPU) and
  nothing changes CPU affinity;
- a call from inside a chunk (a nested call) runs serially in that thread: no deadlock, no
  more threads than asked for;
- several Python threads may call at once: each call has its own chunks and waits only for
  them, so two models train in two threads as they would one after the other;
- the first exception any chunk raises reaches the caller once the chunks already running
  have finished (no worker writes into the caller's arrays after it returns);
- the caller's wait is interruptible: Ctrl-C raises ``KeyboardInterrupt`` there, and chunks
  not yet started are dropped;
- after ``os.fork()`` the child starts workers of its own on first use (the parent's
  threads do not exist in it).

Why not numba's threading layers (``parallel=True``/``prange``): the ``workqueue`` layer,
which numba uses when neither OpenMP nor TBB is installed, aborts the process when two
Python threads run parallel kernels at once; OpenMP's workers spin at a barrier after each
call (an idle process keeps burning CPU) and a call waits for its static share on every
thread, also on one whose core is busy; TBB is often not installed. A pool of blocking
threads over ``nogil`` kernels has none of these problems and needs no synchronisation
beyond one lock per call.

The thread count: ``set_num_threads(n)``, else the ``NETS_NUM_THREADS`` environment
variable (read on first use), else the CPUs the process may really use: its affinity mask
capped by its cgroup CPU quota (cgroup v2 ``cpu.max``, v1 ``cpu.cfs_quota_us`` over
``cpu.cfs_period_us``, in its own cgroup and every ancestor), rounded up, at least 1.
``1`` runs every call serially in the caller.
"""
import contextlib
import math
import os
import queue
import threading

from .base import NetsError, env_number

__all__ = ["set_num_threads", "get_num_threads", "num_threads_source", "parallel_for",
           "parallel_map", "available_cpus", "cgroup_cpu_quota", "count_threads"]

ENV = "NETS_NUM_THREADS"
# The least work (elements a kernel reads or writes) worth a thread of its own. A worker
# blocked between calls joins a call only after a wake-up (and then the GIL), and the caller
# needs one more when it waits for the worker's last chunk: a thread pays only when its share
# of the work takes several times that.
GRAIN = 1 << 19
# Chunks per thread: enough that a thread whose core is busy holds back at most a small
# part of the call, few enough that each chunk's kernel dispatch is negligible.
CHUNKS = 4

_setting = None  # (threads, where that number came from), once known
_setting_lock = threading.Lock()


# -- the thread count -----------------------------------------------------------------------

def set_num_threads(n):
    """Use ``n`` threads (an int >= 1) for every parallel kernel from now on; ``1`` runs
    kernels serially in the calling thread. Overrides ``NETS_NUM_THREADS``."""
    global _setting
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise NetsError(f"set_num_threads: n={n!r}: expected an int >= 1")
    with _setting_lock:
        _setting = (n, "set_num_threads")


def get_num_threads():
    """The number of threads a parallel kernel call may use (see the module docstring for
    the default)."""
    return _current()[0]


def num_threads_source():
    """Where ``get_num_threads()`` comes from: ``'set_num_threads'``, ``'NETS_NUM_THREADS'``,
    ``'cgroup CPU quota (<file>)'`` or ``'affinity mask'``."""
    return _current()[1]


def _current():
    global _setting
    setting = _setting  # one read: set_num_threads replaces the tuple as a whole
    if setting is not None:
        return setting
    with _setting_lock:
        if _setting is None:
            _setting = _from_environment(os.environ)
        return _setting


def _from_environment(environ):
    """``(threads, source)`` from ``NETS_NUM_THREADS`` if set, else ``available_cpus()``."""
    n = env_number(ENV, int, environ)
    return available_cpus() if n is None else (n, ENV)


def available_cpus(affinity=None, cgroup_root="/sys/fs/cgroup",
                   self_cgroup="/proc/self/cgroup"):
    """``(cpus, source)``: the CPUs this process may use: ``affinity`` (default: the size
    of its affinity mask, or ``os.cpu_count()`` where there is none) capped by its cgroup
    CPU quota rounded up; at least 1. ``source`` names the limit that decided."""
    if affinity is None:
        affinity = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                    else os.cpu_count() or 1)
    quota = cgroup_cpu_quota(cgroup_root, self_cgroup)
    if quota is not None and math.ceil(quota[0]) < affinity:
        return max(1, math.ceil(quota[0])), f"cgroup CPU quota ({quota[1]})"
    return max(1, affinity), "affinity mask"


def cgroup_cpu_quota(cgroup_root="/sys/fs/cgroup", self_cgroup="/proc/self/cgroup"):
    """``(cpus, file)``: the tightest CPU quota over this process's cgroup and its
    ancestors, as a (fractional) number of CPUs and the file that set it; None without
    one. Reads cgroup v2 ``cpu.max`` (``"max 100000"``: none) and v1
    ``cpu.cfs_quota_us``/``cpu.cfs_period_us`` (quota -1: none), under ``cgroup_root`` and
    v1's ``cpu`` controller mounts below it."""
    best = None
    for folder in _cgroup_folders(cgroup_root, self_cgroup):
        found = _quota_in(folder)
        if found is not None and (best is None or found[0] < best[0]):
            best = found
    return best


def _cgroup_folders(root, self_cgroup):
    """Folders whose CPU limits apply to this process: its cgroup path (from
    ``self_cgroup``) and every ancestor, under ``root`` and its v1 ``cpu`` mounts. In a
    container the path may name the host's hierarchy; the mount's own root is always
    included."""
    paths = {""}
    try:
        with open(self_cgroup) as f:
            lines = f.read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3 and (parts[1] == "" or "cpu" in parts[1].split(",")):
            path = parts[2].strip("/")
            while path:
                paths.add(path)
                path = os.path.dirname(path)
    bases = [root] + [os.path.join(root, name) for name in ("cpu", "cpu,cpuacct")]
    return [os.path.join(base, p) if p else base for base in bases for p in sorted(paths)]


def _quota_in(folder):
    """``(cpus, file)`` of the quota set in one cgroup folder, or None."""
    text = _read(os.path.join(folder, "cpu.max"))
    if text is not None:
        fields = text.split()
        if len(fields) == 2 and fields[0] != "max":
            return _ratio(fields[0], fields[1], os.path.join(folder, "cpu.max"))
        return None
    quota = _read(os.path.join(folder, "cpu.cfs_quota_us"))
    period = _read(os.path.join(folder, "cpu.cfs_period_us"))
    if quota is not None and period is not None:
        return _ratio(quota, period, os.path.join(folder, "cpu.cfs_quota_us"))
    return None


def _ratio(quota, period, where):
    try:
        q, p = int(quota), int(period)
    except ValueError:
        return None
    return (q / p, where) if q > 0 and p > 0 else None


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


# -- running a call -------------------------------------------------------------------------

class _Call:
    """One ``parallel_for`` call: ``body`` over ``[0, count)`` in chunks of ``chunk``.
    ``cond`` (its lock) guards the position, the running chunks, the error and the threads
    seen."""
    __slots__ = ("body", "count", "chunk", "share", "next", "running", "error", "stop",
                 "threads", "cond")

    def __init__(self, body, count, chunk, share=0):
        self.body, self.count, self.chunk, self.share = body, count, chunk, share
        self.next = self.running = 0
        self.error, self.stop, self.threads = None, False, set()
        self.cond = threading.Condition(threading.Lock())

    def claim(self):
        """The next chunk ``(lo, hi)`` for the calling thread, or None when none is left."""
        with self.cond:
            if self.stop or self.next >= self.count:
                return None
            lo = self.next
            size = max(self.chunk, (self.count - lo) // self.share) if self.share else self.chunk
            self.next = hi = min(lo + size, self.count)
            self.running += 1
            self.threads.add(threading.get_ident())
            return lo, hi

    def finish(self, error=None):
        """A chunk is done (``error``: what it raised; the first one stops the call)."""
        with self.cond:
            self.running -= 1
            if error is not None and self.error is None:
                self.error, self.stop = error, True
            if not self.running:
                self.cond.notify_all()

    def work(self):
        """Run chunks until none is left; nested calls inside them run serially."""
        _local.inside = True
        try:
            while (chunk := self.claim()) is not None:
                try:
                    self.body(*chunk)
                except BaseException as e:  # handed to the caller, which raises it
                    self.finish(e)
                else:
                    self.finish()
        finally:
            _local.inside = False

    def wait(self):
        """Until no chunk is running."""
        with self.cond:
            while self.running:
                self.cond.wait()


class _Pool:
    """Worker threads, each blocking on ``tickets`` for a call to join."""

    def __init__(self):
        self.tickets = queue.SimpleQueue()
        self.workers = []
        self.lock = threading.Lock()

    def post(self, call, helpers):
        """Let ``helpers`` workers join ``call`` (starting workers as needed)."""
        with self.lock:
            while len(self.workers) < helpers:
                t = threading.Thread(target=self._serve, daemon=True,
                                     name=f"nets-worker-{len(self.workers)}")
                t.start()
                self.workers.append(t)
        for _ in range(helpers):
            self.tickets.put(call)

    def _serve(self):
        while True:
            self.tickets.get().work()


_pool = None
_pool_lock = threading.Lock()
_local = threading.local()  # inside: this thread runs a chunk; counts: count_threads lists


def _the_pool():
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = _Pool()
        return _pool


def _after_fork_in_child():
    """The child has none of the parent's threads: forget them (and any lock a parent
    thread held at the fork); workers start anew on first use."""
    global _pool, _pool_lock, _setting_lock
    _pool, _pool_lock, _setting_lock = None, threading.Lock(), threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def parallel_for(body, count, work=None, chunk=None, threads=None):
    """``body(lo, hi)`` over chunks covering ``[0, count)`` once, on up to ``threads``
    threads (None: ``get_num_threads()``; the caller included); returns when every chunk is
    done.

    ``work`` estimates the elements the whole call touches: a call gets one thread per
    ``GRAIN`` of it at most (None: as many threads as items). ``chunk`` fixes the chunk
    size; by default chunks are guided: each a ``1 / (2 * threads)`` share of the rows left,
    down to ``count / (threads * CHUNKS)``, so the threads' last chunks end close together
    and the caller seldom sleeps waiting for a worker's. Chunks run in any order and at once, so
    they must write disjoint outputs. Serial (one ``body(0, count)`` call in the caller)
    with one thread, with little work, or when called from inside a chunk.
    """
    if count <= 0:
        return
    most = get_num_threads() if threads is None else min(threads, get_num_threads())
    threads = 1 if work is not None and work < 2 * GRAIN else min(most, count)
    if work is not None:
        threads = min(threads, work // GRAIN)
    if threads <= 1 or getattr(_local, "inside", False):
        body(0, count)
        _note(1)
        return
    share = 0
    if chunk is None:  # guided: each chunk a share of what is left, down to the smallest
        chunk, share = -(-count // (threads * CHUNKS)), 2 * threads
    call = _Call(body, count, chunk, share)
    _the_pool().post(call, min(threads, -(-count // chunk)) - 1)
    try:
        call.work()
        call.wait()
    except BaseException:  # an interrupt outside the chunks: no further chunk starts
        call.stop = True
        raise
    call.body = None  # workers still holding a ticket for it find nothing left
    _note(len(call.threads))
    if call.error is not None:
        raise call.error


def parallel_map(fn, count, threads=None):
    """``[fn(0), ..., fn(count - 1)]`` on up to ``threads`` threads (None:
    ``get_num_threads()``), each taking the next index whenever it finishes one
    (``parallel_for`` in chunks of one)."""
    results = [None] * count

    def body(lo, hi):
        for i in range(lo, hi):
            results[i] = fn(i)
    parallel_for(body, count, chunk=1, threads=threads)
    return results


def _note(threads):
    counts = getattr(_local, "counts", None)
    if counts is not None:
        counts.append(threads)


@contextlib.contextmanager
def count_threads():
    """Within it, each ``parallel_for``/``parallel_map`` call this thread makes appends to
    the yielded list the number of distinct threads that ran its chunks (for tests)."""
    counts, outer = [], getattr(_local, "counts", None)
    _local.counts = counts
    try:
        yield counts
    finally:
        _local.counts = outer
