"""The same-machine path of a distributed store's data calls: arrays in shared memory,
the call itself through the worker's channel to the server (``nets.kv.channel``).

A channel's frame carries its arrays in its body: through the socket, a copy into the
kernel and one out of it on each side. When a worker and a server run on the same
machine, a call's large numpy arrays (``STAGE_BYTES`` or more) travel instead through
files of the shared-memory file system (``/dev/shm``, mode 0600, names
``nets-kv-<worker's process id>-<random>``) owned by the worker:

- the worker writes the request's large arrays into one of its segments and replaces
  each by a ``Staged(offset, shape, dtype)`` in the message (``Pool.request``); the
  server views them in place (``Maps.unstage``) during the call;
- the worker names a second segment for the answer; the server writes the answer's large
  arrays there (growing the file when it is too small: ``Maps.stage_into``) and answers the
  message with ``Staged`` entries, which the worker reads back (``Pool.answer``). An
  answer's ``Rows`` entry (rows of a held array) is gathered straight into the segment.

A segment is the worker's: it is busy from the call until the worker has read the answer
(then reused by later calls, its pages already allocated), and removed when the call
fails, when the pull that carried it is dropped unanswered (the server may still write
into it, so it is never reused), and at the worker's exit; a worker killed before its
exit leaves its files, and the next worker of this user on the machine removes them
(``sweep``). Calls to a server on another machine carry their arrays in the channel's
frames.
"""
import atexit
import contextlib
import math
import mmap
import os
import secrets
import weakref

import numpy as np

from ..arrays import aligned

__all__ = ["STAGE_BYTES", "Staged", "Rows", "Pool", "Maps", "available", "is_segment"]

# Arrays from this size go through the segments; smaller ones ride in the channel's frame,
# which then stays small enough for one system call on each side.
STAGE_BYTES = 4096
FOLDER = "/dev/shm"
PREFIX = "nets-kv-"
_ALIGN = 64


class Staged:
    """Where a staged array lies in its segment: ``offset`` (bytes), ``shape``, ``dtype``
    (numpy's dtype string); ``nbytes``, its size."""

    __slots__ = ("offset", "shape", "dtype")

    def __init__(self, offset, shape, dtype):
        self.offset, self.shape, self.dtype = offset, shape, dtype

    @property
    def nbytes(self):
        """The staged array's size in bytes."""
        return math.prod(self.shape) * np.dtype(self.dtype).itemsize


class Rows:
    """Rows ``positions`` of the numpy array ``source`` (``np.take(source, positions,
    axis=0)``; positions valid, the caller checked them), gathered only where the answer
    carrying them is written: straight into a reply segment (``Maps.stage_into``), or
    into the channel's frame (``array()``). ``source`` must not change until then."""

    __slots__ = ("source", "positions", "shape", "dtype", "nbytes")

    def __init__(self, source, positions):
        self.source, self.positions = source, positions
        self.shape = (len(positions),) + source.shape[1:]
        self.dtype = source.dtype
        self.nbytes = math.prod(self.shape) * self.dtype.itemsize

    def write(self, out):
        """Gather the rows into ``out`` (an array of this shape and dtype)."""
        # (mode "clip": "raise" would gather into a buffer first, then copy it into out)
        np.take(self.source, self.positions, axis=0, out=out, mode="clip")

    def array(self):
        """The rows as an aligned array of their own."""
        out = aligned.empty(self.shape, self.dtype)
        self.write(out)
        return out


def available():
    """Whether this machine has the shared-memory folder."""
    return os.path.isdir(FOLDER) and os.access(FOLDER, os.W_OK)


def is_segment(path):
    """Whether ``path`` names a file of the shared-memory folder with a segment's name (a
    server maps no other file a request names)."""
    return os.path.dirname(path) == FOLDER and os.path.basename(path).startswith(PREFIX)


def _walk(obj, leaf):
    """``obj`` (nested lists, tuples and dicts) with each leaf replaced by ``leaf(it)``."""
    if isinstance(obj, list):
        return [_walk(o, leaf) for o in obj]
    if isinstance(obj, tuple):
        return tuple(_walk(o, leaf) for o in obj)
    if isinstance(obj, dict):
        return {k: _walk(v, leaf) for k, v in obj.items()}
    return leaf(obj)


