"""Helpers for testing nets code (and code built on nets): random arrays of any
storage type and density, and comparisons that accept nets, numpy and scalars."""
import numpy as np

from .base import as_dtype, check_stype, cpu
from .data.synthetic import make_sparse_dataset
from .arrays.creation import array, csr_matrix, row_sparse_array, zeros_sparse
from .arrays.csr import row_ids
from .arrays.dense import NDArray
from .random import generator

__all__ = ["DENSITIES", "rand_ndarray", "rand_sparse_ndarray", "rand_shape_2d", "rand_shape_3d",
           "rand_shape_nd",
           "assert_almost_equal", "same", "default_context", "to_numpy", "default_tols",
           "check_numeric_gradient", "make_sparse_dataset", "list_gpus"]


# The densities every sparse operator test sweeps: empty, a single non-zero row, very
# sparse, half, full.
DENSITIES = (0.0, "one_row", 0.01, 0.5, 1.0)


def list_gpus():
    """The GPU ids nets can use (MXNet's ``test_utils.list_gpus``): none, since nets runs on
    the CPU, so ``mx.gpu() if mx.test_utils.list_gpus() else mx.cpu()`` picks the CPU."""
    return []


def default_context():
    """The context tests run on."""
    return cpu()


def rand_shape_2d(dim0=10, dim1=10):
    """A random 2-D shape with each dim in [1, dimN]."""
    rng = generator()
    return int(rng.integers(1, dim0 + 1)), int(rng.integers(1, dim1 + 1))


def rand_shape_3d(dim0=10, dim1=10, dim2=10):
    """A random 3-D shape with each dim in [1, dimN]."""
    return rand_shape_2d(dim0, dim1) + (int(generator().integers(1, dim2 + 1)),)


def rand_shape_nd(num_dim, dim=10):
    """A random ``num_dim``-D shape with each dim in [1, dim]."""
    return tuple(int(d) for d in generator().integers(1, dim + 1, size=num_dim))


def _values(n, distribution, rng):
    if distribution == "uniform":
        v = rng.uniform(-1.0, 1.0, n)
    elif distribution == "normal":
        v = rng.normal(0.0, 1.0, n)
    elif distribution == "powerlaw":
        v = rng.pareto(1.5, n) + 1.0
    else:
        raise ValueError(f"distribution={distribution!r}: expected 'uniform', 'normal' or "
                         f"'powerlaw'")
    v[v == 0] = 0.5  # a stored value is never an explicit zero
    return v


def rand_ndarray(shape, stype="default", density=None, dtype=None, distribution="uniform",
                 ctx=None):
    """A random array of ``shape`` and storage type ``stype``.

    ``density`` (default 0.5 for sparse, 1 for dense) is the fraction of stored values:
    a CSR array stores exactly ``round(density * size)`` values at uniformly drawn
    positions (as MXNet's, which draws with ``scipy.sparse.rand``), and a dense array with
    ``density < 1`` has its non-zeros in such a pattern; a row_sparse array stores each row
    independently with probability ``density`` (as MXNet's). 0 and 1 give empty and full
    arrays. ``density="one_row"`` fills exactly one random row (axis 0) and nothing else.
    """
    check_stype(stype)
    if density is None:
        density = 1.0 if stype == "default" else 0.5
    shape = tuple(int(d) for d in shape)
    dtype = as_dtype(dtype)
    rng = generator()
    if not shape:  # 0-d: a dense scalar
        return array(_values(1, distribution, rng).reshape(()), ctx=ctx, dtype=dtype)
    if density == "one_row":
        row_mask = np.zeros(shape[0], dtype=bool)
        row_mask[rng.integers(shape[0])] = True
    elif isinstance(density, (int, float)) and 0.0 <= density <= 1.0:
        row_mask = rng.random(shape[0]) < density
    else:
        raise ValueError(f"density={density!r} must be in [0, 1] or 'one_row'")
    if stype == "row_sparse":
        rows = np.flatnonzero(row_mask)
        data = _values(len(rows) * int(np.prod(shape[1:], dtype=np.int64)), distribution, rng)
        return row_sparse_array((data.reshape((len(rows),) + shape[1:]).astype(dtype), rows),
                                shape=shape, ctx=ctx)
    if density == "one_row":
        mask = np.zeros(shape, dtype=bool)
        mask[row_mask] = True
    else:
        size = int(np.prod(shape, dtype=np.int64))
        mask = np.zeros(size, dtype=bool)
        mask[rng.choice(size, int(round(density * size)), replace=False)] = True
        mask = mask.reshape(shape)
    if stype == "csr":
        if len(shape) != 2:
            raise ValueError(f"a CSR array is 2-D, got shape={shape}")
        if not mask.any():
            return zeros_sparse("csr", shape, ctx, dtype)
        rows, cols = np.nonzero(mask)
        return csr_matrix((_values(len(rows), distribution, rng).astype(dtype), (rows, cols)),
                          shape=shape, ctx=ctx)
    dense = np.zeros(shape, dtype=dtype)
    dense[mask] = _values(int(mask.sum()), distribution, rng)
    return array(dense, ctx=ctx, dtype=dtype)


