"""``LibSVMReader``: the one reader that cuts LibSVM files into batches of CSR rows, shared by
the ``nets`` command, ``LibSVMIter`` and the users' own training loops.

Its pieces, each used by both the reader and ``LibSVMIter``:

- ``libsvm_files``: what a source names (a file, a pipe or FIFO, a folder, a list, MXNet's
  ``'a;b'``);
- the byte ranges of whole lines that a regular file (or a temporary copy of a stream or of
  a compressed file) is parsed in, block by block;
- ``rebatch``: consecutive blocks of rows cut into batches of consecutive rows;
- ``read_mode``: whether files are read into memory or streamed (``read='auto'``);
- ``Background``: an iterable run ahead of its consumer in a thread (the parse of the next
  block overlaps the training on the current one).
"""
import os
import queue
import re
import tempfile
import threading
import weakref
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import kernels, nd
from ..arrays.csr import CSRNDArray
from ..arrays.dense import NDArray
from ..base import NetsError
from ..parallel import get_num_threads
from .libsvm import (TextReader, _path, _positive, _Spec, block_arrays, libsvm_blocks,
                     libsvm_width, line_ranges, load_libsvm, max_line_bytes, read_blocks)

__all__ = ["LibSVMReader", "StreamWidthError", "rebatch", "read_mode", "available_memory",
           "libsvm_files", "Background", "READS"]

Source = Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]]
Batch = Tuple[CSRNDArray, NDArray]

READS = ("auto", "memory", "stream")
BLOCK_BYTES = 8 << 20  # the reader parses this many bytes of text at a time
MEMORY_SHARE = 4  # 'auto' reads files into memory when they take at most this part of it
COMPRESSION_RATIO = 10  # 'auto' counts a compressed file as this many times its size
SPOOL_BYTES = 16 << 20  # a stream is copied into its temporary file in pieces of this size


class StreamWidthError(NetsError, ValueError):
    """A stream (a pipe or FIFO) was to be scanned for its feature count: it can be read only
    once, and that read is needed for its rows. ``path`` names it."""

    def __init__(self, path: str):
        super().__init__(f"{path} is a pipe or FIFO, which can be read only once: give "
                         f"n_features (the feature count) to stream it, or read='memory'")
        self.path = path


# -- the files of a source ---------------------------------------------------------------------

def libsvm_files(source: Source, name: str = "source") -> List[str]:
    """The files read for ``source``, in order.

    Parameters
    ----------
    source : str, path-like, or a list of them
        A path (a regular file, or a stream such as a FIFO or ``/dev/stdin``), a directory
        (its regular files sorted by name, except nets' own: see below), a list of those, or
        MXNet's ``'a;b'`` list of paths.
    name : str
        The argument's name in error messages.

    Returns
    -------
    list of str
        The paths. A missing path raises ``NetsError`` naming ``name`` and the path.

    A directory's files skip what nets itself leaves there, which is never data (a file
    named explicitly is read whatever its name): hidden files (a name starting with ``.``,
    such as the temporary file ``.<file>.<pid>.<hex>.tmp`` of a write killed mid-way), the
    ``<file>.<pid>.<hex>.tmp`` temporaries of older nets versions, and ``load_libsvm``'s
    parse caches ``<file>.nets.npz``.
    """
    if isinstance(source, (list, tuple)):
        return [f for s in source for f in libsvm_files(s, name)]
    path = _path(source, name)
    if os.path.isdir(path):
        return [os.path.join(path, f) for f in sorted(os.listdir(path))
                if not _nets_own(f) and os.path.isfile(os.path.join(path, f))]
    if not os.path.exists(path) and ";" in path:
        return [f for s in path.split(";") if s for f in libsvm_files(s, name)]
    if not os.path.exists(path):
        raise NetsError(f"{name}={path!r}: no such file or directory")
    return [path]


_OLD_TEMPORARY = re.compile(r".+\.[0-9]+\.[0-9a-f]{8}\.tmp")  # write_atomically's, before


