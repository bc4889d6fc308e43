"""Data iterators, as MXNet's ``mx.io``: ``DataBatch``, ``DataDesc``, ``DataIter``,
``NDArrayIter`` (dense or CSR arrays in memory), ``LibSVMIter`` (LibSVM files streamed in
blocks), ``ResizeIter`` (a fixed number of batches per pass) and ``PrefetchingIter`` (the
next batch read in a background thread).

Iterating an iterator continues the current pass; ``reset()`` starts a new one. CSR data is
batched as CSR: sliced or gathered by rows, never densified (MXNet 1.9's NDArrayIter
densified it, or refused to shuffle or pad it).
"""
import weakref
import os
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from .. import nd
from ..batch import DataBatch, DataDesc
from ..base import INDEX_DTYPE, NetsError, ShapeError, StorageTypeError
from ..arrays.csr import CSRNDArray
from ..arrays.dense import NDArray
from ..parallel import get_num_threads
from ..random import generator
from .libsvm import _positive, _Spec
from .reader import (Background, libsvm_files, part_ranges, range_blocks, readable, rebatch,
                     remove_files, stack_rows, take_rows)

__all__ = ["DataDesc", "DataBatch", "DataIter", "NDArrayIter", "LibSVMIter", "ResizeIter",
           "PrefetchingIter"]


class DataIter:
    """Base class of the iterators: ``for batch in it`` yields ``DataBatch``es of the current
    pass, ``reset()`` starts a new pass; ``next()``/``iter_next()`` step by hand and
    ``getdata()``/``getlabel()``/``getpad()``/``getindex()`` read the current batch.

    Subclasses implement ``reset()`` and ``_next_batch()`` (a ``DataBatch``, or None at the
    end of the pass).

    Parameters
    ----------
    batch_size : int
        Rows per batch (0 where the subclass has no fixed size).
    """

    #: Whether each batch is cut from arrays already in memory, with no file to read or
    #: text to parse: ``PrefetchingIter`` then makes it in the caller's thread, since a
    #: hand-over between threads (and of the GIL) costs more than such a batch.
    in_memory = False

    def __init__(self, batch_size: int = 0):
        self.batch_size = batch_size
        self._batch = None

    def __iter__(self):
        return self

    def __next__(self):
        return self.next()

    def reset(self) -> None:
        """Start a new pass."""
        raise NotImplementedError

    def _next_batch(self):
        raise NotImplementedError

    def iter_next(self) -> bool:
        """Move to the next batch; False at the end of the pass."""
        self._batch = self._next_batch()
        return self._batch is not None

    def next(self) -> DataBatch:
        """The next ``DataBatch``; ``StopIteration`` at the end of the pass."""
        if not self.iter_next():
            raise StopIteration
        return self._batch

    def _current(self):
        if self._batch is None:
            raise NetsError(f"{type(self).__name__} has no current batch: call next() first")
        return self._batch

    def getdata(self) -> List[NDArray]:
        """The current batch's data arrays."""
        return self._current().data

    def getlabel(self) -> List[NDArray]:
        """The current batch's label arrays."""
        return self._current().label

    def getpad(self) -> int:
        """How many rows of the current batch are padding."""
        return self._current().pad

    def getindex(self) -> Optional[np.ndarray]:
        """The current batch's example indices (None where the iterator keeps none)."""
        return self._current().index


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
    start of the pass (``batch.pad`` counts them), ``'discard'`` drops it, ``'roll_over'``
    keeps its examples for
    the first batch of the next pass: ``reset()`` after a complete pass starts the next pass
    with them, followed by that pass's examples (a second ``reset()``, or ``hard_reset()``,
    drops them). That first batch holds only real examples, so its ``pad`` is 0 (MXNet 1.9
    reported the number of rolled-over examples there, which made ``predict`` drop real
    outputs). A ``batch_size`` larger than the number of examples raises ``NetsError``
    with ``'pad'`` and ``'roll_over'``, whose batches would then repeat examples (a batch of
    10**9 rows over 10 examples; MXNet refuses it too); ``'discard'`` yields no batch. Its
    batches are slices of arrays in memory (``in_memory``): a ``PrefetchingIter`` over it
    makes them in the caller's thread.

    Parameters
    ----------
    data : array, list of arrays, or dict of name to array
        The examples' inputs, a row each: ``NDArray`` (dense or CSR), numpy or
        scipy.sparse.
    label : array, list of arrays, or dict of name to array, optional
        The examples' labels, as many rows.
    batch_size : int
        Rows per batch.
    shuffle : bool
        Draw a new order at every pass.
    last_batch_handle : {'pad', 'discard', 'roll_over'}
        What to do with a last batch smaller than ``batch_size`` (above).
    data_name, label_name : str
        The names of a single data or label array (``provide_data``/``provide_label``).
    """

    in_memory = True

    def __init__(self, data: Any, label: Any = None, batch_size: int = 1, shuffle: bool = False,
                 last_batch_handle: str = "pad", data_name: str = "data",
                 label_name: str = "softmax_label"):
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
        if last_batch_handle != "discard" and 0 < self.num_data < self.batch_size:
            raise NetsError(f"NDArrayIter: batch_size={self.batch_size} is larger than the "
                            f"{self.num_data} examples of {self.data[0][0]!r}: "
                            f"last_batch_handle={last_batch_handle!r} would repeat them to "
                            f"fill a batch; give a batch_size of at most {self.num_data}")
        self.shuffle, self.last_batch_handle = shuffle, last_batch_handle
        self._carry = np.zeros(0, INDEX_DTYPE)
        self.reset()

    @property
    def provide_data(self) -> List[DataDesc]:
        """The data arrays' names, batch shapes and dtypes."""
        return [DataDesc(k, (self.batch_size,) + v.shape[1:], v.dtype) for k, v in self.data]

    @property
    def provide_label(self) -> List[DataDesc]:
        """The label arrays' names, batch shapes and dtypes."""
        return [DataDesc(k, (self.batch_size,) + v.shape[1:], v.dtype) for k, v in self.label]

    @property
    def idx(self):
        """The order of the current pass: ``idx[k]`` is the input row of its k-th example."""
        return self._order

    def reset(self) -> None:
        """Start a new pass (a new order with ``shuffle``)."""
        self._order = (generator().permutation(self.num_data) if self.shuffle
                       else np.arange(self.num_data))
        self._seq = np.concatenate([self._carry, self._order]).astype(INDEX_DTYPE)
        self._carry = np.zeros(0, INDEX_DTYPE)
        self._cursor = 0

    def hard_reset(self) -> None:
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


