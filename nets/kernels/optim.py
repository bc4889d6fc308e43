"""Optimizer updates: each kernel applies one optimizer's element-wise rule to a list of rows.

Invariants the caller (``nets.ops.update.RowSelection.run``, for ``nets.optim`` and the
update operators) guarantees:
- every array is 2-D and C-contiguous, a ``(rows, cols)`` view of a weight, gradient or state
  storage; all have one float dtype and so has every float scalar argument (the arithmetic
  runs in the array dtype, as MXNet's kernels do);
- a call applies the updates ``k`` in ``[lo, hi)`` (``nets.parallel`` may split them
  between threads, each calling the kernel on its own range); update ``k`` touches row
  ``pos[0, k]`` of the weight, row ``pos[1, k]`` of the gradient and row ``pos[2 + s, k]``
  of state ``s`` (a gradient row that is absent from a sparse gradient points at a zero
  row appended to its data). An operand past the last line of ``pos`` has row ``k`` for
  update ``k``: a lazy update passes the lines up to the last one that is not ``k``
  itself (SGD's: the weight's alone), and an empty ``pos`` (no lines, or no columns)
  means row ``k`` of every operand, so the dense path builds no index array. A state the
  optimizer does not use is a ``(0, cols)`` placeholder, never read;
- the weight's and each state's line of ``pos`` hold unique rows (a canonical row_sparse
  gradient has unique indices), so the updates are independent (in any order);
- ``clip = inf`` disables clipping (the optimizer maps ``clip_gradient=None`` to inf).

States are flushed to zero below ``TINY`` in magnitude: moments of rows that no batch touches
decay geometrically into float32 denormals, and arithmetic on denormals takes a slow
microcode path on x86, which would slow every later dense pass.

Divisions use ``np.divide`` (numpy's error model): numba's ``/`` checks every float divisor
for zero, and that branch keeps LLVM from vectorising the loop over a row. Rows are indexed
``w[r, j]``, not taken as 1-D views: a view costs reference counting per row, and a view
chosen by a condition (SGD's ``mom[s] if has_mom else w[r]``) keeps numba from eliding it.
A lazy step reads and writes scattered rows, so it waits on memory latency: ``_ahead``
prefetches the rows of the update ``PREFETCH_AHEAD`` steps later, and ``RowSelection.run``
splits a large lazy step between threads (``parallel_for``), each core bringing its own rows
in. A dense pass streams memory at the bandwidth one core already gets, so it runs in one
call, on the calling thread.
"""
import numpy as np

from ._jit import PREFETCH_AHEAD, jit, prefetch_row

TINY = 1e-30


@jit(helper=True)
def _at(pos, operand, k):
    """Row of ``operand`` for update ``k`` (row ``k`` itself when ``pos`` is empty or has no
    line for ``operand``)."""
    return pos[operand, k] if operand < pos.shape[0] and pos.shape[1] else k


@jit(helper=True)
def _ahead(pos, k, stop, operand, a):
    """Prefetch the row of ``a`` (operand ``operand`` of ``pos``) that update ``k +
    PREFETCH_AHEAD`` touches; nothing for an operand without a line in ``pos`` (rows in
    order: the hardware prefetcher follows them) or for a placeholder state."""
    q = k + PREFETCH_AHEAD
    if operand < pos.shape[0] and pos.shape[1] and q < stop and a.shape[0]:
        prefetch_row(a, pos[operand, q])


@jit(helper=True)
def _ftz(x, tiny):
    """``x``, or zero when ``|x| < tiny`` (NaN passes through)."""
    return x - x if abs(x) < tiny else x


@jit(helper=True)
def _sign(x, one):
    """``one``, ``-one`` or 0 (for 0 and NaN) by the sign of ``x``."""
    return one if x > 0 else (-one if x < 0 else one - one)


@jit(helper=True)
def _clip(x, bound):
    """``x`` clipped to ``[-bound, bound]`` (``bound = inf``: no clipping, with no test of
    ``bound``: two selects); NaN passes through."""
    y = bound if x > bound else x
    return -bound if y < -bound else y


@jit
def sgd(pos, lo, hi, w, g, mom, lr, wd, momentum, rescale, clip, has_mom):
    """SGD (MXNet ``sgd_update`` / ``sgd_mom_update``)::

        step = -lr * (wd * w + clip(rescale * g))
        mom = momentum * mom + step; step = mom        (if has_mom)
        w += step
    """
    tiny = w.dtype.type(TINY)
    for k in range(lo, hi):
        _ahead(pos, k, hi, 0, w)
        r, q = _at(pos, 0, k), _at(pos, 1, k)
        if has_mom:
            _ahead(pos, k, hi, 2, mom)
            s = _at(pos, 2, k)
            for j in range(w.shape[1]):
                step = _ftz(momentum * mom[s, j] - lr * (wd * w[r, j] +
                                                         _clip(g[q, j] * rescale, clip)), tiny)
                mom[s, j] = step
                w[r, j] += step
        else:
            for j in range(w.shape[1]):
                w[r, j] -= lr * (wd * w[r, j] + _clip(g[q, j] * rescale, clip))