def _nets_own(name):
    """Whether a folder's file ``name`` is one nets leaves there that is not data: hidden
    (``write_atomically``'s temporaries among them), an older temporary, a parse cache."""
    return (name.startswith(".") or name.endswith(".nets.npz")
            or _OLD_TEMPORARY.fullmatch(name) is not None)


def readable(paths, source, name, spools):
    """``[(path, file to read)]`` for the non-empty ones of ``paths`` (empty files are
    skipped, as MXNet's reader does). A regular uncompressed file is read in place; a
    stream or a compressed file is first copied (decompressed) into a temporary file,
    appended to ``spools`` (``remove_files`` deletes them)."""
    out, streams = [], False
    for path in paths:
        with TextReader(path) as text:
            if text.regular and text.compression is None:
                out.append((path, path))
                continue
            streams |= not text.regular
            fd, tmp = tempfile.mkstemp(prefix="nets-libsvm-", suffix=".txt")
            spools.append(tmp)
            with os.fdopen(fd, "wb") as f:
                buf = np.empty(SPOOL_BYTES, np.uint8)
                while True:
                    n = text.readinto(buf)
                    if not n:
                        break
                    f.write(buf[:n])
            out.append((path, tmp))
    out = [(path, read) for path, read in out if os.path.getsize(read) > 0]
    if not out:
        raise NetsError(f"{name}={source!r}: no non-empty file to read"
                        + (" (a pipe or FIFO can be read only once)" if streams else ""))
    return out


def remove_files(paths):
    """Delete the files ``paths``, those already gone aside."""
    for path in paths:
        try:
            os.remove(path)
        except OSError:
            pass


def part_ranges(files, num_parts, part_index, block, max_line=None):
    """``[(path, file to read, (lo, hi)), ...]``: the byte ranges of whole lines, of about
    ``block`` bytes each, of part ``part_index`` when the ``files`` (``readable``'s), end to
    end, are cut into ``num_parts`` equal byte ranges; a line longer than ``max_line``
    (``max_line_bytes``' default) met while cutting raises ``LineTooLongError``."""
    sizes = [os.path.getsize(read) for _, read in files]
    total = sum(sizes)
    begin, end = part_index * total // num_parts, (part_index + 1) * total // num_parts
    out, offset = [], 0
    for (path, read), size in zip(files, sizes):
        lo, hi = min(max(begin - offset, 0), size), min(max(end - offset, 0), size)
        if hi > lo:
            try:
                with open(read, "rb") as f:
                    out += [(path, read, r) for r in line_ranges(f, size, lo, hi, block,
                                                                 max_line, path)]
            except OSError as e:
                raise NetsError(f"{path}: cannot read ({e.strerror})") from None
        offset += size
    return out


def range_blocks(ranges, spec, width, n_labels=None, order=None):
    """The ``(X, y)`` arrays (``block_arrays``') of the byte ``ranges`` (``part_ranges``'),
    parsed one at a time when asked for, in ``order`` (a permutation) if given."""
    for k in range(len(ranges)) if order is None else order:
        path, read, rng = ranges[k]
        for _, _, block in read_blocks(read, spec, [rng], name=path):
            yield block_arrays(block, spec, width, n_labels)


def take_rows(arr, idx):
    """Rows ``idx`` (int64) of a dense or CSR array: a slice (sharing memory) when ``idx`` is
    a contiguous ascending run, else a gather."""
    if idx.size and idx[-1] - idx[0] == idx.size - 1 and np.all(np.diff(idx) == 1):
        return arr[int(idx[0]):int(idx[-1]) + 1]
    if arr.stype == "csr":
        return nd.take(arr, NDArray(idx))
    return NDArray(arr.values[idx], arr.context)


