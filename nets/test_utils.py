"""Helpers for testing nets code (and code built on nets): random arrays of any
storage type and density, and comparisons that accept nets, numpy and scalars."""
import contextlib
import numbers
import os

import numpy as np

from .base import SUPPORTED_DTYPES, Context, as_dtype, check_stype, cpu
from .data.synthetic import make_sparse_dataset
from .arrays.creation import array, csr_matrix, row_sparse_array, zeros_sparse
from .arrays.csr import row_ids
from .arrays.dense import NDArray
from .random import generator

__all__ = ["DENSITIES", "rand_ndarray", "rand_sparse_ndarray", "rand_shape_2d", "rand_shape_3d",
           "rand_shape_nd", "create_sparse_array", "create_sparse_array_zd", "random_arrays",
           "random_sample", "assign_each", "assign_each2",
           "assert_almost_equal", "almost_equal", "assert_allclose", "same", "default_context",
           "to_numpy", "default_tols", "default_rtols", "default_atols", "default_numeric_eps",
           "default_tolerances",
           "get_tolerance", "get_tols", "assert_exception", "environment",
           "check_numeric_gradient", "check_function_gradient", "check_symbol_gradient",
           "check_symbolic_forward", "check_symbolic_backward",
           "compare_optimizer", "make_sparse_dataset", "list_gpus",
           "Context"]  # (MXNet's test_utils hands out Context through `import *`)


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
        v = 1.0 + rng.uniform(0.001, 2.0, n)  # MXNet's powerlaw values
    else:
        raise ValueError(f"distribution={distribution!r}: expected 'uniform', 'normal' or "
                         f"'powerlaw'")
    v[v == 0] = 0.5  # a stored value is never an explicit zero
    return v


def _powerlaw_mask(shape, density):
    """MXNet's powerlaw pattern: every row stores column 0, then row i stores its first
    ``min(2**(i+1), columns)`` columns, until ``int(rows * columns * density)`` values are
    placed (fewer than ``2 * rows`` of them is refused, as MXNet does)."""
    rows, cols = shape
    budget = int(rows * cols * density)
    if budget < 2 * rows:
        raise ValueError(f"distribution='powerlaw': density={density} gives {budget} values "
                         f"for shape {shape}; it needs rows * columns * density >= 2 * rows")
    mask = np.zeros(shape, dtype=bool)
    mask[:, 0] = True
    left = budget - rows
    for i in range(rows):
        if left <= 0:
            break
        width = min(cols, 2 ** (i + 1))
        extra = min(width - 1, left)
        mask[i, 1:1 + extra] = True
        left -= extra
    if left > 0:
        raise ValueError(f"distribution='powerlaw': density={density} is too high for shape "
                         f"{shape}")
    return mask


def _modify(values, modifier_func):
    if modifier_func is None:
        return values
    out = np.asarray(assign_each(values, modifier_func))
    return out


