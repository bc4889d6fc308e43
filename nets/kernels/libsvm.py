"""LibSVM text <-> CSR: the parser, and the number formatting and line assembly of the writer.

The grammar (one line; blanks are ' ', '\\t' and '\\r', so CRLF files parse; '#' starts a
comment running to the end of the line; a line holding only blanks and a comment is skipped)::

    line   := label [qid:INT] (INT:NUMBER)*
    label  := NUMBER                 multi-label files: INT(,INT)*, or nothing when the
                                     line's first token holds a ':'
    NUMBER := [+-]? (DIGITS [. DIGITS?] | . DIGITS) ([eE] [+-]? DIGITS)?
            | [+-]? (nan | inf | infinity)            (letters in any case)
    INT    := 1 to 18 decimal digits

Values are Python's ``float(token)`` cast to the output dtype. A decimal is converted here
when the result is provably that (``decimal_value``: Clinger's exact fast path, or an
approximation whose error bound keeps it clear of every rounding midpoint); the rare other
tokens (within ~1e-30 of a midpoint, subnormal, beyond 1e270) are reported back as "slow"
(position and byte range) and the caller converts them with ``float``.

A fresh install's first load compiles ``parse_range`` (with the helpers it calls) and
``count_words``, so the parser is kept small to compile: a line's tokens are read by one
loop with one call of each helper, bytes are classified by a table, and which grammar rule
a bad token breaks is told apart in Python (``classify``), off the compiled path.

Every kernel here writes into arrays its caller allocated (``jit(allocates=False)``: no
reference counting of the buffer passed to each helper in the token loop).

Invariants every kernel here trusts (nets.data.libsvm checks first):
- ``buf`` is a 1-D writable uint8 array starting 8-byte aligned; ``bounds`` are non-decreasing
  line starts in it (0, or a position right after a '\\n'), the last one ``len(buf)``;
- the output arrays of a range have room for every row (its '\\n' count + 1), stored value
  (its ':' count) and multi-label id (its ',' count + rows), as ``count_range`` gives them;
- writer inputs: int64 CSR parts in canonical form, decimals (``mant``, ``exp10``,
  ``status``) from ``shortest_decimals`` with UNFORMATTED ones replaced by the caller;
  ``out`` has room for what ``write_rows`` writes (64 bytes per value and per row, 21 per
  label id).
"""
import math

import numpy as np

from ._jit import jit, load_word, trailing_zeros

# error codes reported by parse_range (nets.data.libsvm turns them into messages)
BAD_LABEL, BAD_FEATURE, BAD_INDEX, BAD_VALUE, ORDER, RANGE, ZERO_INDEX, QID, MULTI, \
    DUP_LABEL, LABEL_RANGE = range(1, 12)
# status of a number: converted, malformed, or to be converted by Python's float()
OK, MALFORMED, SLOW = 0, 1, 2
# status of a formatted value (shortest_decimals): decimal m * 10**e, or a special token
DECIMAL, NEG_ZERO, NAN, POS_INF, NEG_INF, UNFORMATTED = range(6)

P10 = np.array([float(10 ** k) for k in range(309)])  # correctly rounded powers of ten
_DD_MIN, _DD_MAX = 2.0 ** -900, 2.0 ** 1000  # no underflow in the error terms (hi * 2**-106)
DD_K = 270  # 10**k for |k| <= DD_K as double-doubles hi + lo (|lo| <= ulp(hi) / 2; both normal)


def _dd_powers():
    hi, lo = [], []
    for k in range(-DD_K, DD_K + 1):
        num, den = (10 ** k, 1) if k >= 0 else (1, 10 ** -k)  # 10**k = num / den
        h = num / den  # (int / int rounds correctly)
        n, d = h.as_integer_ratio()
        hi.append(h)
        lo.append((num * d - n * den) / (den * d))  # 10**k - h, exact, rounded once
    return np.array(hi), np.array(lo)


P10_HI, P10_LO = _dd_powers()


