"""Datasets, as Gluon's ``gluon.data``: ``Dataset``, ``SimpleDataset``, ``ArrayDataset`` and
``LibSVMDataset``. A sample of a CSR array is a CSR row of shape ``(1, n_features)``."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Callable, Optional, Sequence, Union

from ..base import NetsError
from ..arrays.dense import NDArray
from .libsvm import load_libsvm

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

__all__ = ["Dataset", "SimpleDataset", "ArrayDataset", "LibSVMDataset"]


class Dataset:
    """Abstract dataset: ``__getitem__(idx)`` returns one sample, ``__len__`` their number."""

    def __getitem__(self, idx):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def transform(self, fn: Callable, lazy: bool = True) -> "Dataset":
        """A dataset of transformed samples.

        Parameters
        ----------
        fn : callable
            Called as ``fn(*sample)`` (``fn(sample)`` for a non-tuple sample).
        lazy : bool
            Apply ``fn`` when a sample is read (True), or to every sample now.

        Returns
        -------
        Dataset
            The samples ``fn`` returns.
        """
        trans = _LazyTransformDataset(self, fn)
        return trans if lazy else SimpleDataset([trans[i] for i in range(len(trans))])

    def transform_first(self, fn: Callable, lazy: bool = True) -> "Dataset":
        """Like ``transform``, applying ``fn`` to the first element of each sample only.

        Parameters
        ----------
        fn : callable
            Called on a sample's first element.
        lazy : bool
            Apply ``fn`` when a sample is read (True), or to every sample now.

        Returns
        -------
        Dataset
            The samples with their first element transformed.
        """
        def first(x, *rest):
            return (fn(x),) + rest if rest else fn(x)
        return self.transform(first, lazy)


class SimpleDataset(Dataset):
    """A dataset over any indexable data with a length.

    Parameters
    ----------
    data : sequence
        A list, an array: ``data[i]`` is sample ``i``.
    """

    def __init__(self, data: Sequence):
        self._data = data

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        return self._data[idx]


class _LazyTransformDataset(Dataset):
    def __init__(self, data, fn):
        self._data, self._fn = data, fn

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        item = self._data[idx]
        return self._fn(*item) if isinstance(item, tuple) else self._fn(item)


class ArrayDataset(Dataset):
    """Samples ``(a[i], b[i], ...)`` of arrays or lists of the same length (a single array:
    its rows). A 1-D nets array is held as numpy (samples are numpy scalars, as in Gluon); a
    CSR array gives CSR rows of shape ``(1, n)``.

    Parameters
    ----------
    *args : arrays or lists
        One or more, all with as many samples (rows).
    """

    def __init__(self, *args):
        if not args:
            raise NetsError("ArrayDataset needs at least one array")
        self._length = len(args[0]) if not isinstance(args[0], NDArray) else args[0].shape[0]
        self._data = []
        for i, data in enumerate(args):
            n = data.shape[0] if isinstance(data, NDArray) else len(data)
            if n != self._length:
                raise NetsError(f"ArrayDataset: argument {i} has {n} samples, argument 0 has "
                                f"{self._length}")
            if isinstance(data, NDArray) and data.stype == "default" and data.ndim == 1:
                data = data.asnumpy()
            self._data.append(data)

    def __len__(self):
        return self._length

    def __getitem__(self, idx):
        if len(self._data) == 1:
            return self._data[0][idx]
        return tuple(data[idx] for data in self._data)


class LibSVMDataset(ArrayDataset):
    """The samples ``(x, y)`` of a LibSVM file, loaded with ``load_libsvm`` (same arguments):
    ``x`` a CSR row ``(1, n_features)``, ``y`` a numpy scalar (or a multi-hot CSR row).

    Parameters
    ----------
    path : str or path-like
        The file.
    n_features, zero_based, dtype, multilabel, cache, progress
        As for ``load_libsvm``.
    """

    def __init__(self, path: Union[str, os.PathLike], n_features: Optional[int] = None,
                 zero_based: Union[bool, str] = "auto", dtype: DTypeLike = "float32",
                 multilabel: bool = False, cache: bool = False, progress: bool = False):
        self.data, self.label = load_libsvm(path, n_features, zero_based, dtype, multilabel,
                                            cache=cache, progress=progress)
        super().__init__(self.data, self.label)