def stack_rows(pieces):
    """Concatenate arrays (all CSR, or all dense) along the first axis."""
    if len(pieces) == 1:
        return pieces[0]
    if pieces[0].stype == "csr":
        return nd.concat(*pieces, dim=0)
    return NDArray(np.concatenate([p.values for p in pieces]), pieces[0].context)


# -- batches -----------------------------------------------------------------------------------

def rebatch(blocks: Iterable[tuple], batch_size: int) -> Iterator[tuple]:
    """Consecutive blocks of rows cut into batches of ``batch_size`` consecutive rows.

    Parameters
    ----------
    blocks : iterable of tuples of arrays
        Each a tuple such as ``(X, y)`` of arrays (CSR or dense) with the same number of
        rows; empty blocks and blocks shorter than a batch are fine. Read lazily: the next
        block is taken only when the current one is used up.
    batch_size : int
        Rows per batch (a positive integer).

    Yields
    ------
    tuple of arrays
        The batches, as if the blocks were joined into one array and sliced (the last batch
        smaller): a batch within a block is a view of it, one across blocks a copy.
    """
    batch_size = _positive(batch_size, "batch_size")
    held, n_held = [], 0  # the next batch's pieces, fewer than batch_size rows in all
    for block in blocks:
        a, n = 0, block[0].shape[0]
        while a < n:
            take = min(batch_size - n_held, n - a)
            piece = tuple(x[a:a + take] for x in block)
            a += take
            if take == batch_size:
                yield piece
                continue
            held.append(piece)
            n_held += take
            if n_held == batch_size:
                yield _joined(held)
                held, n_held = [], 0
    if held:
        yield _joined(held)


def _joined(pieces):
    """One batch of the rows of consecutive pieces (tuples of arrays)."""
    if len(pieces) == 1:
        return pieces[0]
    return tuple(stack_rows(list(column)) for column in zip(*pieces))


def _widened(X, n_features):
    """The CSR rows ``X`` with ``n_features`` columns (at least its own)."""
    if X.shape[1] == n_features:
        return X
    return nd.sparse.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_features))


def _max_line(value):
    """A reader's ``max_line_bytes`` argument, resolved (``libsvm.max_line_bytes``)."""
    return max_line_bytes(value)


# -- where a row or an index is, for error messages ------------------------------------------

def row_location(files: Sequence[str], row: int) -> Optional[Tuple[str, int]]:
    """``(path, line)``: where row ``row`` (0-based, counting the rows of ``files`` end to
    end, as a reader yields them) is, the file read again; None when a file before it is a
    stream (a pipe or FIFO, which cannot be read again) or the row is not there. For error
    messages: it reads the files in Python."""
    for path in files:
        if not os.path.isfile(path):
            return None
        line = 0
        with TextReader(path) as text:
            for buf in text.blocks(SPOOL_BYTES):
                pieces = buf.tobytes().split(b"\n")
                for text_line in pieces[:-1] if buf[-1] == 10 else pieces:
                    line += 1
                    if text_line.split(b"#", 1)[0].strip(b" \t\r"):  # (blank lines and
                        if row == 0:                                  # comments are no rows)
                            return path, line
                        row -= 1
    return None


def index_location(files: Sequence[str], index: int,
                   zero_based: bool = True) -> Optional[Tuple[str, int]]:
    """``(path, line)`` of the first line of ``files`` holding the feature index ``index``
    (as the reader numbers it); None when it is not found before a stream (a pipe or FIFO,
    which cannot be read again). For error messages: it parses the files again up to it."""
    for path in files:
        if not os.path.isfile(path):
            return None
        try:
            for _ in libsvm_blocks(path, index, zero_based, block=BLOCK_BYTES):
                pass
        except NetsError as e:  # the index is out of range for n_features=index: found
            if getattr(e, "code", None) == kernels.libsvm.RANGE:
                return path, e.line
            raise
    return None


# -- memory or stream --------------------------------------------------------------------------