def _shuffled(blocks):
    """Each block (a tuple of arrays with as many rows) with its rows in a random order."""
    for rows in blocks:
        perm = generator().permutation(rows[0].shape[0])
        yield tuple(take_rows(a, perm) for a in rows)


class LibSVMIter(DataIter):
    """Batches of LibSVM files read in ``chunk_bytes`` blocks: memory is bounded by the
    block size (three blocks at most: the one being cut into batches, the next one parsed
    ahead in a background thread when nets uses several threads, and one more waiting), not
    the file size. Yields ``DataBatch(data=[CSR (batch_size, n_features)],
    label=[labels], pad)``. ``data_libsvm`` (and ``label_libsvm``) is a file, a directory
    (its non-empty files in name order, skipping hidden files, the temporary files of nets'
    writes and ``load_libsvm``'s ``*.nets.npz`` caches: ``nets.data.reader.libsvm_files``),
    a list of those or MXNet's ``'a;b'`` string; the files are read one after the other as
    one stream.

    Labels: with ``label_libsvm``, the rows of that file as CSR ``(batch_size, k)`` for
    ``label_shape=(k,)`` (its own labels are ignored; it must have as many lines as
    ``data_libsvm``); otherwise, with ``label_shape=(1,)``, each line's label as a
    ``(batch_size,)`` float32 array, and with ``label_shape=(k,)``, multi-label lines
    (``1,3 0:0.5``) as a multi-hot CSR ``(batch_size, k)``.

    ``round_batch`` fills the last batch up with rows from the start of the part (``pad``
    counts them), otherwise with empty rows and zero labels (``pad`` counts those too). Each
    pass starts at the beginning of the part (MXNet's continued where the filling stopped).
    A part with fewer rows than ``batch_size`` raises ``NetsError`` (as MXNet's "number of
    input must be bigger than batch size"), ``round_batch`` or not, instead of a batch that
    repeats the rows or is mostly padding: the rows are counted as they are read, so the
    error comes at the end of the first pass over them, before any batch is yielded.
    ``num_parts``/``part_index``: the part read, for data-parallel readers; part p holds the
    lines starting in the p-th of ``num_parts`` equal byte ranges of the files put end to end
    (as MXNet), so the parts partition the rows. ``zero_based`` says whether indices count
    from 0 (as MXNet's) or 1. ``shuffle`` visits the blocks in a random order and shuffles the rows
    within each block (a block shuffle: memory stays bounded). An index ``>= n_features`` or
    a malformed line raises ``NetsError`` naming the file, line and token (MXNet silently
    moved such values into the next row). Its batches are cut by ``nets.data.rebatch``, as
    ``LibSVMReader``'s are (that reader yields unpadded ``(X, y)`` batches, read into memory
    or streamed).

    Parameters
    ----------
    data_libsvm : str, path-like, or a list of them
        The data: a file (regular, compressed, or a stream: a pipe or FIFO, copied into a
        temporary file first), a directory, a list of those, or MXNet's ``'a;b'``.
    data_shape : tuple of int
        ``(n_features,)``: the data's width; an index ``>= n_features`` is an error.
    label_libsvm : str, path-like, or a list of them, optional
        A file whose rows are the labels, line for line with ``data_libsvm``.
    label_shape : tuple of int
        ``(1,)``: a label per line; ``(k,)``: multi-label lines, or ``label_libsvm``'s width.
    batch_size : int
        Rows per batch.
    round_batch : bool
        Fill the last batch up with the part's first rows (True) or with empty rows.
    num_parts, part_index : int
        Read part ``part_index`` of ``num_parts`` (data-parallel readers).
    zero_based : bool
        Whether the indices count from 0 (True) or 1.
    shuffle : bool
        Visit the blocks in a random order and shuffle the rows within each.
    chunk_bytes : int
        Bytes of text per block (memory is bounded by it and by ``max_line_bytes``).
    data_name, label_name : str
        The names in ``provide_data`` and ``provide_label``.
    max_line_bytes : int, optional
        The longest line read, in bytes (default: the environment variable
        ``NETS_MAX_LINE_BYTES``, else 64 MiB): a longer line raises ``LineTooLongError``
        naming the file and the line.
    """

    def __init__(self, data_libsvm: Union[str, os.PathLike, Sequence[str]],
                 data_shape: Sequence[int],
                 label_libsvm: Optional[Union[str, os.PathLike, Sequence[str]]] = None,
                 label_shape: Sequence[int] = (1,), batch_size: Optional[int] = None,
                 round_batch: bool = True, num_parts: int = 1, part_index: int = 0,
                 zero_based: bool = True, shuffle: bool = False, chunk_bytes: int = 8 << 20,
                 data_name: str = "data", label_name: str = "softmax_label",
                 max_line_bytes: Optional[int] = None):
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
                                             n_labels if multilabel else None,
                                             max_line_bytes), self.n_features)]
        if label_libsvm is not None:
            self._sources.append((label_libsvm, _Spec(n_labels, zero_based, "float32",
                                                      max_line=max_line_bytes), n_labels))
        max_line = self._sources[0][1].max_line
        self._spools = []  # temporary copies of streams and compressed files
        weakref.finalize(self, remove_files, self._spools)
        self._blocks = [part_ranges(readable(libsvm_files(src, name), src, name, self._spools),
                                    num_parts, part_index, self._chunk, max_line)
                        for (src, _, _), name in zip(self._sources, ("data_libsvm",
                                                                      "label_libsvm"))]
        self.provide_data = [DataDesc(data_name, (self.batch_size, self.n_features))]
        self.provide_label = [DataDesc(label_name, (self.batch_size,) + self._label_shape)]
        self._head = None  # the part's first rows, once a last batch needed them
        self._parsers = []  # the current pass's Background parsers
        self._part = "" if num_parts == 1 else f" (part {part_index} of {num_parts})"
        self.reset()

    def _streams(self, order=None, shuffle=False, ahead=False):
        """Each source's batches (``rebatch``), over its blocks in ``order``, the rows of each
        block permuted with ``shuffle`` (``nets.random``, drawn in the calling thread). With
        ``ahead`` and nets on several threads, a ``Background`` thread parses each source's
        next block while the caller works on the current one, as MXNet's LibSVMIter reads
        ahead in a thread of its own."""
        ahead = ahead and get_num_threads() > 1
        streams = []
        for (_, spec, width), ranges in zip(self._sources, self._blocks):
            blocks = range_blocks(ranges, spec, width, spec.lab_limit + 1, order)
            if ahead:
                blocks = Background(blocks, ahead=1, name="nets-LibSVMIter")
                self._parsers.append(blocks)
            streams.append(rebatch(_shuffled(blocks) if shuffle else blocks, self.batch_size))
        return streams

    def reset(self) -> None:
        """Start a new pass at the beginning of the part (a new block order with
        ``shuffle``); a parse running ahead for the previous pass is stopped."""
        for parser in self._parsers:
            parser.close()
        self._parsers = []
        order = None
        if self.shuffle:
            order = generator().permutation(len(self._blocks[0]))
        self._active = self._streams(order, self.shuffle, ahead=True)
        self._rows = 0  # the pass's rows so far

    def _take(self, streams):
        """The next batch of each stream, checked to hold as many rows: ``(X, y, rows)``
        (``rows`` 0 at the end)."""
        got = [next(s, None) for s in streams]
        counts = [0 if g is None else g[0].shape[0] for g in got]
        if len(set(counts)) > 1:
            raise NetsError(f"label_libsvm={self._sources[1][0]!r} has a different number of "
                            f"lines than data_libsvm={self._sources[0][0]!r}")
        if not counts[0]:
            return None, None, 0
        X, y = got[0]
        return X, (got[1][0] if len(got) > 1 else y), counts[0]

    def _next_batch(self):
        X, y, n = self._take(self._active)
        if not self._rows and n < self.batch_size:  # the pass's first batch is its last
            what = f"data_libsvm={self._sources[0][0]!r}{self._part}"
            if not n:
                raise NetsError(f"LibSVMIter: {what} has no rows (only blank lines or "
                                f"comments, or a part with no line start)")
            raise NetsError(f"LibSVMIter: batch_size={self.batch_size} is larger than the {n} "
                            f"rows of {what}: a batch would repeat them or be mostly padding; "
                            f"give a batch_size of at most {n}")
        self._rows += n
        if n == 0:
            return None
        xs, ys, pad = [X], [y], self.batch_size - n
        if pad and self.round_batch:  # wrap around to the part's first rows
            hx, hy = self._first_rows()
            need = pad
            while need:
                k = min(need, hx.shape[0])
                xs, ys, need = xs + [hx[:k]], ys + [hy[:k]], need - k
        elif pad:
            xs.append(nd.sparse.zeros("csr", (pad, self.n_features), dtype=np.float32))
            ys.append(nd.sparse.zeros("csr", (pad,) + self._label_shape, dtype=np.float32)
                      if self._label_csr else NDArray(np.zeros(pad, np.float32)))
        return DataBatch([stack_rows(xs)], [stack_rows(ys)], pad=pad,
                         provide_data=self.provide_data, provide_label=self.provide_label)

    def _first_rows(self):
        """``(X, y)``: the part's first ``batch_size`` rows (all of them when it has fewer),
        in file order, which fill up a last batch. Parsed once per iterator and kept (at most
        a batch), not once per pass."""
        if self._head is None:
            X, y, _ = self._take(self._streams())
            self._head = X, y
        return self._head

    def getdata(self) -> CSRNDArray:
        """The current batch's data (one CSR array, as MXNet's LibSVMIter returns it)."""
        return self._current().data[0]

    def getlabel(self) -> NDArray:
        """The current batch's label array."""
        return self._current().label[0]