# byte classes of the grammar: 0 a token's byte, BLANK, or LINE_END ('\n', or '#' starting
# a comment that runs to the line's end)
BLANK, LINE_END = 1, 2
_CLASS = np.zeros(256, np.uint8)
_CLASS[[32, 9, 13]] = BLANK
_CLASS[[10, 35]] = LINE_END
# "nan", "inf" and "infinity" as integers, one byte each (big-endian), for NUMBER's words
_NAN_WORD, _INF_WORD, _INFINITY_WORD = (int.from_bytes(w, "big")
                                        for w in (b"nan", b"inf", b"infinity"))


# eight ASCII bytes at once (a little-endian uint64, the first byte lowest)
_ZEROS, _NINES_UP, _HIGH_BITS = (np.uint64(0x0101010101010101 * c) for c in (0x30, 0x46, 0x80))
_LOW_PAIR, _X100, _X1 = (np.uint64(c) for c in
                         (0x000000FF000000FF, 100 + (1000000 << 32), 1 + (10000 << 32)))
INT10 = np.array([10 ** k for k in range(19)], np.int64)


@jit(helper=True, inline=True, allocates=False)
def _eight_digits(buf, p, hi):
    """``(n, value)``: the number of decimal digits starting the eight bytes at ``p``
    (``p + 8 <= len(buf)``), at most ``hi - p``, and their value. Branch-free SWAR: a
    byte is a digit when neither subtracting '0' nor adding 0x46 sets its top bit
    (carries and borrows move up only, so the bytes below the first non-digit are
    exact); the digits, shifted to the top (zeros below them are leading zeros), are
    combined in pairs, then in fours, as in fast_float."""
    x = load_word(buf, p)
    v = x - _ZEROS
    n = trailing_zeros(((x + _NINES_UP) | v) & _HIGH_BITS) >> 3
    if n > hi - p:
        n = hi - p
    if n <= 0:
        return 0, 0
    v = v << np.uint64(64 - 8 * n)
    v = v * np.uint64(10) + (v >> np.uint64(8))
    v = ((v & _LOW_PAIR) * _X100 + ((v >> np.uint64(16)) & _LOW_PAIR) * _X1) >> np.uint64(32)
    return n, np.int64(v)


@jit(helper=True, inline=True, allocates=False)
def _digits(buf, p, hi):
    """``(value, end)`` of the decimal digits starting at ``p`` (at most 19 read, stopping
    at a non-digit or ``hi``): value -1 unless they are an INT (1 to 18 digits)."""
    v, e = 0, p
    if p + 8 <= len(buf):
        n, v = _eight_digits(buf, p, hi)
        e += n
        if n < 8:
            return (v if n else -1), e
    stop = p + 19 if hi - p > 19 else hi
    while e < stop:
        d = buf[e] - 48
        if d < 0 or d > 9:
            break
        v = v * 10 + d
        e += 1
    return (v if p < e < p + 19 else -1), e


@jit(helper=True, allocates=False)
def _split(a):
    """Veltkamp's split: ``a = hi + lo`` exactly, each with at most 26 significant bits."""
    c = 134217729.0 * a  # 2**27 + 1
    hi = c - (c - a)
    return hi, a - hi


@jit(helper=True, allocates=False)
def dd_mul10(m_hi, m_lo, k):
    """``(m_hi + m_lo) * 10**k`` as a double-double ``(hi, lo)``, ``|k| <= DD_K``, relative
    error below 2**-102 (Dekker's exact product of the leading terms; cross terms rounded)."""
    p_hi, p_lo = P10_HI[k + DD_K], P10_LO[k + DD_K]
    p = m_hi * p_hi
    a1, a2 = _split(m_hi)
    b1, b2 = _split(p_hi)
    e = ((a1 * b1 - p) + a1 * b2 + a2 * b1) + a2 * b2  # m_hi * p_hi - p, exactly
    e += m_hi * p_lo + m_lo * p_hi
    hi = p + e
    return hi, e - (hi - p)


