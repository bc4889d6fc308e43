"""nets.kernels.optim called directly on edge cases (no rows, first/last row only, an absent
gradient row read from an appended zero row, placeholder states, every row), so that a
NUMBA_BOUNDSCHECK=1 run proves no out-of-bounds access. Values are checked against one-line
numpy formulas."""
import numpy as np
import pytest

from nets.kernels import optim as K

F = np.float32
R, C = 5, 3
NO_CLIP = F(np.inf)


def _arrays(n_states, rng):
    """Weight, gradient (R rows plus a zero row R for absent rows) and states."""
    w = rng.uniform(-1, 1, (R, C)).astype(F)
    g = np.vstack([rng.uniform(-1, 1, (R, C)), np.zeros((1, C))]).astype(F)
    states = [rng.uniform(0.5, 1, (R, C)).astype(F) for _ in range(n_states)]
    return w, g, states


def _pos(rows, grad_rows, n_states):
    """pos for weight/state rows ``rows`` and gradient rows ``grad_rows``."""
    rows = np.asarray(rows, np.int64)
    return np.stack([rows, np.asarray(grad_rows, np.int64)] + [rows] * n_states)


# (rows updated, gradient row for each): none, first only, last only, absent gradient, all
LAYOUTS = [([], []), ([0], [0]), ([R - 1], [0]), ([1, R - 1], [R, R - 1]),
           (list(range(R)), None)]


def _expected_sgd(w, g, mom, rows, grows, lr, wd, momentum):
    w, mom = w.astype(np.float64), mom.astype(np.float64)
    for r, gr in zip(rows, grows):
        mom[r] = momentum * mom[r] - lr * (wd * w[r] + g[gr])
        w[r] += mom[r]
    return w, mom


@pytest.mark.parametrize("rows, grows", LAYOUTS)
def test_sgd_rows(rows, grows):
    w, g, (mom,) = _arrays(1, np.random.default_rng(0))
    dense = grows is None
    grows = list(range(R)) if dense else grows
    ew, em = _expected_sgd(w, g, mom, rows, grows, 0.1, 0.01, 0.9)
    pos = np.empty((3, 0), np.int64) if dense else _pos(rows, grows, 1)
    K.sgd(pos, 0, len(rows), w, g, mom, F(0.1), F(0.01), F(0.9), F(1), NO_CLIP, True)
    np.testing.assert_allclose(w, ew, rtol=1e-5)
    np.testing.assert_allclose(mom, em, rtol=1e-5)


def test_sgd_without_momentum_never_reads_placeholder():
    w, g, _ = _arrays(0, np.random.default_rng(1))
    expected = w - 0.5 * np.clip(g[:R], -0.2, 0.2)
    placeholder = np.empty((0, C), F)
    K.sgd(_pos([R - 1], [R - 1], 1) * [[1], [1], [0]], 0, 1, w, g, placeholder, F(0.5),
          F(0), F(0), F(1), F(0.2), False)
    np.testing.assert_allclose(w[R - 1], expected[R - 1], rtol=1e-6)
    K.sgd(np.empty((3, 0), np.int64), 0, R, w, g, placeholder, F(0), F(0), F(0), F(1),
          NO_CLIP, False)


@pytest.mark.parametrize("rows, grows", LAYOUTS)
@pytest.mark.parametrize("decoupled", [False, True])
def test_adam_rows(rows, grows, decoupled):
    w, g, (m, v) = _arrays(2, np.random.default_rng(2))
    dense = grows is None
    grows = list(range(R)) if dense else grows
    ew, em, ev = w.astype(np.float64), m.astype(np.float64), v.astype(np.float64)
    for r, gr in zip(rows, grows):
        x = g[gr] + (0 if decoupled else 0.1 * ew[r])
        em[r] = 0.9 * em[r] + 0.1 * x
        ev[r] = 0.99 * ev[r] + 0.01 * x * x
        ew[r] -= 0.01 * (em[r] / (np.sqrt(ev[r]) + 1e-8) + (0.1 * ew[r] if decoupled else 0))
    pos = np.empty((4, 0), np.int64) if dense else _pos(rows, grows, 2)
    K.adam(pos, 0, len(rows), w, g, m, v, F(0.01), F(0.9), F(0.99), F(1e-8), F(0.1), F(1),
           NO_CLIP, decoupled)
    for got, exp in ((w, ew), (m, em), (v, ev)):
        np.testing.assert_allclose(got, exp, rtol=1e-5)


