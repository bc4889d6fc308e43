"""``kernels.reduce`` called directly, and the CSR row/column paths through the ops, on edge
cases (empty, one row, full, last row/column only). Run once with NUMBA_BOUNDSCHECK=1."""
import numpy as np
import pytest

from nets import kernels, nd
from nets.test_utils import assert_almost_equal

KINDS = {"sum": (0, np.sum), "max": (1, np.max), "min": (2, np.min)}


def _edge_matrices():
    rng = np.random.default_rng(0)
    full = rng.uniform(-1, 1, (4, 3))
    last = np.zeros((4, 3))
    last[-1, -1] = -0.5
    sparse = np.where(rng.random((6, 5)) < 0.3, rng.uniform(-1, 1, (6, 5)), 0)
    return {"empty_rows": np.zeros((0, 3)), "empty_cols": np.zeros((3, 0)),
            "no_values": np.zeros((3, 4)), "one_row": rng.uniform(-1, 1, (1, 5)),
            "one_col": rng.uniform(-1, 1, (5, 1)), "full": full, "last_only": last,
            "sparse": sparse, "nan": np.array([[np.nan, 1.], [0., -2.], [3., 0.]])}


EDGES = _edge_matrices()


def _oracle(fn, a, axis):
    if a.shape[axis] == 0:  # the kernel's documented value for an empty column: 0
        return np.zeros(a.shape[1 - axis])
    return fn(a, axis=axis)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("name", list(EDGES))
def test_csr_col_reduce(name, kind, dtype):
    a = EDGES[name].astype(dtype)
    rows, indices = np.nonzero(a != 0)  # NaN != 0: stored
    code, fn = KINDS[kind]
    out = kernels.reduce.csr_col_reduce(a[rows, indices], indices.astype(np.int64), *a.shape, code)
    assert out.dtype == dtype
    assert_almost_equal(out, _oracle(fn, a, 0), equal_nan=True)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("name", list(EDGES))
def test_csr_row_and_col_paths_through_the_ops(name, kind):
    a = EDGES[name].astype(np.float32)
    x = nd.array(a).tostype("csr")
    fn = KINDS[kind][1]
    op = getattr(nd, kind)
    for axis in (0, 1):
        if a.shape[axis] == 0 and kind != "sum":
            continue  # max/min over an empty axis raise (tested in tests/ops)
        assert_almost_equal(op(x, axis=axis), fn(a, axis=axis), equal_nan=True)
    if a.size:
        assert_almost_equal(op(x), [fn(a)], equal_nan=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(0, 5), (3, 0), (1, 1), (5, 7), (64, 8), (9, 33), (4, 128)])
def test_row_sums(shape, dtype):
    """Against float64 sums, at float32's precision for a row of up to 128 values."""
    a = np.random.default_rng(shape[1]).normal(size=shape).astype(dtype)
    out = kernels.reduce.row_sums(a)
    assert out.dtype == dtype and out.shape == shape[:1]
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out, a.astype(np.float64).sum(axis=1), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(0, 4), (3, 0), (1, 1), (5, 7), (64, 32), (9, 128)])
def test_row_dots_and_scale_rows(shape, dtype):
    """``row_dots`` against float64 sums of the products, and bit for bit ``row_sums`` of
    numpy's product (what the unfused sum of a product computes); ``scale_rows`` equal to
    numpy's ``g[:, None] * x``."""
    rng = np.random.default_rng(sum(shape))
    a, b = rng.normal(size=shape).astype(dtype), rng.normal(size=shape).astype(dtype)
    out = kernels.reduce.row_dots(a, b)
    assert out.dtype == dtype and out.shape == shape[:1]
    np.testing.assert_array_equal(out, kernels.reduce.row_sums(a * b))
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    want = (a.astype(np.float64) * b.astype(np.float64)).sum(axis=1)
    np.testing.assert_allclose(out, want, rtol=rtol, atol=rtol)
    g = rng.normal(size=shape[:1]).astype(dtype)
    scaled = kernels.reduce.scale_rows(g, a)
    assert scaled.dtype == dtype
    np.testing.assert_array_equal(scaled, g[:, None] * a)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_sums_propagate_nan_and_inf(dtype):
    """Reordering additions must not assume finite values (no fast-math beyond reassoc)."""
    a = np.ones((4, 16), dtype)
    a[0, 3], a[1, 5], a[2, 1], a[2, 9], a[3, 15] = np.nan, np.inf, np.inf, -np.inf, -np.inf
    np.testing.assert_array_equal(kernels.reduce.row_sums(a), [np.nan, np.inf, np.nan, -np.inf])