def rand_ndarray(shape, stype="default", density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices=False, distribution=None, ctx=None):
    """A random array of ``shape`` and storage type ``stype`` (MXNet's signature).

    ``density`` (default 0.5 for sparse, 1 for dense) is the fraction of stored values:
    a CSR array stores exactly ``round(density * size)`` values at uniformly drawn
    positions (as MXNet's, which draws with ``scipy.sparse.rand``), and a dense array with
    ``density < 1`` has its non-zeros in such a pattern; a row_sparse array stores each row
    independently with probability ``density`` (as MXNet's). 0 and 1 give empty and full
    arrays. ``density="one_row"`` fills exactly one random row (axis 0) and nothing else.
    ``distribution``: ``'uniform'`` (default, values in [-1, 1)), ``'normal'``, or
    ``'powerlaw'`` (2-D csr or dense: MXNet's row pattern, row i holding
    ``min(2**(i+1), columns)`` values until ``int(density * size)`` are placed, values in
    (1, 3)). ``modifier_func`` maps every stored value (MXNet's ``assign_each``);
    ``shuffle_csr_indices`` builds a CSR array from column indices shuffled within each
    row (nets stores them sorted, so the result is the same array).
    """
    check_stype(stype)
    distribution = "uniform" if distribution is None else distribution
    if density is None:
        density = 1.0 if stype == "default" else 0.5
    shape = tuple(int(d) for d in shape)
    dtype = as_dtype(dtype)
    rng = generator()
    if not shape:  # 0-d: a dense scalar
        v = _modify(_values(1, distribution, rng), modifier_func)
        return array(v.reshape(()), ctx=ctx, dtype=dtype)
    if distribution == "powerlaw":
        if stype == "row_sparse" or len(shape) != 2 or density == "one_row":
            raise ValueError("distribution='powerlaw' makes 2-D csr or dense arrays "
                             f"(got stype={stype!r}, shape={shape}, density={density!r})")
        mask = _powerlaw_mask(shape, density)
        row_mask = None
    elif density == "one_row":
        row_mask = np.zeros(shape[0], dtype=bool)
        row_mask[rng.integers(shape[0])] = True
    elif isinstance(density, (int, float)) and 0.0 <= density <= 1.0:
        row_mask = rng.random(shape[0]) < density
    else:
        raise ValueError(f"density={density!r} must be in [0, 1] or 'one_row'")
    if stype == "row_sparse":
        rows = np.flatnonzero(row_mask)
        data = _values(len(rows) * int(np.prod(shape[1:], dtype=np.int64)), distribution, rng)
        data = _modify(data, modifier_func)
        return row_sparse_array((data.reshape((len(rows),) + shape[1:]).astype(dtype), rows),
                                shape=shape, ctx=ctx)
    if distribution == "powerlaw":
        pass
    elif density == "one_row":
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
        values = _modify(_values(len(rows), distribution, rng), modifier_func).astype(dtype)
        if shuffle_csr_indices:
            order = np.lexsort((rng.random(len(rows)), rows))  # shuffled within each row
            rows, cols, values = rows[order], cols[order], values[order]
            indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=shape[0]))])
            return csr_matrix((values, cols, indptr), shape=shape, ctx=ctx)
        return csr_matrix((values, (rows, cols)), shape=shape, ctx=ctx)
    dense = np.zeros(shape, dtype=dtype)
    dense[mask] = _modify(_values(int(mask.sum()), distribution, rng), modifier_func)
    return array(dense, ctx=ctx, dtype=dtype)