@jit(helper=True, allocates=False)
def decimal_value(mant, exp10, truncated):
    """``(v, status)`` for the decimal ``mant * 10**exp10`` (0 <= ``mant`` < 10**18;
    ``truncated``: non-zero digits were dropped after the 18th, a relative error < 1e-17).

    ``v`` is the correctly rounded float64, proved so: Clinger's fast path (both factors
    exact, one rounding), or a double-double product whose error bound keeps the decimal
    clear of the rounding midpoints around ``v``; a float32 result is ``v`` cast, as Python's
    ``float(token)`` cast is. Anything else (near a midpoint, subnormal, overflowing):
    status SLOW, for Python's float().
    """
    if mant == 0:
        return 0.0, OK
    if mant <= 9007199254740992 and -22 <= exp10 <= 22:  # implies not truncated
        v = mant * P10[exp10] if exp10 >= 0 else mant / P10[-exp10]
        return v, OK
    if -DD_K <= exp10 <= DD_K:
        m_hi = float(mant)
        hi, lo = dd_mul10(m_hi, float(mant - int(m_hi)), exp10)
        # hi rounds hi + lo + error for any error up to tol: adding lo -/+ tol to hi leaves
        # hi (rounding to nearest, against the gap on each side of hi); 2 * tol covers the
        # rounding of lo -/+ tol and a tie
        tol = 2 * hi * (3.2e-30 + (1e-17 if truncated else 0.0))  # 3.2e-30 > 2**-98
        if _DD_MIN < hi < _DD_MAX and hi + (lo + tol) == hi and hi + (lo - tol) == hi:
            return hi, OK
    return 0.0, SLOW


@jit(helper=True, inline=True, allocates=False)
def _number(buf, p, hi):
    """``(value, status, end)`` of the NUMBER token starting at ``p``; ``end`` is where it
    stops (a separator or ``hi`` when well formed). One pass over the bytes, the hot loop of
    the parser: the integer and fraction digits in one loop (``frac`` is 1 after the point),
    eight at a time (``_eight_digits``) while ``mant`` has room for eight more, else one
    at a time. Up to 18 significant digits are kept in ``mant``; later ones only scale
    (before the point) or are dropped (after it), ``truncated`` noting a dropped non-zero
    digit. The words nan, inf and infinity are looked for only where no digit is."""
    neg = False
    if p < hi and (buf[p] == 45 or buf[p] == 43):
        neg = buf[p] == 45
        p += 1
    s = p
    mant = exp10 = frac = 0
    truncated = False
    while p < hi:
        if mant < 10000000000 and p + 8 <= len(buf):  # up to eight digits at once
            n, v = _eight_digits(buf, p, hi)
            mant = mant * INT10[n] + v
            exp10 -= frac * n
            p += n
            if n == 8:
                continue
            if p >= hi:
                break
        d = buf[p] - 48
        if 0 <= d <= 9:
            if mant < 100000000000000000:  # fewer than 18 significant digits kept
                mant = mant * 10 + d
                exp10 -= frac
            else:
                exp10 += 1 - frac
                truncated |= d != 0
        elif buf[p] == 46 and not frac:  # the point
            frac = 1
        else:
            break
        p += 1
    digits = p - s - frac
    if digits and p < hi and buf[p] | 32 == 101:  # e
        p += 1
        eneg = False
        if p < hi and (buf[p] == 45 or buf[p] == 43):
            eneg = buf[p] == 45
            p += 1
        first, ex = p, 0
        while p < hi and 48 <= buf[p] <= 57:
            if ex < 100000:  # beyond any float: saturate (the value goes to the slow path)
                ex = ex * 10 + buf[p] - 48
            p += 1
        digits *= p > first
        exp10 += -ex if eneg else ex
    if digits == 0:  # nan, inf, infinity (any case), or malformed
        key, p = 0, s
        while p < hi and _CLASS[buf[p]] == 0:
            key = key << 8 | (buf[p] | 32) if p - s < 8 else -1
            p += 1
        if key == _NAN_WORD:
            return np.nan, OK, p
        if key == _INF_WORD or key == _INFINITY_WORD:
            return -np.inf if neg else np.inf, OK, p
        return 0.0, MALFORMED, p
    if p < hi and _CLASS[buf[p]] == 0:
        return 0.0, MALFORMED, p
    v, status = decimal_value(mant, exp10, truncated)
    return (-v if neg else v), status, p


