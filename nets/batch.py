"""What an iterator yields and what a ``Module`` binds to: ``DataDesc`` (the name, shape,
dtype and layout of one input or label) and ``DataBatch`` (one batch). They are plain
records at the bottom floor, so the data iterators above and the models beside them share
them without importing each other (MXNet keeps both in ``mx.io``; nets re-exports them from
``nets.data``)."""
from collections import namedtuple

import numpy as np

__all__ = ["DataDesc", "DataBatch"]


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """Name and shape (plus ``dtype`` and ``layout``) of one input or label of a batch."""

    def __new__(cls, name, shape, dtype=np.float32, layout="NCHW"):
        desc = super().__new__(cls, name, tuple(shape))
        desc.dtype, desc.layout = np.dtype(dtype), layout
        return desc

    def __repr__(self):
        return f"DataDesc[{self.name},{self.shape},{self.dtype},{self.layout}]"


class DataBatch:
    """One batch: ``data`` and ``label`` (lists of arrays), ``pad`` (how many examples at the
    end only fill the batch up and should be ignored), ``index``."""

    def __init__(self, data, label=None, pad=None, index=None, provide_data=None,
                 provide_label=None):
        self.data, self.label, self.pad, self.index = data, label, pad, index
        self.provide_data, self.provide_label = provide_data, provide_label

    def __repr__(self):
        shapes = [[a.shape for a in arrays or []] for arrays in (self.data, self.label)]
        return (f"{type(self).__name__}: data shapes: {shapes[0]} label shapes: {shapes[1]} "
                f"pad: {self.pad}")
