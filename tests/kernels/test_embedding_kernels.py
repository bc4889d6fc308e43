"""nets.kernels.embedding called directly on edge cases (no ids, one id, all equal, all
distinct, unsorted with repeats, zero columns, bad ids); tests/kernels/test_boundscheck.py
re-runs them with NUMBA_BOUNDSCHECK=1 to prove no out-of-bounds access."""
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


@pytest.mark.parametrize("id_dtype", [np.int64, np.float64])
@pytest.mark.parametrize("dtype", [np.uint32, np.uint64, np.float32, np.float64])
@pytest.mark.parametrize("rows, width", [(1, 1), (8, 3), (100, 32), (5, 0)])
@pytest.mark.parametrize("name", sorted(IDS))
def test_gather_rows_matches_numpy(name, rows, width, dtype, id_dtype):
    ids = np.array(IDS[name], np.int64) % rows
    table = np.arange(rows * width).reshape(rows, width).astype(dtype)
    out, bad = kernels.gather_rows(table, ids.astype(id_dtype))
    assert bad == -1 and out.dtype == dtype
    np.testing.assert_array_equal(out, table[ids].reshape(len(ids), width))


@pytest.mark.parametrize("ids, first_bad", [
    ([0, 5, 1], 1), ([-1, 0], 0), ([4, 4, 4, 5], 3), ([2 ** 62, 0], 0),
    ([1.0, 2.5], 1), ([1.0, np.nan, 9.0], 1), ([0.0, np.inf], 1), ([-np.inf], 0),
    ([3.0, -0.5], 1), ([4.0, 5.0, 0.5], 1),
])
def test_gather_rows_reports_the_first_bad_id(ids, first_bad):
    ids = np.array(ids)  # int64 or float64
    assert kernels.gather_rows(np.zeros((5, 2), np.float32), ids)[1] == first_bad


def test_gather_rows_from_an_empty_table_rejects_any_id():
    assert kernels.gather_rows(np.zeros((0, 3)), np.array([0]))[1] == 0
    out, bad = kernels.gather_rows(np.zeros((0, 3)), np.zeros(0, np.int64))
    assert bad == -1 and out.shape == (0, 3)


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


def test_sum_rows_by_id_of_negative_zeros_is_positive_zero():
    """As adding into zeros gives: a sum that starts from its group's first row keeps that."""
    ids = np.array([2, 0, 2], np.int64)
    _, sums = kernels.sum_rows_by_id(ids, np.argsort(ids, kind="stable"), np.full((3, 2), -0.0))
    assert not np.signbit(sums).any()


@pytest.mark.parametrize("upper", [1, 10, 100, 2 ** 40, 2 ** 63 - 1])
@pytest.mark.parametrize("name", sorted(IDS))
def test_radix_order_is_a_stable_argsort(name, upper):
    ids = np.array(IDS[name], np.int64) % upper
    if upper > 100 and len(ids):
        ids[-1] = upper - 1  # the largest key
    order = kernels.radix_order(ids, upper)
    np.testing.assert_array_equal(order, np.argsort(ids, kind="stable"))


@pytest.mark.parametrize("upper", [2 ** 55, 2 ** 55 + 1])
def test_radix_order_at_the_packing_limit(upper):
    """256 positions take 8 bits: ids below 2^55 are packed with them into 63 bits, larger
    ones are sorted unpacked; both orders are numpy's stable one."""
    rng = np.random.default_rng(1)
    ids = rng.integers(0, upper, 256, dtype=np.int64)
    ids[:3] = upper - 1, 0, upper - 1  # the largest key (twice: stability) and the smallest
    np.testing.assert_array_equal(kernels.radix_order(ids, upper),
                                  np.argsort(ids, kind="stable"))


@pytest.mark.parametrize("upper", [10 ** 5, 10 ** 6])
@pytest.mark.parametrize("n", [255, 256, 1024, 5000])
def test_radix_order_long_input_uses_wide_digits(n, upper):
    ids = np.random.default_rng(0).integers(0, upper, n).astype(np.int64)
    np.testing.assert_array_equal(kernels.radix_order(ids, upper),
                                  np.argsort(ids, kind="stable"))
