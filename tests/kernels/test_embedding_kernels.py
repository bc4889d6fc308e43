"""nets.kernels.embedding called directly on edge cases (no ids, one id, all equal, all
distinct, unsorted with repeats, zero columns, bad ids); tests/kernels/test_boundscheck.py
re-runs them with NUMBA_BOUNDSCHECK=1 to prove no out-of-bounds access."""
import numpy as np
import pytest

from nets.kernels import embedding as kernels
from nets.kernels._jit import jit, popcount

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


def _unique_slots_reference(ids):
    uniq, inverse = np.unique(ids, return_inverse=True)
    return uniq, inverse.reshape(-1)


# Ranges below 64 * BITMAP_WORDS_PER_ID * len(ids) take the bitmap, larger ones the radix sort.
@pytest.mark.parametrize("upper", [100, 64 * 8 * 7, 64 * 8 * 7 + 1, 2 ** 40, 2 ** 63 - 1])
@pytest.mark.parametrize("name", sorted(IDS))
def test_unique_slots_is_numpy_unique_with_inverse(name, upper):
    ids = np.array(IDS[name], np.int64)
    if len(ids) > 1:
        ids[-1] = upper - 1  # the largest id: the last bit of the last word
    uniq, slot = kernels.unique_slots(ids, upper)
    want_uniq, want_slot = _unique_slots_reference(ids)
    np.testing.assert_array_equal(uniq, want_uniq)
    np.testing.assert_array_equal(slot, want_slot)
    assert uniq.dtype == slot.dtype == np.int64


@pytest.mark.parametrize("n, upper", [(1000, 64 * 8 * 1000), (1000, 64 * 8 * 1000 + 1),
                                      (1, 64), (1, 65), (5000, 10 ** 6), (300, 10 ** 5)])
def test_unique_slots_on_both_sides_of_the_bitmap_threshold(n, upper):
    ids = np.random.default_rng(n).integers(0, upper, n, dtype=np.int64)
    ids[0] = upper - 1
    uniq, slot = kernels.unique_slots(ids, upper)
    want_uniq, want_slot = _unique_slots_reference(ids)
    np.testing.assert_array_equal(uniq, want_uniq)
    np.testing.assert_array_equal(slot, want_slot)


@pytest.mark.parametrize("n, upper, bitmap", [
    (1000, 64 * 8 * 1000, True), (1000, 64 * 8 * 1000 + 1, False), (1, 64 * 8, True),
    (0, 0, True), (0, 1, False), (10, 2 ** 63 - 1, False)])
def test_ranks_in_bitmap_up_to_the_words_per_id(n, upper, bitmap):
    assert kernels.BITMAP_WORDS_PER_ID == 8
    assert kernels.ranks_in_bitmap(n, upper) is bitmap


@pytest.mark.parametrize("stored, n_keys, upper", [
    (0, 5, 1), (1, 0, 64), (1, 7, 64), (300, 1000, 10 ** 5), (64, 200, 64), (5, 40, 2 ** 20)])
def test_bitmap_positions_is_a_search_of_the_sorted_table(stored, n_keys, upper):
    rng = np.random.default_rng(stored + n_keys)
    table = np.unique(rng.integers(0, upper, stored, dtype=np.int64))
    if stored:
        table[-1] = upper - 1  # the largest id: the last bit of the last word
    # keys: stored ids, absent ids, and ids outside [0, upper)
    keys = np.concatenate([rng.choice(table, n_keys) if stored else np.zeros(0, np.int64),
                           rng.integers(-3, upper + 3, n_keys)])
    pos, found = kernels.bitmap_positions(table, keys, upper)
    want = np.searchsorted(table, keys)
    want_found = np.isin(keys, table)
    np.testing.assert_array_equal(found, want_found)
    np.testing.assert_array_equal(pos[found], want[want_found])
    assert not pos[~found].any() and pos.dtype == np.int64


@pytest.mark.parametrize("name", sorted(IDS))
def test_slots_in_order_of_any_int64_keys(name):
    ids = np.array(IDS[name], np.int64) * (2 ** 40) - 7  # negative and large keys too
    uniq, slot = kernels.slots_in_order(ids, np.argsort(ids, kind="stable"))
    want_uniq, want_slot = _unique_slots_reference(ids)
    np.testing.assert_array_equal(uniq, want_uniq)
    np.testing.assert_array_equal(slot, want_slot)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("width", [0, 3])
@pytest.mark.parametrize("name", sorted(IDS))
def test_sum_rows_by_slot_matches_numpy(name, width, dtype):
    ids = np.array(IDS[name], np.int64)
    rows = np.random.default_rng(0).normal(size=(len(ids), width)).astype(dtype)
    uniq, slot = _unique_slots_reference(ids)
    sums = kernels.sum_rows_by_slot(slot, len(uniq), rows)
    want = np.zeros((len(uniq), width), np.float64)
    np.add.at(want, slot, rows)
    assert sums.dtype == dtype and sums.shape == want.shape
    np.testing.assert_allclose(sums, want, rtol=1e-6)


def test_sum_rows_by_slot_of_negative_zeros_is_positive_zero():
    """As adding into zeros gives (what the gradient of a -0.0 row must be)."""
    sums = kernels.sum_rows_by_slot(np.array([1, 0, 1], np.int64), 2, np.full((3, 2), -0.0))
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


@jit
def _compiled_popcount(x):
    return popcount(x)


@pytest.mark.parametrize("x", [0, 1, 2 ** 63, 2 ** 64 - 1, 0x5555_5555_5555_5555, 12345678901])
def test_popcount_compiled_and_in_python(x):
    want = bin(x).count("1")
    assert popcount(np.uint64(x)) == want
    assert _compiled_popcount(np.uint64(x)) == want
    if x < 2 ** 63:  # a signed argument counts the bits of its two's complement
        assert _compiled_popcount(np.int64(x)) == want
