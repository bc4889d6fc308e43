"""load_libsvm / save_libsvm: round trips, the grammar, every malformed-input error (file,
line, token), the binary cache, and a hypothesis fuzz test against a slow pure-Python
reference parser."""
import os
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nets
from nets import data
from nets.base import NetsError
from nets.arrays.csr import CSRNDArray
from nets.test_utils import make_sparse_dataset


def _write(tmp_path, text, name="data.svm"):
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return str(path)


def _csr(rows, n_features):
    """CSR parts from ``[{col: value}, ...]``."""
    indptr = np.cumsum([0] + [len(r) for r in rows])
    indices = [c for r in rows for c in sorted(r)]
    values = [r[c] for r in rows for c in sorted(r)]
    return np.array(values), np.array(indices, np.int64), indptr, (len(rows), n_features)


def assert_csr_equal(x, parts):
    data_, indices, indptr, shape = parts
    assert isinstance(x, CSRNDArray) and x.shape == shape
    np.testing.assert_array_equal(x._indptr, indptr)
    np.testing.assert_array_equal(x._indices, indices)
    np.testing.assert_array_equal(x._data, np.asarray(data_, x.dtype))
    x.check_format(full_check=True)


def assert_same_arrays(a, b):
    assert a.stype == b.stype and a.shape == b.shape and a.dtype == b.dtype
    if a.stype == "csr":
        for part in ("_indptr", "_indices", "_data"):
            np.testing.assert_array_equal(getattr(a, part), getattr(b, part))
    else:
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


# -- round trips ---------------------------------------------------------------------------

