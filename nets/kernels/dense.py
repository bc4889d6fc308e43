"""Dense products that numpy computes slowly.

``outer``: a matrix product whose contracted size is 1 is an outer product, and numpy has
no BLAS path for it (``matmul`` takes its generic loop). The backward pass of every layer
with one output unit (``Dense(1)``: ``d data = g . W`` with ``g`` of shape ``(batch, 1)``)
is such a product. Invariants: 1-D float32 or float64 operands of one dtype (any strides).
"""
import numpy as np

from ._jit import jit


@jit
def outer(a, b):
    """``out[i, j] = a[i] * b[j]``, shape ``(len(a), len(b))``: one pass writing the output
    in order, with no broadcasting machinery."""
    out = np.empty((len(a), len(b)), a.dtype)
    for i in range(len(a)):
        x = a[i]
        for j in range(len(b)):
            out[i, j] = x * b[j]
    return out