@jit
def adam(pos, lo, hi, w, g, mean, var, lr, beta1, beta2, epsilon, wd, rescale, clip,
         decoupled):
    """Adam (MXNet ``adam_update``; ``lr`` carries the bias correction)::

        x = clip(rescale * g + wd * w)
        mean = beta1 * mean + (1 - beta1) * x
        var = beta2 * var + (1 - beta2) * x**2
        w -= lr * mean / (sqrt(var) + epsilon)

    ``decoupled`` gives AdamW (MXNet ``adamw_update``): ``x = clip(rescale * g)`` and
    ``w -= lr * (mean / (sqrt(var) + epsilon) + wd * w)``.
    """
    one, tiny = w.dtype.type(1), w.dtype.type(TINY)
    for k in range(lo, hi):
        _ahead(pos, k, hi, 0, w)
        _ahead(pos, k, hi, 2, mean)
        _ahead(pos, k, hi, 3, var)
        r, q, a, b = _at(pos, 0, k), _at(pos, 1, k), _at(pos, 2, k), _at(pos, 3, k)
        for j in range(w.shape[1]):
            wj = w[r, j]
            x = g[q, j] * rescale
            if not decoupled:
                x += wd * wj
            x = _clip(x, clip)
            m = _ftz(beta1 * mean[a, j] + (one - beta1) * x, tiny)
            v = _ftz(beta2 * var[b, j] + (one - beta2) * x * x, tiny)
            mean[a, j] = m
            var[b, j] = v
            d = np.divide(m, np.sqrt(v) + epsilon)
            if decoupled:
                d += wd * wj
            w[r, j] = wj - lr * d


@jit
def adagrad(pos, lo, hi, w, g, history, lr, wd, epsilon, rescale, clip):
    """AdaGrad (MXNet ``AdaGrad``)::

        x = clip(rescale * g)
        history += x**2
        w -= lr * (x / sqrt(history + epsilon) + wd * w)
    """
    tiny = w.dtype.type(TINY)
    for k in range(lo, hi):
        _ahead(pos, k, hi, 0, w)
        _ahead(pos, k, hi, 2, history)
        r, q, a = _at(pos, 0, k), _at(pos, 1, k), _at(pos, 2, k)
        for j in range(w.shape[1]):
            wj = w[r, j]
            x = _clip(g[q, j] * rescale, clip)
            h = _ftz(history[a, j] + x * x, tiny)
            history[a, j] = h
            w[r, j] = wj - lr * (np.divide(x, np.sqrt(h + epsilon)) + wd * wj)


@jit
def rowwise_adagrad(pos, lo, hi, w, g, history, lr, wd, epsilon, rescale, clip, eps_inside):
    """Row-wise AdaGrad, one accumulator per row, ``history`` a ``(rows, 1)`` state::

        x = clip(rescale * g) + wd * w                      (the row's entries)
        history += mean(x**2)                               (over the row)
        w -= lr * x / (sqrt(history) + epsilon)             (FBGEMM's EXACT_ROWWISE_ADAGRAD)
        w -= lr * x / sqrt(history + epsilon)               (eps_inside: MXNet's group AdaGrad)
    """
    tiny = w.dtype.type(TINY)
    cols = w.shape[1]
    for k in range(lo, hi):
        _ahead(pos, k, hi, 0, w)
        r, q, a = _at(pos, 0, k), _at(pos, 1, k), _at(pos, 2, k)
        total = w.dtype.type(0)
        for j in range(cols):
            x = _clip(g[q, j] * rescale, clip) + wd * w[r, j]
            total += x * x
        h = _ftz(history[a, 0] + np.divide(total, cols), tiny)
        history[a, 0] = h
        if eps_inside:
            scale = np.divide(lr, np.sqrt(h + epsilon))
        else:
            scale = np.divide(lr, np.sqrt(h) + epsilon)
        for j in range(cols):
            wj = w[r, j]
            w[r, j] = wj - scale * (_clip(g[q, j] * rescale, clip) + wd * wj)


