"""``dot(csr, row_sparse)`` and ``dot(row_sparse.T, row_sparse)`` look ids up among a
row_sparse operand's stored rows: checked against scipy where the stored rows and the looked-up
ids are many enough for a bitmap of their range (ranked) and where they are few over a wide
one (searched)."""
import numpy as np
import pytest
import scipy.sparse as sp

from nets import nd


def rsp(stored, n, rng):
    """A float64 row_sparse (n, 3) array storing rows ``stored`` and its scipy twin."""
    values = rng.normal(size=(len(stored), 3))
    twin = sp.csr_matrix((values.ravel(), (np.repeat(stored, 3), np.tile(np.arange(3),
                                                                         len(stored)))),
                         shape=(n, 3))
    return nd.sparse.row_sparse_array((values, stored), shape=(n, 3), dtype=np.float64), twin


@pytest.mark.parametrize("covered", [False, True])  # whether w stores every column x uses
@pytest.mark.parametrize("n, stored", [
    (50, list(range(0, 50, 2))),              # narrow range: half the ids stored
    (1_000_000, [3, 17, 500_000, 999_999]),   # wide range, few rows
    (1_000_000, list(range(7, 1_000_000, 331))),  # wide range, enough rows for a bitmap
])
def test_products_with_a_row_sparse_operand_match_scipy(n, stored, covered):
    rng = np.random.default_rng(4)
    extra = rng.choice(stored, 12) if covered else rng.integers(0, n, 12)
    cols = np.concatenate([stored, extra])
    x = sp.csr_matrix((rng.normal(size=len(cols)), (rng.integers(0, 5, len(cols)), cols)),
                      shape=(5, n))
    x.sum_duplicates()
    w, w_twin = rsp(stored, n, rng)
    np.testing.assert_allclose(nd.dot(nd.array(x, dtype=np.float64), w).asnumpy(),
                               (x @ w_twin).toarray(), rtol=1e-12)
    # the rows w stores pick rows of another row_sparse array (some absent there)
    other = sorted(set(stored[::2]) | {1, n - 2})
    u, u_twin = rsp(other, n, rng)
    np.testing.assert_allclose(nd.dot(w, u, transpose_a=True).asnumpy(),
                               (w_twin.T @ u_twin).toarray(), rtol=1e-12, atol=1e-15)
