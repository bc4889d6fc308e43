"""Shared fixtures of the array tests: a small matrix with zero rows, a zero column and a
zero inside a stored row, built in any storage type without ``tostype``."""
import numpy as np
import scipy.sparse as sp

from nets import nd

STYPES = ("default", "csr", "row_sparse")
DENSE = np.array([[1, 0, 0, 2], [0, 0, 0, 0], [0, 3, 0, 4], [0, 0, 0, 0], [5, 6, 0, 0]],
                 np.float32)


def make(stype, dense=DENSE, dtype=np.float32):
    """``dense`` in storage type ``stype``, built without ``tostype``."""
    dense = np.asarray(dense, dtype)
    if stype == "csr":
        return nd.sparse.csr_matrix(sp.csr_matrix(dense))
    if stype == "row_sparse":
        rows = np.flatnonzero(dense.reshape(len(dense), -1).any(axis=1))
        return nd.sparse.row_sparse_array((dense[rows], rows), shape=dense.shape)
    return nd.array(dense, dtype=dtype)
