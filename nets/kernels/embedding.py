"""The Embedding lookup and its gradient: rows gathered by id, and rows summed per id (the
Embedding / ``take`` weight gradient and the merge of row_sparse (and csr) terms in
``add_n``, which is how autograd sums gradients).

Invariants (the operator checks first): ``gather_rows`` takes any ``ids`` (1-D int64,
float32 or float64: it checks them itself) and a 2-D C-contiguous ``table``. Otherwise
``ids`` is 1-D int64 (any values, any order, repeats allowed, for ``slots_in_order`` which
only compares them; in ``[0, upper)`` for ``unique_slots`` and ``radix_order``); ``order`` is a
permutation of ``range(len(ids))`` (int64) listing ``ids`` in ascending order; ``slot``
holds values in ``[0, groups)``; ``rows`` is 2-D, C-contiguous, with one row per id.
"""
import numpy as np

from ._jit import PREFETCH_AHEAD, jit, popcount, prefetch_row

# Ids are ranked in a bitmap of their range when it has at most this many 64-bit words
# per id: a word costs one store and one prefix-count step, an id a radix sort's several
# scattered passes.
BITMAP_WORDS_PER_ID = 8


@jit
def gather_rows(table, ids):
    """``(out, bad)``: ``out[k] = table[ids[k]]``, and ``bad`` the position of the first id
    that is not a whole number in ``[0, len(table))`` (NaN and inf included), or -1.

    Checking while gathering makes validation free; on a bad id ``out`` is incomplete.
    Rows are prefetched ahead, which ``np.take`` does not do.
    """
    n, d = table.shape
    m = len(ids)
    out = np.empty((m, d), table.dtype)
    for k in range(m):
        if k + PREFETCH_AHEAD < m:
            a = ids[k + PREFETCH_AHEAD]
            if 0 <= a < n:
                prefetch_row(table, np.int64(a))
        v = ids[k]
        if not 0 <= v < n:
            return out, k
        i = np.int64(v)
        if i != v:
            return out, k
        for j in range(d):
            out[k, j] = table[i, j]
    return out, -1


@jit
def radix_order(ids, upper):
    """A stable argsort of ``ids`` (int64 in ``[0, upper)``): LSD radix sort over the bits of
    ``upper - 1`` in as few passes of at most 11 bits as they need (8 bits for fewer than
    256 ids). Each id is packed with its position into one int64 (``id << pbits | k``), so a
    pass moves one array, read and written sequentially, and one sweep counts the digits of
    every pass (moving keys and positions as two arrays costs a second scattered write per
    id). Linear time, where numpy's stable argsort is O(n log n). Ids and positions needing
    more than 63 bits together fall back to ``_merge_order``."""
    n = len(ids)
    nbits, pbits = _bit_length(upper - 1), _bit_length(n - 1)
    if nbits + pbits > 63:
        return _merge_order(ids)
    widest = 8 if n < 256 else 11
    passes = (nbits + widest - 1) // widest
    bits = (nbits + passes - 1) // passes
    mask = (1 << bits) - 1
    keys, keys2 = np.empty(n, np.int64), np.empty(n, np.int64)
    count = np.zeros((passes, mask + 2), np.int64)
    for k in range(n):
        v = ids[k]
        keys[k] = (v << pbits) | k
        for s in range(passes):
            count[s, ((v >> (s * bits)) & mask) + 1] += 1
    for s in range(passes):
        at = count[s]
        for d in range(mask + 1):
            at[d + 1] += at[d]
        shift = s * bits + pbits
        for k in range(n):
            key = keys[k]
            d = (key >> shift) & mask
            keys2[at[d]] = key
            at[d] += 1
        keys, keys2 = keys2, keys
    position = (1 << pbits) - 1
    for k in range(n):
        keys2[k] = keys[k] & position
    return keys2


@jit(helper=True)
def _merge_order(ids):
    """A stable argsort of ``ids`` by bottom-up merging, O(n log n): ``radix_order``'s
    fallback for ids too wide to pack with their positions. Plain loops: numba's own
    ``np.argsort(kind="mergesort")`` is a large generic implementation, slow to compile into
    every kernel that ranks ids, for a branch that only ids and positions needing more than
    63 bits together take."""
    n = len(ids)
    order, merged = np.empty(n, np.int64), np.empty(n, np.int64)
    for k in range(n):
        order[k] = k
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j = lo, mid
            for k in range(lo, hi):
                if i < mid and (j == hi or ids[order[i]] <= ids[order[j]]):  # ties: left
                    merged[k] = order[i]
                    i += 1
                else:
                    merged[k] = order[j]
                    j += 1
        order, merged = merged, order
        width *= 2
    return order


@jit(helper=True)
def _bit_length(x):
    """Bits needed to write ``x >= 0`` (at least 1)."""
    b = 1
    while b < 63 and x >> b > 0:
        b += 1
    return b