def rand_sparse_ndarray(shape, stype, density=None, dtype=None, distribution=None,
                        data_init=None, rsp_indices=None, ctx=None):
    """MXNet's ``rand_sparse_ndarray``: ``(array, parts)`` with ``array`` as
    ``rand_ndarray(shape, stype, density, dtype, distribution)`` makes it and ``parts`` its
    buffers -- ``(values, indices)`` (numpy) for row_sparse, ``(indptr, indices, data)``
    (``NDArray``s) for CSR. ``data_init`` sets every stored value; ``rsp_indices`` (row_sparse)
    chooses the stored rows instead of ``density``."""
    if stype not in ("csr", "row_sparse"):
        raise ValueError(f"stype={stype!r}: expected 'csr' or 'row_sparse'")
    if rsp_indices is not None:
        if stype != "row_sparse":
            raise ValueError("rsp_indices needs stype='row_sparse'")
        rows = np.unique(np.asarray(rsp_indices, dtype=np.int64))
        template = rand_ndarray((len(rows),) + tuple(shape[1:]), "default", 1.0, dtype,
                                distribution or "uniform", ctx)
        arr = row_sparse_array((template.asnumpy(), rows), shape=tuple(shape), ctx=ctx)
    else:
        arr = rand_ndarray(shape, stype, density, dtype, distribution or "uniform", ctx)
    if data_init is not None:
        arr.values[...] = data_init
    if stype == "row_sparse":
        return arr, (arr.data.asnumpy(), arr.indices.asnumpy())
    return arr, (arr.indptr, arr.indices, arr.data)


def to_numpy(x):
    """A numpy array from a nets array (densified), scipy matrix, numpy array or scalar."""
    if isinstance(x, NDArray):
        return x.asnumpy()
    if type(x).__module__.startswith("scipy.sparse"):
        return x.toarray()
    return np.asarray(x)


def default_tols(*arrays):
    """(rtol, atol) suited to the least precise float dtype among ``arrays``."""
    kinds = [to_numpy(a).dtype for a in arrays]
    if any(k == np.float16 for k in kinds):
        return 1e-2, 1e-3
    if any(k == np.float32 for k in kinds):
        return 1e-4, 1e-5
    return 1e-7, 1e-9


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan=False):
    """Assert ``a`` and ``b`` (nets/numpy/scipy/scalars) have equal shapes and close values.

    Tolerances default to ones suited to the least precise dtype; the message
    names the worst element.
    """
    x, y = to_numpy(a), to_numpy(b)
    if x.shape != y.shape:
        raise AssertionError(f"shape mismatch: {names[0]} {x.shape} vs {names[1]} {y.shape}")
    drt, dat = default_tols(x, y)
    rtol, atol = drt if rtol is None else rtol, dat if atol is None else atol
    if np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    err = np.abs(x.astype(np.float64) - y) - rtol * np.abs(y)
    err = np.where(np.isnan(err), np.inf, err)
    k = tuple(int(i) for i in np.unravel_index(np.argmax(err), err.shape)) if err.ndim else ()
    raise AssertionError(f"{names[0]} and {names[1]} differ (rtol={rtol}, atol={atol}): worst at "
                         f"{k}: {names[0]}={x[k].item()!r}, {names[1]}={y[k].item()!r}; "
                         f"{int(np.sum(~np.isclose(x, y, rtol, atol, equal_nan)))} of {x.size} "
                         f"elements differ")


def same(a, b):
    """True when ``a`` and ``b`` have the same shape and exactly equal values."""
    return np.array_equal(to_numpy(a), to_numpy(b))


