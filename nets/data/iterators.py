"""Data iterators, as MXNet's ``mx.io``: ``DataBatch``, ``DataDesc``, ``DataIter``,
``NDArrayIter`` (dense or CSR arrays in memory), ``LibSVMIter`` (LibSVM files streamed in
blocks), ``ResizeIter`` (a fixed number of batches per pass) and ``PrefetchingIter`` (the
next batch read in a background thread).

Iterating an iterator continues the current pass; ``reset()`` starts a new one. CSR data is
batched as CSR: sliced or gathered by rows, never densified (MXNet 1.9's NDArrayIter
densified it, or refused to shuffle or pad it).
"""
import os
import queue
import tempfile
import threading
import weakref

import numpy as np

from .. import nd
from ..batch import DataBatch, DataDesc
from ..base import INDEX_DTYPE, NetsError, ShapeError, StorageTypeError
from ..arrays.csr import CSRNDArray
from ..arrays.dense import NDArray
from ..random import generator
from .libsvm import (TextReader, _path, _positive, _Spec, block_arrays, line_ranges,
                     read_blocks)

__all__ = ["DataDesc", "DataBatch", "DataIter", "NDArrayIter", "LibSVMIter", "ResizeIter",
           "PrefetchingIter", "Background"]


class DataIter:
    """Base class of the iterators: ``for batch in it`` yields ``DataBatch``es of the current
    pass, ``reset()`` starts a new pass; ``next()``/``iter_next()`` step by hand and
    ``getdata()``/``getlabel()``/``getpad()``/``getindex()`` read the current batch.

    Subclasses implement ``reset()`` and ``_next_batch()`` (a ``DataBatch``, or None at the
    end of the pass).
    """

    #: Whether each batch is cut from arrays already in memory, with no file to read or
    #: text to parse: ``PrefetchingIter`` then makes it in the caller's thread, since a
    #: hand-over between threads (and of the GIL) costs more than such a batch.
    in_memory = False

    def __init__(self, batch_size=0):
        self.batch_size = batch_size
        self._batch = None

    def __iter__(self):
        return self

    def __next__(self):
        return self.next()

    def reset(self):
        raise NotImplementedError

    def _next_batch(self):
        raise NotImplementedError

    def iter_next(self):
        """Move to the next batch; False at the end of the pass."""
        self._batch = self._next_batch()
        return self._batch is not None

    def next(self):
        """The next ``DataBatch``; ``StopIteration`` at the end of the pass."""
        if not self.iter_next():
            raise StopIteration
        return self._batch

    def _current(self):
        if self._batch is None:
            raise NetsError(f"{type(self).__name__} has no current batch: call next() first")
        return self._batch

    def getdata(self):
        return self._current().data

    def getlabel(self):
        return self._current().label

    def getpad(self):
        return self._current().pad

    def getindex(self):
        return self._current().index


def take_rows(arr, idx):
    """Rows ``idx`` (int64) of a dense or CSR array: a slice (sharing memory) when ``idx`` is
    a contiguous ascending run, else a gather."""
    if idx.size and idx[-1] - idx[0] == idx.size - 1 and np.all(np.diff(idx) == 1):
        return arr[int(idx[0]):int(idx[-1]) + 1]
    if arr.stype == "csr":
        return nd.take(arr, NDArray(idx))
    return NDArray(arr._np[idx], arr.context)


def stack_rows(pieces):
    """Concatenate arrays (all CSR, or all dense) along the first axis."""
    if len(pieces) == 1:
        return pieces[0]
    if pieces[0].stype == "csr":
        return nd.concat(*pieces, dim=0)
    return NDArray(np.concatenate([p._np for p in pieces]), pieces[0].context)


