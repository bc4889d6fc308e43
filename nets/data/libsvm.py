"""LibSVM text files: ``load_libsvm``/``save_libsvm``, and the block reader ``LibSVMIter``
streams with.

A file is read in blocks of whole lines: ``load_libsvm`` reads it front to back (so pipes,
FIFOs and gzip/bzip2/xz files read as regular files do), ``LibSVMIter`` by byte ranges of
a regular file (``line_ranges``); each block is parsed by a numba kernel over its raw
bytes (nets.kernels.libsvm documents the grammar), over line-aligned ranges that the threads
take in turn (``nets.parallel.parallel_map``: a thread whose core another process holds takes
fewer ranges instead of holding up the block). The writer formats values in ranges split
the same way (``parallel_for``). Bad input is never skipped: the kernel reports an error
code and a byte offset, turned here into a ``NetsError`` naming the file, the line number
and the offending token.
"""
from __future__ import annotations

import bz2
import contextlib
import functools
import gzip
import hashlib
import io
import lzma
import os
import re
import stat as stat_mode
import warnings
import zlib
from typing import TYPE_CHECKING, BinaryIO, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import kernels
from ..base import INDEX_DTYPE, DTypeError, NetsError, as_dtype
from ..arrays.creation import array, csr_matrix
from ..arrays.csr import CSRNDArray
from ..arrays.dense import NDArray
from ..parallel import get_num_threads, parallel_for, parallel_map
from ..serialization import load_arrays, save_arrays, write_atomically

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike

__all__ = ["load_libsvm", "save_libsvm", "libsvm_width", "libsvm_blocks", "LineTooLongError",
           "max_line_bytes"]

# load_libsvm reads and parses a file in blocks of this many bytes, then joins the blocks'
# arrays. Blocks this small keep each block's text buffer and arrays within what malloc
# serves again from memory freed earlier in the process; one buffer for the whole file would
# be new memory on every call, whose pages the operating system must fault in and zero.
LOAD_BLOCK = 8 << 20
PART_BYTES = 1 << 20  # a block is parsed in ranges of at least this size, by all threads,
MAX_PARTS = 16  # and in at most this many: enough for threads to balance a busy neighbour
_NO_LIMIT = 2 ** 62
MAX_LINE_BYTES = 64 << 20  # the longest line read by default (max_line_bytes)
MAX_LINE_ENV = "NETS_MAX_LINE_BYTES"


def max_line_bytes(value: Optional[int] = None) -> int:
    """The longest line, in bytes, that the LibSVM readers take.

    Parameters
    ----------
    value : int, optional
        A reader's ``max_line_bytes`` argument: a positive integer. None: the environment
        variable ``NETS_MAX_LINE_BYTES`` (a positive integer of bytes) if set and not
        blank, else ``MAX_LINE_BYTES`` (64 MiB).

    Returns
    -------
    int
        The limit. A bad value raises ``NetsError`` naming the argument or the variable.

    A line longer than the limit (its bytes before the ``'\\n'``) raises
    ``LineTooLongError`` naming the file and the line: without a limit, text with no line
    end (a binary file, a wrong path) would be held whole, in ever larger buffers, before
    its first line could be parsed. Memory while reading stays within about the block size
    plus the limit.
    """
    if value is not None:
        return _positive(value, "max_line_bytes")
    text = os.environ.get(MAX_LINE_ENV, "").strip()
    if not text:
        return MAX_LINE_BYTES
    if not text.isdigit() or int(text) < 1:
        raise NetsError(f"{MAX_LINE_ENV}={text!r}: expected a positive integer (the longest "
                        f"line read, in bytes; unset: {MAX_LINE_BYTES})")
    return int(text)


class LineTooLongError(NetsError, ValueError):
    """A line of a LibSVM file is longer than the readers' limit (``max_line_bytes``).
    ``path``, ``line`` (1-based) and ``limit`` say which and what."""

    def __init__(self, path: str, line: int, limit: int):
        super().__init__(f"{path}, line {line}: longer than {limit} bytes, the longest line "
                         f"read (raise it with max_line_bytes= or the environment variable "
                         f"{MAX_LINE_ENV}; a file without line ends is not LibSVM text)")
        self.path, self.line, self.limit = path, line, limit


class _LongLine(Exception):
    """``TextReader.blocks`` found a line longer than its limit; ``newlines``: the line ends
    of the text before it that were not yet yielded."""

    def __init__(self, newlines):
        super().__init__(newlines)
        self.newlines = newlines


def _long_line(buf, limit):
    """The line ends in ``buf`` (uint8) before the first of its lines (the last one may lack
    its ``'\\n'``) longer than ``limit`` bytes, or None when none is. Reads ``buf`` a
    mebibyte at a time: memory stays bounded."""
    if len(buf) <= limit:
        return None
    start, count, step = 0, 0, 1 << 20  # (start: where the current line starts)
    for lo in range(0, len(buf), step):
        ends = np.flatnonzero(buf[lo:lo + step] == 10) + lo
        if ends.size:
            lengths = ends - np.concatenate(([start], ends[:-1] + 1))
            long = np.flatnonzero(lengths > limit)
            if long.size:
                return count + int(long[0])
            start, count = int(ends[-1]) + 1, count + ends.size
        if min(lo + step, len(buf)) - start > limit:  # the current line is already longer
            return count
    return None


