"""``gluon.data``: Gluon's datasets, samplers and ``DataLoader`` from ``nets.data``."""
from ..data import (ArrayDataset, BatchSampler, DataLoader, Dataset, RandomSampler, Sampler,
                    SequentialSampler, SimpleDataset)

__all__ = ["ArrayDataset", "BatchSampler", "DataLoader", "Dataset", "RandomSampler", "Sampler",
           "SequentialSampler", "SimpleDataset"]