def _init_data(data, allow_empty, default_name):
    """``[(name, array)]`` from an array, a list of arrays or a dict, named as MXNet does: a
    dict's entries sorted by name, a list's ``_0_data``, ``_1_data``, ... in list order (one
    array alone: ``default_name``). Numpy, scipy and list inputs become arrays by
    ``nd.array``'s rule (numpy of any dtype -> float32, scipy keeps its dtype)."""
    if data is None:
        data = []
    if isinstance(data, dict):
        items = sorted(data.items(), key=lambda kv: kv[0])
    elif isinstance(data, (list, tuple)):
        items = [(default_name if len(data) == 1 else f"_{i}_{default_name}", d)
                 for i, d in enumerate(data)]
    else:
        items = [(default_name, data)]
    if not items and not allow_empty:
        raise NetsError(f"NDArrayIter needs data, got {data!r}")
    out = []
    for name, value in items:
        arr = value if isinstance(value, NDArray) else nd.array(value)
        if arr.stype == "row_sparse":
            raise StorageTypeError(f"NDArrayIter: {name!r} is row_sparse; it takes dense or "
                                   f"CSR arrays")
        if not arr.shape:
            raise ShapeError(f"NDArrayIter: {name!r} is a scalar; it needs one row per example")
        out.append((name, arr))
    return out


class NDArrayIter(DataIter):
    """Batches of in-memory arrays: ``data`` and ``label`` are an array (dense, CSR, numpy
    or scipy.sparse), a list of them or a dict ``{name: array}``, all with the same number of
    rows. CSR arrays give CSR batches.

    Inputs are named as MXNet names them: a dict's arrays sorted by name (``batch.data``
    and ``provide_data`` follow that order), a list's ``_0_data``, ``_1_data``, ...; numpy
    inputs, data and labels alike, are converted by ``nd.array``'s rule, so float64 and
    integer numpy arrays become float32 (MXNet 1.x; convert with ``nd.array(x, dtype=...)``
    first to keep another dtype).

    ``shuffle`` draws a new order from ``nets.random`` at every pass (``idx``: the order of
    the current pass, as row numbers of the inputs). ``last_batch_handle`` says what to do
    with a last batch smaller than ``batch_size``: ``'pad'`` fills it with examples from the
    start of the pass (``batch.pad`` counts them; when ``batch_size`` exceeds the number of
    examples they repeat), ``'discard'`` drops it, ``'roll_over'`` keeps its examples for
    the first batch of the next pass: ``reset()`` after a complete pass starts the next pass
    with them, followed by that pass's examples (a second ``reset()``, or ``hard_reset()``,
    drops them). That first batch holds only real examples, so its ``pad`` is 0 (MXNet 1.9
    reported the number of rolled-over examples there, which made ``predict`` drop real
    outputs). Its batches are slices of arrays in memory (``in_memory``): a
    ``PrefetchingIter`` over it makes them in the caller's thread.
    """

    in_memory = True

    def __init__(self, data, label=None, batch_size=1, shuffle=False, last_batch_handle="pad",
                 data_name="data", label_name="softmax_label"):
        super().__init__(_positive(batch_size, "batch_size"))
        if last_batch_handle not in ("pad", "discard", "roll_over"):
            raise NetsError(f"last_batch_handle={last_batch_handle!r}: expected 'pad', "
                            f"'discard' or 'roll_over'")
        self.data = _init_data(data, False, data_name)
        self.label = _init_data(label, True, label_name)
        self.num_data = self.data[0][1].shape[0]
        for name, arr in self.data + self.label:
            if arr.shape[0] != self.num_data:
                raise ShapeError(f"NDArrayIter: {name!r} has {arr.shape[0]} rows, "
                                 f"{self.data[0][0]!r} has {self.num_data}")
        self.shuffle, self.last_batch_handle = shuffle, last_batch_handle
        self._carry = np.zeros(0, INDEX_DTYPE)
        self.reset()

    @property
    def provide_data(self):
        return [DataDesc(k, (self.batch_size,) + v.shape[1:], v.dtype) for k, v in self.data]

    @property
    def provide_label(self):
        return [DataDesc(k, (self.batch_size,) + v.shape[1:], v.dtype) for k, v in self.label]

    @property
    def idx(self):
        """The order of the current pass: ``idx[k]`` is the input row of its k-th example."""
        return self._order

    def reset(self):
        self._order = (generator().permutation(self.num_data) if self.shuffle
                       else np.arange(self.num_data))
        self._seq = np.concatenate([self._carry, self._order]).astype(INDEX_DTYPE)
        self._carry = np.zeros(0, INDEX_DTYPE)
        self._cursor = 0

    def hard_reset(self):
        """Start a new pass without the examples ``'roll_over'`` kept from the last one."""
        self._carry = np.zeros(0, INDEX_DTYPE)
        self.reset()

    def _next_batch(self):
        start, size = self._cursor, self.batch_size
        if start >= len(self._seq):
            return None
        idx, pad = self._seq[start:start + size], 0
        self._cursor = start + size
        if len(idx) < size:
            if self.last_batch_handle == "discard":
                return None
            if self.last_batch_handle == "roll_over":
                self._carry = idx
                return None
            pad = size - len(idx)
            idx = np.concatenate([idx, np.resize(self._order, pad)])
        return DataBatch([take_rows(v, idx) for _, v in self.data],
                         [take_rows(v, idx) for _, v in self.label], pad=pad,
                         provide_data=self.provide_data, provide_label=self.provide_label)


