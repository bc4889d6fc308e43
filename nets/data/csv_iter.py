"""``CSVIter``: batches of dense rows read from CSV files (MXNet's ``mx.io.CSVIter``)."""
from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from ..base import NetsError
from .iterators import NDArrayIter

__all__ = ["CSVIter"]


def _read_csv(path, shape, what, dtype):
    """The rows of the CSV file ``path`` as a ``(rows,) + shape`` array; a row whose
    number of values is not ``prod(shape)`` or a value that is not a number raises
    ``NetsError`` naming the file and the line."""
    width = int(np.prod(shape, dtype=np.int64))
    rows = []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                values = [float(v) for v in line.split(",")]
            except ValueError:
                raise NetsError(f"{path}, line {lineno}: {what} values must be numbers, got "
                                f"{line[:80]!r}") from None
            if len(values) != width:
                raise NetsError(f"{path}, line {lineno}: {len(values)} values, {what}_shape="
                                f"{tuple(shape)} needs {width}")
            rows.append(values)
    return np.asarray(rows, dtype=dtype).reshape((len(rows),) + tuple(shape))


class CSVIter(NDArrayIter):
    """Batches of the rows of ``data_csv`` (each row ``prod(data_shape)`` comma-separated
    numbers, reshaped to ``data_shape``) and, with ``label_csv``, of its rows as labels
    (``label_shape``, default ``(1,)``), named ``data`` and ``softmax_label`` (MXNet's
    ``CSVIter``). Without ``label_csv`` the labels are zeros.

    The last batch of a pass is full: with ``round_batch=True`` (the default) its missing
    rows are taken from the start of the file and ``batch.pad`` counts them, as MXNet's
    does; ``round_batch=False`` drops an incomplete last batch. The files are read into
    memory once; a row of the wrong width or a value that is not a number raises
    ``NetsError`` naming the file and the line.

    Parameters
    ----------
    data_csv : str
        The data file.
    data_shape : tuple of int
        The shape of one example.
    label_csv : str, optional
        The label file, with as many rows as ``data_csv``.
    label_shape : tuple of int, default (1,)
        The shape of one label.
    batch_size : int, default 1
        Rows per batch.
    round_batch : bool, default True
        Pad the last batch from the start of the data (else drop it).
    dtype : str or numpy dtype, default 'float32'
        The element type of data and labels.
    shuffle : bool, default False
        Shuffle the rows every pass.
    """

    def __init__(self, data_csv: str | os.PathLike, data_shape: Sequence[int],
                 label_csv: str | os.PathLike | None = None,
                 label_shape: Sequence[int] = (1,), batch_size: int = 1,
                 round_batch: bool = True, dtype: str = "float32", shuffle: bool = False,
                 data_name: str = "data", label_name: str = "softmax_label"):
        data_shape = (int(data_shape),) if np.ndim(data_shape) == 0 else tuple(data_shape)
        label_shape = (int(label_shape),) if np.ndim(label_shape) == 0 else tuple(label_shape)
        data = _read_csv(data_csv, data_shape, "data", dtype)
        if label_csv is None:
            label = np.zeros((len(data),) + label_shape, dtype)
        else:
            label = _read_csv(label_csv, label_shape, "label", dtype)
            if len(label) != len(data):
                raise NetsError(f"CSVIter: {label_csv} has {len(label)} rows, {data_csv} has "
                                f"{len(data)}")
        if label_shape == (1,):
            label = label.reshape(len(label))
        super().__init__({data_name: data}, {label_name: label}, batch_size=batch_size,
                         shuffle=shuffle,
                         last_batch_handle="pad" if round_batch else "discard")