def check_numeric_gradient(fn, inputs, grad_stypes=None, eps=1e-4, rtol=1e-4, atol=1e-6,
                           out_grad=None):
    """Check the autograd gradients of ``fn`` against float64 central differences.

    ``fn(*inputs)`` returns an array or a list of arrays; the differentiated scalar is
    ``sum_k sum(out_k * out_grad_k)``, with ``out_grad`` (an array or list, one per output)
    random normal by default. The inputs are cast to float64, keeping their storage types.
    ``grad_stypes`` has one entry per input: the storage type its gradient must come out of
    the vjps in (also the stype of its ``attach_grad`` buffer), or None for an input that
    is not differentiated (e.g. the CSR data of a sparse ``dot``); by default every input is
    differentiated with a dense gradient. The check runs ``autograd.grad`` (values and
    produced stype) and ``backward`` (values delivered into ``.grad``). Every element of a
    differentiated input's dense equivalent is perturbed by ``+-eps`` (a sparse input is
    rebuilt in its stype, so a perturbed zero becomes stored): keep inputs small. A csr
    input with a csr gradient is differentiated w.r.t. its stored values (DESIGN §3.4):
    only those are perturbed, and the gradient must have the input's pattern.
    Both evaluations run in train mode. Raises ``AssertionError`` naming the input.
    """
    from . import autograd  # autograd sits above test_utils' array helpers: imported on use

    xs = [(x if isinstance(x, NDArray) else array(x)).astype(np.float64) for x in inputs]
    stypes = ["default"] * len(xs) if grad_stypes is None else list(grad_stypes)
    if len(stypes) != len(xs):
        raise ValueError(f"grad_stypes has {len(stypes)} entries for {len(xs)} inputs")

    def outputs(args):
        outs = fn(*args)
        return [outs] if isinstance(outs, NDArray) else list(outs)

    with autograd.pause(train_mode=True):
        outs = outputs(xs)
    if out_grad is None:
        ogs = [generator().normal(size=o.shape) for o in outs]
    else:
        ogs = [to_numpy(g).astype(np.float64) for g in
               ([out_grad] if isinstance(out_grad, (NDArray, np.ndarray)) else out_grad)]

    def objective(args):
        with autograd.pause(train_mode=True):
            return sum(float(np.sum(o.asnumpy() * g)) for o, g in zip(outputs(args), ogs))

    leaves = [x.copy() for x in xs]
    wrt = [i for i, st in enumerate(stypes) if st is not None]
    for i in wrt:
        leaves[i].attach_grad(stype=stypes[i])
    with autograd.record():
        heads = outputs(leaves)
    head_grads = [array(g, dtype=g.dtype) for g in ogs]
    produced = autograd.grad(heads, [leaves[i] for i in wrt], head_grads, retain_graph=True)
    autograd.backward(heads, head_grads)

    for i, got in zip(wrt, produced):
        base, args, x = xs[i].asnumpy(), list(xs), xs[i]
        numeric = np.zeros(base.shape)
        # a CSR leaf with a csr gradient: the gradient w.r.t. its stored values only
        stored = x.stype == stypes[i] == "csr"
        where = (zip(row_ids(x.indptr.asnumpy()), x.indices.asnumpy()) if stored
                 else (np.unravel_index(j, base.shape) for j in range(base.size)))
        for k, pos in enumerate(where):
            values = []
            for step in (eps, -eps):
                if stored:
                    data = x.data.asnumpy().copy()
                    data[k] += step
                    args[i] = csr_matrix((data, x.indices.asnumpy(), x.indptr.asnumpy()),
                                         shape=x.shape)
                else:
                    moved = base.copy()
                    moved[pos] += step
                    moved = array(moved, dtype=moved.dtype)
                    args[i] = moved if x.stype == "default" else moved.tostype(x.stype)
                values.append(objective(args))
            numeric[pos] = (values[0] - values[1]) / (2 * eps)
        if stored:
            for how, g in (("autograd.grad", got), ("backward", leaves[i].grad)):
                if g.stype == "csr" and not (
                        np.array_equal(g.indptr.asnumpy(), x.indptr.asnumpy()) and
                        np.array_equal(g.indices.asnumpy(), x.indices.asnumpy())):
                    raise AssertionError(f"inputs[{i}]: the {how} gradient of a csr leaf "
                                         f"must have the leaf's pattern")
        for how, g in (("autograd.grad", got), ("backward", leaves[i].grad)):
            if g.stype != stypes[i]:
                raise AssertionError(f"inputs[{i}]: {how} gave a {g.stype!r} gradient, "
                                     f"expected {stypes[i]!r}")
            assert_almost_equal(g, numeric, rtol, atol,
                                names=(f"{how} gradient of inputs[{i}]", "numeric gradient"))