def _width(shape, name):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if len(shape) != 1:
        raise ShapeError(f"{name}={shape!r}: LibSVMIter takes a 1-D shape, e.g. (n_features,)")
    return _positive(shape[0], f"{name}[0]")


def libsvm_files(source, name):
    """The files a LibSVMIter reads for ``source``: a path (a regular file, or a stream such
    as a FIFO or ``/dev/stdin``), a directory (its regular, non-hidden files, sorted by
    name), a list of those, or MXNet's ``'a;b'`` list of paths."""
    if isinstance(source, (list, tuple)):
        return [f for s in source for f in libsvm_files(s, name)]
    path = _path(source, name)
    if os.path.isdir(path):
        return [os.path.join(path, f) for f in sorted(os.listdir(path))
                if not f.startswith(".") and os.path.isfile(os.path.join(path, f))]
    if not os.path.exists(path) and ";" in path:
        return [f for s in path.split(";") if s for f in libsvm_files(s, name)]
    if not os.path.exists(path):
        raise NetsError(f"{name}={path!r}: no such file or directory")
    return [path]


SPOOL_BYTES = 16 << 20  # a stream is copied into its temporary file in pieces of this size


def _readable(paths, source, name, spools):
    """``[(path, file to read)]`` for the non-empty ones of ``paths`` (empty files are
    skipped, as MXNet's reader does). A regular uncompressed file is read in place; a
    stream or a compressed file is first copied (decompressed) into a temporary file,
    appended to ``spools``."""
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


def _remove_files(paths):
    for path in paths:
        try:
            os.remove(path)
        except OSError:
            pass


def _part_blocks(files, num_parts, part_index, block):
    """``[(path, file to read, (lo, hi)), ...]``: the byte ranges of whole lines of part
    ``part_index`` when the ``files`` (``_readable``'s), end to end, are cut into
    ``num_parts`` equal byte ranges."""
    sizes = [os.path.getsize(read) for _, read in files]
    total = sum(sizes)
    begin, end = part_index * total // num_parts, (part_index + 1) * total // num_parts
    out, offset = [], 0
    for (path, read), size in zip(files, sizes):
        lo, hi = min(max(begin - offset, 0), size), min(max(end - offset, 0), size)
        if hi > lo:
            try:
                with open(read, "rb") as f:
                    out += [(path, read, r) for r in line_ranges(f, size, lo, hi, block)]
            except OSError as e:
                raise NetsError(f"{path}: cannot read ({e.strerror})") from None
        offset += size
    return out


def _read(blocks, spec, order):
    for k in range(len(blocks)) if order is None else order:
        path, read, rng = blocks[k]
        yield from read_blocks(read, spec, [rng], name=path)


class _RowStream:
    """The rows of byte ranges of LibSVM files, parsed a block at a time."""

    def __init__(self, blocks, spec, order, width, n_labels, shuffle):
        self._blocks = _read(blocks, spec, order)
        self._spec, self._width, self._n_labels, self._shuffle = spec, width, n_labels, shuffle
        self._rows, self._pos = None, 0

    def take(self, n):
        """Up to ``n`` rows as a list of ``(X, y)`` pieces (fewer only at the end)."""
        pieces = []
        while n > 0:
            if self._rows is None or self._pos == self._rows[0].shape[0]:
                block = next(self._blocks, None)
                if block is None:
                    break
                self._rows = block_arrays(block[2], self._spec, self._width, self._n_labels)
                if self._shuffle:
                    perm = generator().permutation(self._rows[0].shape[0])
                    self._rows = tuple(take_rows(a, perm) for a in self._rows)
                self._pos = 0
                continue
            k = min(n, self._rows[0].shape[0] - self._pos)
            pieces.append(tuple(a[self._pos:self._pos + k] for a in self._rows))
            self._pos += k
            n -= k
        return pieces


