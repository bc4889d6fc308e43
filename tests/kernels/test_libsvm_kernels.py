"""nets.kernels.libsvm called directly on edge cases (empty input, one line without a newline,
errors on the last byte, more ranges than lines, tight output buffers);
tests/kernels/test_boundscheck.py re-runs them with NUMBA_BOUNDSCHECK=1 to prove no
out-of-bounds access."""
import numpy as np
import pytest

from nets.kernels import libsvm as k

NO_LIMIT = 2 ** 62


def parse(text, parts=1, multilabel=False, f32=True, limit=NO_LIMIT, pend=-1, shift=0,
          lab_limit=NO_LIMIT, slow_cap=4):
    """Run count_range + parse_part on each range with capacities exactly as documented;
    returns the stats table and the per-range output slices."""
    buf = np.frombuffer(text, np.uint8).copy()
    bounds = k.line_bounds(buf, parts)
    counts = np.array([k.count_range(buf, a, b) for a, b in zip(bounds[:-1], bounds[1:])],
                      np.int64).reshape(-1, 3)
    rows_cap = counts[:, 0] + 1
    row_base = np.concatenate(([0], np.cumsum(rows_cap)))
    nnz_base = np.concatenate(([0], np.cumsum(counts[:, 1])))
    lab_base = np.concatenate(([0], np.cumsum(counts[:, 2] + rows_cap)))
    n = row_base[-1]
    out = dict(labels=np.empty(n), qids=np.empty(n, np.int64),
               lab_ptr=np.empty(n + parts, np.int64), lab_ids=np.empty(lab_base[-1], np.int64),
               indptr=np.empty(n + parts, np.int64), indices=np.empty(nnz_base[-1], np.int64),
               data=np.empty(nnz_base[-1], np.float32 if f32 else np.float64),
               slow_at=np.empty(slow_cap * parts, np.int64),
               slow_pos=np.empty((slow_cap * parts, 2), np.int64))
    stats = [k.parse_part(buf, bounds, i, multilabel, limit, pend, shift, lab_limit,
                          row_base, nnz_base, lab_base, *out.values()) for i in range(parts)]
    return np.array(stats, np.int64), out, row_base, nnz_base


def test_count_range_at_every_alignment():
    buf = np.random.default_rng(0).choice(np.frombuffer(b"\n:,a0", np.uint8), 64)
    for lo in range(0, 20):
        for hi in range(lo, 41, 3):
            piece = buf[lo:hi]
            assert k.count_range(buf, lo, hi) == tuple(int((piece == c).sum()) for c in b"\n:,")


def test_empty_and_blank_inputs():
    for text in (b"", b"\n", b"\n\n", b"  \t\r\n# only a comment", b"#"):
        stats, _, _, _ = parse(text, parts=3)
        assert stats[:, :5].sum() == 0 and (stats[:, 5] == -1).all()


def test_one_line_without_newline_and_crlf():
    stats, out, _, _ = parse(b"-1.5 qid:7 0:1 3:2.5e-1\r")
    assert stats[0, :5].tolist() == [1, 2, 0, 0, 0]
    assert out["labels"][0] == -1.5 and out["qids"][0] == 7
    assert out["indptr"][:2].tolist() == [0, 2] and out["indices"][:2].tolist() == [0, 3]
    assert out["data"][:2].tolist() == [1.0, 0.25]


def test_more_ranges_than_lines():
    text = b"1 0:1\n2 1:2\n3\n"
    stats, out, row_base, nnz_base = parse(text, parts=7)
    assert stats[:, 0].sum() == 3 and stats[:, 1].sum() == 2
    bounds = k.line_bounds(np.frombuffer(text, np.uint8).copy(), 7)
    assert bounds[0] == 0 and bounds[-1] == len(text) and (np.diff(bounds) >= 0).all()
    assert all(b == 0 or text[b - 1] == 10 for b in bounds[:-1])


@pytest.mark.parametrize("text, code", [
    (b"1 1:", k.BAD_VALUE), (b"1 1", k.BAD_FEATURE), (b"1 :", k.BAD_INDEX),
    (b"x", k.BAD_LABEL), (b"1 qid:", k.QID), (b"1,2", k.MULTI), (b"1 2:1 1:1", k.ORDER),
])
def test_errors_on_the_last_byte(text, code):
    stats, _, _, _ = parse(text)
    pos = stats[0, 5]
    assert 0 <= pos < len(text)
    token = text[pos:].split()[0] if text[pos:].split() else b""
    assert k.classify(stats[0, 4], token) == code


def test_index_limits_and_shift():
    stats, _, _, _ = parse(b"1 0:1 5:1", limit=4)
    assert stats[0, 4] == k.RANGE and stats[0, 5] == 6
    stats, _, _, _ = parse(b"1 0:1", shift=1)
    assert stats[0, 4] == k.ZERO_INDEX
    stats, out, _, _ = parse(b"1 1:1 5:1\n1 5:2", pend=5, limit=5)
    assert stats[0, 4] == 0 and stats[0, 6] == 6 and stats[0, 7] == 0
    stats, out, _, _ = parse(b"1 1:1 5:1", shift=1)
    assert out["indices"][:2].tolist() == [0, 4]


def test_multilabel():
    stats, out, _, _ = parse(b"3,1 0:1\n0:2\n5\n", multilabel=True, lab_limit=5)
    assert stats[0, :5].tolist() == [3, 2, 3, 0, 0]
    assert out["lab_ptr"][:4].tolist() == [0, 2, 2, 3] and out["lab_ids"][:3].tolist() == [1, 3, 5]
    assert parse(b"1,1", multilabel=True)[0][0, 4] == k.DUP_LABEL
    assert parse(b"6", multilabel=True, lab_limit=5)[0][0, 4] == k.LABEL_RANGE


