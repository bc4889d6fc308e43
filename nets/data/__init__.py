"""Data loading, as MXNet's ``mx.io`` and ``gluon.data``: LibSVM files, iterators yielding
``DataBatch``es, and ``Dataset``/``DataLoader``. Sparse data stays sparse: CSR rows are
batched into one CSR batch, never densified. ``synthetic.make_sparse_dataset`` generates
sparse learning problems; ``datasets`` downloads real ones (MovieLens, LIBSVM-site
sets)."""
from . import datasets, synthetic
from .dataloader import (BatchSampler, DataLoader, RandomSampler, Sampler, SequentialSampler,
                         default_batchify_fn)
from .dataset import ArrayDataset, Dataset, LibSVMDataset, SimpleDataset
from .iterators import (DataBatch, DataDesc, DataIter, LibSVMIter, NDArrayIter, PrefetchingIter,
                        ResizeIter)
from .libsvm import load_libsvm, save_libsvm
from .synthetic import make_sparse_dataset

__all__ = ["load_libsvm", "save_libsvm", "DataBatch", "DataDesc", "DataIter", "NDArrayIter",
           "LibSVMIter", "ResizeIter", "PrefetchingIter", "Dataset", "SimpleDataset",
           "ArrayDataset", "LibSVMDataset",
           "DataLoader", "Sampler", "SequentialSampler", "RandomSampler", "BatchSampler",
           "default_batchify_fn", "synthetic", "make_sparse_dataset", "datasets"]
