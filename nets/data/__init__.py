"""Data loading, as MXNet's ``mx.io`` and ``gluon.data``: LibSVM files, ``LibSVMReader``
(batches of CSR rows from files, folders or pipes, read into memory or streamed), iterators
yielding ``DataBatch``es, and ``Dataset``/``DataLoader``. Sparse data stays sparse: CSR rows are
batched into one CSR batch, never densified. ``synthetic.make_sparse_dataset`` generates
sparse learning problems; ``datasets`` downloads real ones (MovieLens, LIBSVM-site
sets)."""
from ..base import lazy_attributes
from . import synthetic
from .dataset import ArrayDataset, Dataset, LibSVMDataset, SimpleDataset
from .csv_iter import CSVIter
from .iterators import (DataBatch, DataDesc, DataIter, LibSVMIter, NDArrayIter, PrefetchingIter,
                        ResizeIter)
from .libsvm import load_libsvm, save_libsvm
from .reader import LibSVMReader, StreamWidthError, read_mode, rebatch
from .synthetic import make_sparse_dataset

# imported on first use (PEP 562): the downloads, and the DataLoader's thread pool
_LAZY = {"datasets": ("datasets", None),
         **{name: ("dataloader", name) for name in ("BatchSampler", "DataLoader",
                                                     "RandomSampler", "Sampler",
                                                     "SequentialSampler",
                                                     "default_batchify_fn")}}

__all__ = ["load_libsvm", "save_libsvm", "DataBatch", "DataDesc", "DataIter", "NDArrayIter",
           "LibSVMIter", "CSVIter", "ResizeIter", "LibSVMReader", "StreamWidthError", "read_mode",
           "rebatch", "PrefetchingIter", "Dataset", "SimpleDataset",
           "ArrayDataset", "LibSVMDataset",
           "DataLoader", "Sampler", "SequentialSampler", "RandomSampler", "BatchSampler",
           "default_batchify_fn", "synthetic", "make_sparse_dataset", "datasets"]

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
del lazy_attributes
