"""The one way kernels are compiled: lazily, cached on disk, GIL released."""
import os

import numba

# NUMBA_BOUNDSCHECK does not reach inside prange loops, so the bounds-checked test run sets
# NETS_SERIAL_KERNELS=1 to compile parallel kernels serially (prange becomes range).
_SERIAL = os.environ.get("NETS_SERIAL_KERNELS") == "1"


def jit(fn=None, *, parallel=False):
    """``numba.njit(cache=True, nogil=True)``; ``@jit`` or ``@jit(parallel=True)``.

    No explicit signatures: those would compile at import. ``error_model='numpy'``: a float
    division by zero gives inf/nan as in numpy instead of raising, which also drops the
    zero-check branch that keeps LLVM from vectorising loops with a division.
    """
    wrap = numba.njit(cache=True, nogil=True, error_model="numpy",
                      parallel=parallel and not _SERIAL)
    return wrap if fn is None else wrap(fn)