def available_memory() -> Optional[int]:
    """Bytes of memory this process may still take: ``MemAvailable`` of /proc/meminfo,
    capped by a cgroup v2 limit less its usage and by the process's address-space limit
    (``RLIMIT_AS``, ``ulimit -v``) less its size; None where none is known."""
    found = []
    try:
        import resource
        cap = resource.getrlimit(resource.RLIMIT_AS)[0]
        if cap != resource.RLIM_INFINITY:
            with open("/proc/self/status") as f:
                found += [cap - int(line.split()[1]) * 1024 for line in f
                          if line.startswith("VmSize:")]
    except (ImportError, OSError, ValueError, IndexError):
        pass
    try:
        with open("/proc/meminfo") as f:
            found += [int(line.split()[1]) * 1024 for line in f
                      if line.startswith("MemAvailable:")]
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
        if limit != "max":
            with open("/sys/fs/cgroup/memory.current") as f:
                found.append(int(limit) - int(f.read().strip()))
    except (OSError, ValueError):
        pass
    return min(found) if found else None


def read_mode(read: str, sources: Sequence[Source]) -> str:
    """How ``LibSVMReader`` reads the files of ``sources``: ``'memory'`` or ``'stream'``.

    Parameters
    ----------
    read : {'auto', 'memory', 'stream'}
        An explicit ``'memory'`` or ``'stream'`` is kept. ``'auto'`` gives ``'memory'`` when
        every file is regular and their sizes (a compressed file's times
        ``COMPRESSION_RATIO``) add up to at most ``1 / MEMORY_SHARE`` of
        ``available_memory()``, else ``'stream'`` (a pipe or FIFO, whose size is unknown;
        memory that cannot be measured).
    sources : list of sources
        Each a source as ``LibSVMReader`` takes it; decided over all of them together (a
        training file and its validation file share the memory).

    Returns
    -------
    str
        ``'memory'`` or ``'stream'``.
    """
    if read not in READS:
        raise NetsError(f"read={read!r}: expected one of {READS}")
    if read != "auto":
        return read
    total = 0
    for path in (f for source in sources for f in libsvm_files(source)):
        if not os.path.isfile(path):  # a pipe or FIFO: its size is unknown
            return "stream"
        with TextReader(path) as text:
            total += os.path.getsize(path) * (COMPRESSION_RATIO if text.compression else 1)
    available = available_memory()
    return "memory" if available is not None and total * MEMORY_SHARE <= available else "stream"


