"""nets.kernels.embedding called directly on edge cases (no ids, one id, all equal, all
distinct, unsorted with repeats, zero columns); tests/kernels/test_boundscheck.py re-runs
them with NUMBA_BOUNDSCHECK=1 to prove no out-of-bounds access."""
import numpy as np
import pytest

from nets.kernels import embedding as kernels

IDS = {
    "none": [],
    "one": [7],
    "all_equal": [3, 3, 3, 3],
    "distinct": [9, 0, 4, 2],
    "repeats": [5, 1, 5, 0, 1, 5, 99],
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("width", [0, 3])
@pytest.mark.parametrize("name", sorted(IDS))
def test_sum_rows_by_id_matches_numpy(name, width, dtype):
    ids = np.array(IDS[name], np.int64)
    rows = np.random.default_rng(0).normal(size=(len(ids), width)).astype(dtype)
    uniq, sums = kernels.sum_rows_by_id(ids, np.argsort(ids, kind="stable"), rows)
    want_uniq, inverse = np.unique(ids, return_inverse=True)
    want = np.zeros((len(want_uniq), width), np.float64)
    np.add.at(want, inverse.reshape(-1), rows)
    np.testing.assert_array_equal(uniq, want_uniq)
    assert uniq.dtype == np.int64 and sums.dtype == dtype
    np.testing.assert_allclose(sums, want, rtol=1e-6)


@pytest.mark.parametrize("upper", [1, 10, 100, 2 ** 40, 2 ** 63 - 1])
@pytest.mark.parametrize("name", sorted(IDS))
def test_radix_order_is_a_stable_argsort(name, upper):
    ids = np.array(IDS[name], np.int64) % upper
    if upper > 100 and len(ids):
        ids[-1] = upper - 1  # the largest key
    order = kernels.radix_order(ids, upper)
    np.testing.assert_array_equal(order, np.argsort(ids, kind="stable"))


def test_radix_order_long_input_uses_wide_digits():
    ids = np.random.default_rng(0).integers(0, 10 ** 6, 5000).astype(np.int64)
    np.testing.assert_array_equal(kernels.radix_order(ids, 10 ** 6),
                                  np.argsort(ids, kind="stable"))
