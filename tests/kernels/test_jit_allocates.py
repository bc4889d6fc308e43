"""``jit(allocates=False)``: a kernel compiled without numba's runtime works on the arrays it
is given, and on the fast compile path creating an array in one is refused at compile time
(so the option reaches numba, and a kernel declared allocation-free cannot quietly
allocate); the plain path (``NETS_PLAIN_NUMBA=1``) compiles it as any kernel."""
import numpy as np
import pytest
from numba.core.errors import NumbaError

from nets.kernels import _jit
from nets.kernels._jit import jit


@jit(helper=True, inline=True, allocates=False)
def _twice(a, i):
    return 2 * a[i]


@jit(allocates=False)
def _doubled_into(a, out):
    for i in range(len(a)):
        out[i] = _twice(a, i)


@jit(allocates=False)
def _allocating(n):
    return np.zeros(n)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_allocation_free_kernel_writes_its_output(dtype):
    a = np.arange(17, dtype=dtype)
    out = np.zeros_like(a)
    for _ in range(3):  # (the arrays outlive every call: nothing releases them early)
        _doubled_into(a, out)
    np.testing.assert_array_equal(out, 2 * a)
    np.testing.assert_array_equal(a, np.arange(17, dtype=dtype))


def test_allocating_in_an_allocation_free_kernel_is_refused_on_the_fast_path():
    if _jit.FAST:
        with pytest.raises(NumbaError):
            _allocating(3)
    else:
        np.testing.assert_array_equal(_allocating(3), np.zeros(3))