def rand_sparse_ndarray(shape, stype, density=None, dtype=None, distribution=None,
                        data_init=None, rsp_indices=None, modifier_func=None,
                        shuffle_csr_indices=False, ctx=None):
    """MXNet's ``rand_sparse_ndarray``: ``(array, parts)`` with ``array`` as
    ``rand_ndarray(shape, stype, density, dtype, ...)`` makes it and ``parts`` its
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
                                modifier_func, distribution=distribution, ctx=ctx)
        arr = row_sparse_array((template.asnumpy(), rows), shape=tuple(shape), ctx=ctx)
    else:
        arr = rand_ndarray(shape, stype, density, dtype, modifier_func, shuffle_csr_indices,
                           distribution, ctx)
    if data_init is not None:
        arr = arr.with_values(np.full_like(arr.values, data_init))
    if stype == "row_sparse":
        return arr, (arr.data.asnumpy(), arr.indices.asnumpy())
    return arr, (arr.indptr, arr.indices, arr.data)


def create_sparse_array(shape, stype, data_init=None, rsp_indices=None, dtype=None,
                        modifier_func=None, density=.5, shuffle_csr_indices=False):
    """MXNet's ``create_sparse_array``: ``rand_sparse_ndarray(...)[0]`` (row_sparse rows
    from ``rsp_indices`` when given)."""
    if stype not in ("csr", "row_sparse"):
        raise AssertionError(f"Unknown storage type: {stype}")
    if stype == "csr":
        rsp_indices = None  # (MXNet's create_sparse_array ignores it for csr)
    return rand_sparse_ndarray(shape, stype, density=density, dtype=dtype,
                               data_init=data_init, rsp_indices=rsp_indices,
                               modifier_func=modifier_func,
                               shuffle_csr_indices=shuffle_csr_indices)[0]


def create_sparse_array_zd(shape, stype, density, data_init=None, rsp_indices=None,
                           dtype=None, modifier_func=None, shuffle_csr_indices=False):
    """MXNet's ``create_sparse_array_zd``: as ``create_sparse_array``; a row_sparse array
    stores exactly the rows of ``rsp_indices`` (none when it is None)."""
    if stype == "row_sparse":
        density = 0.0
        if rsp_indices is not None:
            assert len(rsp_indices) <= shape[0]
    return create_sparse_array(shape, stype, data_init=data_init, rsp_indices=rsp_indices,
                               dtype=dtype, modifier_func=modifier_func, density=density,
                               shuffle_csr_indices=shuffle_csr_indices)


def random_arrays(*shapes):
    """MXNet's ``random_arrays``: standard normal float32 numpy arrays of ``shapes`` (one
    array for one shape), drawn from ``numpy.random``."""
    arrays = [np.array(np.random.randn(), dtype=np.float32) if len(s) == 0
              else np.random.randn(*s).astype(np.float32) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def random_sample(population, k):
    """``k`` elements of the list ``population`` in random order (``numpy.random``)."""
    assert 0 <= k <= len(population)
    population = list(population)
    np.random.shuffle(population)
    return population[:k]


def assign_each(the_input, function):
    """``function`` applied to every element of ``the_input`` (a float64 numpy array;
    the input copied when ``function`` is None)."""
    if function is None:
        return np.array(the_input)
    the_input = np.asarray(the_input)
    return np.array([function(v) for v in the_input.ravel()],
                    dtype=np.float64).reshape(the_input.shape)


def assign_each2(input1, input2, function):
    """``function`` applied to every pair of elements of ``input1`` and ``input2``."""
    if function is None:
        return np.array(input1)
    input1, input2 = np.asarray(input1), np.asarray(input2)
    assert input1.shape == input2.shape
    return np.array([function(a, b) for a, b in zip(input1.ravel(), input2.ravel())],
                    dtype=np.float64).reshape(input1.shape)


def assert_exception(f, exception_type, *args, **kwargs):
    """Assert that ``f(*args, **kwargs)`` raises ``exception_type``."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f"{getattr(f, '__name__', f)} did not raise "
                         f"{getattr(exception_type, '__name__', exception_type)}")


@contextlib.contextmanager
def environment(*args):
    """``with environment(name, value)`` or ``with environment({name: value, ...})``: set
    (None: unset) environment variables inside the block, restored after it."""
    if len(args) == 1 and isinstance(args[0], dict):
        env = args[0]
    else:
        assert len(args) == 2, "expecting one dict or a name and a value"
        env = {args[0]: args[1]}
    saved = {k: os.environ.get(k) for k in env}

    def put(values):
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    put(env)
    try:
        yield
    finally:
        put(saved)


def to_numpy(x):
    """A numpy array from a nets array (densified), scipy matrix, numpy array or scalar."""
    if isinstance(x, NDArray):
        return x.asnumpy()
    if type(x).__module__.startswith("scipy.sparse"):
        return x.toarray()
    return np.asarray(x)


def _dtype_of(x):
    if isinstance(x, NDArray) or isinstance(x, np.ndarray):
        return np.dtype(x.dtype)
    if type(x).__module__.startswith("scipy.sparse"):
        return np.dtype(x.dtype)
    return np.asarray(x).dtype


# Default (rtol, atol) by float dtype: MXNet's (what programs written for MXNet's
# test_utils expect), and nets' own stricter ones, which nets' test suite uses
# (``default_tolerances('strict')``): a tolerance a bug could hide behind is no default
# there.
_TOLERANCES = {"mxnet": {np.float16: (1e-2, 1e-1), np.float32: (1e-4, 1e-3),
                         np.float64: (1e-5, 1e-20)},
               "strict": {np.float16: (1e-2, 1e-3), np.float32: (1e-4, 1e-5),
                          np.float64: (1e-7, 1e-9)}}
_DEFAULTS = ["mxnet"]