class LibSVMIter(DataIter):
    """Batches of LibSVM files read in ``chunk_bytes`` blocks: memory is bounded by the
    block size, not the file size. Yields ``DataBatch(data=[CSR (batch_size, n_features)],
    label=[labels], pad)``. ``data_libsvm`` (and ``label_libsvm``) is a file, a directory
    (its non-empty, non-hidden files in name order), a list of those or MXNet's ``'a;b'``
    string; the files are read one after the other as one stream.

    Labels: with ``label_libsvm``, the rows of that file as CSR ``(batch_size, k)`` for
    ``label_shape=(k,)`` (its own labels are ignored; it must have as many lines as
    ``data_libsvm``); otherwise, with ``label_shape=(1,)``, each line's label as a
    ``(batch_size,)`` float32 array, and with ``label_shape=(k,)``, multi-label lines
    (``1,3 0:0.5``) as a multi-hot CSR ``(batch_size, k)``.

    ``round_batch`` fills the last batch up with rows from the start of the part (``pad``
    counts them), otherwise with empty rows and zero labels (``pad`` counts those too). Each
    pass starts at the beginning of the part (MXNet's continued where the filling stopped).
    ``num_parts``/``part_index``: the part read, for data-parallel readers; part p holds the
    lines starting in the p-th of ``num_parts`` equal byte ranges of the files put end to end
    (as MXNet), so the parts partition the rows. ``zero_based`` says whether indices count
    from 0 (as MXNet's) or 1. ``shuffle`` visits the blocks in a random order and shuffles the rows
    within each block (a block shuffle: memory stays bounded). An index ``>= n_features`` or
    a malformed line raises ``NetsError`` naming the file, line and token (MXNet silently
    moved such values into the next row).
    """

    def __init__(self, data_libsvm, data_shape, label_libsvm=None, label_shape=(1,),
                 batch_size=None, round_batch=True, num_parts=1, part_index=0, zero_based=True,
                 shuffle=False, chunk_bytes=8 << 20, data_name="data",
                 label_name="softmax_label"):
        super().__init__(_positive(batch_size, "batch_size"))
        self.n_features = _width(data_shape, "data_shape")
        n_labels = _width(label_shape, "label_shape")
        num_parts = _positive(num_parts, "num_parts")
        if not (isinstance(part_index, (int, np.integer)) and 0 <= part_index < num_parts):
            raise NetsError(f"part_index={part_index!r}: expected an integer in "
                            f"[0, num_parts={num_parts})")
        if zero_based not in (True, False):
            raise NetsError(f"zero_based={zero_based!r}: LibSVMIter streams the file, so it "
                            f"cannot infer the base; pass True or False")
        if label_libsvm is not None and (num_parts > 1 or shuffle):
            raise NetsError("LibSVMIter with label_libsvm reads both files in step: "
                            "num_parts > 1 and shuffle are not supported with it")
        self.round_batch, self.shuffle = bool(round_batch), bool(shuffle)
        self._chunk = _positive(chunk_bytes, "chunk_bytes")
        multilabel = n_labels > 1 and label_libsvm is None
        self._label_csr = n_labels > 1 or label_libsvm is not None
        self._label_shape = (n_labels,) if self._label_csr else ()
        self._sources = [(data_libsvm, _Spec(self.n_features, zero_based, "float32", multilabel,
                                             n_labels if multilabel else None), self.n_features)]
        if label_libsvm is not None:
            self._sources.append((label_libsvm, _Spec(n_labels, zero_based, "float32"),
                                  n_labels))
        self._spools = []  # temporary copies of streams and compressed files
        weakref.finalize(self, _remove_files, self._spools)
        self._blocks = [_part_blocks(_readable(libsvm_files(src, name), src, name,
                                               self._spools),
                                     num_parts, part_index, self._chunk)
                        for (src, _, _), name in zip(self._sources, ("data_libsvm",
                                                                      "label_libsvm"))]
        self.provide_data = [DataDesc(data_name, (self.batch_size, self.n_features))]
        self.provide_label = [DataDesc(label_name, (self.batch_size,) + self._label_shape)]
        self._head = None  # the part's first rows, once a last batch needed them
        self.reset()

    def _streams(self, order=None, shuffle=False):
        return [_RowStream(blocks, spec, order, width, spec.lab_limit + 1, shuffle)
                for (_, spec, width), blocks in zip(self._sources, self._blocks)]

    def reset(self):
        order = None
        if self.shuffle:
            order = generator().permutation(len(self._blocks[0]))
        self._active = self._streams(order, self.shuffle)

    def _take(self, streams, n):
        """Up to ``n`` rows from each stream, checked to be as many: ``(X pieces, y pieces)``."""
        got = [s.take(n) for s in streams]
        counts = [sum(p[0].shape[0] for p in g) for g in got]
        if len(set(counts)) > 1:
            raise NetsError(f"label_libsvm={self._sources[1][0]!r} has a different number of "
                            f"lines than data_libsvm={self._sources[0][0]!r}")
        xs = [p[0] for p in got[0]]
        ys = [p[0] for p in got[1]] if len(got) > 1 else [p[1] for p in got[0]]
        return xs, ys, counts[0]

    def _next_batch(self):
        xs, ys, n = self._take(self._active, self.batch_size)
        if n == 0:
            return None
        pad = self.batch_size - n
        if pad and self.round_batch:  # wrap around to the part's first rows (repeatedly)
            hx, hy = self._first_rows()
            need = pad
            while need:
                k = min(need, hx.shape[0])
                xs, ys, need = xs + [hx[:k]], ys + [hy[:k]], need - k
        elif pad:
            xs.append(CSRNDArray._empty((pad, self.n_features), np.float32))
            ys.append(CSRNDArray._empty((pad,) + self._label_shape, np.float32)
                      if self._label_csr else NDArray(np.zeros(pad, np.float32)))
        return DataBatch([stack_rows(xs)], [stack_rows(ys)], pad=pad,
                         provide_data=self.provide_data, provide_label=self.provide_label)

    def _first_rows(self):
        """``(X, y)``: the part's first ``batch_size`` rows (all of them when it has fewer),
        in file order, which fill up a last batch. Parsed once per iterator and kept (at most
        a batch), not once per pass."""
        if self._head is None:
            xs, ys, _ = self._take(self._streams(), self.batch_size)
            self._head = stack_rows(xs), stack_rows(ys)
        return self._head

    def getdata(self):
        """The current batch's data (one CSR array, as MXNet's LibSVMIter returns it)."""
        return self._current().data[0]

    def getlabel(self):
        """The current batch's label array."""
        return self._current().label[0]