class ResizeIter(DataIter):
    """An iterator cut or stretched to a fixed number of batches per pass (MXNet's
    ``ResizeIter``): when the wrapped iterator ends early it is reset and continues.

    Parameters
    ----------
    data_iter : DataIter
        The wrapped iterator.
    size : int
        Batches per pass.
    reset_internal : bool
        Whether ``reset()`` resets ``data_iter`` too (False: the next pass continues where
        this one stopped).
    """

    def __init__(self, data_iter: DataIter, size: int, reset_internal: bool = True):
        super().__init__(data_iter.batch_size)
        self.data_iter, self.size = data_iter, _positive(size, "size")
        self.reset_internal = reset_internal
        self.in_memory = getattr(data_iter, "in_memory", False)
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key
        self.cur = 0

    def reset(self) -> None:
        """Start a new pass."""
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

    Parameters
    ----------
    iters : DataIter or list of DataIter
        The wrapped iterators.
    rename_data, rename_label : dict or list of dict, optional
        One dict per iterator, ``{old name: new name}``.
    """

    def __init__(self, iters: Union[DataIter, Sequence[DataIter]],
                 rename_data: Optional[Union[Dict[str, str], Sequence[Dict[str, str]]]] = None,
                 rename_label: Optional[Union[Dict[str, str],
                                              Sequence[Dict[str, str]]]] = None):
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

    def reset(self) -> None:
        """Stop the thread, reset the wrapped iterators and start the next pass."""
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