def test_slow_tokens_beyond_capacity_are_counted():
    text = b"1e-400 0:9007199254740993 1:1e400 2:5e-324\n"  # 2**53 + 1: a float64 midpoint
    stats, out, _, _ = parse(text, f32=False, slow_cap=2)
    assert stats[0, 3] == 4  # label + 3 values, only the first two stored
    assert out["slow_at"].tolist() == [-1, 0]
    s, e = out["slow_pos"][1]
    assert text[s:e] == b"9007199254740993"
    stats, _, _, _ = parse(text, f32=False, slow_cap=0)
    assert stats[0, 3] == 4


@pytest.mark.parametrize("f32", [True, False])
def test_shortest_decimals(f32):
    dtype = np.float32 if f32 else np.float64
    x = np.array([0.1, -2.5, 3.0, 1e-7, 0.0, -0.0, np.nan, np.inf, -np.inf,
                  np.finfo(dtype).smallest_subnormal, np.finfo(dtype).max], dtype)
    mant, exp10, status = (np.empty(len(x), np.int64) for _ in range(3))
    k.shortest_decimals(x, f32, mant, exp10, status, 0, len(x))
    # float64's extremes lie beyond the kernel's double-double powers: left to Python
    extremes = [k.DECIMAL] * 2 if f32 else [k.UNFORMATTED] * 2
    assert status.tolist() == [k.DECIMAL] * 5 + [k.NEG_ZERO, k.NAN, k.POS_INF, k.NEG_INF] + \
        extremes
    assert list(zip(mant[:5], exp10[:5])) == [(1, -1), (-25, -1), (3, 0), (1, -7), (0, 0)]
    if f32:  # shortest: 1e-45 and 3.4028235e38
        assert list(zip(mant[9:], exp10[9:])) == [(1, -45), (34028235, 31)]
    empty = np.zeros(0, np.int64)
    k.shortest_decimals(np.zeros(0, dtype), f32, empty, empty, empty, 0, 0)


@pytest.mark.parametrize("lo, hi", [(0, 0), (3, 3), (0, 2), (2, 5), (4, 6)])
def test_shortest_decimals_writes_only_its_range(lo, hi):
    x = np.array([0.1, -2.5, 3.0, 1e-7, 0.0, 250.0])
    mant, exp10, status = (np.full(len(x), -9, np.int64) for _ in range(3))
    k.shortest_decimals(x, False, mant, exp10, status, lo, hi)
    expected = [(1, -1, k.DECIMAL), (-25, -1, k.DECIMAL), (3, 0, k.DECIMAL),
                (1, -7, k.DECIMAL), (0, 0, k.DECIMAL), (25, 1, k.DECIMAL)]
    got = list(zip(mant.tolist(), exp10.tolist(), status.tolist()))
    assert got == [e if lo <= i < hi else (-9, -9, -9) for i, e in enumerate(expected)]


def test_write_rows_fills_a_tight_buffer():
    """Rows: a label with qid and features, an empty row, a multi-label row, no labels."""
    vm, ve, vs = (np.array([15, 3, -1]), np.array([-1, 20, -7]),
                  np.array([k.DECIMAL, k.DECIMAL, k.DECIMAL]))
    lm, le, ls = np.array([1, 0, -3]), np.array([0, 0, 2]), np.array([k.DECIMAL, k.NAN, 0])
    indptr, indices = np.array([0, 2, 2, 3]), np.array([0, 9, 99])
    qids = np.array([5, -1, -1])
    expected = b"1 qid:5 1:1.5 10:3e20\nnan\n-300 100:-1e-7\n"
    out = np.zeros(len(expected), np.uint8)
    n = k.write_rows(out, False, lm, le, ls, np.zeros(0, np.int64), np.zeros(0, np.int64),
                     qids, indptr, indices, 1, vm, ve, vs)
    assert bytes(out[:n]) == expected
    expected = b"2,7 0:1.5 9:3e20\n\n4 99:-1e-7\n"
    out = np.zeros(len(expected), np.uint8)
    n = k.write_rows(out, True, lm, le, ls, np.array([0, 2, 2, 3]), np.array([2, 7, 4]),
                     np.zeros(0, np.int64), indptr, indices, 0, vm, ve, vs)
    assert bytes(out[:n]) == expected
    assert k.write_rows(np.zeros(0, np.uint8), False, lm, le, ls, lm[:0], lm[:0], lm[:0],
                        np.zeros(1, np.int64), indices, 0, vm, ve, vs) == 0


@pytest.mark.parametrize("m, e, text", [
    (5, -1, b"0.5"), (12345, -2, b"123.45"), (7, 3, b"7000"), (1, 16, b"1e16"),
    (1, -4, b"0.0001"), (1, -5, b"0.00001"), (12, -7, b"1.2e-6"), (123, -9, b"1.23e-7"),
    (-98, 20, b"-9.8e21"), (42, 0, b"42"),
])
def test_decimal_layouts(m, e, text):
    out = np.zeros(len(text) + 2, np.uint8)  # label + newline
    n = k.write_rows(out, False, np.array([m]), np.array([e]), np.array([k.DECIMAL]),
                     np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64),
                     np.array([0, 0]), np.zeros(0, np.int64), 0, np.zeros(0, np.int64),
                     np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert bytes(out[:n]) == text + b"\n"
    assert float(text) == m * 10.0 ** e or np.isclose(float(text), m * 10.0 ** e)