class LibSVMReader:
    """Batches ``(X, y)`` of the rows of LibSVM files, in file order: ``X`` a CSR
    ``(rows, n_features)`` float32 array, ``y`` a float32 ``NDArray`` of the lines' labels;
    every batch holds ``batch_size`` rows but the last of a pass, which holds the rest (no
    padding). ``for X, y in reader`` is one pass over the files; each ``for`` starts a new
    one. It is the ``nets`` command's reader, and ``LibSVMIter`` cuts its batches with the
    same ``rebatch``.

    Parameters
    ----------
    source : str, path-like, or a list of them
        A file (regular, compressed with gzip, bzip2 or xz, or a stream: a pipe, a FIFO,
        ``/dev/stdin``), a folder (its files in name order, skipping hidden files, nets'
        temporaries and ``*.nets.npz`` parse caches: ``libsvm_files``), a list of those, or
        MXNet's ``'a;b'``; the files are read one after the other as one.
    batch_size : int
        Rows per batch.
    n_features : int, optional
        The feature count (``X``'s width). None: found from the files (read whole in memory;
        scanned first when streamed, which a pipe or FIFO cannot be:
        ``StreamWidthError``). An index ``>= n_features`` raises ``NetsError`` naming the
        file and the line. Setting the attribute to a larger count widens the batches (e.g.
        to the width of a validation file).
    read : {'auto', 'memory', 'stream'}
        ``'memory'`` parses the files into memory and keeps them: with ``n_features``, block
        by block in a background thread (on one thread fewer than nets uses, when it uses
        several), so that the first batches are ready while the rest is parsed; without,
        whole, on every thread. ``'stream'`` parses ``block_bytes`` of text at a time at
        every pass: memory stays bounded by the block, whatever the files' size (a stream
        or a compressed file is first copied, decompressed, into a temporary file).
        ``'auto'``: ``read_mode``'s rule.
    zero_based : bool
        Whether the files' feature indices count from 0 (True) or 1.
    keep : bool
        ``'memory'`` only: keep the batches for later passes (True), or make one pass,
        letting each block go once its batches are used (a second pass raises ``NetsError``).
    block_bytes : int, optional
        Bytes of text parsed at a time (default ``BLOCK_BYTES``).
    max_line_bytes : int, optional
        The longest line read, in bytes (default: the environment variable
        ``NETS_MAX_LINE_BYTES``, else 64 MiB): a longer line raises ``LineTooLongError``
        naming the file and the line.

    Attributes
    ----------
    mode : str
        ``'memory'`` or ``'stream'``, as decided.
    num_batches : int or None
        Batches per pass: known once a pass has ended, or from the start when the files were
        read whole.

    ``close()`` (also on ``with``-exit) stops a background parse and deletes temporary
    copies.
    """

    def __init__(self, source: Source, batch_size: int, n_features: Optional[int] = None,
                 read: str = "auto", zero_based: bool = True, keep: bool = True,
                 block_bytes: Optional[int] = None, max_line_bytes: Optional[int] = None):
        self.batch_size = _positive(batch_size, "batch_size")
        if n_features is not None:
            n_features = _positive(n_features, "n_features")
        if zero_based not in (True, False):
            raise NetsError(f"zero_based={zero_based!r}: expected True or False")
        if not isinstance(keep, bool):
            raise NetsError(f"keep={keep!r}: expected True or False")
        block = _positive(BLOCK_BYTES if block_bytes is None else block_bytes, "block_bytes")
        self._max_line = max_line = _max_line(max_line_bytes)
        self.source, self.zero_based, self.keep = source, zero_based, keep
        self.files = libsvm_files(source)
        self.mode = read_mode(read, [self.files])
        self.num_batches = None
        self._spools, self._parse = [], None
        weakref.finalize(self, remove_files, self._spools)
        self._passes = 0
        if self.mode == "stream":
            if n_features is None:
                for path in self.files:
                    if not os.path.isfile(path):
                        raise StreamWidthError(path)
                n_features = max(libsvm_width(path, zero_based, max_line_bytes=max_line)
                                 for path in self.files)
            self._ranges = part_ranges(readable(self.files, source, "source", self._spools),
                                       1, 0, block, max_line)
        elif n_features is None:  # the width is the files': read them whole
            data = [load_libsvm(path, zero_based=zero_based, max_line_bytes=max_line)
                    for path in self.files]
            n_features = max([X.shape[1] for X, _ in data] or [0])
            self._blocks = [(_widened(X, n_features), y) for X, y in data]
            self.num_batches = -(-sum(X.shape[0] for X, _ in data) // self.batch_size)
        else:
            self._blocks = self._parse = self._parsed(n_features, block)
        self._width = n_features
        if self.mode == "memory":
            self._batches, self._kept = rebatch(self._blocks, self.batch_size), []

    def _parsed(self, n_features, block):
        """The files' ``(X, y)`` blocks, parsed ahead in a ``Background`` thread when nets
        uses several (the consumer keeps a core of its own), else as they are asked for."""
        threads = get_num_threads()
        blocks = (b for path in self.files
                  for b in libsvm_blocks(path, n_features, self.zero_based, block=block,
                                         threads=max(1, threads - 1),
                                         max_line_bytes=self._max_line))
        return blocks if threads == 1 else Background(blocks, name="nets-parse")

    @property
    def n_features(self) -> int:
        """The batches' width; set it to a larger count to widen them."""
        return self._width

    @n_features.setter
    def n_features(self, value: int):
        if value == self._width:
            return
        value = _positive(value, "n_features")
        if value < self._width:
            raise NetsError(f"n_features={value}: the reader's rows are {self._width} wide; "
                            f"they can be widened, not narrowed")
        self._width = value

    def __iter__(self) -> Iterator[Batch]:
        """One pass over the files' batches."""
        if self.mode == "memory" and not self.keep and self._passes:
            raise NetsError("LibSVMReader(keep=False) makes one pass: its batches are gone")
        self._passes += 1
        return self._pass()

    def _pass(self):
        count = 0
        for X, y in self._memory_pass() if self.mode == "memory" else self._stream_pass():
            count += 1
            yield _widened(X, self._width), y
        self.num_batches = count

    def _memory_pass(self):
        yield from self._kept
        for batch in self._batches:  # (the first pass; a later one finds them all kept)
            if self.keep:
                self._kept.append(batch)
            yield batch

    def _stream_pass(self):
        spec = _Spec(self._width, self.zero_based, "float32", max_line=self._max_line)
        return rebatch(range_blocks(self._ranges, spec, self._width), self.batch_size)

    def close(self) -> None:
        """Stop a background parse and delete the temporary copies of streams."""
        if self._parse is not None and hasattr(self._parse, "close"):
            self._parse.close()
        remove_files(self._spools)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# -- a producer thread -------------------------------------------------------------------------

_END = object()  # a producer thread's "no more items" mark


class _Raised:
    """An exception a producer thread hands over, to be raised by the consumer."""

    def __init__(self, error):
        self.error = error


def _produce(items, out, stop):
    """Thread body of ``Background``: hand each item of the iterator ``items`` to the queue
    ``out``, then ``_END``, or the exception it raised; stop early once ``stop`` is set. It
    holds no reference to its ``Background``, so an abandoned one can be collected."""
    try:
        for item in items:
            if stop.is_set():
                return
            out.put(item)
        item = _END
    except Exception as e:  # handed to the consumer, raised there
        item = _Raised(e)
    out.put(item)


class Background:
    """The items of an iterable, produced by a daemon thread ahead of the consumer:
    iterating yields them in order; an exception the iterable raises is raised there, after
    the items produced before it. ``close()`` stops the thread after the item it is
    producing and drops the waiting ones. One pass only.

    The thread starts at construction: the producer works while the caller prepares to
    consume (a kernel that releases the GIL, such as the LibSVM parser, runs on another
    core meanwhile).

    Parameters
    ----------
    iterable : iterable
        What the thread iterates over.
    ahead : int, optional
        At most this many items wait for the consumer (None: no bound, for a producer whose
        whole output fits in memory).
    name : str
        The thread's name.
    """

    def __init__(self, iterable: Iterable, ahead: Optional[int] = None,
                 name: str = "nets-background"):
        if ahead is not None and (not isinstance(ahead, int) or ahead < 1):
            raise NetsError(f"ahead={ahead!r}: expected a positive int or None")
        self._queue, self._stop = queue.Queue(maxsize=ahead or 0), threading.Event()
        self._thread = threading.Thread(target=_produce, args=(iter(iterable), self._queue,
                                                               self._stop),
                                        name=name, daemon=True)
        self._thread.start()

    def __iter__(self):
        return self

    def __next__(self):
        if self._thread is None:
            raise StopIteration
        item = self._queue.get()
        if item is _END or isinstance(item, _Raised):
            self._thread.join()
            self._thread = None
            if item is _END:
                raise StopIteration
            raise item.error
        return item

    def close(self):
        """Stop the thread (waiting for the item it is producing); iterating ends."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stop.set()
        while thread.is_alive():  # free the queue's slots: a blocked put returns
            try:
                self._queue.get(timeout=0.01)
            except queue.Empty:
                pass
        thread.join()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_thread", None) is not None:
            self.close()
