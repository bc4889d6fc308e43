"""nets.kernels.dense called directly (empty and one-element operands, float32/float64,
strided views); tests/kernels/test_boundscheck.py re-runs them with NUMBA_BOUNDSCHECK=1."""
import numpy as np
import pytest

from nets.kernels import dense as kernels


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, n", [(0, 3), (3, 0), (1, 1), (5, 7), (512, 64)])
def test_outer_is_numpy_outer(m, n, dtype):
    rng = np.random.default_rng(m * 31 + n)
    a, b = rng.normal(size=m).astype(dtype), rng.normal(size=n).astype(dtype)
    out = kernels.outer(a, b)
    assert out.dtype == dtype and out.shape == (m, n) and out.flags.c_contiguous
    np.testing.assert_array_equal(out, np.outer(a, b))  # one rounding per entry: exact


def test_outer_of_strided_views():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    np.testing.assert_array_equal(kernels.outer(x[:, 1], x[2, ::2]), np.outer(x[:, 1], x[2, ::2]))