@contextlib.contextmanager
def default_tolerances(kind: str = "strict"):
    """Within this block, ``assert_almost_equal`` and the other comparisons default to
    ``kind``'s tolerances: ``'strict'``, nets' own (float32 atol 1e-5, float64 rtol 1e-7 /
    atol 1e-9), or ``'mxnet'``, MXNet's (float32 atol 1e-3, float64 rtol 1e-5), the
    default outside any block.

    Parameters
    ----------
    kind : {'strict', 'mxnet'}
        Which defaults.
    """
    if kind not in _TOLERANCES:
        raise ValueError(f"default_tolerances: kind={kind!r} must be one of "
                         f"{sorted(_TOLERANCES)}")
    _DEFAULTS.append(kind)
    try:
        yield
    finally:
        _DEFAULTS.pop()


def _defaults(which):
    table = _TOLERANCES[_DEFAULTS[-1]]
    return {**dict.fromkeys(SUPPORTED_DTYPES, 0.0),
            **{np.dtype(t): tols[which] for t, tols in table.items()}}


def default_rtols():
    """The default relative tolerance of each dtype (0 for bool and integers): MXNet's,
    or another kind's inside ``default_tolerances(kind)``."""
    return _defaults(0)


def default_atols():
    """The default absolute tolerance of each dtype (0 for bool and integers): MXNet's,
    or another kind's inside ``default_tolerances(kind)``."""
    return _defaults(1)


def default_numeric_eps():
    """MXNet's finite-difference step of each float dtype (a power of two)."""
    return {np.dtype(np.float16): 1.0 / 2 ** 6, np.dtype(np.float32): 1.0 / 2 ** 9,
            np.dtype(np.float64): 1.0 / 2 ** 14}


def get_tolerance(dat, tol, default_tol):
    """``tol`` when it is a number, else its entry (a dict by dtype) or ``default_tol``'s
    for ``dat``'s dtype."""
    if isinstance(tol, numbers.Number):
        return tol
    dtype = _dtype_of(dat)
    return (tol or {}).get(dtype, default_tol.get(dtype, 0.0))


def get_tols(x, y, rtol, atol):
    """``(rtol, atol)`` for comparing ``x`` and ``y``: the given ones, or the larger of
    MXNet's defaults for their dtypes."""
    return (max(get_tolerance(x, rtol, default_rtols()), get_tolerance(y, rtol, default_rtols())),
            max(get_tolerance(x, atol, default_atols()), get_tolerance(y, atol, default_atols())))


def default_tols(*arrays):
    """(rtol, atol) by MXNet's defaults for the least precise dtype among ``arrays``."""
    rt, at = default_rtols(), default_atols()
    dtypes = [_dtype_of(a) for a in arrays]
    return max(rt.get(d, 0.0) for d in dtypes), max(at.get(d, 0.0) for d in dtypes)


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True):
    """Whether ``a`` and ``b`` are close (``numpy.allclose``; tolerances by MXNet's rule:
    float64's defaults when not given). ``use_broadcast=False`` requires equal shapes."""
    x, y = to_numpy(a), to_numpy(b)
    if not use_broadcast and x.shape != y.shape:
        return False
    rtol = default_rtols()[np.dtype(np.float64)] if rtol is None else rtol
    atol = default_atols()[np.dtype(np.float64)] if atol is None else atol
    return bool(np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan))


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan=False,
                        use_broadcast=True, mismatches=(10, 10)):
    """Assert ``a`` and ``b`` (nets/numpy/scipy/scalars) have close values.

    Tolerances (a number, or a dict by dtype) default to MXNet's for the operands' dtypes
    (the larger of the two: float16 1e-2/1e-1, float32 1e-4/1e-3, float64 1e-5/1e-20,
    integers and bool exact). Shapes must be equal, except that with ``use_broadcast`` (the
    default, as MXNet) a scalar or a broadcastable operand is compared elementwise. The
    message names the worst element and how many differ.
    """
    rtol, atol = get_tols(a, b, rtol, atol)
    x, y = to_numpy(a), to_numpy(b)
    if x.shape != y.shape:
        try:
            shape = np.broadcast_shapes(x.shape, y.shape)
        except ValueError:
            shape = None
        if not use_broadcast or shape is None:
            raise AssertionError(f"shape mismatch: {names[0]} {x.shape} vs {names[1]} {y.shape}")
        x, y = np.broadcast_to(x, shape), np.broadcast_to(y, shape)
    if x.dtype == np.bool_ and y.dtype == np.bool_:
        if np.array_equal(x, y):
            return
    elif np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    xf, yf = x.astype(np.float64), y.astype(np.float64)
    with np.errstate(invalid="ignore"):
        err = np.where(np.equal(xf, yf) | (equal_nan & np.isnan(xf) & np.isnan(yf)), 0.0,
                       np.abs(xf - yf)) - rtol * np.abs(yf)
    err = np.where(np.isnan(err), np.inf, err)
    k = tuple(int(i) for i in np.unravel_index(np.argmax(err), err.shape)) if err.ndim else ()
    raise AssertionError(f"{names[0]} and {names[1]} differ (rtol={rtol}, atol={atol}): worst at "
                         f"{k}: {names[0]}={x[k].item()!r}, {names[1]}={y[k].item()!r}; "
                         f"{int(np.sum(~np.isclose(x, y, rtol, atol, equal_nan)))} of {x.size} "
                         f"elements differ")


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True):
    """MXNet's ``assert_allclose``: ``assert_almost_equal`` with numpy's tolerances."""
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def same(a, b):
    """True when ``a`` and ``b`` have the same shape and exactly equal values."""
    return np.array_equal(to_numpy(a), to_numpy(b))


