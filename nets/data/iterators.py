"""Data iterators, as MXNet's ``mx.io``: ``DataBatch``, ``DataDesc``, ``DataIter``,
``NDArrayIter`` (dense or CSR arrays in memory) and ``LibSVMIter`` (a LibSVM file streamed
in blocks).

Iterating an iterator continues the current pass; ``reset()`` starts a new one. CSR data is
batched as CSR: sliced or gathered by rows, never densified (MXNet 1.9's NDArrayIter
densified it, or refused to shuffle or pad it).
"""
import os

import numpy as np

from .. import nd
from ..batch import DataBatch, DataDesc
from ..base import INDEX_DTYPE, NetsError, ShapeError, StorageTypeError
from ..ndarray.csr import CSRNDArray
from ..ndarray.dense import NDArray
from ..random import generator
from .libsvm import _path, _Spec, block_arrays, line_ranges, read_blocks

__all__ = ["DataDesc", "DataBatch", "DataIter", "NDArrayIter", "LibSVMIter"]


class DataIter:
    """Base class of the iterators: ``for batch in it`` yields ``DataBatch``es of the current
    pass, ``reset()`` starts a new pass; ``next()``/``iter_next()`` step by hand and
    ``getdata()``/``getlabel()``/``getpad()``/``getindex()`` read the current batch.

    Subclasses implement ``reset()`` and ``_next_batch()`` (a ``DataBatch``, or None at the
    end of the pass).
    """

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
    """``[(name, array)]`` from an array, a list of arrays or a dict (MXNet's naming)."""
    if data is None:
        if allow_empty:
            return []
        raise NetsError("NDArrayIter needs data, got None")
    if isinstance(data, dict):
        items = list(data.items())
    elif isinstance(data, (list, tuple)):
        items = [(default_name if len(data) == 1 else f"_{i}_{default_name}", d)
                 for i, d in enumerate(data)]
    else:
        items = [(default_name, data)]
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

    ``shuffle`` draws a new order from ``nets.random`` at every pass. ``last_batch_handle``
    says what to do with a last batch smaller than ``batch_size``: ``'pad'`` fills it with
    examples from the start of the pass (``batch.pad`` counts them), ``'discard'`` drops it,
    ``'roll_over'`` keeps its examples for the first batch of the next pass.
    """

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

    def reset(self):
        self._order = (generator().permutation(self.num_data) if self.shuffle
                       else np.arange(self.num_data))
        self._seq = np.concatenate([self._carry, self._order]).astype(INDEX_DTYPE)
        self._carry = np.zeros(0, INDEX_DTYPE)
        self._cursor = 0

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


def _positive(value, name):
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise NetsError(f"{name}={value!r}: expected a positive integer")
    return int(value)


def _width(shape, name):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if len(shape) != 1:
        raise ShapeError(f"{name}={shape!r}: LibSVMIter takes a 1-D shape, e.g. (n_features,)")
    return _positive(shape[0], f"{name}[0]")


class _RowStream:
    """The rows of some byte ranges of a LibSVM file, parsed a block at a time."""

    def __init__(self, path, spec, ranges, order, width, n_labels, shuffle):
        self._blocks = read_blocks(path, spec, ranges, order)
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
    """Batches of a LibSVM file read in ``chunk_bytes`` blocks: memory is bounded by the
    block size, not the file size. Yields ``DataBatch(data=[CSR (batch_size, n_features)],
    label=[labels], pad)``.

    Labels: with ``label_libsvm``, the rows of that file as CSR ``(batch_size, k)`` for
    ``label_shape=(k,)`` (its own labels are ignored; it must have as many lines as
    ``data_libsvm``); otherwise, with ``label_shape=(1,)``, each line's label as a
    ``(batch_size,)`` float32 array, and with ``label_shape=(k,)``, multi-label lines
    (``1,3 0:0.5``) as a multi-hot CSR ``(batch_size, k)``.

    ``round_batch`` fills the last batch up with rows from the start of the part (``pad``
    counts them), otherwise with empty rows and zero labels (``pad`` counts those too). Each
    pass starts at the beginning of the part (MXNet's continued where the filling stopped).
    ``num_parts``/``part_index``: the part read, for data-parallel readers; part p holds the
    lines starting in the p-th of ``num_parts`` equal byte ranges of the file (as MXNet), so
    the parts partition the rows. ``zero_based`` says whether indices count from 0 (as
    MXNet's) or 1. ``shuffle`` visits the blocks in a random order and shuffles the rows
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
        self._files = [(_path(data_libsvm, "data_libsvm"),
                        _Spec(self.n_features, zero_based, "float32", multilabel,
                              n_labels if multilabel else None), self.n_features)]
        if label_libsvm is not None:
            self._files.append((_path(label_libsvm, "label_libsvm"),
                                _Spec(n_labels, zero_based, "float32"), n_labels))
        self._ranges = []
        for path, _, _ in self._files:
            try:
                with open(path, "rb") as f:
                    size = os.fstat(f.fileno()).st_size
                    self._ranges.append(line_ranges(f, size, num_parts, part_index,
                                                    self._chunk))
            except OSError as e:
                raise NetsError(f"{path}: cannot read ({e.strerror})") from None
        self.provide_data = [DataDesc(data_name, (self.batch_size, self.n_features))]
        self.provide_label = [DataDesc(label_name, (self.batch_size,) + self._label_shape)]
        self.reset()

    def _streams(self, order=None, shuffle=False):
        return [_RowStream(path, spec, ranges, order, width, spec.lab_limit + 1, shuffle)
                for (path, spec, width), ranges in zip(self._files, self._ranges)]

    def reset(self):
        order = None
        if self.shuffle:
            order = generator().permutation(len(self._ranges[0]))
        self._active = self._streams(order, self.shuffle)

    def _take(self, streams, n):
        """Up to ``n`` rows from each stream, checked to be as many: ``(X pieces, y pieces)``."""
        got = [s.take(n) for s in streams]
        counts = [sum(p[0].shape[0] for p in g) for g in got]
        if len(set(counts)) > 1:
            raise NetsError(f"{self._files[1][0]} has a different number of lines than "
                            f"{self._files[0][0]}")
        xs = [p[0] for p in got[0]]
        ys = [p[0] for p in got[1]] if len(got) > 1 else [p[1] for p in got[0]]
        return xs, ys, counts[0]

    def _next_batch(self):
        xs, ys, n = self._take(self._active, self.batch_size)
        if n == 0:
            return None
        pad = self.batch_size - n
        if pad and self.round_batch:  # wrap around to the part's first rows (repeatedly)
            need = pad
            while need:
                wx, wy, got = self._take(self._streams(), need)
                if not got:
                    break
                xs, ys, need = xs + wx, ys + wy, need - got
        elif pad:
            xs.append(CSRNDArray._empty((pad, self.n_features), np.float32))
            ys.append(CSRNDArray._empty((pad,) + self._label_shape, np.float32)
                      if self._label_csr else NDArray(np.zeros(pad, np.float32)))
        return DataBatch([stack_rows(xs)], [stack_rows(ys)], pad=pad,
                         provide_data=self.provide_data, provide_label=self.provide_label)

    def getdata(self):
        """The current batch's data (one CSR array, as MXNet's LibSVMIter returns it)."""
        return self._current().data[0]

    def getlabel(self):
        """The current batch's label array."""
        return self._current().label[0]