@jit(helper=True, allocates=False)
def _labels(buf, p, e, lab_ids, n, lab_limit):
    """Parse the multi-label token ``buf[p:e]`` into ``lab_ids[n:]`` sorted: (new n, error)."""
    start = n
    while True:
        v, q = _digits(buf, p, e)
        if v < 0 or (q < e and buf[q] != 44):
            return n, BAD_LABEL
        if v > lab_limit:
            return n, LABEL_RANGE
        j = n
        while j > start and lab_ids[j - 1] > v:  # insertion sort: label lists are short
            lab_ids[j] = lab_ids[j - 1]
            j -= 1
        if j > start and lab_ids[j - 1] == v:
            return n, DUP_LABEL
        lab_ids[j] = v
        n += 1
        if q == e:
            return n, 0
        p = q + 1


@jit(allocates=False)
def parse_range(buf, lo, hi, limit, pend, shift, lab_limit,
                labels, qids, lab_ptr, lab_ids, indptr, indices, data, slow_at, slow_pos):
    """Parse the lines in ``buf[lo:hi]``.

    Rows go to ``labels``/``qids`` (-1: no qid)/``indptr``/``indices``/``data``, multi-label
    ids to ``lab_ptr``/``lab_ids``, which are None for a single-label file: numba then drops
    the multi-label branch before compiling (it prunes tests of an argument against None),
    and each kind of file compiles only its own label parser. A feature index ``raw`` must
    be <= ``limit``; it is stored as ``raw - shift`` (shift 1: a one-based file, where 0 is
    an error) and must increase along a line. The first index equal to ``pend`` is
    remembered (the caller decides later whether it was out of range). Slow tokens:
    ``slow_at[k]`` is the value's position in ``data`` (or ``-(row + 1)`` for a label),
    ``slow_pos[k]`` its byte range; only the first ``len(slow_at)`` are stored, all are
    counted. A line's tokens are read by one loop (``field``: 0 at a line's start, 1 after
    its label, 2 after its first feature or qid), so each NUMBER, label or value, is read
    by the same call of ``_number``. An error is reported at the start of its token, as
    the token's first failing part: ``classify`` names the rule it breaks.
    Returns (rows, nnz, n_label_ids, n_slow, error, error_pos, pend_pos, saw_zero (0/1)).
    """
    r = nnz = nlab = nslow = saw_zero = field = err = 0
    pend_pos = prev = -1
    cap = len(slow_at)
    indptr[0] = 0
    if lab_ids is not None:
        lab_ptr[0] = 0
    p = lo
    while True:
        while p < hi and _CLASS[buf[p]] == BLANK:
            p += 1
        if p >= hi or _CLASS[buf[p]] == LINE_END:
            if field:
                r += 1
                indptr[r] = nnz
                field = 0
            if p >= hi:
                break
            while p < hi and buf[p] != 10:  # a comment runs to the line's end
                p += 1
            p += 1
            continue
        if field == 0:  # the line's label
            qids[r] = -1
            prev, field = -1, 1
            if lab_ids is not None:  # a first token without ':' is the label list
                e, colon = p, False
                while e < hi and _CLASS[buf[e]] == 0:
                    colon |= buf[e] == 58
                    e += 1
                if not colon:
                    nlab, err = _labels(buf, p, e, lab_ids, nlab, lab_limit)
                    if err:
                        break
                    p = e
                lab_ptr[r + 1] = nlab
                continue
            s = p
        elif field == 1 and hi - p >= 4 and buf[p] == 113 and buf[p + 1] == 105 \
                and buf[p + 2] == 100 and buf[p + 3] == 58:  # qid:
            q, e = _digits(buf, p + 4, hi)
            if q < 0 or (e < hi and _CLASS[buf[e]] == 0):
                err = QID
                break
            qids[r] = q
            field = 2
            p = e
            continue
        else:  # a feature
            field = 2
            raw, colon = _digits(buf, p, hi)
            if raw < 0 or colon >= hi or buf[colon] != 58:
                err = BAD_FEATURE
                break
            idx = raw - shift
            if idx <= prev or raw > limit or raw == pend:
                err = RANGE if raw > limit else ZERO_INDEX if idx < 0 else \
                    ORDER if idx <= prev else 0
                if err:
                    break
                if pend_pos < 0:
                    pend_pos = p
            if raw == 0:
                saw_zero = 1
            prev = idx
            s = colon + 1
        v, status, e = _number(buf, s, hi)
        if status:
            if status == MALFORMED:
                err = BAD_VALUE if field == 2 else BAD_LABEL
                break
            if nslow < cap:
                slow_at[nslow] = nnz if field == 2 else -(r + 1)
                slow_pos[nslow, 0], slow_pos[nslow, 1] = s, e
            nslow += 1
        if field == 2:
            indices[nnz] = prev
            data[nnz] = v
            nnz += 1
        else:
            labels[r] = v
        p = e
    return r, nnz, nlab, nslow, err, (p if err else -1), pend_pos, saw_zero