class _Spec:
    """How to parse: kernel parameters derived from the user's arguments."""

    def __init__(self, n_features, zero_based, dtype, multilabel=False, n_labels=None,
                 max_line=None):
        self.max_line = max_line_bytes(max_line)
        self.dtype = as_dtype(dtype)
        if self.dtype.kind != "f":
            raise DTypeError(f"dtype={dtype!r}: LibSVM values are read as floats "
                             f"(float16, float32 or float64)")
        if zero_based not in (True, False, "auto"):
            raise NetsError(f"zero_based={zero_based!r}: expected True, False or 'auto'")
        if n_features is not None and (not isinstance(n_features, (int, np.integer))
                                       or n_features < 0):
            raise NetsError(f"n_features={n_features!r}: expected a non-negative int or None")
        self.n_features, self.zero_based, self.multilabel = n_features, zero_based, multilabel
        self.f32 = self.dtype == np.float32
        n = _NO_LIMIT if n_features is None else int(n_features)
        # the largest index as written; 'auto' reads n as a candidate, an error if the file
        # turns out zero-based (the kernel remembers where the first one is: `pend`)
        self.limit = n - 1 if zero_based is True else n
        self.pend = n if zero_based == "auto" and n_features is not None else -1
        self.shift = 1 if zero_based is False else 0
        self.lab_limit = _NO_LIMIT if n_labels is None else n_labels - 1


class _Block:
    """The rows parsed from one byte range of a file, in kernel form (indices as written
    minus the spec's shift; float64 labels; qid -1 where absent). ``newlines`` counts the
    range's line ends; ``pend`` is ``(line ends before it in the range, token)`` of the first
    index equal to the spec's ``pend``, or None."""

    def __init__(self, labels, qids, lab_ptr, lab_ids, indptr, indices, data, saw_zero,
                 pend, newlines):
        self.labels, self.qids, self.lab_ptr, self.lab_ids = labels, qids, lab_ptr, lab_ids
        self.indptr, self.indices, self.data = indptr, indices, data
        self.saw_zero, self.pend, self.newlines = saw_zero, pend, newlines

    @property
    def rows(self):
        return len(self.indptr) - 1


_MESSAGES = {
    "BAD_LABEL": "malformed label (a line starts with a number)",
    "BAD_FEATURE": "malformed feature (expected index:value)",
    "BAD_INDEX": "malformed feature index (expected a non-negative integer of at most 18 "
                 "digits)",
    "BAD_VALUE": "malformed feature value (expected a number)",
    "ORDER": "feature index does not increase along the line (a duplicate or out-of-order "
             "index)",
    "ZERO_INDEX": "feature index 0 in a file read as one-based (zero_based=False)",
    "QID": "malformed qid (it must come right after the label, as qid:<non-negative integer>)",
    "MULTI": "several comma-separated labels (pass multilabel=True)",
    "DUP_LABEL": "duplicate label in a multi-label list",
}


def _message(code, spec):
    k = kernels.libsvm
    if code == k.RANGE:
        base = {True: "zero-based", False: "one-based", "auto": "zero-based: it has index 0"}
        return (f"feature index out of range for n_features={spec.n_features} "
                f"(the file is read as {base[spec.zero_based]})")
    if code == k.LABEL_RANGE:
        return f"label out of range for {spec.lab_limit + 1} labels"
    if code == k.BAD_LABEL and spec.multilabel:
        return "malformed label list (expected comma-separated non-negative integers)"
    return next(text for name, text in _MESSAGES.items() if getattr(k, name) == code)


_TOKEN = re.compile(rb"[^ \t\r\n#]*")  # a token: up to a blank, a line end or a comment


def _token(buf, pos):
    """The token starting at byte ``pos`` of ``buf``, as bytes."""
    return _TOKEN.match(buf, pos).group()


def _located(buf, pos):
    """``(line ends in buf before pos, the token at pos)``."""
    return (int(np.count_nonzero(buf[:pos] == 10)),
            _token(buf[:pos + 256], pos).decode("utf-8", "replace"))


def _count_lines(path, end):
    """Line ends in the first ``end`` bytes of the regular file ``path``."""
    count, pos = 0, 0
    with open(path, "rb") as f:
        while pos < end:
            piece = f.read(min(16 << 20, end - pos))
            if not piece:
                break
            count += piece.count(b"\n")
            pos += len(piece)
    return count


def _error(name, line, code, spec, token):
    """The ``NetsError`` for the kernel's error ``code`` at ``token`` on line ``line``; its
    attributes ``path``, ``line``, ``code`` and ``token`` say the same to a program."""
    error = NetsError(f"{name}, line {line}: {_message(code, spec)}: {token!r}")
    error.path, error.line, error.code, error.token = name, line, code, token
    return error


def _parse_part(buf, bounds, args, bases, outs, i):
    """Range ``i`` of a block (``kernels.libsvm.parse_part``), for ``parallel_map``."""
    return kernels.libsvm.parse_part(buf, bounds, i, *args, *bases, *outs)