def _big(obj):
    return (isinstance(obj, Rows) or isinstance(obj, np.ndarray) and not obj.dtype.hasobject) \
        and obj.nbytes >= STAGE_BYTES


def _stage(obj):
    """``(obj with each large array or ``Rows`` entry replaced by a Staged entry, [(offset,
    array or Rows)], total bytes)``: the arrays laid out one after another, each aligned (an
    array met twice is laid out once), in one pass over ``obj``."""
    arrays, offsets, total = [], {}, 0

    def put(o):
        nonlocal total
        if not _big(o):
            return o
        at = offsets.get(id(o))
        if at is None:
            at = offsets[id(o)] = total
            arrays.append((at, o))
            total += -(-o.nbytes // _ALIGN) * _ALIGN
        return Staged(at, o.shape, o.dtype.str)
    return _walk(obj, put), arrays, total


def _copy_in(buf, arrays):
    """Write ``_stage``'s ``[(offset, array or Rows)]`` into ``buf``."""
    for at, o in arrays:
        out = np.frombuffer(buf, o.dtype, o.nbytes // o.dtype.itemsize, at).reshape(o.shape)
        if isinstance(o, Rows):
            o.write(out)
        else:
            np.copyto(out, o)


def _read(obj, mapping, copy=True):
    """``obj`` with each ``Staged`` entry replaced by its array in the buffer that
    ``mapping()`` gives (called at the first entry: not at all when there is none): a
    fresh aligned copy, or (``copy=False``) a writable view of the buffer. An array staged
    once for two entries (``_stage``) is read once: both entries get the same array."""
    buf, seen = None, {}

    def get(o):
        nonlocal buf
        if not isinstance(o, Staged):
            return o
        if o.offset in seen:
            return seen[o.offset]
        if buf is None:
            buf = mapping()
        dtype = np.dtype(o.dtype)
        view = np.frombuffer(buf, dtype, int(np.prod(o.shape, dtype=np.int64)),
                             o.offset).reshape(o.shape)
        got = seen[o.offset] = aligned.copy(view) if copy else view
        return got
    return _walk(obj, get)


class _Segment:
    """One file of the pool, mapped while it is in the pool."""

    def __init__(self):
        self.path = os.path.join(FOLDER, f"{PREFIX}{os.getpid()}-{secrets.token_hex(8)}")
        self.fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        self.size, self.map = 0, None

    def fit(self, nbytes):
        """Make the file at least ``nbytes`` long and map all of it."""
        size = os.fstat(self.fd).st_size
        if size < nbytes:
            os.ftruncate(self.fd, nbytes)
            size = nbytes
        if size != self.size:
            if self.map is not None:
                self.map.close()
            self.map, self.size = mmap.mmap(self.fd, size), size

    def remove(self):
        if self.map is not None:
            try:
                self.map.close()
            except BufferError:  # arrays still view it: unmapped once the last one goes
                pass
            self.map = None
        os.close(self.fd)
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


class Pool:
    """A worker's segments: ``call`` stages a request and names its answer's segment;
    ``answer`` reads the answer back and returns both to the pool."""

    def __init__(self):
        self._free, self._all = [], set()
        atexit.register(self.close)
        sweep()

    def _take(self, nbytes):
        seg = max(self._free, key=lambda s: s.size) if self._free else _Segment()
        if seg in self._free:
            self._free.remove(seg)
        self._all.add(seg)
        if nbytes:
            seg.fit(nbytes)
        return seg

    def request(self, args):
        """``(args with large arrays staged, request path or None, reply segment,
        segments)``: what a call to a server on this machine sends."""
        args, arrays, total = _stage(args)
        segs = []
        path = None
        if total:
            seg = self._take(total)
            _copy_in(seg.map, arrays)
            path = seg.path
            segs.append(seg)
        reply = self._take(0)
        segs.append(reply)
        return args, path, reply.path, segs

    def answer(self, got, segs, copy=True, release=True):
        """``got`` (a server's answer) with its staged arrays read from the reply segment
        (copies, or with ``copy=False`` views valid until the segments are reused), the
        call's segments returned to the pool (with ``release=False``: by ``release``)."""
        reply = segs[-1]

        def mapping():
            reply.fit(0)  # (the server may have grown it)
            return reply.map
        got = _read(got, mapping, copy)
        if release:
            self.release(segs)
        return got

    def release(self, segs):
        """Return the segments of an answered call to the pool (views of them are then
        invalid)."""
        self._free += [seg for seg in segs if seg in self._all]

    def release_later(self, owner, segs):
        """``release(segs)`` when ``owner`` is collected (not at exit: ``close`` then
        removes every segment)."""
        return _before_exit(weakref.finalize(owner, self.release, segs))

    def discard(self, segs):
        """Remove the segments of a call that failed or whose answer is dropped (those
        still the pool's: a segment is removed once, at the latest by ``close``)."""
        for seg in segs:
            if seg in self._all:
                self._all.discard(seg)
                if seg in self._free:
                    self._free.remove(seg)
                seg.remove()

    def abandon_later(self, owner, segs):
        """Remove ``segs`` when ``owner`` is collected unless ``detach()`` of the returned
        finalizer came first (not at exit: the store's last waits, run at exit, may still
        read them; ``close`` removes every segment after them)."""
        return _before_exit(weakref.finalize(owner, self.discard, segs))

    def close(self):
        for seg in list(self._all):
            self.discard([seg])
        self._free = []


def _before_exit(finalizer):
    """``finalizer``, made not to run at the interpreter's exit."""
    finalizer.atexit = False
    return finalizer


@contextlib.contextmanager
def probe_file():
    """A file in ``FOLDER`` holding a random token, removed on exit: yields ``(path,
    token)``, for a server to read back (``Server.sees``) and so show that it shares this
    machine's memory. Named like a segment (this process's id first), so that ``sweep``
    removes it when this process is killed before it could."""
    token = secrets.token_hex(16)
    path = os.path.join(FOLDER, f"{PREFIX}{os.getpid()}-probe-{token}")
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    try:
        try:
            os.write(fd, token.encode())
        finally:
            os.close(fd)
        yield path, token
    finally:
        os.unlink(path)


def sweep():
    """Remove the segments of this user's workers that ended without removing them (killed:
    a segment's name holds its worker's process id). A process id in use again keeps its
    files, which are then removed only once that process ends too."""
    try:
        names = os.listdir(FOLDER)
    except OSError:
        return
    uid = os.getuid()
    for name in names:
        pid = name[len(PREFIX):].partition("-")[0]
        if not name.startswith(PREFIX) or not pid.isdigit() or _alive(int(pid)):
            continue
        path = os.path.join(FOLDER, name)
        try:
            if os.stat(path).st_uid == uid:
                os.unlink(path)
        except OSError:
            pass


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


class Maps:
    """A server's mappings of the segments workers name, kept between calls (mapping a
    file again costs a page fault per page touched); at most ``keep`` of them, the
    least recently used dropped first (a dropped mapping lives on while arrays view it)."""

    def __init__(self, keep=16):
        self.keep, self._maps = keep, {}

    def get(self, path, nbytes=0):
        """The mapping of the whole segment ``path``, grown to ``nbytes`` first if it is
        shorter."""
        held = self._maps.pop(path, None)
        fd = os.open(path, os.O_RDWR)
        try:
            size = os.fstat(fd).st_size
            if size < nbytes:
                os.ftruncate(fd, nbytes)
                size = nbytes
            if held is None or len(held) != size:
                held = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        self._maps[path] = held
        while len(self._maps) > self.keep:
            self._maps.pop(next(iter(self._maps)))
        return held

    def unstage(self, args, path):
        """The server's side of a request: ``args`` with its staged arrays as writable
        views of the segment ``path``, valid during the call (the worker reuses the
        segment only after the answer)."""
        return args if path is None else _read(args, lambda: self.get(path), copy=False)

    def stage_into(self, result, path):
        """The server's side of an answer: ``result`` with its large arrays written into
        the segment ``path`` (grown when too small) and replaced by ``Staged``
        entries."""
        if path is None:
            return result
        staged, arrays, total = _stage(result)
        if total:
            try:
                buf = self.get(path, total)
            except FileNotFoundError:  # the worker dropped the call: nobody reads the answer
                return None
            _copy_in(buf, arrays)
        return staged