def classify(code, token, multilabel=False):
    """The error code naming the rule that ``token`` (the whole token at the position
    ``parse_range`` reports) breaks: parse_range reports a feature whose index part fails
    as BAD_FEATURE, and a single-label file's bad label as BAD_LABEL; here the first is
    told apart into BAD_FEATURE (no ':'), QID (a misplaced ``qid:``) and BAD_INDEX, and the
    second into MULTI (a comma-separated label list) and BAD_LABEL."""
    if code == BAD_FEATURE and b":" in token:
        return QID if token.startswith(b"qid:") else BAD_INDEX
    if code == BAD_LABEL and not multilabel and b"," in token and b":" not in token:
        return MULTI
    return code


def line_bounds(buf, parts):
    """``parts + 1`` line starts splitting ``buf`` into ``parts`` ranges of about equal size."""
    n = len(buf)
    out = np.empty(parts + 1, np.int64)
    out[0], out[parts] = 0, n
    for k in range(1, parts):
        p = max(k * n // parts, out[k - 1])
        while 0 < p < n and buf[p - 1] != 10:  # move to the start of the next line
            step = buf[p:p + (1 << 16)].tobytes().find(b"\n")
            p = p + step + 1 if step >= 0 else min(p + (1 << 16), n)
        out[k] = p
    return out


_ONES, _LOW7 = np.uint64(0x0101010101010101), np.uint64(0x7F7F7F7F7F7F7F7F)
_NEWLINES, _COLONS, _COMMAS = (np.uint64(0x0101010101010101 * c) for c in (10, 58, 44))


@jit(helper=True, allocates=False)
def _zero_bytes(y):
    """How many of the 8 bytes of the uint64 ``y`` are zero (exact, branch-free)."""
    t = ~(((y & _LOW7) + _LOW7) | y | _LOW7)  # 0x80 in each zero byte, 0 elsewhere
    return np.int64(((t >> np.uint64(7)) * _ONES) >> np.uint64(56))


@jit(allocates=False)
def count_words(words, lo, hi):
    """('\\n', ':', ',') counts in the 8-byte words ``words[lo:hi]`` (uint64): eight bytes a
    step (numba does not vectorise the byte loop, so one word per step beats one byte per
    step)."""
    nl = co = cm = 0
    for i in range(lo, hi):
        x = words[i]
        nl += _zero_bytes(x ^ _NEWLINES)
        co += _zero_bytes(x ^ _COLONS)
        cm += _zero_bytes(x ^ _COMMAS)
    return nl, co, cm


def count_range(buf, lo, hi):
    """('\\n', ':', ',') counts in ``buf[lo:hi]``: the capacities parse_range needs. The
    whole 8-byte words of the range go to ``count_words`` (``buf`` must start 8-byte
    aligned), the few bytes before and after them to Python."""
    a = min(hi, -(-lo // 8) * 8)
    b = max(a, hi // 8 * 8)
    nl, co, cm = count_words(buf[:len(buf) // 8 * 8].view(np.uint64), a // 8, b // 8)
    ends = buf[lo:a].tobytes() + buf[b:hi].tobytes()
    return nl + ends.count(b"\n"), co + ends.count(b":"), cm + ends.count(b",")


def parse_part(buf, bounds, k, multilabel, limit, pend, shift, lab_limit, row_base,
               nnz_base, lab_base, labels, qids, lab_ptr, lab_ids, indptr, indices, data,
               slow_at, slow_pos):
    """``parse_range`` on range ``k``, ``[bounds[k], bounds[k + 1])``, of a block parsed in
    ``len(bounds) - 1`` ranges (each range may run on its own thread).

    Range k writes rows from ``row_base[k]`` (``indptr``/``lab_ptr`` from ``row_base[k] + k``,
    being one longer), values from ``nnz_base[k]``, label ids from ``lab_base[k]``, slow
    tokens from ``k * (len(slow_at) // ranges)``; positions stay local to the range;
    ``lab_ptr`` and ``lab_ids`` are used only when ``multilabel``. Returns parse_range's
    results. (Python slices the outputs: as a compiled kernel calling
    ``parse_range``, this would compile the whole parser a second time.)
    """
    cap = len(slow_at) // (len(bounds) - 1)
    r0, n0, l0 = row_base[k], nnz_base[k], lab_base[k]
    r1, n1, l1 = row_base[k + 1], nnz_base[k + 1], lab_base[k + 1]
    lab_ptr, lab_ids = ((lab_ptr[r0 + k:r1 + k + 1], lab_ids[l0:l1]) if multilabel
                        else (None, None))
    return parse_range(buf, bounds[k], bounds[k + 1], limit, pend, shift, lab_limit,
                       labels[r0:r1], qids[r0:r1], lab_ptr, lab_ids,
                       indptr[r0 + k:r1 + k + 1], indices[n0:n1], data[n0:n1],
                       slow_at[k * cap:(k + 1) * cap], slow_pos[k * cap:(k + 1) * cap])


# -- writer ---------------------------------------------------------------------------------

@jit(allocates=False)
def shortest_decimals(x, f32, mant, exp10, status, lo, hi):
    """Per value ``x[i]``, ``lo <= i < hi``: the decimal ``mant * 10**exp10`` with the
    fewest digits (at most 9 for float32, 17 for float64) that parse_range reads back as
    exactly that value (checked with ``decimal_value``, the reader's own conversion),
    trailing zeros removed; ``mant`` is negative for a negative value. ``status`` is
    DECIMAL, or a special token (NEG_ZERO, NAN, POS_INF, NEG_INF), or UNFORMATTED: the caller
    formats that value with Python. Values outside ``[lo, hi)`` are not touched."""
    for i in range(lo, hi):
        v = np.float64(x[i])
        mant[i], exp10[i], status[i] = 0, 0, UNFORMATTED
        if v != v:
            status[i] = NAN
        elif v == np.inf or v == -np.inf:
            status[i] = POS_INF if v > 0 else NEG_INF
        elif v == 0:
            status[i] = NEG_ZERO if math.copysign(1.0, v) < 0 else DECIMAL
        else:
            a = abs(v)
            k = int(math.floor(math.log10(a)))
            for digits in range(1, 10 if f32 else 18):
                s = digits - 1 - k
                if not -DD_K <= s <= DD_K:
                    break
                hi, lo = dd_mul10(a, 0.0, s)  # a * 10**s, nearly exactly
                m = np.int64(np.rint(hi)) + np.int64(np.rint(lo + (hi - np.rint(hi))))
                w, st = decimal_value(m, -s, False)
                if st == OK and m > 0 and ((np.float32(w) == np.float32(a)) if f32 else w == a):
                    e = -s
                    while m % 10 == 0:
                        m //= 10
                        e += 1
                    mant[i], exp10[i], status[i] = -m if v < 0 else m, e, DECIMAL
                    break


@jit(helper=True, allocates=False)
def _put_int(out, p, v):
    """Write the decimal digits of ``v`` >= 0 at ``out[p:]``; return the end."""
    n, t = 1, v
    while t >= 10:
        t //= 10
        n += 1
    for k in range(n - 1, -1, -1):
        out[p + k] = 48 + v % 10
        v //= 10
    return p + n


@jit(helper=True, allocates=False)
def _put_bytes(out, p, word):
    for k in range(len(word)):
        out[p + k] = word[k]
    return p + len(word)


_NEG_ZERO = np.frombuffer(b"-0", np.uint8).copy()
_NAN = np.frombuffer(b"nan", np.uint8).copy()
_POS_INF = np.frombuffer(b"inf", np.uint8).copy()
_NEG_INF = np.frombuffer(b"-inf", np.uint8).copy()


@jit(helper=True, allocates=False)
def _put_decimal(out, p, m, e, status):
    """Write ``m * 10**e`` (or a special token): positional when short, else d.ddde+x."""
    if status == NEG_ZERO:
        return _put_bytes(out, p, _NEG_ZERO)
    if status == NAN:
        return _put_bytes(out, p, _NAN)
    if status == POS_INF:
        return _put_bytes(out, p, _POS_INF)
    if status == NEG_INF:
        return _put_bytes(out, p, _NEG_INF)
    if m < 0:
        out[p] = 45
        p += 1
        m = -m
    start = p
    end = _put_int(out, p, m)
    n = end - start
    point = n + e  # digits before the decimal point
    if e >= 0 and point <= 16:  # an integer: pad with zeros
        for k in range(e):
            out[end + k] = 48
        return end + e
    if 0 < point < n:  # shift the fraction right by one to insert the point
        for k in range(end, start + point, -1):
            out[k] = out[k - 1]
        out[start + point] = 46
        return end + 1
    if -5 < point <= 0:  # 0.000ddd
        shift = 2 - point
        for k in range(end - 1, start - 1, -1):
            out[k + shift] = out[k]
        out[start], out[start + 1] = 48, 46
        for k in range(-point):
            out[start + 2 + k] = 48
        return end + shift
    if n > 1:  # d.ddd
        for k in range(end, start + 1, -1):
            out[k] = out[k - 1]
        out[start + 1] = 46
        end += 1
    out[end] = 101
    end += 1
    x = point - 1
    if x < 0:
        out[end] = 45
        end += 1
        x = -x
    return _put_int(out, end, x)


@jit(allocates=False)
def write_rows(out, multilabel, lab_m, lab_e, lab_st, lab_ptr, lab_ids, qids, indptr,
               indices, shift, val_m, val_e, val_st):
    """Write rows as LibSVM lines into ``out``: label (or comma-joined label ids), ``qid:q``
    where ``qids[r] >= 0`` (``qids`` may be empty), then ``index+shift:value``. Returns the
    number of bytes written."""
    p = 0
    for r in range(len(indptr) - 1):
        if multilabel:
            for k in range(lab_ptr[r], lab_ptr[r + 1]):
                if k > lab_ptr[r]:
                    out[p] = 44
                    p += 1
                p = _put_int(out, p, lab_ids[k])
        else:
            p = _put_decimal(out, p, lab_m[r], lab_e[r], lab_st[r])
        sep = p > 0 and out[p - 1] != 10
        if len(qids) and qids[r] >= 0:
            if sep:
                out[p] = 32
                p += 1
            out[p], out[p + 1], out[p + 2], out[p + 3] = 113, 105, 100, 58
            p = _put_int(out, p + 4, qids[r])
            sep = True
        for k in range(indptr[r], indptr[r + 1]):
            if sep:
                out[p] = 32
                p += 1
            sep = True
            p = _put_int(out, p, indices[k] + shift)
            out[p] = 58
            p = _put_decimal(out, p + 1, val_m[k], val_e[k], val_st[k])
        out[p] = 10
        p += 1
    return p
