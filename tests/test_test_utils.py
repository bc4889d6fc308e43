"""nets.test_utils: random arrays of every stype and density, random shapes, comparisons."""
import numpy as np
import pytest
import scipy.sparse as sp

import nets
from nets import nd
from nets.test_utils import (DENSITIES, assert_almost_equal, default_tols, rand_ndarray,
                             rand_shape_2d, rand_shape_3d, rand_shape_nd, same, to_numpy)

STYPES = ("default", "csr", "row_sparse")


def nonzero_fraction(x):
    """Fraction of non-zero elements (CSR, dense) or non-zero rows (row_sparse)."""
    a = x.asnumpy()
    if x.stype == "row_sparse":
        return a.reshape(len(a), -1).any(axis=1).mean()
    return (a != 0).mean()


@pytest.mark.parametrize("density", [0.02, 0.3, 0.7])
@pytest.mark.parametrize("stype", STYPES)
def test_density_is_exact_in_expectation(stype, density):
    # 4 draws of 1000 rows x 50 columns: the fraction of non-zero elements has a std below
    # 0.002, of non-zero rows below 0.008; the bound is over 5 standard deviations
    n = 1000 if stype == "row_sparse" else 50_000
    tol = 5 * np.sqrt(density * (1 - density) / (4 * n))
    fractions = [nonzero_fraction(rand_ndarray((1000, 50), stype, density)) for _ in range(4)]
    assert abs(np.mean(fractions) - density) < tol


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("stype", STYPES)
def test_density_extremes(stype, dtype):
    empty = rand_ndarray((6, 5), stype, 0.0, dtype=dtype)
    full = rand_ndarray((6, 5), stype, 1.0, dtype=dtype)
    one = rand_ndarray((6, 5), stype, "one_row", dtype=dtype)
    for x in (empty, full, one):
        assert x.stype == stype and x.shape == (6, 5) and x.dtype == dtype
        if stype != "default":
            x.check_format(full_check=True)
    assert not empty.asnumpy().any()
    assert (full.asnumpy() != 0).all()
    rows = np.flatnonzero(one.asnumpy().any(axis=1))
    assert len(rows) == 1 and (one.asnumpy()[rows[0]] != 0).all()
    if stype == "csr":
        assert (empty.nnz, full.nnz, one.nnz) == (0, 30, 5)
    if stype == "row_sparse":
        assert (len(empty.indices), len(full.indices), len(one.indices)) == (0, 6, 1)


def test_densities_constant():
    assert DENSITIES == (0.0, "one_row", 0.01, 0.5, 1.0)
    for density in DENSITIES:  # every sweep density is accepted for every stype
        for stype in STYPES:
            assert rand_ndarray((4, 3), stype, density).shape == (4, 3)


def test_default_density_and_nd_row_sparse():
    assert (rand_ndarray((5, 4)).asnumpy() != 0).all()  # dense defaults to full
    x = rand_ndarray((40, 3, 2), "row_sparse", 1.0)
    assert x.shape == (40, 3, 2) and x.data.shape == (40, 3, 2)
    x = rand_ndarray((6, 3, 2), "default", "one_row")
    assert np.count_nonzero(x.asnumpy().reshape(6, -1).any(axis=1)) == 1


@pytest.mark.parametrize("distribution, low, high", [
    ("uniform", -1.0, 1.0), ("normal", -np.inf, np.inf), ("powerlaw", 1.0, np.inf)])
def test_distributions(distribution, low, high):
    x = rand_ndarray((50, 20), "csr", 0.5, distribution=distribution, dtype=np.float64)
    v = x.data.asnumpy()
    assert v.min() >= low and v.max() <= high and (v != 0).all()
    if distribution == "normal":
        assert v.min() < -1 and v.max() > 1


def test_rand_ndarray_reproducible():
    nets.random.seed(7)
    a = rand_ndarray((20, 10), "csr", 0.3)
    nets.random.seed(7)
    b = rand_ndarray((20, 10), "csr", 0.3)
    c = rand_ndarray((20, 10), "csr", 0.3)
    assert same(a, b) and not same(a, c)


@pytest.mark.parametrize("kwargs, message", [
    ({"density": 1.5}, "density=1.5"), ({"density": -0.1}, "density=-0.1"),
    ({"density": "half"}, "density='half'"), ({"distribution": "cauchy"}, "'cauchy'"),
    ({"stype": "csr", "shape": (2, 3, 4)}, "CSR array is 2-D"),
])
def test_rand_ndarray_rejects(kwargs, message):
    kwargs = {"shape": (4, 3), "stype": "default", **kwargs}
    with pytest.raises(ValueError, match=message):
        rand_ndarray(**kwargs)


def test_rand_shapes():
    nets.random.seed(0)
    s2 = [rand_shape_2d(3, 4) for _ in range(200)]
    s3 = [rand_shape_3d(2, 3, 4) for _ in range(200)]
    assert all(len(s) == 2 and all(type(d) is int for d in s) for s in s2)
    assert {s[0] for s in s2} == {1, 2, 3} and {s[1] for s in s2} == {1, 2, 3, 4}
    assert all(len(s) == 3 for s in s3)
    assert [sorted({s[k] for s in s3}) for k in range(3)] == [[1, 2], [1, 2, 3], [1, 2, 3, 4]]
    assert all(1 <= d <= 10 for d in rand_shape_2d() + rand_shape_3d())
    s = rand_shape_nd(4, dim=2)
    assert len(s) == 4 and set(s) <= {1, 2}