class ResizeIter(DataIter):
    """``data_iter`` cut or stretched to ``size`` batches per pass (MXNet's ``ResizeIter``):
    when ``data_iter`` ends early it is reset and continues; ``reset()`` resets it too
    unless ``reset_internal=False`` (then the next pass continues where this one stopped).
    """

    def __init__(self, data_iter, size, reset_internal=True):
        super().__init__(data_iter.batch_size)
        self.data_iter, self.size = data_iter, _positive(size, "size")
        self.reset_internal = reset_internal
        self.in_memory = getattr(data_iter, "in_memory", False)
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key
        self.cur = 0

    def reset(self):
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def _next_batch(self):
        if self.cur == self.size:
            return None
        try:
            batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            try:
                batch = self.data_iter.next()
            except StopIteration:
                raise NetsError("ResizeIter: the wrapped iterator yields no batch even "
                                "right after reset()") from None
        self.cur += 1
        return batch


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
    """The items of ``iterable``, produced by a daemon thread ahead of the consumer:
    iterating yields them in order; an exception the iterable raises is raised there, after
    the items produced before it. At most ``ahead`` items wait for the consumer (None: no
    bound, for a producer whose whole output fits in memory). ``close()`` stops the thread
    after the item it is producing and drops the waiting ones. One pass only.

    The thread starts at construction: the producer works while the caller prepares to
    consume (a kernel that releases the GIL, such as the LibSVM parser, runs on another
    core meanwhile)."""

    def __init__(self, iterable, ahead=None, name="nets-background"):
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