@pytest.mark.parametrize("rows, grows", LAYOUTS[1:4])
def test_adagrad_ftrl_rmsprop_touch_listed_rows_only(rows, grows):
    rng = np.random.default_rng(3)
    for kernel, n_states, scalars in [
            (K.adagrad, 1, (F(0.1), F(0.01), F(1e-7), F(1), F(0.5))),
            (K.ftrl, 2, (F(0.1), F(0.01), F(1), F(0.01), F(1), NO_CLIP)),
            (K.rmsprop, 3, (F(0.1), F(0.9), F(0.9), F(1e-8), F(0.01), F(1), NO_CLIP, F(0.8),
                            True)),
            (K.rmsprop, 1, (F(0.1), F(0.9), F(0.9), F(1e-8), F(0.01), F(1), NO_CLIP, NO_CLIP,
                            False))]:
        w, g, states = _arrays(n_states, rng)
        states[1:] = [s * F(0.1) for s in states[1:]]  # centered RMSProp: n > mg**2
        before = [a.copy() for a in [w] + states]
        arrays = states + [np.empty((0, C), F)] * (3 - n_states if kernel is K.rmsprop else 0)
        pos = _pos(rows, grows, len(arrays))
        kernel(pos, 0, len(rows), w, g, *arrays, *scalars)
        untouched = [r for r in range(R) if r not in rows]
        for a, b in zip([w] + states, before):
            assert np.array_equal(a[untouched], b[untouched])
            assert not np.array_equal(a[rows], b[rows])
            assert np.all(np.isfinite(a))


def test_ftrl_and_rmsprop_formulas_on_every_row():
    rng = np.random.default_rng(4)
    w, g, (z, n) = _arrays(2, rng)
    x = g[:R].astype(np.float64)
    ez = z + x - (np.sqrt(n + x * x) - np.sqrt(n)) * w / 0.1
    en = n + x * x
    ew = np.where(np.abs(ez) > 0.5, (np.sign(ez) * 0.5 - ez) / ((1 + np.sqrt(en)) / 0.1 + 0.2), 0)
    K.ftrl(np.empty((4, 0), np.int64), 0, R, w, g, z, n, F(0.1), F(0.5), F(1), F(0.2), F(1),
           NO_CLIP)
    for got, exp in ((w, ew), (z, ez), (n, en)):
        np.testing.assert_allclose(got, exp, rtol=1e-5, atol=1e-7)
    w, g, (n1,) = _arrays(1, rng)
    xn = g[:R] + 0.01 * w.astype(np.float64)
    en1 = 0.1 * xn * xn + 0.9 * n1
    ew = np.clip(w - 0.1 * xn / np.sqrt(en1 + 1e-8), -0.3, 0.3)
    empty = np.empty((0, C), F)
    K.rmsprop(np.empty((5, 0), np.int64), 0, R, w, g, n1, empty, empty, F(0.1), F(0.9),
              F(0.9), F(1e-8), F(0.01), F(1), NO_CLIP, F(0.3), False)
    np.testing.assert_allclose(w, ew, rtol=1e-5)
    np.testing.assert_allclose(n1, en1, rtol=1e-5)


ADAM_ROWS = [4, 0, 2, 3]  # update k touches weight/state row ADAM_ROWS[k]
ADAM_ARGS = (F(0.01), F(0.9), F(0.99), F(1e-8), F(0), F(1), NO_CLIP, False)


def _adam_over(ranges):
    """Weight and states after Adam's updates over the update ``ranges``, one call each."""
    w, g, (m, v) = _arrays(2, np.random.default_rng(5))
    pos = _pos(ADAM_ROWS, [0, 1, 2, 3], 2)
    for lo, hi in ranges:
        K.adam(pos, lo, hi, w, g, m, v, *ADAM_ARGS)
    return w, m, v


@pytest.mark.parametrize("lo, hi", [(0, 0), (1, 1), (4, 4), (0, 1), (1, 3), (3, 4), (0, 4)])
def test_a_call_applies_exactly_its_updates(lo, hi):
    """Updates ``[lo, hi)`` touch exactly their rows, as in a call over all of them."""
    full, before, got = _adam_over([(0, 4)]), _adam_over([]), _adam_over([(lo, hi)])
    mine = ADAM_ROWS[lo:hi]
    others = ADAM_ROWS[:lo] + ADAM_ROWS[hi:] + [1]  # row 1 is never updated
    for g_, f, b in zip(got, full, before):
        np.testing.assert_array_equal(g_[mine], f[mine])
        np.testing.assert_array_equal(g_[others], b[others])


def test_every_split_of_the_updates_gives_the_whole_step():
    """Calls over consecutive ranges (how threads split a lazy step) equal one call."""
    full = _adam_over([(0, 4)])
    for a in range(5):
        for b in range(a, 5):
            for got, exp in zip(_adam_over([(0, a), (a, b), (b, 4)]), full):
                np.testing.assert_array_equal(got, exp)


