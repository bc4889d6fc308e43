"""Data loading, as MXNet's ``mx.io`` and ``gluon.data``: LibSVM files, iterators yielding
``DataBatch``es, and ``Dataset``/``DataLoader``. Sparse data stays sparse: CSR rows are
batched into one CSR batch, never densified."""
from .dataloader import (BatchSampler, DataLoader, RandomSampler, Sampler, SequentialSampler,
                         default_batchify_fn)
from .dataset import ArrayDataset, Dataset, LibSVMDataset, SimpleDataset
from .iterators import DataBatch, DataDesc, DataIter, LibSVMIter, NDArrayIter
from .libsvm import load_libsvm, save_libsvm
from . import datasets  # noqa: F401  (nets.data.datasets: MovieLens, LIBSVM-site sets)

__all__ = ["load_libsvm", "save_libsvm", "DataBatch", "DataDesc", "DataIter", "NDArrayIter",
           "LibSVMIter", "Dataset", "SimpleDataset", "ArrayDataset", "LibSVMDataset",
           "DataLoader", "Sampler", "SequentialSampler", "RandomSampler", "BatchSampler",
           "default_batchify_fn"]
