"""The LibSVM parser's numbers against references, on random files large enough that the
parser reads digits eight bytes at a time and splits a block into many ranges: every value
and label equals Python's ``float(token)`` rounded to the value dtype, bit for bit, and
indices, qids and multi-labels equal the tokens' integers; valid files also load as
scikit-learn's ``load_svmlight_file`` loads them."""
import re

import numpy as np
import pytest

import nets
from nets import data

import sklearn.datasets as sklearn_datasets


def _digits(rng, n):
    return "".join(rng.choice(list("0123456789"), n))


def _number(rng):
    """A NUMBER token in one of many spellings: integers, decimals with 0 to 30 digits on
    each side of the point, leading zeros, a sign or '+', an exponent, nan/inf words."""
    kind = rng.integers(10)
    sign = rng.choice(["", "", "-", "+"])
    if kind == 0:
        return sign + str(int(rng.integers(0, 10 ** 6)))
    if kind == 1:  # long integers: past 2**53 and past 18 digits
        return sign + _digits(rng, rng.integers(1, 30)).lstrip("0") + "0"
    if kind == 2:  # float32 and float64 repr, as writers print them
        x = rng.standard_normal() * 10.0 ** int(rng.integers(-40, 40))
        with np.errstate(over="ignore", under="ignore"):
            return repr(float(np.float32(x)) if rng.random() < 0.5 else x)
    if kind == 3:
        x = rng.standard_normal() * 10.0 ** int(rng.integers(-300, 300))
        return "%.*e" % (int(rng.integers(0, 20)), x)
    if kind == 4:
        return sign + str(rng.choice(["nan", "NaN", "inf", "Infinity", "INF"]))
    # decimals: 0 to 30 digits before and after the point, an optional exponent
    head = _digits(rng, rng.integers(0, 12 if kind < 8 else 30))
    tail = _digits(rng, rng.integers(0 if head else 1, 12 if kind < 8 else 30))
    point = "." if tail or rng.random() < 0.3 else ""
    token = sign + head + point + tail
    if rng.random() < 0.3:
        token += rng.choice(["e", "E"]) + rng.choice(["", "+", "-"]) + str(rng.integers(0, 40))
    return token


def _file(rng, rows, multilabel=False, crlf=False):
    """A valid LibSVM text of ``rows`` lines among blank and comment lines, and its tokens."""
    lines, parsed = [], []
    for _ in range(rows):
        if rng.random() < 0.05:
            lines.append(rng.choice(["", "   ", "# a comment: 1:2", "\t"]))
        width = 10 ** int(rng.integers(1, 10))
        cols = np.sort(rng.choice(width, rng.integers(0, min(12, width)), replace=False)) + 1
        if multilabel:
            labels = sorted(set(rng.integers(0, 50, rng.integers(0 if len(cols) else 1, 4))
                                .tolist()))
            label = ",".join(map(str, labels))
        else:
            labels = label = _number(rng)
        qid = int(rng.integers(0, 10 ** int(rng.integers(1, 19)))) if rng.random() < 0.2 else -1
        values = [_number(rng) for _ in cols]
        tokens = ([label] if label else []) + ([f"qid:{qid}"] if qid >= 0 else []) + [
            f"{c}:{v}" for c, v in zip(cols, values)]
        seps = rng.choice([" ", "  ", "\t", " \t"], len(tokens)).tolist()
        line = "".join(t + s for t, s in zip(tokens, seps)).rstrip(" \t")
        if rng.random() < 0.1:
            line += rng.choice([" # trailing 3:4", "#", " "])
        lines.append(line)
        parsed.append((labels, qid, cols, values))
    text = ("\r\n" if crlf else "\n").join(lines) + rng.choice(["", "\n"])
    return text.encode(), parsed


def _load(tmp_path, text, dtype, multilabel=False, name="f.svm"):
    path = tmp_path / name
    path.write_bytes(text)
    return data.load_libsvm(str(path), n_features=10 ** 10 + 1, zero_based=False,
                            dtype=dtype, multilabel=multilabel, query_id=True)