@jit
def rmsprop(pos, lo, hi, w, g, n, mg, delta, lr, gamma1, gamma2, epsilon, wd, rescale,
            clip, clip_weights, centered):
    """RMSProp (MXNet ``rmsprop_update``; ``centered``: ``rmspropalex_update``)::

        x = clip(rescale * g + wd * w)
        n = (1 - gamma1) * x**2 + gamma1 * n
        w -= lr * x / sqrt(n + epsilon)                                   (not centered)
        mg = (1 - gamma1) * x + gamma1 * mg                                (centered)
        delta = gamma2 * delta - lr * x / sqrt(n - mg**2 + epsilon)
        w += delta
        w = clip(w, clip_weights)
    """
    one, tiny = w.dtype.type(1), w.dtype.type(TINY)
    for k in range(lo, hi):
        _ahead(pos, k, hi, 0, w)
        _ahead(pos, k, hi, 2, n)
        if centered:
            _ahead(pos, k, hi, 3, mg)
            _ahead(pos, k, hi, 4, delta)
        r, q, a = _at(pos, 0, k), _at(pos, 1, k), _at(pos, 2, k)
        b, c = (_at(pos, 3, k), _at(pos, 4, k)) if centered else (a, a)
        for j in range(w.shape[1]):
            wj = w[r, j]
            x = _clip(g[q, j] * rescale + wd * wj, clip)
            nj = _ftz((one - gamma1) * x * x + gamma1 * n[a, j], tiny)
            n[a, j] = nj
            if centered:
                m = _ftz((one - gamma1) * x + gamma1 * mg[b, j], tiny)
                step = lr * np.divide(x, np.sqrt(nj - m * m + epsilon))
                d = _ftz(gamma2 * delta[c, j] - step, tiny)
                mg[b, j] = m
                delta[c, j] = d
                wj = wj + d
            else:
                wj = wj - lr * np.divide(x, np.sqrt(nj + epsilon))
            w[r, j] = _clip(wj, clip_weights)


@jit
def ftrl(pos, lo, hi, w, g, z, n, lr, lamda1, beta, wd, rescale, clip):
    """FTRL-proximal (MXNet ``ftrl_update``)::

        x = clip(rescale * g)
        z += x - (sqrt(n + x**2) - sqrt(n)) * w / lr
        n += x**2
        w = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd)  if |z| > lamda1  else 0
    """
    tiny = w.dtype.type(TINY)
    for k in range(lo, hi):
        _ahead(pos, k, hi, 0, w)
        _ahead(pos, k, hi, 2, z)
        _ahead(pos, k, hi, 3, n)
        r, q, a, b = _at(pos, 0, k), _at(pos, 1, k), _at(pos, 2, k), _at(pos, 3, k)
        for j in range(w.shape[1]):
            x = _clip(g[q, j] * rescale, clip)
            nj = n[b, j]
            shift = (np.sqrt(nj + x * x) - np.sqrt(nj)) * w[r, j]
            zj = _ftz(z[a, j] + x - np.divide(shift, lr), tiny)
            nj = _ftz(nj + x * x, tiny)
            z[a, j] = zj
            n[b, j] = nj
            sign = lamda1 if zj > 0 else -lamda1
            shrunk = np.divide(sign - zj, np.divide(beta + np.sqrt(nj), lr) + wd)
            w[r, j] = shrunk if abs(zj) > lamda1 else zj - zj


@jit
def signum(pos, lo, hi, w, g, mom, lr, momentum, wd, wd_lh, rescale, clip, has_mom):
    """Signum (MXNet ``signum_update``) and, without a momentum, signSGD (``signsgd_update``);
    ``sign`` is 0 at 0 (and for NaN)::

        mom = momentum * mom - (1 - momentum) * (wd * w + clip(rescale * g))   (has_mom)
        w = (1 - lr * wd_lh) * w + lr * sign(mom)
        w = (1 - lr * (wd + wd_lh)) * w - lr * sign(clip(rescale * g))       (no momentum)
    """
    one, tiny = w.dtype.type(1), w.dtype.type(TINY)
    for k in range(lo, hi):
        _ahead(pos, k, hi, 0, w)
        r, q = _at(pos, 0, k), _at(pos, 1, k)
        if has_mom:
            _ahead(pos, k, hi, 2, mom)
            s = _at(pos, 2, k)
            keep = one - lr * wd_lh
            for j in range(w.shape[1]):
                wj = w[r, j]
                m = _ftz(momentum * mom[s, j]
                         - (one - momentum) * (wd * wj + _clip(g[q, j] * rescale, clip)), tiny)
                mom[s, j] = m
                w[r, j] = keep * wj + lr * _sign(m, one)
        else:
            keep = one - lr * (wd + wd_lh)
            for j in range(w.shape[1]):
                x = _clip(g[q, j] * rescale, clip)
                w[r, j] = keep * w[r, j] - lr * _sign(x, one)


@jit
def sum_squares(x):
    """``sum(x**2)`` of a 1-D array, accumulated in float64 (four independent chains)."""
    acc = np.zeros(4)
    n4 = len(x) - len(x) % 4
    for i in range(0, n4, 4):
        for j in range(4):
            v = np.float64(x[i + j])
            acc[j] += v * v
    for i in range(n4, len(x)):
        v = np.float64(x[i])
        acc[0] += v * v
    return acc.sum()