def check_numeric_gradient(fn=None, inputs=None, *args, **kwargs):
    """Check gradients against central differences, in either of two forms.

    ``check_numeric_gradient(fn, inputs, grad_stypes=None, eps=1e-4, rtol=1e-4, atol=1e-6,
    out_grad=None)``, ``fn`` a Python function of arrays: its autograd gradients (see
    ``check_function_gradient``).

    ``check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None,
    atol=None, grad_nodes=None, use_forward_train=True, ctx=None, grad_stype_dict=None,
    dtype=np.float32)``, ``sym`` a ``nets.sym`` Symbol (MXNet's signature): its executor's
    gradients (see ``check_symbol_gradient``).
    """
    sym = kwargs.pop("sym", None)
    if sym is not None:
        if fn is not None:  # (the location given positionally after sym=)
            inputs = fn
        fn = sym
    if "location" in kwargs:
        inputs = kwargs.pop("location")
    if hasattr(fn, "list_arguments"):
        return check_symbol_gradient(fn, inputs, *args, **kwargs)
    return check_function_gradient(fn, inputs, *args, **kwargs)


def check_function_gradient(fn, inputs, grad_stypes=None, eps=1e-4, rtol=1e-4, atol=1e-6,
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
    input with a csr gradient is differentiated w.r.t. its stored values
    (docs/mxnet-compat.md, "Gradient of a CSR input"): only those are perturbed, and the
    gradient must have the input's pattern.
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


def _location(sym, location, ctx, dtype, names=None, what="arguments"):
    """``location`` (a dict by name, or a list in ``names`` order) as a dict of arrays;
    numpy values become arrays of ``dtype`` (``'asnumpy'``: their own)."""
    names = sym.list_arguments() if names is None else names
    if isinstance(location, dict):
        if set(location) != set(names):
            raise ValueError(f"Symbol {what} and keys of the given location do not match: "
                             f"{sorted(names)} vs {sorted(location)}")
    else:
        location = dict(zip(names, location))
    return {k: array(v, ctx=ctx, dtype=v.dtype if dtype == "asnumpy" else dtype)
            if isinstance(v, np.ndarray) else v for k, v in sorted(location.items())}


def _aux_location(sym, aux_states, ctx, dtype):
    if aux_states is None:
        return None
    return _location(sym, aux_states, ctx, dtype, sym.list_auxiliary_states(),
                     "auxiliary states")


def check_symbol_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None,
                          atol=None, grad_nodes=None, use_forward_train=True, ctx=None,
                          grad_stype_dict=None, dtype=np.float32):
    """MXNet's ``check_numeric_gradient`` of a Symbol: the gradients the executor of
    ``make_loss(sym * proj)`` (``proj`` random in [0.1, 1.1)) writes for ``grad_nodes``
    (names, or a dict of name to grad_req; default every argument) against central
    differences with step ``numeric_eps`` (default by dtype, ``default_numeric_eps``),
    every element of each argument of ``grad_nodes`` perturbed in its storage type.
    ``grad_stype_dict`` gives gradient buffers of other storage types. A csr input with a
    csr gradient buffer is differentiated w.r.t. its stored values (nets' rule,
    docs/mxnet-compat.md "Gradient of a CSR input"): only those are perturbed, and the
    buffer is compared at them (its unstored entries must be 0); give it a dense buffer for
    the full gradient."""
    from . import symbol as S  # symbols sit above test_utils' array helpers: imported on use
    ctx = default_context() if ctx is None else ctx
    location = _location(sym, location, ctx, dtype)
    location_npy = {k: v.asnumpy() for k, v in location.items()}
    aux = _aux_location(sym, aux_states, ctx, dtype)
    aux_npy = None if aux is None else {k: v.asnumpy() for k, v in aux.items()}
    if grad_nodes is None:
        grad_nodes = sym.list_arguments()
        grad_req = dict.fromkeys(grad_nodes, "write")
    elif isinstance(grad_nodes, (list, tuple)):
        grad_nodes = list(grad_nodes)
        grad_req = dict.fromkeys(grad_nodes, "write")
    elif isinstance(grad_nodes, dict):
        grad_req = dict(grad_nodes)
        grad_nodes = list(grad_nodes)
    else:
        raise ValueError(f"grad_nodes={grad_nodes!r}: expected a list or a dict")
    _, out_shapes, _ = sym.infer_shape(**{k: v.shape for k, v in location.items()})
    proj = S.Variable("__random_proj")
    out = S.make_loss(sym * proj)
    location["__random_proj"] = array(np.random.rand(*out_shapes[0]) + 0.1, ctx=ctx,
                                      dtype=dtype)
    grads_npy = {k: np.random.normal(0, 0.01, size=location[k].shape) for k in grad_nodes}
    args_grad = {k: array(v, ctx=ctx, dtype=dtype) for k, v in grads_npy.items()}
    for k, st in (grad_stype_dict or {}).items():
        if k in args_grad and st not in (None, "default"):
            args_grad[k] = zeros_sparse(st, args_grad[k].shape, ctx, args_grad[k].dtype)
    exe = out.bind(ctx, args=location, args_grad=args_grad, grad_req=grad_req,
                   aux_states=aux)
    exe.forward(is_train=True)
    eps = get_tolerance(exe.outputs[0], numeric_eps, default_numeric_eps())
    exe.backward()
    stored = {k: location[k] for k, st in (grad_stype_dict or {}).items()
              if st == "csr" and k in grad_nodes and location[k].stype == "csr"}
    numeric = _numeric_grad(exe, {k: location_npy[k] for k in grad_nodes}, aux_npy, eps,
                            use_forward_train, dtype, stored)
    for name in grad_nodes:
        fd, sym_grad = numeric[name], exe.grad_dict.get(name)
        names = (f"NUMERICAL_{name}", f"BACKWARD_{name}")
        if grad_req[name] == "write":
            assert_almost_equal(fd, sym_grad, rtol, atol, names)
        elif grad_req[name] == "add":
            assert_almost_equal(fd, to_numpy(sym_grad) - grads_npy[name], rtol, atol, names)
        elif grad_req[name] == "null":
            assert_almost_equal(grads_npy[name], args_grad[name], rtol, atol, names)
        else:
            raise ValueError(f"Invalid grad_req {grad_req[name]} for argument {name}")


