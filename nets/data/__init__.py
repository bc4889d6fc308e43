"""Data loading, as MXNet's ``mx.io`` and ``gluon.data``: LibSVM files, iterators yielding
``DataBatch``es, and ``Dataset``/``DataLoader``. Sparse data stays sparse: CSR rows are
batched into one CSR batch, never densified. ``synthetic.make_sparse_dataset`` generates
sparse learning problems; ``datasets`` downloads real ones (MovieLens, LIBSVM-site
sets)."""
import importlib as _importlib

from . import synthetic
from .dataset import ArrayDataset, Dataset, LibSVMDataset, SimpleDataset
from .iterators import (DataBatch, DataDesc, DataIter, LibSVMIter, NDArrayIter, PrefetchingIter,
                        ResizeIter)
from .libsvm import load_libsvm, save_libsvm
from .synthetic import make_sparse_dataset

# imported on first use (PEP 562): the downloads, and the DataLoader's thread pool
_LAZY = {"datasets": None, "BatchSampler": "dataloader", "DataLoader": "dataloader",
         "RandomSampler": "dataloader", "Sampler": "dataloader",
         "SequentialSampler": "dataloader", "default_batchify_fn": "dataloader"}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = _importlib.import_module(f"{__name__}.{_LAZY[name] or name}")
    value = module if _LAZY[name] is None else getattr(module, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


__all__ = ["load_libsvm", "save_libsvm", "DataBatch", "DataDesc", "DataIter", "NDArrayIter",
           "LibSVMIter", "ResizeIter", "PrefetchingIter", "Dataset", "SimpleDataset",
           "ArrayDataset", "LibSVMDataset",
           "DataLoader", "Sampler", "SequentialSampler", "RandomSampler", "BatchSampler",
           "default_batchify_fn", "synthetic", "make_sparse_dataset", "datasets"]