def _dataset(kind, dtype):
    rng = np.random.default_rng(3)
    if kind == "random":
        X, y, _ = make_sparse_dataset(60, 40, 5, task="regression", seed=1, dtype=dtype)
        return X, y
    if kind == "empty_rows":  # rows without features, explicit zeros, extreme values
        dense = rng.normal(size=(7, 6)) * 10.0 ** rng.integers(-30, 30, (7, 6))
        dense[[0, 3, 6]] = 0
        dense[rng.random((7, 6)) < 0.4] = 0
        X = nets.nd.array(dense, dtype=dtype).tostype("csr")
        X._data[:1] = 0  # an explicit (stored) zero survives the trip
        y = nets.nd.array(np.array([0, -1, 1e-30, 3.5, -0.0, 1e30, 7], dtype), dtype=dtype)
        return X, y
    if kind == "no_values":  # a 0-nnz file: labels only
        return nets.nd.sparse.zeros("csr", (4, 9), dtype=dtype), nets.nd.array(
            np.arange(4), dtype=dtype)
    specials = np.array([np.nan, np.inf, -np.inf, np.finfo(dtype).max, np.finfo(dtype).tiny,
                         np.finfo(dtype).smallest_subnormal, 0.1, 1 / 3, -2.5e-7], dtype)
    X = nets.nd.sparse.csr_matrix((specials, np.arange(9), [0, 9]), shape=(1, 12))
    return X, nets.nd.array(np.array([0.1], dtype), dtype=dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", ["random", "empty_rows", "no_values", "specials"])
@pytest.mark.parametrize("zero_based", [True, False])
def test_round_trip(tmp_path, kind, dtype, zero_based):
    X, y = _dataset(kind, dtype)
    path = _write(tmp_path, "")
    data.save_libsvm(path, X, y, zero_based=zero_based)
    X2, y2 = data.load_libsvm(path, n_features=X.shape[1], zero_based=zero_based, dtype=dtype)
    assert_same_arrays(X2, X)
    assert_same_arrays(y2, y)


def test_round_trip_writes_shortest_decimals(tmp_path):
    X = nets.nd.sparse.csr_matrix(([0.1, 2.0, 1e-7, 123456789.0], [0, 1, 2, 3], [0, 4]),
                                  shape=(1, 4))
    path = _write(tmp_path, "")
    data.save_libsvm(path, X, [1.0], zero_based=False)
    assert open(path).read() == "1 1:0.1 2:2 3:1e-7 4:123456790\n"


def test_round_trip_multilabel_and_qid(tmp_path):
    X = nets.nd.sparse.csr_matrix(([1.5, 2.0, 3.0], [1, 0, 4], [0, 1, 1, 3, 3]), shape=(4, 5))
    y = nets.nd.sparse.csr_matrix(([1, 1, 1, 1], [0, 3, 2, 7], [0, 2, 2, 3, 4]), shape=(4, 8))
    qid = np.array([3, 3, -1, 9])
    path = _write(tmp_path, "")
    data.save_libsvm(path, X, y, query_id=qid)
    assert open(path).read().splitlines() == ["0,3 qid:3 1:1.5", "qid:3", "2 0:2 4:3",
                                              "7 qid:9"]
    X2, y2, q2 = data.load_libsvm(path, zero_based=True, multilabel=True, query_id=True)
    assert_same_arrays(X2, X)
    assert_same_arrays(y2, y.astype("float32"))
    np.testing.assert_array_equal(q2.asnumpy(), qid)


def test_save_rejects_what_libsvm_cannot_hold(tmp_path):
    path = _write(tmp_path, "")
    X = nets.nd.sparse.zeros("csr", (2, 3))
    with pytest.raises(NetsError, match="row 1 has no label, qid or feature"):
        data.save_libsvm(path, X, nets.nd.sparse.csr_matrix(([1], [0], [0, 1, 1]), (2, 2)))
    with pytest.raises(NetsError, match="y has 3 rows, X has 2"):
        data.save_libsvm(path, X, [1, 2, 3])
    with pytest.raises(NetsError, match="query_id must hold 2 integers"):
        data.save_libsvm(path, X, [1, 2], query_id=[1.5, 2])


# -- the grammar ---------------------------------------------------------------------------

def test_grammar(tmp_path):
    text = ("# a comment line\r\n"
            "\r\n"
            "+1 qid:4 1:2.5e-3 3:-4 7:.5   # trailing comment\r\n"
            "-1\t2:1E+2\t5:-0 \r\n"
            "   \t\n"
            "0.5\n"
            "3 1:nan 2:-Inf 4:1.#comment glued to a token\n"
            "2e0 6:1")  # no final newline
    X, y, qid = data.load_libsvm(_write(tmp_path, text), query_id=True)
    assert_csr_equal(X, _csr([{0: 2.5e-3, 2: -4, 6: 0.5}, {1: 100, 4: -0.0}, {},
                              {0: np.nan, 1: -np.inf, 3: 1.0}, {5: 1}], 7))
    np.testing.assert_array_equal(y.asnumpy(), [1, -1, 0.5, 3, 2])
    np.testing.assert_array_equal(qid.asnumpy(), [4, -1, -1, -1, -1])
    assert y.dtype == X.dtype == np.float32 and qid.dtype == np.int64


@pytest.mark.parametrize("text, zero_based, cols", [
    ("1 1:1 3:1\n", "auto", [0, 2]),          # no index 0: one-based
    ("1 0:1 3:1\n", "auto", [0, 3]),          # an index 0: zero-based
    ("1 1:1 3:1\n", True, [1, 3]),
    ("1 1:1 3:1\n", False, [0, 2]),
])
def test_zero_based(tmp_path, text, zero_based, cols):
    X, _ = data.load_libsvm(_write(tmp_path, text), zero_based=zero_based)
    np.testing.assert_array_equal(X._indices, cols)
    assert X.shape == (1, cols[-1] + 1)


def test_n_features_and_empty_file(tmp_path):
    X, y = data.load_libsvm(_write(tmp_path, "1 2:1\n"), n_features=10)
    assert X.shape == (1, 10) and X._indices.tolist() == [1]  # 'auto': one-based
    X, y = data.load_libsvm(_write(tmp_path, "1 10:1\n"), n_features=10)  # one-based: fits
    assert X._indices.tolist() == [9]
    X, y = data.load_libsvm(_write(tmp_path, ""), n_features=3)
    assert X.shape == (0, 3) and y.shape == (0,) and X.nnz == 0
    X, y = data.load_libsvm(_write(tmp_path, "# nothing\n\n"))
    assert X.shape == (0, 0)


def test_unaligned_buffer_is_realigned():
    """The counting kernel reads 8-byte words: a buffer at an odd address is copied first."""
    raw = np.frombuffer(b"-1 0:1.5 2:2\n", np.uint8).copy()
    assert raw[1:].ctypes.data % 8
    block = nets.data.libsvm._parse(raw[1:], nets.data.libsvm._Spec(None, True, "float32"),
                                    "memory", 0)
    assert block.indices.tolist() == [0, 2] and block.data.tolist() == [1.5, 2.0]


def test_multilabel(tmp_path):
    X, y = data.load_libsvm(_write(tmp_path, "3,1 0:1\n 1:2\n0 2:1\n"), multilabel=True,
                            zero_based=True)
    assert_csr_equal(y, _csr([{1: 1, 3: 1}, {}, {0: 1}], 4))
    assert_csr_equal(X, _csr([{0: 1}, {1: 2}, {2: 1}], 3))


def test_dtype_and_arguments(tmp_path):
    path = _write(tmp_path, "1 1:0.1\n")
    X, y = data.load_libsvm(path, dtype="float16")
    assert X.dtype == y.dtype == np.float16 and X._data[0] == np.float16(0.1)
    with pytest.raises(nets.base.DTypeError, match="dtype='int32'"):
        data.load_libsvm(path, dtype="int32")
    with pytest.raises(NetsError, match="zero_based='yes'"):
        data.load_libsvm(path, zero_based="yes")
    with pytest.raises(NetsError, match="n_features=-1"):
        data.load_libsvm(path, n_features=-1)
    with pytest.raises(NetsError, match="cannot read"):
        data.load_libsvm(str(tmp_path / "missing.svm"))


@pytest.mark.parametrize("multilabel", [False, True])
def test_blocks(tmp_path, monkeypatch, multilabel):
    """A file read in many blocks equals the file read in one; 'auto' zero-basing and the
    index == n_features check see the whole file."""
    rng = np.random.default_rng(1)
    X = nets.nd.array(rng.random((40, 6)) * (rng.random((40, 6)) < 0.5)).tostype("csr")
    y = (nets.nd.array(rng.random((40, 3)) < 0.5).tostype("csr") if multilabel
         else nets.nd.array(rng.normal(size=40)))
    path = _write(tmp_path, "")
    data.save_libsvm(path, X, y, zero_based=False)
    whole = data.load_libsvm(path, multilabel=multilabel)
    monkeypatch.setattr(nets.data.libsvm, "LOAD_BLOCK", 64)
    for got, expected in zip(data.load_libsvm(path, multilabel=multilabel), whole):
        assert_same_arrays(got, expected)
    assert whole[0].shape[1] == 6 and whole[0].nnz == X.nnz  # one-based: shifted
    lines = open(path).read().splitlines()
    first = next(i for i, line in enumerate(lines) if " 6:" in line)  # index n_features: fine
    assert first < 30  # while the file is one-based
    lines[35] = "1 0:1"  # ... but an index 0 in a later block makes the file zero-based
    path = _write(tmp_path, "\n".join(lines) + "\n")
    with pytest.raises(NetsError, match=f"line {first + 1}: feature index out of range for "
                                        f"n_features=6 .*zero-based: it has index 0.*'6:"):
        data.load_libsvm(path, n_features=6, multilabel=multilabel)


def test_libsvm_blocks_start_with_a_short_block(tmp_path, monkeypatch):
    """``libsvm_blocks``' first block holds the lines within ``FIRST_BLOCK`` bytes, the
    later ones those within ``block`` bytes each, and the blocks join to the whole file."""
    rng = np.random.default_rng(2)
    X = nets.nd.array(rng.random((60, 5)) * (rng.random((60, 5)) < 0.6)).tostype("csr")
    y = nets.nd.array(rng.normal(size=60))
    path = _write(tmp_path, "")
    data.save_libsvm(path, X, y)
    ends = np.cumsum([len(line) for line in open(path, "rb")])  # each line's end, in bytes
    monkeypatch.setattr(nets.data.libsvm, "FIRST_BLOCK", 100)
    blocks = list(data.libsvm.libsvm_blocks(path, 5, block=400))
    rows = np.cumsum([b.shape[0] for b, _ in blocks])
    assert rows[0] == np.searchsorted(ends, 100, side="right")
    assert rows[1] == np.searchsorted(ends, ends[rows[0] - 1] + 400, side="right")
    assert len(blocks) > 3
    whole = data.load_libsvm(path, n_features=5, zero_based=True)
    assert_same_arrays(nets.nd.sparse.csr_matrix(
        np.concatenate([b.asnumpy() for b, _ in blocks])), whole[0])
    np.testing.assert_array_equal(np.concatenate([t.asnumpy() for _, t in blocks]),
                                  whole[1].asnumpy())


@pytest.mark.parametrize("with_qid", [False, True])  # qid:'s ':' leave gaps between ranges
def test_parallel_ranges_and_slow_tokens(tmp_path, monkeypatch, with_qid):
    """Force the multi-range parse on a small file (ranges taken by 1 and 3 threads), with
    more slow tokens (17-digit float64 values) than the first slot allocation holds; the
    writer's values formatted by 3 threads give the same file."""
    monkeypatch.setattr(nets.data.libsvm, "PART_BYTES", 64)
    monkeypatch.setattr(nets.parallel, "GRAIN", 1)
    rng = np.random.default_rng(0)
    X = nets.nd.array(rng.random((300, 4)) * (rng.random((300, 4)) < 0.8),
                      dtype="float64").tostype("csr")
    y = nets.nd.array(rng.normal(size=300), dtype="float64")
    qid = np.where(rng.random(300) < 0.5, rng.integers(0, 9, 300), -1) if with_qid else None
    path = _write(tmp_path, "")
    data.save_libsvm(path, X, y, query_id=qid)
    for threads in (1, 3):
        monkeypatch.setattr(nets.parallel, "_setting", (threads, "set_num_threads"))
        X2, y2, q2 = data.load_libsvm(path, n_features=4, zero_based=True, dtype="float64",
                                      query_id=True)
        assert_same_arrays(X2, X)
        assert_same_arrays(y2, y)
        np.testing.assert_array_equal(q2.asnumpy(), -1 if qid is None else qid)
        again = str(tmp_path / f"again{threads}.txt")
        data.save_libsvm(again, X, y, query_id=qid)
        with open(path, "rb") as a, open(again, "rb") as b:
            assert a.read() == b.read()


@pytest.mark.parametrize("dtype, exponents", [(np.float32, 127), (np.float64, 1023)])
def test_rounding_near_midpoints(tmp_path, dtype, exponents):
    """Decimals at and around the midpoints between neighbouring floats, written with few to
    many digits: values must equal ``dtype(float(token))`` whichever conversion path the
    kernel takes (exact, error-bounded, or Python's)."""
    rng = np.random.default_rng(0)
    xs = (rng.choice([-1, 1], 200) * np.where(rng.random(200) < 0.5, 1, rng.uniform(1, 2, 200))
          * 2.0 ** rng.integers(-exponents + 2, exponents, 200)).astype(dtype)  # half: 2**n
    tokens = [_near_midpoint(x, digits, nudge, dtype, toward) for x in xs
              for digits in (None, 9, 17, 25) for nudge in (-1, 0, 1) for toward in (0, np.inf)]
    text = b"".join(b"0 0:" + t + b"\n" for t in tokens)
    X, _ = data.load_libsvm(_write(tmp_path, text), zero_based=True, dtype=dtype)
    with np.errstate(over="ignore"):
        expected = np.array([float(t) for t in tokens]).astype(dtype)
    np.testing.assert_array_equal(X._data, expected)


# -- malformed input: every error names the file, the line and the token -----------------

MALFORMED = [
    ("1 1:2\nabc 1:2\n", {}, 2, "abc", "malformed label"),
    ("1:2 3:4\n", {}, 1, "1:2", "malformed label"),
    ("1 1:2\n1 3\n", {}, 2, "3", "malformed feature (expected index:value)"),
    ("1 a:2\n", {}, 1, "a:2", "malformed feature index"),
    ("1 -1:2\n", {}, 1, "-1:2", "malformed feature index"),
    ("1 1234567890123456789:1\n", {}, 1, "1234567890123456789:1", "malformed feature index"),
    ("1 1:x\n", {}, 1, "1:x", "malformed feature value"),
    ("1 1:\n", {}, 1, "1:", "malformed feature value"),
    ("1 1:1e\n", {}, 1, "1:1e", "malformed feature value"),
    ("1 1:2:3\n", {}, 1, "1:2:3", "malformed feature value"),
    ("1 2:1 2:3\n", {}, 1, "2:3", "does not increase"),
    ("1 3:1 2:3\n", {}, 1, "2:3", "does not increase"),
    ("1 3:1\n", {"n_features": 3, "zero_based": True}, 1, "3:1",
     "out of range for n_features=3 (the file is read as zero-based)"),
    ("1 4:1\n", {"n_features": 3, "zero_based": False}, 1, "4:1", "one-based"),
    ("1 0:1\n1 3:1\n", {"n_features": 3}, 2, "3:1", "zero-based: it has index 0"),
    ("1 0:1\n", {"zero_based": False}, 1, "0:1", "feature index 0 in a file read as one-based"),
    ("1 qid:x 1:2\n", {}, 1, "qid:x", "malformed qid"),
    ("1 1:2 qid:3\n", {}, 1, "qid:3", "malformed qid"),
    ("1,2 1:2\n", {}, 1, "1,2", "pass multilabel=True"),
    ("1,1 1:2\n", {"multilabel": True}, 1, "1,1", "duplicate label"),
    ("1,a 1:2\n", {"multilabel": True}, 1, "1,a", "malformed label list"),
    ("1, 1:2\n", {"multilabel": True}, 1, "1,", "malformed label list"),
    ("# c\r\n\r\n1 1:1\r\n2 x\r\n", {}, 4, "x", "malformed feature"),
    ("1 1:1#c\n1 5:\xff\n", {}, 2, "5:\ufffd", "malformed feature value"),
]


@pytest.mark.parametrize("text, kwargs, line, token, problem", MALFORMED)
def test_malformed(tmp_path, text, kwargs, line, token, problem):
    path = _write(tmp_path, text.encode("latin-1"))
    with pytest.raises(NetsError) as info:
        data.load_libsvm(path, **kwargs)
    assert str(info.value).startswith(f"{path}, line {line}: ")
    assert problem in str(info.value)
    assert str(info.value).endswith(f": {token!r}")


# -- the binary cache ----------------------------------------------------------------------

def test_cache(tmp_path, monkeypatch):
    path = _write(tmp_path, "1 1:0.5\n0 2:1\n")
    X, y = data.load_libsvm(path, cache=True)
    cache = path + ".nets.npz"
    assert os.path.exists(cache)
    with np.load(cache, allow_pickle=False) as npz:  # a plain .npz: nothing pickled
        assert "X::data" in npz.files
    parsed = []
    real = nets.data.libsvm._assemble
    monkeypatch.setattr(nets.data.libsvm, "_assemble", lambda *a: parsed.append(1) or real(*a))
    X2, y2 = data.load_libsvm(path, cache=True)  # reused: nothing parsed
    assert not parsed
    assert_same_arrays(X2, X)
    assert_same_arrays(y2, y)
    X3, _ = data.load_libsvm(path, cache=True, dtype="float64")  # other arguments: re-parsed
    assert parsed and X3.dtype == np.float64
    with open(path, "a") as f:  # the file changed: re-parsed
        f.write("1 3:1\n")
    X4, _ = data.load_libsvm(path, cache=True)
    assert X4.shape == (3, 3)
    with open(cache, "wb") as f:  # a damaged cache is rebuilt
        f.write(b"garbage")
    X5, _ = data.load_libsvm(path, cache=True)
    assert_same_arrays(X5, X4)


def test_progress_bar_only_when_asked(tmp_path, capsys):
    path = _write(tmp_path, "1 1:0.5\n")
    data.load_libsvm(path)
    assert capsys.readouterr().err == ""
    data.load_libsvm(path, progress=True)
    assert "data.svm" in capsys.readouterr().err


# -- fuzz: the parser equals a slow pure-Python reference, or raises NetsError ------------

_NUM = re.compile(rb"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
                  rb"|[nN][aA][nN]|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?)")
_INT = re.compile(rb"\d{1,18}")


class RefError(Exception):
    pass


def reference_parse(text, n_features, zero_based, multilabel, dtype):
    """The documented grammar, token by token in Python: (indptr, indices, values, labels,
    qids, n_features) or RefError."""
    limit = 2 ** 62 if n_features is None else n_features - (zero_based is True)
    shift = 1 if zero_based is False else 0
    indptr, indices, values, labels, qids, saw_zero = [0], [], [], [], [], False

    def number(tok):
        if not _NUM.fullmatch(tok):
            raise RefError(tok)
        return float(tok)

    for line in text.split(b"\n"):
        toks = [t for t in re.split(rb"[ \t\r]+", line.split(b"#", 1)[0]) if t]
        if not toks:
            continue
        if multilabel:
            ids = []
            if b":" not in toks[0]:
                for part in toks.pop(0).split(b","):
                    if not _INT.fullmatch(part):
                        raise RefError(part)
                    ids.append(int(part))
                if len(set(ids)) != len(ids):
                    raise RefError("duplicate label")
            labels.append(sorted(ids))
        else:
            if b":" in toks[0] or b"," in toks[0]:
                raise RefError(toks[0])
            labels.append(number(toks.pop(0)))
        qids.append(-1)
        if toks and toks[0].startswith(b"qid:"):
            if not _INT.fullmatch(toks[0][4:]):
                raise RefError(toks[0])
            qids[-1] = int(toks.pop(0)[4:])
        prev = -1
        for tok in toks:
            if b":" not in tok:
                raise RefError(tok)
            idx, value = tok.split(b":", 1)
            if not _INT.fullmatch(idx) or int(idx) > limit or (int(idx) == 0 and shift):
                raise RefError(tok)
            saw_zero |= int(idx) == 0
            if int(idx) - shift <= prev:
                raise RefError(tok)
            prev = int(idx) - shift
            indices.append(prev)
            values.append(number(value))
        indptr.append(len(indices))
    if zero_based == "auto":
        if saw_zero and n_features is not None and n_features in indices:
            raise RefError("index n_features in a zero-based file")
        if not saw_zero:
            indices = [i - 1 for i in indices]
    if n_features is None:
        n_features = max(indices) + 1 if indices else 0
    with np.errstate(over="ignore"):
        return (indptr, indices, np.array(values, np.float64).astype(dtype), labels, qids,
                n_features)


def _near_midpoint(x, digits, nudge, dtype=np.float32, toward=np.inf):
    """A decimal near the midpoint between ``x`` and the next ``dtype`` value toward
    ``toward``: rounded to ``digits`` significant digits (None: exact), then moved by ``nudge``
    units in the last place - the hardest inputs for the kernel's conversions."""
    from decimal import Decimal, localcontext
    up = np.nextafter(dtype(x), dtype(toward))
    with localcontext() as ctx:
        ctx.prec = 800 if digits is None else digits
        mid = +((Decimal(float(x)) + Decimal(float(up))) / 2)
        exp = mid.as_tuple().exponent
        return str(mid + nudge * Decimal(1).scaleb(exp)).encode()


_EDGE_NUMBERS = [b"1e", b"1e+", b"1.e5", b".e1", b"e1", b"-", b"+.", b".", b"1.5.", b"0x10",
                 b"1_0", b"12345678901234567890123", b"9" * 30 + b".5", b"1" + b"0" * 25,
                 b"0.000000000000000000000000123", b"1e-400", b"1e400", b"-0e99999999999",
                 b"4.9e-324", b"3.4028235e38", b"3.4028236e38", b"1.4e-45", b"7e-46",
                 b"0.1e-5", b"+00000.00001000", b"123456789012345678.5e-10", b"infinit",
                 b"nana", b"-iNfInItY", b"+NaN", b"1e0000000000000000000001"]
_SEPARATORS = st.sampled_from([b" ", b"\t", b"  ", b" \r", b"\r "])
_NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=32).map(lambda f: repr(f).encode()),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda f: repr(f).encode()),
    st.integers(-10 ** 25, 10 ** 25).map(lambda i: str(i).encode()),
    st.builds(_near_midpoint, st.floats(2.0 ** -120, 2.0 ** 120, width=32),
              st.sampled_from([None, 9, 12, 17, 25]), st.integers(-2, 2)),
    st.sampled_from(_EDGE_NUMBERS),
    st.from_regex(_NUM, fullmatch=True))