def _numeric_grad(exe, location, aux_states, eps, use_forward_train, dtype, stored=None):
    """Central differences of ``sum(exe.outputs[0])`` w.r.t. every element of every float
    argument of ``location`` (numpy: the arguments compared, so row ids stored as floats
    are never perturbed), written into the executor in each argument's stype;
    for an argument named in ``stored`` (name: its csr array), w.r.t. that array's stored
    values only, its pattern kept (the gradient is 0 elsewhere)."""
    stored = stored or {}

    def put(dst, v, k):
        if k in stored:  # rebuilt on the input's pattern: a perturbed value stays stored
            x = stored[k]
            value = csr_matrix((v[positions[k]], x.indices, x.indptr), shape=x.shape,
                               dtype=dtype)
        else:
            value = array(v, dtype=dtype)
        dst[:] = value if dst.stype in ("default", value.stype) else value.tostype(dst.stype)

    positions = {k: (row_ids(x.indptr.asnumpy()), x.indices.asnumpy())
                 for k, x in stored.items()}
    grads = {k: np.zeros(v.shape, dtype=dtype) for k, v in location.items()}
    location = {k: np.array(v, order="C") for k, v in location.items()}
    for k, v in location.items():
        if v.dtype.kind != "f":
            continue
        dst, old = exe.arg_dict[k], v.copy()
        where = (np.ravel_multi_index(positions[k], v.shape) if k in stored
                 else range(v.size))
        for i in where:
            sums = []
            for step in (eps / 2.0, -eps):
                v.ravel()[i] += step
                put(dst, v, k)
                for key, val in (aux_states or {}).items():
                    put(exe.aux_dict[key], val, key)
                exe.forward(is_train=use_forward_train)
                sums.append(float(exe.outputs[0].asnumpy().astype(np.float64).sum()))
            grads[k].ravel()[i] = (sums[0] - sums[1]) / eps
            v.ravel()[i] = old.ravel()[i]
        put(dst, old, k)
    return grads


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None,
                           ctx=None, equal_nan=False, dtype=np.float32):
    """MXNet's ``check_symbolic_forward``: bind ``sym`` at ``location`` (a list in
    ``list_arguments()`` order or a dict; numpy values become ``dtype`` arrays, arrays are
    used as they are), run ``forward(is_train=False)`` and compare each output with
    ``expected`` (a list, or a dict by output name). Returns the outputs."""
    ctx = default_context() if ctx is None else ctx
    location = _location(sym, location, ctx, dtype)
    aux = _aux_location(sym, aux_states, ctx, dtype)
    if isinstance(expected, dict):
        expected = [expected[k] for k in sym.list_outputs()]
    grads = {k: _zeros_like_dense(v) for k, v in location.items()}
    exe = sym.bind(ctx, args=location, args_grad=grads, aux_states=aux)
    exe.forward(is_train=False)
    for name, want, got in zip(sym.list_outputs(), expected, exe.outputs):
        assert_almost_equal(want, got, rtol, atol, (f"EXPECTED_{name}", f"FORWARD_{name}"),
                            equal_nan=equal_nan)
    return exe.outputs