# -- comparisons -----------------------------------------------------------------------

def test_assert_almost_equal_passes():
    a = np.arange(12.0).reshape(3, 4)
    assert_almost_equal(nd.array(a), a)
    assert_almost_equal(nd.array(a).tostype("csr"), sp.csr_matrix(a))
    assert_almost_equal(nd.array(a).tostype("row_sparse"), nd.array(a))
    assert_almost_equal(a.astype(np.float32), a * (1 + 1e-6))  # float32 involved: rtol=1e-4
    assert_almost_equal(a, a * (1 + 1e-8))                     # float64: rtol=1e-7
    assert_almost_equal(nd.array([2.0]), [2.0 + 1e-7])
    assert_almost_equal(a, a + 0.05, rtol=0, atol=0.1)
    assert_almost_equal(np.array([np.nan, 1]), np.array([np.nan, 1]), equal_nan=True)
    assert_almost_equal(3, 3)


def test_assert_almost_equal_fails_naming_the_worst_element():
    a = np.zeros((3, 4))
    b = a.copy()
    b[0, 0], b[1, 2] = 0.5, 2.0
    # the index and values are named (numpy 2 may spell them np.int64(1), np.float64(0.0))
    with pytest.raises(AssertionError, match=r"worst at \((np.int64\()?1\)?, (np.int64\()?2\)?\)"
                                             r": got=(np.float64\()?0\.0\)?, "
                                             r"want=(np.float64\()?2\.0\)?; 2 of 12 elements"):
        assert_almost_equal(nd.array(a), b, names=("got", "want"))
    with pytest.raises(AssertionError, match=r"shape mismatch: a \(3, 4\) vs b \(4, 3\)"):
        assert_almost_equal(a, a.T)
    with pytest.raises(AssertionError, match=r"worst at \((np.int64\()?0\)?,\)"):
        assert_almost_equal(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]))
    with pytest.raises(AssertionError, match="rtol=0.0, atol=0.01"):
        assert_almost_equal(a, a + 0.05, rtol=0.0, atol=0.01)


def test_assert_almost_equal_default_tolerances_follow_dtype():
    x64 = np.array([1.0, 2.0])
    near = x64 * (1 + 1e-5)
    assert_almost_equal(x64.astype(np.float32), near)  # float32 involved: rtol 1e-4
    with pytest.raises(AssertionError):
        assert_almost_equal(x64, near)                  # both float64: rtol 1e-7
    assert default_tols(np.float16(1)) == (1e-2, 1e-3)
    assert default_tols(x64, x64) == (1e-7, 1e-9)


def test_same_and_to_numpy():
    a = np.array([[0, 1.5], [2, 0]], np.float32)
    x = nd.array(a)
    assert same(x, a) and same(x.tostype("csr"), x) and same(sp.csr_matrix(a), x)
    assert not same(x, a + 1e-7 + (a == 0)) and not same(x, a.T) and not same(x, a[:1])
    for src in (x, x.tostype("row_sparse"), sp.csr_matrix(a), a):
        out = to_numpy(src)
        assert type(out) is np.ndarray
        np.testing.assert_array_equal(out, a)
    assert to_numpy(2.5).shape == ()


@pytest.mark.parametrize("stype", ["csr", "default"])
@pytest.mark.parametrize("shape, density, stored", [
    ((10, 10), 0.05, 5), ((7, 3), 0.5, 10),  # 10.5 rounds to even, as Python's round
    ((7, 3), 0.25, 5), ((3, 5), 0.1, 2), ((1000, 50), 0.02, 1000), ((4, 6), 0.0, 0),
    ((4, 6), 1.0, 24),
])
def test_csr_and_dense_store_exactly_round_density_times_size(stype, shape, density, stored):
    """MXNet's rand_ndarray(shape, 'csr', density) stores round(density * size) values."""
    for seed in range(3):
        nets.random.seed(seed)
        x = rand_ndarray(shape, stype, density)
        assert x.stype == stype and x.shape == shape
        assert np.count_nonzero(x.asnumpy()) == stored
        if stype == "csr":
            assert x.nnz == stored


def test_rand_sparse_ndarray_returns_the_array_and_its_buffers():
    from nets.test_utils import rand_sparse_ndarray
    nets.random.seed(0)
    csr, (indptr, indices, values) = rand_sparse_ndarray((6, 5), "csr", density=0.2)
    assert csr.stype == "csr" and csr.nnz == 6  # round(0.2 * 30)
    expected = np.zeros((6, 5), np.float32)
    rows = np.repeat(np.arange(6), np.diff(indptr.asnumpy()))
    expected[rows, indices.asnumpy()] = values.asnumpy()
    np.testing.assert_array_equal(csr.asnumpy(), expected)
    rsp, (vals, rows) = rand_sparse_ndarray((5, 3), "row_sparse", rsp_indices=[3, 0],
                                            data_init=2.5, dtype="float64")
    assert rsp.dtype == np.float64 and rows.tolist() == [0, 3]
    np.testing.assert_array_equal(vals, np.full((2, 3), 2.5))
    np.testing.assert_array_equal(rsp.asnumpy()[[1, 2, 4]], np.zeros((3, 3)))
    with pytest.raises(ValueError, match="stype='default'"):
        rand_sparse_ndarray((2, 2), "default")