def test_denormal_flush_and_nan_passthrough():
    w = np.zeros((2, C), F)
    g = np.zeros((2, C), F)
    mom = np.array([[1e-35] * C, [np.nan] * C], F)
    K.sgd(np.empty((3, 0), np.int64), 0, 2, w, g, mom, F(0.1), F(0), F(0.9), F(1), NO_CLIP,
          True)
    assert np.array_equal(mom[0], np.zeros(C))
    assert np.all(np.isnan(mom[1]))


@pytest.mark.parametrize("size", [0, 1, (1 << 16) + 3])
def test_sum_squares(size):
    x = np.random.default_rng(5).uniform(-1, 1, size).astype(F)
    assert K.sum_squares(x) == pytest.approx(np.sum(x.astype(np.float64) ** 2), rel=1e-12,
                                             abs=0)


SPLIT_KERNELS = [  # (kernel, states, scalars)
    (K.sgd, 1, (F(0.1), F(0.01), F(0.9), F(1), NO_CLIP, True)),
    (K.adagrad, 1, (F(0.1), F(0.01), F(1e-7), F(1), F(0.5))),
    (K.ftrl, 2, (F(0.1), F(0.01), F(1), F(0.01), F(1), NO_CLIP)),
    (K.rmsprop, 3, (F(0.1), F(0.9), F(0.9), F(1e-8), F(0.01), F(1), NO_CLIP, F(0.8), True))]


@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize("kernel, n_states, scalars", SPLIT_KERNELS,
                         ids=[k[0].__name__ for k in SPLIT_KERNELS])
def test_every_split_of_the_rows_equals_one_call(kernel, n_states, scalars, dense):
    """Each kernel over consecutive update ranges, empty ones included, equals one call
    over all updates bit for bit (each update is independent of the others)."""
    rows, grows = [3, 0, 4, 1], [R, 2, 4, 0]

    def run(ranges):
        w, g, states = _arrays(n_states, np.random.default_rng(6))
        states[1:] = [s * F(0.1) for s in states[1:]]
        pos = np.empty((2 + n_states, 0), np.int64) if dense else _pos(rows, grows, n_states)
        for lo, hi in ranges:
            kernel(pos, lo, hi, w, g, *states, *scalars)
        return [w] + states
    n = R if dense else len(rows)
    whole = run([(0, n)])
    for a in range(n + 1):
        for b in range(a, n + 1):
            for got, exp in zip(run([(0, a), (a, b), (b, n)]), whole):
                np.testing.assert_array_equal(got, exp)


def test_sgd_split_matches_the_numpy_reference():
    w, g, (mom,) = _arrays(1, np.random.default_rng(7))
    rows, grows = [4, 1, 2], [0, R, 3]
    ew, em = _expected_sgd(w, g, mom, rows, grows, 0.1, 0.01, 0.9)
    pos = _pos(rows, grows, 1)
    for lo, hi in [(0, 1), (1, 1), (1, 3)]:
        K.sgd(pos, lo, hi, w, g, mom, F(0.1), F(0.01), F(0.9), F(1), NO_CLIP, True)
    np.testing.assert_allclose(w, ew, rtol=1e-5)
    np.testing.assert_allclose(mom, em, rtol=1e-5)



def test_operands_past_the_last_line_read_row_k():
    """A lazy update passes ``pos`` lines up to the last one that is not ``k`` itself: the
    gradient and the states past it read row ``k`` for update ``k`` (numpy reference)."""
    rows = [4, 1, 2]
    w, g, (mom,) = _arrays(1, np.random.default_rng(8))
    ew, _ = _expected_sgd(w, g, np.zeros_like(mom), rows, [0, 1, 2], 0.1, 0.01, 0.0)
    K.sgd(np.array([rows], np.int64), 0, 3, w, g, mom[:0], F(0.1), F(0.01), F(0), F(1),
          NO_CLIP, False)
    np.testing.assert_allclose(w, ew, rtol=1e-5)
    # weight and gradient lines given, the momentum state past them: its row k
    w, g, (mom,) = _arrays(1, np.random.default_rng(9))
    ew, em = w.astype(np.float64), mom.astype(np.float64)
    for k, (r, gr) in enumerate(zip(rows, [R, 3, 0])):
        em[k] = 0.9 * em[k] - 0.1 * (0.01 * ew[r] + g[gr])  # (g[R]: the zero row)
        ew[r] += em[k]
    K.sgd(np.array([rows, [R, 3, 0]], np.int64), 0, 3, w, g, mom, F(0.1), F(0.01), F(0.9),
          F(1), NO_CLIP, True)
    np.testing.assert_allclose(w, ew, rtol=1e-5)
    np.testing.assert_allclose(mom, em, rtol=1e-5)