@st.composite
def _lines(draw, multilabel):
    if multilabel:
        label = b",".join(str(i).encode() for i in draw(st.lists(st.integers(0, 6), max_size=3)))
    else:
        label = draw(_NUMBERS)
    toks = [label] if label else []
    if draw(st.booleans()):
        toks.append(b"qid:" + str(draw(st.integers(0, 99))).encode())
    for idx in sorted(draw(st.sets(st.integers(0, 12), max_size=4))):
        toks.append(str(idx).encode() + b":" + draw(_NUMBERS))
    line = b"".join(t + draw(_SEPARATORS) for t in toks).rstrip(b" ")
    return line + draw(st.sampled_from([b"", b"", b" # c:1,2", b"#"]))


@st.composite
def _files(draw):
    multilabel = draw(st.booleans())
    lines = draw(st.lists(st.one_of(_lines(multilabel), st.sampled_from([b"", b"# x", b" "])),
                          max_size=6))
    text = draw(st.sampled_from([b"\n", b"\r\n"])).join(lines) + draw(
        st.sampled_from([b"", b"\n"]))
    for _ in range(draw(st.integers(0, 3))):  # mutations: insert, delete or replace a byte
        pos = draw(st.integers(0, len(text)))
        byte = draw(st.sampled_from(list(b" \t\r\n#:,.+-eE019qidnaf") + [0, 0xFF]))
        op = draw(st.sampled_from(["insert", "delete", "replace"]))
        tail = text[pos + (op != "insert"):]
        text = text[:pos] + (b"" if op == "delete" else bytes([byte])) + tail
    return text, multilabel


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(_files(), st.sampled_from([True, False, "auto"]), st.sampled_from([None, 9, 13]),
       st.sampled_from(["float32", "float64"]))
def test_fuzz_against_reference(tmp_path, file, zero_based, n_features, dtype):
    text, multilabel = file
    path = _write(tmp_path, text)
    try:
        expected = reference_parse(text, n_features, zero_based, multilabel, dtype)
    except RefError:
        with pytest.raises(NetsError, match=re.escape(path) + ", line [0-9]+: "):
            data.load_libsvm(path, n_features, zero_based, dtype, multilabel, query_id=True)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no stray overflow warnings either
        X, y, qid = data.load_libsvm(path, n_features, zero_based, dtype, multilabel,
                                     query_id=True)
    indptr, indices, values, labels, qids, width = expected
    assert_csr_equal(X, (values, indices, indptr, (len(indptr) - 1, width)))
    np.testing.assert_array_equal(qid.asnumpy(), qids)
    if multilabel:
        n_labels = max((max(ids) + 1 for ids in labels if ids), default=0)
        assert_csr_equal(y, _csr([{i: 1.0 for i in ids} for ids in labels], n_labels))
    else:
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(y.asnumpy(), np.array(labels).astype(dtype))
