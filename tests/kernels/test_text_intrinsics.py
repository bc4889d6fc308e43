"""Reading text eight bytes at a time: ``_jit.load_word`` and ``_jit.trailing_zeros``,
compiled and as Python, and the LibSVM parser's ``_eight_digits`` against a byte-by-byte
reference on every kind of byte (digits, '.', blanks, letters, bytes >= 0x80)."""
import numpy as np
import pytest

from nets.kernels import libsvm
from nets.kernels._jit import jit, load_word, trailing_zeros


@jit
def _compiled_trailing_zeros(x):
    return trailing_zeros(x)


@jit
def _compiled_load_word(a, i):
    return load_word(a, i)


@jit
def _compiled_eight_digits(buf, p, hi):
    return libsvm._eight_digits(buf, p, hi)


@pytest.mark.parametrize("x", [0, 1, 2, 8, 2 ** 63, 2 ** 64 - 1, 0x80_0000, 12345678901234])
def test_trailing_zeros_compiled_and_in_python(x):
    want = 64 if x == 0 else (x & -x).bit_length() - 1
    assert trailing_zeros(np.uint64(x)) == want
    assert _compiled_trailing_zeros(np.uint64(x)) == want


def test_load_word_at_every_offset():
    buf = np.random.default_rng(0).integers(0, 256, 40, dtype=np.uint8)
    for i in range(len(buf) - 7):
        want = int.from_bytes(buf[i:i + 8].tobytes(), "little")
        assert int(_compiled_load_word(buf, i)) == want
        assert int(load_word(buf, i)) == want


def _reference(word, limit):
    """(count, value) of the decimal digits that start ``word``, at most ``limit``."""
    n = 0
    while n < min(8, limit) and 48 <= word[n] <= 57:
        n += 1
    return n, int(word[:n]) if n else 0


def test_eight_digits_against_bytes():
    rng = np.random.default_rng(1)
    alphabet = np.frombuffer(b"0123456789" * 6 + b". \t\r\n:#e+-,/:", np.uint8)
    for _ in range(3000):
        if rng.random() < 0.2:  # any byte, those >= 0x80 included
            buf = rng.integers(0, 256, 12, dtype=np.uint8)
        else:
            buf = rng.choice(alphabet, 12)
        p = int(rng.integers(0, 5))
        hi = int(rng.integers(p, 13))
        got = _compiled_eight_digits(buf, p, hi)
        assert (int(got[0]), int(got[1])) == _reference(bytes(buf[p:p + 8]), hi - p)


def test_eight_digits_of_every_length():
    for n in range(9):
        for digits in (b"0" * n, b"9" * n, b"1234567890"[:n], b"00000001"[:n]):
            buf = np.frombuffer(digits + b":" * (12 - n), np.uint8).copy()
            got = _compiled_eight_digits(buf, 0, len(buf))
            assert (int(got[0]), int(got[1])) == (n, int(digits) if n else 0)
