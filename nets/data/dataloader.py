"""``DataLoader`` and samplers, as Gluon's ``gluon.data``. The default batchify stacks CSR
samples into one CSR batch by concatenating their rows (Gluon densified every sample)."""
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, List, Optional

import numpy as np

from .. import nd
from ..base import NetsError, StorageTypeError
from ..arrays.dense import NDArray
from ..random import generator
from .dataset import Dataset
from .reader import stack_rows
from .libsvm import _positive

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "BatchSampler",
           "default_batchify_fn", "DataLoader"]


class Sampler:
    """Base class of samplers: iterating yields sample indices (or batches of them)."""

    def __iter__(self):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``start, start + 1, ..., start + length - 1``.

    Parameters
    ----------
    length : int
        How many indices.
    start : int
        The first.
    """

    def __init__(self, length: int, start: int = 0):
        self._length, self._start = length, start

    def __iter__(self):
        return iter(range(self._start, self._start + self._length))

    def __len__(self):
        return self._length


class RandomSampler(Sampler):
    """A fresh random permutation of ``range(length)`` at every pass (``nets.random``).

    Parameters
    ----------
    length : int
        How many indices.
    """

    def __init__(self, length: int):
        self._length = length

    def __iter__(self):
        return iter(generator().permutation(self._length).tolist())

    def __len__(self):
        return self._length


class BatchSampler(Sampler):
    """Groups a sampler's indices into lists of ``batch_size``.

    Parameters
    ----------
    sampler : Sampler or iterable of int
        The indices.
    batch_size : int
        Indices per batch.
    last_batch : {'keep', 'discard', 'rollover'}
        ``'keep'`` a smaller last batch, ``'discard'`` it, or ``'rollover'`` its indices
        into the first batch of the next pass.
    """

    def __init__(self, sampler: Iterable[int], batch_size: int, last_batch: str = "keep"):
        if last_batch not in ("keep", "discard", "rollover"):
            raise NetsError(f"last_batch={last_batch!r}: expected 'keep', 'discard' or "
                            f"'rollover'")
        self._sampler, self._batch_size = sampler, _positive(batch_size, "batch_size")
        self._last_batch, self._prev = last_batch, []

    def __iter__(self):
        batch, self._prev = self._prev, []
        for i in self._sampler:
            batch.append(i)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if batch:
            if self._last_batch == "keep":
                yield batch
            elif self._last_batch == "rollover":
                self._prev = batch

    def __len__(self):
        n = len(self._sampler) + len(self._prev)
        if self._last_batch == "keep":
            return -(-n // self._batch_size)
        return n // self._batch_size


def default_batchify_fn(data: List):
    """Stack a list of samples into a batch.

    Parameters
    ----------
    data : list
        The samples: all CSR rows, all dense ``NDArray``/numpy arrays, all numbers, or all
        tuples of those.

    Returns
    -------
    NDArray or list
        CSR samples (rows) joined into one CSR array, dense samples stacked into an
        ``NDArray`` with a new first axis, numbers into a 1-D ``NDArray`` (numpy's dtype for
        them), tuples element-wise (a list of batches).
    """
    first = data[0]
    if isinstance(first, (tuple, list)):
        return [default_batchify_fn(list(field)) for field in zip(*data)]
    if isinstance(first, NDArray):
        kinds = {x.stype if isinstance(x, NDArray) else type(x).__name__ for x in data}
        if len(kinds) > 1:
            raise StorageTypeError(f"cannot batch samples of mixed kinds {sorted(kinds)}")
        if first.stype == "csr":
            return stack_rows(list(data))
        if first.stype != "default":
            raise StorageTypeError(f"cannot batch {first.stype} samples; use CSR rows or "
                                   f"dense arrays")
        return NDArray(np.stack([x.values for x in data]), first.context)
    data = np.asarray(data)
    return nd.array(data, dtype=data.dtype)


class DataLoader:
    """Batches of a ``Dataset``: ``for batch in DataLoader(dataset, batch_size=32)``.

    Either ``batch_size`` (with ``shuffle`` or a ``sampler`` of indices, and ``last_batch``:
    ``'keep'`` (default), ``'discard'`` or ``'rollover'``), or a ``batch_sampler`` yielding
    lists of indices. ``batchify_fn`` turns a list of samples into a batch (default:
    ``default_batchify_fn``). ``num_workers > 0`` builds batches ahead in that many threads
    (kernels and numpy release the GIL; no processes, so nothing is pickled).

    Parameters
    ----------
    dataset : Dataset
        The samples (anything with ``__getitem__`` and ``__len__``).
    batch_size : int, optional
        Samples per batch (required unless ``batch_sampler`` is given).
    shuffle : bool
        Visit the samples in a new random order at every pass (``nets.random``).
    sampler : Sampler, optional
        The sample indices, instead of ``shuffle``.
    last_batch : {'keep', 'discard', 'rollover'}, optional
        What to do with a smaller last batch (default ``'keep'``).
    batch_sampler : Sampler, optional
        Lists of indices, one per batch, instead of the four options above.
    batchify_fn : callable, optional
        A list of samples -> a batch (default ``default_batchify_fn``).
    num_workers : int
        Threads building batches ahead (0: in the caller's thread).
    """

    def __init__(self, dataset: Dataset, batch_size: Optional[int] = None, shuffle: bool = False,
                 sampler: Optional[Sampler] = None, last_batch: Optional[str] = None,
                 batch_sampler: Optional[Sampler] = None,
                 batchify_fn: Optional[Callable] = None, num_workers: int = 0):
        self._dataset = dataset
        if batch_sampler is None:
            if batch_size is None:
                raise NetsError("DataLoader needs batch_size unless batch_sampler is given")
            if sampler is None:
                sampler = (RandomSampler if shuffle else SequentialSampler)(len(dataset))
            elif shuffle:
                raise NetsError("DataLoader: give shuffle or a sampler, not both")
            batch_sampler = BatchSampler(sampler, batch_size, last_batch or "keep")
        elif batch_size is not None or shuffle or sampler is not None or last_batch is not None:
            raise NetsError("DataLoader: batch_size, shuffle, sampler and last_batch must not "
                            "be given with batch_sampler")
        if not isinstance(num_workers, int) or num_workers < 0:
            raise NetsError(f"num_workers={num_workers!r}: expected an int >= 0")
        self._batch_sampler, self._num_workers = batch_sampler, num_workers
        self._batchify = batchify_fn or default_batchify_fn

    def _load(self, indices):
        return self._batchify([self._dataset[i] for i in indices])

    def __iter__(self):
        if not self._num_workers:
            return (self._load(b) for b in self._batch_sampler)
        return self._prefetched()

    def _prefetched(self):
        with ThreadPoolExecutor(self._num_workers) as pool:
            pending = []
            for b in self._batch_sampler:  # keep 2 * num_workers batches in flight, in order
                pending.append(pool.submit(self._load, b))
                if len(pending) > 2 * self._num_workers:
                    yield pending.pop(0).result()
            for f in pending:
                yield f.result()

    def __len__(self):
        return len(self._batch_sampler)