def _rounds(iters):
    """One batch of each iterator in ``iters`` at a time, until they all end."""
    while True:
        batches = [next(it, None) for it in iters]
        if all(b is None for b in batches):
            return
        if any(b is None for b in batches):
            ended = [i for i, b in enumerate(batches) if b is None]
            raise NetsError(f"PrefetchingIter: iterators {ended} ended before the others; "
                            f"the wrapped iterators must yield as many batches")
        yield batches


class PrefetchingIter(DataIter):
    """Reads the next batch of ``iters`` (a ``DataIter`` or a list of them, yielding as many
    batches each) in a background thread while the current one is used (MXNet's
    ``PrefetchingIter``). Each batch joins the batches of all iterators: ``data`` and
    ``label`` are concatenated in the order of ``iters``; ``pad`` and ``index`` are the
    first iterator's (every iterator must report the same ``pad``). When every wrapped
    iterator is ``in_memory`` (``NDArrayIter``, a ``ResizeIter`` over one), there is nothing
    a thread could overlap (a batch is a slice of arrays in memory, made under the GIL) and
    the hand-over costs more than the batch: the batches are then made in the caller's
    thread, the same batches in the same order.

    ``rename_data``/``rename_label``: one dict per iterator, ``{old name: new name}``, for
    every name of its ``provide_data``/``provide_label``.

    The thread reads at most one batch ahead and ends with the pass; ``reset()`` waits for
    it, resets the wrapped iterators and starts the next pass. ``close()`` (also on
    ``with``-exit and garbage collection) stops it mid-pass. An exception raised by a
    wrapped iterator is raised by ``next()``.
    """

    def __init__(self, iters, rename_data=None, rename_label=None):
        super().__init__()
        self.iters = list(iters) if isinstance(iters, (list, tuple)) else [iters]
        if not self.iters:
            raise NetsError("PrefetchingIter needs at least one iterator")
        self.n_iter = len(self.iters)
        self.in_memory = all(getattr(it, "in_memory", False) for it in self.iters)
        self.rename_data = self._renames(rename_data, "rename_data")
        self.rename_label = self._renames(rename_label, "rename_label")
        self.provide_data = self._described("provide_data", self.rename_data)
        self.provide_label = self._described("provide_label", self.rename_label)
        self.batch_size = self.provide_data[0].shape[0] if self.provide_data else 0
        self._batches = None
        self._start()

    def _renames(self, renames, what):
        if renames is None:
            return None
        if isinstance(renames, dict):
            renames = [renames]
        if len(renames) != self.n_iter:
            raise NetsError(f"{what} has {len(renames)} entries for {self.n_iter} iterators; "
                            f"give one dict per iterator")
        return list(renames)

    def _described(self, attr, renames):
        out = []
        for k, it in enumerate(self.iters):
            for desc in getattr(it, attr, None) or []:
                desc = desc if isinstance(desc, DataDesc) else DataDesc(*desc)
                if renames is not None:
                    if desc.name not in renames[k]:
                        raise NetsError(f"PrefetchingIter: {attr} name {desc.name!r} of "
                                        f"iterator {k} has no entry in its rename dict "
                                        f"{renames[k]!r}")
                    desc = DataDesc(renames[k][desc.name], desc.shape, desc.dtype,
                                    desc.layout)
                out.append(desc)
        return out

    def _start(self):
        rounds = _rounds(self.iters)  # (a generator: ``close()`` ends it too)
        self._batches = rounds if self.in_memory else Background(rounds, ahead=1,
                                                                 name="nets-PrefetchingIter")

    def close(self):
        """Stop the prefetching thread (waiting for a batch being read); the iterator yields
        nothing more until ``reset()``."""
        if getattr(self, "_batches", None) is not None:
            self._batches.close()

    def reset(self):
        self.close()
        for it in self.iters:
            it.reset()
        self._start()

    def _next_batch(self):
        item = next(self._batches, None)
        if item is None:
            return None
        pads = {b.pad for b in item}
        if len(pads) > 1:
            raise NetsError(f"PrefetchingIter: the iterators' batches have different pads "
                            f"{[b.pad for b in item]}")
        return DataBatch(sum((list(b.data) for b in item), []),
                         sum((list(b.label or []) for b in item), []), pad=item[0].pad,
                         index=item[0].index, provide_data=self.provide_data,
                         provide_label=self.provide_label)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()
