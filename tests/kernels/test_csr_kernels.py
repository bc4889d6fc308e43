"""nets.kernels.csr called directly on edge cases (empty, one row, full, last row/column,
zero-width dense operand); tests/kernels/test_boundscheck.py re-runs them with
NUMBA_BOUNDSCHECK=1 to prove no out-of-bounds access."""
import numpy as np
import pytest
import scipy.sparse as sp

from nets.kernels import csr as kernels


def _csr(dense):
    m = sp.csr_matrix(dense)
    m.sort_indices()
    return m.indptr.astype(np.int64), m.indices.astype(np.int64), m.data


def _case(name, dtype=np.float64):
    rng = np.random.default_rng(0)
    shape = {"empty_matrix": (0, 5), "no_columns": (3, 0)}.get(name, (4, 6))
    x = rng.uniform(0.5, 1.0, shape).astype(dtype)
    if name == "no_values":
        x[:] = 0
    elif name == "one_row":
        x[[0, 1, 3]] = 0
    elif name == "last_row_col":
        x[:] = 0
        x[-1, -1] = 2.0
    elif name == "sparse":
        x[rng.random(shape) < 0.6] = 0
    return x


def _csr_dense(parts, w, ranges=None):
    """``csr_dense`` into a fresh output, over the row ``ranges`` ``[(lo, hi), ...]`` (all
    rows in one call by default)."""
    indptr, indices, data = parts
    out = np.zeros((len(indptr) - 1, w.shape[1]), w.dtype)
    for lo, hi in ranges or [(0, len(out))]:
        kernels.csr_dense(indptr, indices, data, w, out, lo, hi)
    return out


def _splits(rows):
    """Every way to cut ``[0, rows)`` into at most three consecutive ranges, empty ones
    included."""
    return [[(0, a), (a, b), (b, rows)] for a in range(rows + 1) for b in range(a, rows + 1)]


CASES = ["empty_matrix", "no_columns", "no_values", "one_row", "last_row_col", "sparse", "full"]


@pytest.mark.parametrize("width", [0, 3])
@pytest.mark.parametrize("name", CASES)
def test_kernels_match_dense(name, width):
    x = _case(name)
    rng = np.random.default_rng(1)
    w_cols = rng.normal(size=(x.shape[1], width))  # contracted with the columns of x
    w_rows = rng.normal(size=(x.shape[0], width))  # contracted with the rows of x
    parts = _csr(x)
    np.testing.assert_allclose(_csr_dense(parts, w_cols), x @ w_cols, atol=1e-12)
    np.testing.assert_allclose(kernels.dense_csr_t(np.ascontiguousarray(w_cols.T), *parts),
                               w_cols.T @ x.T, atol=1e-12)
    cols, block = kernels.csr_t_dense(parts[0], parts[1], parts[2], w_rows, x.shape[1])
    np.testing.assert_array_equal(cols, np.unique(parts[1]))
    full = np.zeros((x.shape[1], width))
    full[cols] = block
    np.testing.assert_allclose(full, x.T @ w_rows, atol=1e-12)


@pytest.mark.parametrize("n_cols", [512, 10 ** 7])  # column ids ranked in a bitmap / sorted
def test_csr_t_dense_of_a_wide_matrix(n_cols):
    rng = np.random.default_rng(3)
    ids = [np.sort(rng.choice(n_cols, 20, replace=False)) for _ in range(20)]  # 20 per row
    ids[0][-1] = n_cols - 1  # the last column
    indptr = np.arange(21, dtype=np.int64) * 20
    indices, data = np.concatenate(ids).astype(np.int64), rng.normal(size=400)
    w = rng.normal(size=(20, 4))
    cols, block = kernels.csr_t_dense(indptr, indices, data, w, n_cols)
    touched = np.unique(indices)
    x = sp.csr_matrix((data, np.searchsorted(touched, indices), indptr), (20, len(touched)))
    np.testing.assert_array_equal(cols, touched)
    np.testing.assert_allclose(block, x.T @ w, atol=1e-12)


@pytest.mark.parametrize("name", ["sparse", "one_row", "last_row_col", "full"])
def test_csr_dense_over_every_split_of_the_rows(name):
    """Calls over consecutive row ranges (how threads split a product) give the product."""
    x = _case(name)
    w = np.random.default_rng(2).normal(size=(x.shape[1], 3))
    for ranges in _splits(len(x)):
        np.testing.assert_allclose(_csr_dense(_csr(x), w, ranges), x @ w, atol=1e-12)


@pytest.mark.parametrize("lo, hi", [(0, 0), (2, 2), (4, 4), (0, 1), (1, 3), (3, 4)])
def test_csr_dense_touches_only_its_rows(lo, hi):
    """A call over ``[lo, hi)`` writes those output rows and leaves the others as they
    were."""
    x = _case("sparse")
    w = np.random.default_rng(2).normal(size=(x.shape[1], 3))
    expected = np.full((len(x), 3), 7.0)
    expected[lo:hi] += (x @ w)[lo:hi]
    out = np.full((len(x), 3), 7.0)
    kernels.csr_dense(*_csr(x), w, out, lo, hi)
    np.testing.assert_allclose(out, expected, atol=1e-12)


def test_float32_stays_float32():
    x = _case("sparse", np.float32)
    parts = _csr(x)
    w = np.ones((x.shape[1], 2), np.float32)
    g = np.ones((x.shape[0], 2), np.float32)
    assert _csr_dense(parts, w).dtype == np.float32
    assert kernels.dense_csr_t(np.ascontiguousarray(w.T), *parts).dtype == np.float32
    assert kernels.csr_t_dense(parts[0], parts[1], parts[2], g, x.shape[1])[1].dtype == np.float32


def test_prefetch_row_is_a_no_op_in_python():
    assert kernels.prefetch_row(np.zeros((2, 3)), 1) is None


@pytest.mark.parametrize("width", [0, 3])
@pytest.mark.parametrize("name", CASES)
def test_csr_sampled_dot_over_every_split(name, width):
    """``(a @ b.T)`` at the stored entries, over any split of the rows into ranges; the
    entries of rows outside a range are left as they were."""
    x = _case(name)
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(x.shape[0], width)), rng.normal(size=(x.shape[1], width))
    indptr, indices, _ = _csr(x)
    rows = np.repeat(np.arange(x.shape[0]), np.diff(indptr))
    want = (a @ b.T)[rows, indices]
    for ranges in _splits(len(x))[:12]:
        out = np.full(len(indices), 7.0)
        for lo, hi in ranges:
            kernels.csr_sampled_dot(indptr, indices, a, b, out, lo, hi)
        np.testing.assert_allclose(out, want, atol=1e-12)
    out = np.full(len(indices), 7.0, np.float32)
    kernels.csr_sampled_dot(indptr, indices, a.astype(np.float32), b.astype(np.float32), out,
                            0, 0)
    np.testing.assert_array_equal(out, 7.0)