def _expected(parsed, dtype):
    with np.errstate(over="ignore"):
        values = np.array([float(v) for _, _, _, vs in parsed for v in vs]).astype(dtype)
        indptr = np.cumsum([0] + [len(cols) for _, _, cols, _ in parsed])
        indices = np.concatenate([cols for _, _, cols, _ in parsed] + [[]]).astype(np.int64) - 1
        return values, indices, indptr


def _same_bits(a, b):
    """Equal bit for bit (NaN payloads aside: every NaN token is one NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    nan = np.isnan(a)
    np.testing.assert_array_equal(nan, np.isnan(b))
    np.testing.assert_array_equal(a[~nan].view(np.uint8), b[~nan].view(np.uint8))


@pytest.fixture(params=[1, 2, 3])
def threads(request, monkeypatch):
    """Small parse ranges (many range ends fall inside the eight bytes read at once) on 1 to
    3 threads."""
    monkeypatch.setattr(nets.data.libsvm, "PART_BYTES", 97)
    monkeypatch.setattr(nets.parallel, "GRAIN", 1)
    monkeypatch.setattr(nets.parallel, "_setting", (request.param, "set_num_threads"))
    return request.param


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_values_equal_python_float(tmp_path, threads, seed, dtype):
    rng = np.random.default_rng(seed)
    text, parsed = _file(rng, 300, crlf=seed % 2 == 1)
    X, y, qid = _load(tmp_path, text, dtype)
    values, indices, indptr = _expected(parsed, dtype)
    _same_bits(X._data, values)
    np.testing.assert_array_equal(X._indices, indices)
    np.testing.assert_array_equal(X._indptr, indptr)
    with np.errstate(over="ignore"):
        _same_bits(y.asnumpy(), np.array([float(lab) for lab, _, _, _ in parsed]).astype(dtype))
    np.testing.assert_array_equal(qid.asnumpy(), [q for _, q, _, _ in parsed])


@pytest.mark.parametrize("seed", range(3))
def test_multilabel_files(tmp_path, threads, seed):
    rng = np.random.default_rng(100 + seed)
    text, parsed = _file(rng, 300, multilabel=True, crlf=seed == 1)
    X, y, qid = _load(tmp_path, text, "float64", multilabel=True)
    values, indices, indptr = _expected(parsed, "float64")
    _same_bits(X._data, values)
    np.testing.assert_array_equal(X._indices, indices)
    np.testing.assert_array_equal(X._indptr, indptr)
    for row, (labels, _, _, _) in enumerate(parsed):
        np.testing.assert_array_equal(y._indices[y._indptr[row]:y._indptr[row + 1]], labels)
    np.testing.assert_array_equal(qid.asnumpy(), [q for _, q, _, _ in parsed])


def _sklearn_number(rng):
    """A token scikit-learn reads as Python does (no nan/inf words, no '+' exponent
    quirks): the spellings of ``_number`` that are plain decimals."""
    while True:
        token = _number(rng)
        if not re.search("[a-df-zA-DF-Z]", token):
            return token


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_valid_files_load_as_scikit_learn_loads_them(tmp_path, seed, dtype):
    rng = np.random.default_rng(200 + seed)
    lines = []
    for _ in range(400):
        cols = np.sort(rng.choice(5000, rng.integers(1, 15), replace=False))
        lines.append(" ".join([_sklearn_number(rng)] + [f"{c}:{_sklearn_number(rng)}"
                                                         for c in cols]))
    text = ("\n".join(lines) + "\n").encode()
    path = tmp_path / "s.svm"
    path.write_bytes(text)
    X, y = data.load_libsvm(str(path), n_features=5000, zero_based=True, dtype=dtype)
    Xs, ys = sklearn_datasets.load_svmlight_file(str(path), n_features=5000, zero_based=True,
                                                 dtype=np.float64)
    Xs.sort_indices()
    np.testing.assert_array_equal(X._indptr, Xs.indptr)
    np.testing.assert_array_equal(X._indices, Xs.indices)
    with np.errstate(over="ignore"):
        _same_bits(X._data, Xs.data.astype(dtype))
        _same_bits(y.asnumpy(), ys.astype(dtype))