def _zeros_like_dense(x):
    """A dense float array of zeros of ``x``'s shape and dtype."""
    return array(np.zeros(x.shape, dtype=x.dtype), dtype=x.dtype)


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None,
                            aux_states=None, grad_req="write", ctx=None, grad_stypes=None,
                            equal_nan=False, dtype=np.float32):
    """MXNet's ``check_symbolic_backward``: bind ``sym`` at ``location`` with gradient
    buffers (random values, or empty sparse ones of ``grad_stypes[name]``), run
    ``forward(is_train=True)`` and ``backward(out_grads)``, and compare each buffer with
    ``expected`` (a list in ``list_arguments()`` order or a dict) by its ``grad_req``
    ('write': the gradient; 'add': the gradient added to the buffer's values; 'null':
    untouched). A csr input's csr buffer holds the gradient at the input's stored entries
    (nets' rule, docs/mxnet-compat.md "Gradient of a CSR input"): it is compared with
    ``expected`` there, and with 0 elsewhere. Returns the gradient buffers by name."""
    ctx = default_context() if ctx is None else ctx
    location = _location(sym, location, ctx, dtype)
    aux = _aux_location(sym, aux_states, ctx, dtype)
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(sym.list_arguments(), expected))
    grads_npy = {k: np.random.normal(size=np.shape(v)) for k, v in sorted(expected.items())}
    grads = {}
    for k, v in grads_npy.items():
        st = (grad_stypes or {}).get(k)
        if st not in (None, "default"):
            grads[k] = zeros_sparse(st, v.shape, ctx, np.dtype(dtype if dtype != "asnumpy"
                                                                 else expected[k].dtype))
        else:
            grads[k] = array(v, ctx=ctx, dtype=expected[k].dtype if dtype == "asnumpy"
                             else dtype)
    if isinstance(grad_req, str):
        grad_req = dict.fromkeys(sym.list_arguments(), grad_req)
    elif isinstance(grad_req, (list, tuple)):
        grad_req = dict(zip(sym.list_arguments(), grad_req))
    exe = sym.bind(ctx, args=location, args_grad=grads, aux_states=aux, grad_req=grad_req)
    exe.forward(is_train=True)

    def as_array(v):
        return array(v, ctx=ctx, dtype=v.dtype if dtype == "asnumpy" else dtype) \
            if isinstance(v, np.ndarray) else v
    if isinstance(out_grads, (list, tuple)):
        out_grads = [as_array(g) for g in out_grads]
    elif isinstance(out_grads, dict):
        out_grads = [as_array(out_grads[k]) for k in sym.list_outputs()]
    elif isinstance(out_grads, np.ndarray):
        out_grads = [as_array(out_grads)]
    exe.backward(out_grads)
    for name in expected:
        names = (f"EXPECTED_{name}", f"BACKWARD_{name}")
        req = grad_req.get(name, "null")
        want = expected[name]
        x = location.get(name)
        if req != "null" and x is not None and x.stype == grads[name].stype == "csr":
            at = (row_ids(x.indptr.asnumpy()), x.indices.asnumpy())
            want = np.zeros(x.shape, np.asarray(expected[name]).dtype)
            want[at] = np.asarray(to_numpy(expected[name]))[at]
        if req == "write":
            assert_almost_equal(want, grads[name], rtol, atol, names, equal_nan=equal_nan)
        elif req == "add":  # (the sum was made in the buffer's dtype: compared in it)
            got = to_numpy(grads[name])
            assert_almost_equal(want, (got - grads_npy[name]).astype(got.dtype, copy=False),
                                rtol, atol, names, equal_nan=equal_nan)
        elif req == "null":
            assert_almost_equal(grads_npy[name], grads[name], rtol, atol, names,
                                equal_nan=equal_nan)
        else:
            raise ValueError(f"Invalid grad_req {req} for argument {name}")
    return grads


