"""The one way kernels are compiled: lazily, cached on disk, GIL released."""
import numba


def jit(fn=None, *, parallel=False):
    """``numba.njit(cache=True, nogil=True)``; ``@jit`` or ``@jit(parallel=True)``.

    No explicit signatures: those would compile at import.
    """
    wrap = numba.njit(cache=True, nogil=True, parallel=parallel)
    return wrap if fn is None else wrap(fn)
