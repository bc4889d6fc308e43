"""Buffers that start on a cache-line boundary, for the arrays nets creates.

malloc hands numpy 16-byte aligned blocks (a large block starts 16 bytes into its first
page), so a 256-byte row of such an array spans five cache lines instead of four, and a
128-byte row three instead of two. Gathering scattered rows and updating them lazily pay
per line fetched, so the dense arrays nets allocates (parameters, optimizer states, arrays
built by ``nd.array``/``nd.zeros``) start on a line boundary, as PyTorch's CPU allocator
does.
Arrays smaller than a page stay with malloc: they are cache-resident or read whole.
"""
import numpy as np

LINE = 64  # bytes per cache line
_SMALL = 4096  # below a page the padding costs more than it saves


def _aligned(shape, dtype, alloc):
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if nbytes < _SMALL or dtype.hasobject:  # numpy cannot view bytes as objects
        return None
    buf = alloc(nbytes + LINE, np.uint8)
    start = -buf.ctypes.data % LINE
    return buf[start:start + nbytes].view(dtype).reshape(shape)


def zeros(shape, dtype):
    """A numpy array of zeros; its pages stay untouched until written (calloc)."""
    out = _aligned(shape, dtype, np.zeros)
    return np.zeros(shape, dtype) if out is None else out


def empty(shape, dtype):
    """An uninitialised numpy array, for a caller that writes every element."""
    out = _aligned(shape, dtype, np.empty)
    return np.empty(shape, dtype) if out is None else out


def copy(a):
    """A C-contiguous copy of the numpy array ``a`` in a buffer from ``empty``."""
    out = empty(a.shape, a.dtype)
    out[...] = a
    return out