def _compare_states(s1, s2, rtol=None, atol=None):
    if s1 is None or s2 is None:
        return
    if isinstance(s1, (tuple, list)):
        for a, b in zip(s1, s2):
            _compare_states(a, b, rtol, atol)
    else:
        assert_almost_equal(s1, s2, rtol=rtol, atol=atol)


def compare_optimizer(opt1, opt2, shape, dtype, w_stype="default", g_stype="default",
                      rtol=1e-4, atol=1e-5, compare_states=True, ntensors=1):
    """MXNet's ``compare_optimizer``: one update of ``opt1`` (on dense copies) and ``opt2``
    (on a weight of ``w_stype`` and a gradient of ``g_stype``) from the same random values
    must give close weights (and states, with ``compare_states``)."""
    from .arrays.random import uniform
    if isinstance(shape, list):
        raise NotImplementedError("compare_optimizer: multi-tensor updates (a list of "
                                  "shapes) are not supported")
    if w_stype == "default":
        w2 = uniform(shape=shape, dtype=dtype)
        w1 = w2.copy()
    else:
        w2 = rand_ndarray(shape, w_stype, density=1, dtype=dtype)
        w1 = w2.tostype("default")
    if g_stype == "default":
        g2 = uniform(shape=shape, dtype=dtype)
        g1 = g2.copy()
    else:
        g2 = rand_ndarray(shape, g_stype, dtype=dtype)
        g1 = g2.tostype("default")
    state1 = opt1.create_state_multi_precision(0, w1)
    state2 = opt2.create_state_multi_precision(0, w2)
    if compare_states:
        _compare_states(state1, state2)
    opt1.update_multi_precision(0, w1, g1, state1)
    opt2.update_multi_precision(0, w2, g2, state2)
    if compare_states:
        _compare_states(state1, state2, rtol, atol)
    assert_almost_equal(w1, w2, rtol=rtol, atol=atol)