def _parse(buf, spec, name, lines_before, threads=None):
    """Parse the whole lines in ``buf`` (uint8) of the file ``name`` -> _Block, on up to
    ``threads`` threads (None: ``get_num_threads()``). ``lines_before``: the file's line
    ends before ``buf`` (an int, or a function giving it: it is needed only to report an
    error)."""
    k = kernels.libsvm
    if buf.ctypes.data % 8:  # count_range reads 8-byte words (numpy's buffers are aligned)
        buf = buf.copy()
    threads = get_num_threads() if threads is None else threads
    parts = max(1, min(len(buf) // PART_BYTES, MAX_PARTS)) if threads > 1 else 1
    bounds = k.line_bounds(buf, parts)
    counts = np.array(parallel_map(lambda i: k.count_range(buf, bounds[i], bounds[i + 1]),
                                   parts, threads), np.int64).reshape(-1, 3)
    rows_cap = counts[:, 0] + 1
    row_base = np.concatenate(([0], np.cumsum(rows_cap)))
    nnz_base = np.concatenate(([0], np.cumsum(counts[:, 1])))
    lab_base = np.concatenate(([0], np.cumsum(counts[:, 2] + rows_cap) if spec.multilabel
                                    else np.zeros(parts, np.int64)))
    n_rows = row_base[-1]
    labels = np.empty(0 if spec.multilabel else n_rows)
    qids = np.empty(n_rows, INDEX_DTYPE)
    lab_ptr = np.empty(n_rows + parts if spec.multilabel else 0, INDEX_DTYPE)
    lab_ids = np.empty(lab_base[-1], INDEX_DTYPE)
    indptr = np.empty(n_rows + parts, INDEX_DTYPE)
    indices = np.empty(nnz_base[-1], INDEX_DTYPE)
    data = np.empty(nnz_base[-1], np.float32 if spec.f32 else np.float64)
    args = (spec.multilabel, spec.limit, spec.pend, spec.shift, spec.lab_limit)
    cap = 256  # slow tokens stored per range; rare (see kernels.libsvm): re-run if exceeded
    while True:
        slow_at = np.empty(cap * parts, INDEX_DTYPE)
        slow_pos = np.empty((cap * parts, 2), INDEX_DTYPE)
        call = (buf, bounds, args, (row_base, nnz_base, lab_base),
                (labels, qids, lab_ptr, lab_ids, indptr, indices, data, slow_at, slow_pos))
        stats = np.array(parallel_map(functools.partial(_parse_part, *call), parts, threads),
                         np.int64).reshape(-1, 8)
        failed = np.flatnonzero(stats[:, 4])
        if failed.size:  # the first error in file order
            pos = stats[failed[0], 5]
            nl, token = _located(buf, pos)
            before = lines_before() if callable(lines_before) else lines_before
            code = k.classify(stats[failed[0], 4], _token(buf, pos), spec.multilabel)
            raise _error(name, before + nl + 1, code, spec, token)
        if stats[:, 3].max() <= cap:
            break
        cap = int(stats[:, 3].max())
    rows, nnz, nlab = stats[:, 0], stats[:, 1], stats[:, 2]
    with np.errstate(over="ignore"):  # float32(1e39) is inf, as the file asks
        for c in range(parts):  # tokens the kernel left to Python's float()
            for at, (s, e) in zip(slow_at[c * cap:c * cap + stats[c, 3]],
                                  slow_pos[c * cap:c * cap + stats[c, 3]]):
                value = float(bytes(buf[s:e]))
                if at >= 0:
                    data[nnz_base[c] + at] = value
                else:
                    labels[row_base[c] - at - 1] = value

    def join(arr, base, n):
        if np.array_equal(base[:-2] + n[:-1], base[1:-1]):  # no gaps: a view, no copy (the
            return arr[:n.sum()]  # ':' counts are exact unless a comment or qid holds one)
        return np.concatenate([arr[base[c]:base[c] + n[c]] for c in range(parts)])

    def join_ptr(ptr, n_items):
        offsets = np.cumsum(n_items) - n_items
        pieces = [ptr[row_base[c] + c + 1:row_base[c] + c + 1 + rows[c]] + offsets[c]
                  for c in range(parts)]
        return np.concatenate([np.zeros(1, INDEX_DTYPE)] + pieces)

    pend = stats[:, 6][stats[:, 6] >= 0]
    return _Block(labels=None if spec.multilabel else join(labels, row_base, rows),
                  qids=join(qids, row_base, rows),
                  lab_ptr=join_ptr(lab_ptr, nlab) if spec.multilabel else None,
                  lab_ids=join(lab_ids, lab_base, nlab) if spec.multilabel else None,
                  indptr=join_ptr(indptr, nnz), indices=join(indices, nnz_base, nnz),
                  data=join(data, nnz_base, nnz), saw_zero=bool(stats[:, 7].any()),
                  pend=_located(buf, pend.min()) if pend.size else None,
                  newlines=int(counts[:, 0].sum()))


# -- byte ranges of whole lines -------------------------------------------------------------

def _line_start(f, pos, size, limit=_NO_LIMIT, name=None):
    """The first line start at or after byte ``pos`` of the open file ``f`` (named ``name``
    in errors); a line longer than ``limit`` bytes found on the way (more than ``limit``
    bytes from ``pos - 1`` to its end) raises ``LineTooLongError``: the scan reads at most
    ``limit`` bytes."""
    if pos <= 0:
        return 0
    f.seek(pos - 1)
    at = pos - 1
    while at < size:
        piece = f.read(1 << 16)
        if not piece:
            break
        k = piece.find(b"\n")
        if k >= 0:
            return at + k + 1
        at += len(piece)
        if at - (pos - 1) > limit:
            name = f.name if name is None else name
            raise LineTooLongError(name, _count_lines(f.name, pos - 1) + 1, limit)
    return size


def line_ranges(f: BinaryIO, size: int, begin: int, end: int, block: int,
                max_line: Optional[int] = None,
                name: Optional[str] = None) -> List[Tuple[int, int]]:
    """Byte ranges of the whole lines of a file that start in bytes ``[begin, end)``.

    Cutting a file (or several, end to end) at byte positions this way partitions its lines,
    as MXNet's InputSplit does for ``num_parts``.

    Parameters
    ----------
    f : binary file
        The file, open for reading (it is seeked).
    size : int
        Its size in bytes.
    begin, end : int
        The byte range whose line starts are taken.
    block : int
        About how many bytes each range holds (a longer line makes its range longer).
    max_line : int, optional
        The longest line (``max_line_bytes``' default): a range then holds at most
        ``block + max_line + 1`` bytes, and a longer line met while cutting raises
        ``LineTooLongError`` (``read_blocks`` finds any other).
    name : str, optional
        The file's name in errors (default ``f.name``).

    Returns
    -------
    list of (int, int)
        ``[(lo, hi), ...]``, consecutive, non-empty.
    """
    limit = max_line_bytes(max_line)
    lo = _line_start(f, begin, size, limit, name)
    hi = _line_start(f, end, size, limit, name)
    starts = [lo] + [_line_start(f, b, size, limit, name)
                     for b in range(lo + block, hi, block)] + [hi]
    starts = [min(s, hi) for s in starts]
    return [(a, b) for a, b in zip(starts[:-1], starts[1:]) if b > a]


def read_blocks(path: str, spec: "_Spec", ranges: Sequence[Tuple[int, int]],
                order: Optional[Sequence[int]] = None,
                name: Optional[str] = None) -> Iterator[tuple]:
    """Parse byte ranges of whole lines of a regular file, one at a time.

    Parameters
    ----------
    path : str
        The regular file.
    spec : _Spec
        How to parse (the feature count, the basing, the dtype, multi-label or not).
    ranges : list of (int, int)
        Byte ranges of whole lines (``line_ranges``').
    order : sequence of int, optional
        The order to parse them in, a permutation of their positions (default: as given).
    name : str, optional
        The file's name in error messages (default ``path``).

    Yields
    ------
    (int, int, block)
        ``(lo, hi, parsed rows)`` of each range; ``block_arrays`` turns the rows into arrays.
        A line longer than ``spec.max_line`` bytes raises ``LineTooLongError``.
    """
    name = path if name is None else name
    with open(path, "rb") as f:
        for k in range(len(ranges)) if order is None else order:
            lo, hi = ranges[k]
            buf = np.empty(hi - lo, np.uint8)
            f.seek(lo)
            if f.readinto(buf) != hi - lo:
                raise NetsError(f"{name}: the file changed while being read")
            long = _long_line(buf, spec.max_line)
            if long is not None:
                raise LineTooLongError(name, _count_lines(path, lo) + long + 1, spec.max_line)
            yield lo, hi, _parse(buf, spec, name, functools.partial(_count_lines, path, lo))


# -- sequential reading: streams and compressed files ---------------------------------------

class _Prefixed(io.RawIOBase):
    """The bytes ``head`` already read from the file ``rest``, then the rest of it."""

    def __init__(self, head, rest):
        super().__init__()
        self._head, self._rest = head, rest

    def readable(self):
        return True

    def readinto(self, out):
        if self._head:
            n = min(len(out), len(self._head))
            out[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        return self._rest.readinto(out)

    def close(self):
        self._rest.close()
        super().close()


# first bytes of the compressed formats read directly, and their readers (each reads
# concatenated streams, as `cat a.gz b.gz` makes, and raises on a truncated one)
_COMPRESSED = ((b"\x1f\x8b", "gzip", lambda f: gzip.GzipFile(fileobj=f)),
               (b"BZh", "bzip2", bz2.BZ2File), (b"\xfd7zXZ\x00", "xz", lzma.LZMAFile))
_DECOMPRESS_ERRORS = (OSError, EOFError, lzma.LZMAError, zlib.error)


class TextReader:
    """The text of a LibSVM file, read front to back: a regular file, a pipe, a FIFO,
    ``/dev/stdin``, a character device; a gzip, bzip2 or xz file (recognised by its first
    bytes, whatever its name) reads decompressed.

    Read and decompression errors raise ``NetsError`` naming ``path`` (a truncated
    compressed file is an error, not a shorter dataset).

    Parameters
    ----------
    path : str
        The file.

    Attributes
    ----------
    regular : bool
        Whether ``path`` is a regular file (``st``: its ``os.stat``).
    compression : str or None
        None, ``'gzip'``, ``'bzip2'`` or ``'xz'``.
    """

    def __init__(self, path: str):
        self.path = path
        try:
            self.st = os.stat(path)
            if stat_mode.S_ISDIR(self.st.st_mode):
                raise IsADirectoryError(21, "is a directory")
            raw = open(path, "rb")
        except OSError as e:
            raise NetsError(f"{path}: cannot read ({e.strerror})") from None
        self.regular, self.compression = stat_mode.S_ISREG(self.st.st_mode), None
        head = b""
        try:
            with self._reading():
                while len(head) < 6:  # a pipe may hand over fewer bytes than asked
                    piece = raw.read(6 - len(head))
                    if not piece:
                        break
                    head += piece
        except NetsError:
            raw.close()
            raise
        self._raw = self._file = io.BufferedReader(_Prefixed(head, raw), 1 << 20)
        for magic, kind, reader in _COMPRESSED:
            if head.startswith(magic):
                self.compression, self._file = kind, reader(self._raw)

    @contextlib.contextmanager
    def _reading(self):
        """Turns read and decompression errors into a ``NetsError`` naming the file."""
        try:
            yield
        except _DECOMPRESS_ERRORS as e:
            what = f"{self.compression} file" if self.compression else "file"
            raise NetsError(f"{self.path}: cannot read the {what} "
                            f"({getattr(e, 'strerror', None) or e})") from None

    def readinto(self, out):
        """Fill the uint8 array ``out``; the number of bytes read (fewer only at the end)."""
        n, view = 0, memoryview(out)
        with self._reading():
            while n < len(out):
                k = self._file.readinto(view[n:])
                if not k:
                    break
                n += k
        return n

    def blocks(self, block, max_line=None, first=None):
        """Yield the text as uint8 arrays of whole lines, each of about ``block`` bytes (one
        line longer than that makes its array longer), the first of about ``first`` bytes
        (default ``block``; at most ``block``). The arrays are views of one buffer
        that each block is read into: an array is valid until the next one is asked for (the
        parser copies what it keeps), and a long file touches the buffer's pages once
        instead of fresh memory for every block. A line longer than ``max_line`` bytes
        (default: ``max_line_bytes()``) raises ``_LongLine`` (the line ends before it, of
        the text not yet yielded): the buffer stays within ``block + max_line`` bytes."""
        limit = max_line_bytes() if max_line is None else max_line
        buf, kept = np.empty(block, np.uint8), 0  # kept: a partial line's bytes, at the start
        size = block if first is None else min(first, block)
        while True:
            if len(buf) < kept + size:  # (a line longer than a block)
                grown = np.empty(kept + size, np.uint8)
                grown[:kept] = buf[:kept]
                buf = grown
            end = kept + self.readinto(buf[kept:kept + size])
            long = _long_line(buf[:end], limit)
            if long is not None:
                raise _LongLine(long)
            if end < kept + size:  # the end of the text: its last line may lack a '\n'
                if end:
                    yield buf[:end]
                return
            cut = _last_newline(buf[:end]) + 1
            if cut:
                yield buf[:cut]
            kept = end - cut
            buf[:kept] = buf[cut:end]
            size = block

    def close(self):
        self._file.close()  # a decompressing reader leaves the file it reads open
        self._raw.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _last_newline(buf):
    """The position of the last '\n' in ``buf``, or -1."""
    step = 1 << 16
    for hi in range(len(buf), 0, -step):
        k = buf[max(0, hi - step):hi].tobytes().rfind(b"\n")
        if k >= 0:
            return max(0, hi - step) + k
    return -1


def block_arrays(block: "_Block", spec: "_Spec", n_features: int,
                 n_labels: Optional[int] = None) -> Tuple[CSRNDArray, NDArray]:
    """The arrays of parsed rows.

    Parameters
    ----------
    block : _Block
        Rows as ``read_blocks`` yields them.
    spec : _Spec
        How they were parsed.
    n_features : int
        The data's width.
    n_labels : int, optional
        The labels' width, for multi-label files.

    Returns
    -------
    (CSRNDArray, NDArray)
        ``X``, CSR ``(rows, n_features)``; ``y``, the labels as a float ``NDArray``, or a
        multi-hot CSR ``(rows, n_labels)`` for multi-label files.
    """
    with np.errstate(over="ignore"):  # a value beyond float16's range is inf, as in numpy
        X = CSRNDArray(block.data.astype(spec.dtype, copy=False), block.indices, block.indptr,
                       (block.rows, n_features))
        if not spec.multilabel:
            return X, NDArray(block.labels.astype(spec.dtype))
    return X, CSRNDArray(np.ones(len(block.lab_ids), spec.dtype), block.lab_ids,
                         block.lab_ptr, (block.rows, n_labels))


def _positive(value, name):
    """``value`` as an int, checked to be a positive integer (not a bool): else
    ``NetsError`` naming the argument ``name`` and the value."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise NetsError(f"{name}={value!r}: expected a positive integer")
    return int(value)


def _path(path, name="path"):
    try:
        return os.fspath(path)
    except TypeError:
        raise NetsError(f"{name}={path!r} is not a file path") from None


# -- load / save ----------------------------------------------------------------------------

def load_libsvm(path: Union[str, os.PathLike], n_features: Optional[int] = None,
                zero_based: Union[bool, str] = "auto", dtype: DTypeLike = "float32",
                multilabel: bool = False, query_id: bool = False, cache: bool = False,
                progress: bool = False, max_line_bytes: Optional[int] = None) -> tuple:
    """Read a LibSVM/svmlight file whole.

    Parameters
    ----------
    path : str or path-like
        A regular file or a stream read once front to back: a pipe, a FIFO,
        ``/dev/stdin``, bash's ``<(zcat f.gz)``. A gzip, bzip2 or xz file (recognised by its
        first bytes, whatever its name) is read decompressed, as it streams.
    n_features : int, optional
        ``X``'s width (default: the largest index + 1).
    zero_based : bool or 'auto'
        Whether indices count from 0 (True) or 1 (False); ``'auto'`` is scikit-learn's rule:
        one-based unless some index is 0.
    dtype : str or numpy dtype
        The values' and labels' float dtype (float16, float32 or float64).
    multilabel : bool
        Read lines like ``1,3 5:1.0``: ``y`` is then a multi-hot CSR ``(n_samples, largest
        label + 1)`` (the label ids are column numbers).
    query_id : bool
        Also return the ``qid:`` of each line.
    cache : bool
        Keep the arrays in ``path + '.nets.npz'`` and reuse them while the file is the same
        (see below).
    progress : bool
        Show a tqdm bar of bytes (without a total for a stream or a compressed file).
    max_line_bytes : int, optional
        The longest line read, in bytes (default: the environment variable
        ``NETS_MAX_LINE_BYTES``, else 64 MiB): a longer line raises ``LineTooLongError``
        naming the file and the line (``nets.data.libsvm.max_line_bytes``).

    Returns
    -------
    tuple
        ``(X, y)``, or ``(X, y, qid)`` with ``query_id``: ``X`` a ``CSRNDArray``
        ``(n_samples, n_features)`` of ``dtype``; ``y`` an ``NDArray`` of ``dtype`` (or the
        multi-hot CSR); ``qid`` an int64 ``NDArray``, -1 for lines without ``qid:``.
        Values equal Python's ``float(token)`` cast to ``dtype``; explicit zeros are kept.

    Malformed input (a bad token, an index that does not increase along a line, an index
    ``>= n_features``) raises ``NetsError`` naming the file, the line and the token; so do a
    truncated or corrupt compressed file and a read error.

    ``cache=True`` stores the result in ``path + '.nets.npz'`` (nets' pickle-free format,
    written atomically) and reuses it only while the file is the same: same size,
    modification time, status-change time (ctime), inode and device, and the same BLAKE2b
    hash of its content (the whole file up to 4 MiB; above that, 64 blocks of 64 KiB spread
    evenly over it, first and last included). Rewriting a file changes its ctime, which
    ``cp -p``, ``rsync -t`` or ``tar`` cannot set back (they restore the mtime only); the
    hash also catches a rewrite within the clock's tick. What it trusts: that a change to the
    file updates its ctime or touches a hashed block. The cache needs a regular file: with a
    stream (which has no stable identity) ``cache=True`` raises ``NetsError``.

    Parsing runs on ``nets.get_num_threads()`` threads.
    """
    path = _path(path)
    spec = _Spec(n_features, zero_based, dtype, multilabel, max_line=max_line_bytes)
    with TextReader(path) as text:
        if cache and not text.regular:
            raise NetsError(f"{path}: cache=True needs a regular file, not a pipe, FIFO or "
                            f"device (a stream has no identity to key a cache on)")
        key = cache_path = None
        if cache:
            key = {"file": {**_identity(text.st), "blake2b": _digest(path, text.st.st_size)},
                   "n_features": n_features,
                   "zero_based": zero_based, "dtype": spec.dtype.name,
                   "multilabel": bool(multilabel)}
            cache_path = path + ".nets.npz"
            hit = _read_cache(cache_path, key)
            if hit is not None:
                return hit if query_id else hit[:2]
        blocks = list(_parsed_blocks(text, spec, path, LOAD_BLOCK, progress))
    X, y, qid = _assemble(blocks, spec, path)
    if cache and _identity(os.stat(path)) == _identity(text.st):  # unchanged meanwhile
        _write_cache(cache_path, key, X, y, qid)
    return (X, y, qid) if query_id else (X, y)


def _parsed_blocks(text, spec, path, block, progress=False, threads=None, first=None):
    """The ``_Block``s of the open ``TextReader`` ``text`` (of the file ``path``), parsed
    ``block`` bytes at a time (the first ``first``: ``TextReader.blocks``), front to back,
    each on up to ``threads`` threads (None: ``get_num_threads()``); a tqdm bar of bytes
    with ``progress``."""
    plain = text.regular and text.compression is None
    lines, read = 0, 0
    with _Progress(progress, text.st.st_size if plain else None,
                   os.path.basename(path)) as bar:
        texts = text.blocks(block, spec.max_line, first)
        while True:
            try:
                buf = next(texts, None)
            except _LongLine as e:
                raise LineTooLongError(path, lines + e.newlines + 1, spec.max_line) from None
            if buf is None:
                break
            parsed = _parse(buf, spec, path, lines, threads)
            lines += parsed.newlines
            read += len(buf)
            bar.update(len(buf))
            yield parsed
    if plain and read != text.st.st_size:
        raise NetsError(f"{path}: the file changed while being read")


READ_BLOCK = 8 << 20  # libsvm_blocks' default block: a few training batches of rows
# libsvm_blocks' first block: a batch of rows or two, ready for a consumer that waits for
# them (a background parse's) sooner than a whole block
FIRST_BLOCK = 1 << 20


def libsvm_blocks(path: Union[str, os.PathLike], n_features: int, zero_based: bool = True,
                  dtype: DTypeLike = "float32", block: int = READ_BLOCK,
                  threads: Optional[int] = None,
                  max_line_bytes: Optional[int] = None) -> Iterator[Tuple[CSRNDArray, NDArray]]:
    """The rows of a LibSVM file as consecutive blocks, front to back, each parsed when the
    caller asks for it (the caller can use the first block while the file is still being
    read).

    Parameters
    ----------
    path : str or path-like
        The file; a stream or a compressed file too, as for ``load_libsvm``.
    n_features : int
        The data's width. Every block is read as the whole file would be: an index out of
        range raises ``NetsError`` naming its line when its block is parsed.
    zero_based : bool
        Whether indices count from 0 (True) or 1 (False).
    dtype : str or numpy dtype
        The values' and labels' float dtype.
    block : int
        Bytes of text per block (whole lines: a longer line makes its block longer); the
        first block is of at most ``FIRST_BLOCK`` bytes, so that its rows are ready sooner.
    threads : int, optional
        At most this many threads parse a block (None: ``nets.get_num_threads()``), e.g.
        fewer while other threads train on the blocks.
    max_line_bytes : int, optional
        The longest line read, as for ``load_libsvm``.

    Yields
    ------
    (CSRNDArray, NDArray)
        ``X`` ``(rows, n_features)`` and its labels ``y``, both of ``dtype``. The blocks
        joined are ``load_libsvm(path, n_features, zero_based, dtype)``'s ``(X, y)``, value
        for value.
    """
    path = _path(path)
    if zero_based not in (True, False):
        raise NetsError(f"zero_based={zero_based!r}: expected True or False")
    if n_features is None:
        raise NetsError("n_features=None: libsvm_blocks needs the feature count")
    block = _positive(block, "block")  # (bytes)
    threads = None if threads is None else _positive(threads, "threads")
    spec = _Spec(n_features, zero_based, dtype, max_line=max_line_bytes)
    with TextReader(path) as text:
        for parsed in _parsed_blocks(text, spec, path, block, threads=threads,
                                     first=FIRST_BLOCK):
            yield block_arrays(parsed, spec, int(n_features))


SCAN_BLOCK = 16 << 20  # libsvm_width reads and parses this many bytes at a time


def libsvm_width(path: Union[str, os.PathLike], zero_based: bool = True,
                 progress: bool = False, max_line_bytes: Optional[int] = None) -> int:
    """The feature count of a LibSVM file, in bounded memory.

    It reads the file front to back in blocks of ``SCAN_BLOCK`` bytes, keeping none: memory
    stays bounded whatever the file's size (``load_libsvm(path).shape[1]`` holds the whole
    file). Malformed input raises ``NetsError`` as ``load_libsvm`` does.

    Parameters
    ----------
    path : str or path-like
        The file (a stream is consumed by the scan).
    zero_based : bool
        Whether indices count from 0 (True) or 1 (False).
    progress : bool
        Show a tqdm bar of bytes.
    max_line_bytes : int, optional
        The longest line read, as for ``load_libsvm``.

    Returns
    -------
    int
        The largest feature index + 1 when zero-based, the largest index when one-based (0
        without features): ``load_libsvm(path, zero_based=...)`` gives ``X`` that width.
    """
    path = _path(path)
    if zero_based not in (True, False):
        raise NetsError(f"zero_based={zero_based!r}: expected True or False")
    spec = _Spec(None, zero_based, "float32", max_line=max_line_bytes)
    width = 0
    with TextReader(path) as text:
        for block in _parsed_blocks(text, spec, path, SCAN_BLOCK, progress):
            if block.indices.size:
                width = max(width, int(block.indices.max()) + 1)
    return width


HASH_WHOLE = 4 << 20  # the cache key hashes a file up to this size whole; a larger one in
HASH_BLOCKS, HASH_BLOCK = 64, 64 << 10  # this many blocks of this size, spread evenly


def _identity(st):
    """The stat fields the cache trusts to tell that a file is unchanged (``st``: its
    ``os.stat``); see ``_digest`` for its content."""
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns,
            "inode": st.st_ino, "device": st.st_dev}


def _digest(path, size):
    """BLAKE2b of the ``size`` and content of ``path``: all of it up to ``HASH_WHOLE`` bytes,
    else ``HASH_BLOCKS`` blocks spread evenly from its start to its end."""
    h = hashlib.blake2b(str(size).encode(), digest_size=16)
    with open(path, "rb") as f:
        if size <= HASH_WHOLE:
            h.update(f.read())
        else:
            for k in range(HASH_BLOCKS):
                f.seek(k * (size - HASH_BLOCK) // (HASH_BLOCKS - 1))
                h.update(f.read(HASH_BLOCK))
    return h.hexdigest()


def _assemble(blocks, spec, path):
    """Join the blocks of a whole file (in file order); settles 'auto' zero-basing and
    n_features."""
    def cat(name):
        parts = [getattr(b, name) for b in blocks]
        return parts[0] if len(parts) == 1 else np.concatenate(parts or [np.zeros(0)])

    def cat_ptr(name, items):
        offsets = np.cumsum([0] + [len(getattr(b, items)) for b in blocks])
        return np.concatenate([np.zeros(1, INDEX_DTYPE)] + [getattr(b, name)[1:] + o for b, o
                                                             in zip(blocks, offsets)])

    indices = cat("indices").astype(INDEX_DTYPE, copy=False)
    if spec.zero_based == "auto":
        if any(b.saw_zero for b in blocks):
            lines = 0
            for b in blocks:  # the first index == n_features was out of range after all
                if b.pend is not None:
                    raise _error(path, lines + b.pend[0] + 1, kernels.libsvm.RANGE, spec,
                                 b.pend[1])
                lines += b.newlines
        elif indices.size:
            indices -= 1
    n_features = spec.n_features
    if n_features is None:
        n_features = int(indices.max()) + 1 if indices.size else 0
    block = _Block(labels=None if spec.multilabel else cat("labels"),
                   qids=cat("qids").astype(INDEX_DTYPE, copy=False),
                   lab_ptr=cat_ptr("lab_ptr", "lab_ids") if spec.multilabel else None,
                   lab_ids=cat("lab_ids").astype(INDEX_DTYPE, copy=False)
                   if spec.multilabel else None,
                   indptr=cat_ptr("indptr", "indices"), indices=indices,
                   data=cat("data"), saw_zero=False, pend=None, newlines=0)
    n_labels = int(block.lab_ids.max()) + 1 if spec.multilabel and block.lab_ids.size else 0
    X, y = block_arrays(block, spec, n_features, n_labels)
    return X, y, NDArray(block.qids)


def _read_cache(cache_path, key):
    """The cached ``(X, y, qid)`` of ``key``'s file, or None. A cache made for another key
    is refused before any array is read, and one whose arrays inflate past what the source
    file can honestly hold (each row takes at least 2 bytes of text, each stored value 4)
    before they are inflated."""
    def check(config, declared):
        if config.get("source") != key:
            raise NetsError("stale")

    size = key["file"]["size"]
    # rows <= size / 2 (label, newline): y, qid and indptr; values <= size / 4 (i:v and a
    # separator): data and indices; 8 bytes each at most, plus the archive's own headers
    bound = 8 * (3 * (size // 2 + 2) + 2 * (size // 4 + 1)) + (1 << 16)
    try:
        arrays, _ = load_arrays(cache_path, check=check, max_bytes=bound)
        return arrays["X"], arrays["y"], arrays["qid"]
    except (NetsError, KeyError):
        pass  # a missing, stale, damaged or oversized cache is rebuilt
    return None


def _write_cache(cache_path, key, X, y, qid):
    try:
        save_arrays(cache_path, {"X": X, "y": y, "qid": qid}, config={"source": key})
    except (OSError, NetsError) as e:
        warnings.warn(f"load_libsvm: cannot write the cache {cache_path} ({e})", stacklevel=3)


class _Progress:
    """A tqdm bar over bytes when ``on``, else a no-op with the same ``update``."""

    def __init__(self, on, total, desc):
        self.bar = None
        if on:
            from tqdm.auto import tqdm
            self.bar = tqdm(total=total, unit="B", unit_scale=True, desc=desc)

    def update(self, n):
        if self.bar is not None:
            self.bar.update(n)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.close()


SAVE_BLOCK = 1 << 20  # save_libsvm formats about this many values at a time
# Work (``parallel_for``'s elements touched) of formatting one value: it tries up to 17
# digit counts, each a double-double product and a conversion back.
DECIMAL_WORK = 32


def save_libsvm(path: Union[str, os.PathLike], X: Union[CSRNDArray, ArrayLike],
                y: Union[NDArray, ArrayLike], zero_based: bool = True,
                query_id: Optional[ArrayLike] = None) -> None:
    """Write rows and labels as a LibSVM file that ``load_libsvm`` reads back to identical
    arrays.

    Each value is written as the shortest decimal that reads back exactly (``0.1``, not
    ``0.100000001``). The file is written atomically: an error or a killed process leaves a
    previous file at ``path`` whole.

    Parameters
    ----------
    path : str or path-like
        The file to write.
    X : CSRNDArray, or anything ``nd.sparse.csr_matrix`` accepts
        The rows ``(n_samples, n_features)``.
    y : array-like or CSRNDArray
        One label per row (1-D), or a CSR ``(n_samples, n_labels)`` whose stored columns per
        row are written as a multi-label list ``1,3``.
    zero_based : bool
        Write indices from 0 (True) or from 1 (False).
    query_id : array-like of int, optional
        One integer per row, -1 for none: adds ``qid:`` tokens.
    """
    path = _path(path)
    if not isinstance(X, CSRNDArray):
        X = csr_matrix(X)
    if X.dtype.kind != "f":
        X = X.astype(np.float64)
    multilabel = isinstance(y, CSRNDArray)
    if not multilabel:
        y = (y if isinstance(y, NDArray) else array(np.asarray(y))).asnumpy()
        if y.dtype.kind != "f":
            y = y.astype(np.float64)
        if y.ndim != 1:
            raise NetsError(f"y must be 1-D (one label per row) or a CSR array of label ids, "
                            f"got shape {y.shape}")
    n = X.shape[0]
    if y.shape[0] != n:
        raise NetsError(f"y has {y.shape[0]} rows, X has {n}")
    qids = np.zeros(0, INDEX_DTYPE)
    if query_id is not None:
        qids = np.asarray(query_id.asnumpy() if isinstance(query_id, NDArray) else query_id)
        if qids.shape != (n,) or qids.dtype.kind not in "iu" or qids.size and (
                qids.max() >= 10 ** 18 or qids.min() < -1):
            raise NetsError(f"query_id must hold {n} integers in [-1, 10**18), got "
                            f"{qids.dtype} of shape {qids.shape}")
        qids = qids.astype(INDEX_DTYPE)
    if multilabel:
        empty = np.flatnonzero((np.diff(y.indptr_array) == 0) & (np.diff(X.indptr_array) == 0)
                               & (qids < 0 if qids.size else True))
        if empty.size:
            raise NetsError(f"row {empty[0]} has no label, qid or feature: a LibSVM line "
                            f"cannot be empty (it would be skipped as a blank line)")
    step = max(1, SAVE_BLOCK // max(1, X.nnz // max(n, 1)))  # rows per block
    write_atomically(path, lambda f: _write_blocks(f, X, y, qids, multilabel, zero_based,
                                                   step))


def _write_blocks(f, X, y, qids, multilabel, zero_based, step):
    """Write the rows of ``X``/``y``/``qids`` (as ``save_libsvm`` checked them) to the binary
    file ``f``, ``step`` rows at a time."""
    n = X.shape[0]
    for a in range(0, n, step):
        b = min(n, a + step)
        Xb = X[a:b]
        vm, ve, vs = _decimals(Xb.values)
        if multilabel:
            yb = y[a:b]
            lm = le = ls = np.zeros(0, INDEX_DTYPE)
            lab_ptr, lab_ids = yb.indptr_array, yb.index_array
            width = 21 * len(lab_ids)
        else:
            lm, le, ls = _decimals(y[a:b])
            lab_ptr = lab_ids = np.zeros(0, INDEX_DTYPE)
            width = 0
        out = np.empty(64 * (Xb.nnz + (b - a)) + width, np.uint8)
        end = kernels.libsvm.write_rows(out, multilabel, lm, le, ls, lab_ptr, lab_ids,
                                        qids[a:b], Xb.indptr_array, Xb.index_array,
                                        0 if zero_based else 1, vm, ve, vs)
        f.write(out[:end])


def _decimals(x):
    """``(mant, exp10, status)`` of every value of ``x`` for ``write_rows``; values the kernel
    cannot certify are formatted by Python's ``repr`` (float64) / numpy's (float32)."""
    from decimal import Decimal
    k = kernels.libsvm
    if x.dtype not in (np.float32, np.float64):  # float16 values are float32 values
        x = x.astype(np.float32 if x.dtype.itemsize < 4 else np.float64)
    f32 = x.dtype == np.float32
    mant, exp10, status = (np.empty(len(x), INDEX_DTYPE) for _ in range(3))
    parallel_for(lambda lo, hi: k.shortest_decimals(x, f32, mant, exp10, status, lo, hi),
                 len(x), work=len(x) * DECIMAL_WORK)
    for i in np.flatnonzero(status == k.UNFORMATTED):
        sign, digits, e = Decimal(str(x[i]) if f32 else repr(float(x[i]))).as_tuple()
        m = int("".join(map(str, digits)))
        mant[i], exp10[i], status[i] = -m if sign else m, e, k.DECIMAL
    return mant, exp10, status