def unique_slots(ids, upper):
    """``(uniq, slot)``: the sorted unique ``ids`` (in ``[0, upper)``) and, for each id, its
    position in ``uniq`` (``np.unique(ids, return_inverse=True)`` in linear time).

    Ids that cover their range densely enough are ranked in a bitmap (``bitmap_slots``);
    sparser ids are sorted by ``radix_order``. Python picks the kernel, so a process
    compiles only the way its ids take (each is a separate compile of seconds).
    """
    if ranks_in_bitmap(len(ids), upper):
        return bitmap_slots(ids, upper)
    return slots_in_order(ids, radix_order(ids, upper))


@jit
def bitmap_slots(ids, upper):
    """``unique_slots`` by a bitmap of ``upper`` bits: an id's slot is the count of set bits
    before it (a prefix count per 64-bit word plus one ``popcount``), with no sort."""
    n = len(ids)
    bits, before, count = _bitmap(ids, upper)
    one = np.uint64(1)
    uniq = np.empty(count, np.int64)
    slot = np.empty(n, np.int64)
    for k in range(n):
        v = ids[k]
        w = v >> 6
        s = before[w] + popcount(bits[w] & ((one << np.uint64(v & 63)) - one))
        slot[k] = s
        uniq[s] = v
    return uniq, slot


@jit
def bitmap_positions(table, keys, upper):
    """``(pos, found)``: each of ``keys``' position in ``table`` (sorted unique ids in
    ``[0, upper)``) and whether it is there; ``pos`` is 0 where not found. ``table`` is
    ranked in a bitmap of ``upper`` bits as ``bitmap_slots`` ranks ids, so a key costs one
    word test and one ``popcount`` whatever its order (keys outside ``[0, upper)`` are not
    found)."""
    bits, before, _ = _bitmap(table, upper)
    one = np.uint64(1)
    n = len(keys)
    pos = np.zeros(n, np.int64)
    found = np.zeros(n, np.bool_)
    for k in range(n):
        v = keys[k]
        if 0 <= v < upper:
            w = v >> 6
            bit = one << np.uint64(v & 63)
            if bits[w] & bit:
                pos[k] = before[w] + popcount(bits[w] & (bit - one))
                found[k] = True
    return pos, found


@jit(helper=True)
def _bitmap(ids, upper):
    """``(bits, before, count)``: the bitmap of ``upper`` bits with the bits of ``ids`` (in
    ``[0, upper)``) set, the set bits in the words before each word, and their total."""
    words = _words(upper)
    bits = np.zeros(words, np.uint64)
    one = np.uint64(1)
    for k in range(len(ids)):
        v = ids[k]
        bits[v >> 6] |= one << np.uint64(v & 63)
    before = np.empty(words, np.int64)
    count = 0
    for w in range(words):
        before[w] = count
        count += popcount(bits[w])
    return bits, before, count


def ranks_in_bitmap(n, upper):
    """Whether ``n`` ids in ``[0, upper)`` are ranked in a bitmap (``unique_slots``,
    ``bitmap_positions``; else sorted or searched): when the bitmap has at most
    ``BITMAP_WORDS_PER_ID`` words per id."""
    return -(-int(upper) // 64) <= BITMAP_WORDS_PER_ID * int(n)


@jit(helper=True)
def _words(upper):
    """64-bit words of a bitmap of ``upper`` bits (not ``(upper + 63) // 64``, which
    overflows for ``upper`` near 2^63)."""
    return upper // 64 + (upper % 64 != 0)


@jit
def slots_in_order(ids, order):
    """``(uniq, slot)`` as ``unique_slots`` gives them, from an ``order`` listing ``ids``
    ascending (``radix_order``, or numpy's stable argsort for unbounded keys)."""
    n = len(ids)
    slot = np.empty(n, np.int64)
    groups = 0
    for k in range(n):
        i = order[k]
        if k == 0 or ids[i] != ids[order[k - 1]]:
            groups += 1
        slot[i] = groups - 1
    uniq = np.empty(groups, np.int64)
    for k in range(n):
        uniq[slot[k]] = ids[k]
    return uniq, slot


@jit
def sum_rows_by_slot(slot, groups, rows):
    """``sums``, ``(groups, cols)``: ``sums[s]`` adds every ``rows[k]`` with ``slot[k] == s``.

    Rows are read in order and added into their group's row; a group's first row starts its
    sum, so ``sums`` is never zeroed first (that would be one more pass over the whole
    result). ``0 + x``: a group of -0.0 rows
    still sums to +0.0, as adding into zeros would.
    """
    n, d = rows.shape
    sums = np.empty((groups, d), rows.dtype)
    started = np.zeros(groups, np.bool_)
    zero = rows.dtype.type(0)
    for k in range(n):
        s = slot[k]
        if started[s]:
            for j in range(d):
                sums[s, j] += rows[k, j]
        else:
            started[s] = True
            for j in range(d):
                sums[s, j] = zero + rows[k, j]
    return sums
