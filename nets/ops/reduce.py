"""Reductions: ``sum``, ``mean``, ``max``, ``min``, ``norm``, ``square_sum``, ``argmax``,
``argmin``.

Shapes follow MXNet 1.x: ``axis=None`` (or ``()``) reduces every axis, and a
result with no axis left has shape ``(1,)``, not a 0-d scalar; ``keepdims``
leaves each reduced axis with size 1; ``exclude=True`` reduces the axes *not*
in ``axis``.

Storage types (every sparse case below runs natively, without densifying):

=====================================  ========================  ============================
op                                     input                     output
=====================================  ========================  ============================
sum, mean, max, min, norm, square_sum  default, csr, row_sparse  default
square_sum, rows kept (see its doc)    row_sparse                row_sparse
argmax, argmin                         default                   default
argmax, argmin                         csr, row_sparse           default (fallback, warns)
=====================================  ========================  ============================

A sparse input reduces its stored values and accounts for the implicit zeros:
a row, column or slice with any unstored element also holds a 0, so its max
is ``max(0, stored max)`` and an empty one reduces to 0. CSR reduces rows over
``indptr`` slices, columns with ``kernels.reduce.csr_col_reduce``; row_sparse
reduces axis 0 over the stored rows only, and other axes within each stored
row, scattered into a zero result.
"""
import math

import numpy as np

from .. import kernels, parallel
from ..base import FLOAT_DTYPES, NetsError, ShapeError, as_dtype
from ..arrays.csr import row_ids
from ..arrays.dense import NDArray
from ..arrays.row_sparse import RowSparseNDArray
from .elemwise import (_np_sum_to, _sum_to, _unbroadcast, broadcast_mul, elemwise_mul,
                       equal, maximum, multiply)
from .registry import REQUIRED, RECORDER, Op, shape_attr
from .reshaping import reshape
from .unary import as_dense, reciprocal, sign

__all__ = ["sum", "mean", "max", "min", "norm", "square_sum", "argmax", "argmin"]


# -- axes and shapes ---------------------------------------------------------------
def _given(axis):
    """``axis`` as a tuple of ints (``()`` for None)."""
    if axis is None:
        return ()
    if isinstance(axis, (int, np.integer)):
        return (int(axis),)
    if isinstance(axis, (tuple, list)) and all(isinstance(a, (int, np.integer)) for a in axis):
        return tuple(int(a) for a in axis)
    raise ShapeError(f"axis={axis!r} must be None, an int or a tuple of ints")


def _axes(shape, axis, exclude=False):
    """The sorted axes to reduce. As in MXNet, no axis given means every axis (even with
    ``exclude``)."""
    ndim = len(shape)
    if type(axis) is int and not exclude and -ndim <= axis < ndim:
        return (axis % ndim,)  # the common call
    given = _given(axis)
    if not given:
        return tuple(range(ndim))
    if not all(-ndim <= a < ndim for a in given):
        raise ShapeError(f"axis={axis!r} is out of range for an array of shape {shape}")
    picked = {a % ndim for a in given}
    if len(picked) != len(given):
        raise ShapeError(f"axis={axis!r} names an axis twice")
    return tuple(a for a in range(ndim) if (a in picked) != exclude)


def _shape(shape, axes, keepdims):
    out = tuple(1 if a in axes else d for a, d in enumerate(shape) if keepdims or a not in axes)
    return out or (1,)  # MXNet 1.x: nothing left is shape (1,)


def _check_nonempty(what, shape, axes):
    """max/min/argmax have no value over an empty axis."""
    for a in axes:
        if shape[a] == 0:
            raise ShapeError(f"{what} over axis {a} of size 0 (shape {shape}) has no value")


# -- one reduction, three storage types ----------------------------------------------
# A reduction is (pre, ufunc, finish): map every element with ``pre`` (None, np.abs,
# np.square; each maps 0 to 0, so implicit zeros stay implicit), combine with ``ufunc``
# (np.add, np.maximum, np.minimum), then ``finish(result, count)`` (mean, sqrt or None).
# Each storage path returns the combined result with the reduced axes kept as size 1.

def _mean(r, count):
    return r / count


def _sqrt(r, count):
    return np.sqrt(r)


def _with_zero(ufunc, r, where):
    """Fold one implicit zero into ``r`` where ``where`` (a no-op for sums)."""
    return r if ufunc is np.add else np.where(where, ufunc(r, 0), r)


def _mapped(pre, values):
    return values if pre is None else pre(values)


def _short_rows(a, axes):
    """The length of the rows a sum of numpy ``a`` over ``axes`` adds up when they are its
    trailing axes, short, float and C-contiguous (what ``row_sums`` and ``row_dots`` take),
    else 0."""
    lead = a.ndim - len(axes)
    n = math.prod(a.shape[lead:])
    if (axes and 0 < n <= 128 and a.dtype in FLOAT_DTYPES and a.flags.c_contiguous
            and axes == tuple(range(lead, a.ndim))):
        return n
    return 0


def _dense_keep(x, pre, ufunc, axes):
    a = _mapped(pre, x.values)
    n = _short_rows(a, axes) if ufunc is np.add else 0
    if n:
        # Trailing rows this short: numpy's reduce pays an inner-loop call per row. The
        # row-sum kernel sums them in one pass on one thread; a larger array goes to a BLAS
        # matrix-vector product with ones, which BLAS may spread over threads. Both are as
        # accurate as numpy's pairwise sum here.
        rows = a.reshape(-1, n)
        sums = kernels.reduce.row_sums(rows) if a.size <= 1 << 18 else rows @ np.ones(n, a.dtype)
        return sums.reshape(a.shape[:a.ndim - len(axes)] + (1,) * len(axes))
    return ufunc.reduce(a, axis=axes, keepdims=True)


def _csr_keep(x, pre, ufunc, axes):
    v = _mapped(pre, x.values)
    nrows, ncols = x.shape
    if axes == (0, 1):
        r = ufunc.reduce(v) if v.size else v.dtype.type(0)
        return _with_zero(ufunc, np.full((1, 1), r, v.dtype), v.size < nrows * ncols)
    if axes == (1,):
        counts = np.diff(x.indptr_array)
        rows = np.flatnonzero(counts)
        r = np.zeros(nrows, v.dtype)
        if rows.size:  # reduceat over the non-empty rows' slices (an empty one would misread)
            r[rows] = ufunc.reduceat(v, x.indptr_array[rows])
        return _with_zero(ufunc, r, counts < ncols).reshape(nrows, 1)
    if axes == (0,):
        k = kernels.reduce
        if v.dtype not in (np.float32, np.float64):
            v = v.astype(np.float64)  # two kernel specialisations only
        kind = {np.add: k.SUM, np.maximum: k.MAX, np.minimum: k.MIN}[ufunc]
        r = k.csr_col_reduce(v, x.index_array, nrows, ncols, kind)
        return r.reshape(1, ncols)
    out = np.zeros(x.shape, v.dtype)  # nothing to reduce (exclude=True with both axes)
    out[row_ids(x.indptr_array), x.index_array] = v
    return out


def _rsp_keep(x, pre, ufunc, axes):
    v = _mapped(pre, x.values)
    out_shape = _shape(x.shape, axes, keepdims=True)
    if 0 not in axes:  # within each stored row; absent rows reduce to 0
        out = np.zeros(out_shape, v.dtype)
        out[x.index_array] = ufunc.reduce(v, axis=axes, keepdims=True)
        return out
    if not len(x.index_array):
        return np.zeros(out_shape, v.dtype)
    return _with_zero(ufunc, ufunc.reduce(v, axis=axes, keepdims=True),
                      len(x.index_array) < x.shape[0])


_KEEP = {"default": _dense_keep, "csr": _csr_keep, "row_sparse": _rsp_keep}


def _reduce(data, pre, ufunc, finish, axis, keepdims, exclude=False, dtype=None):
    shape = data.shape
    axes = _axes(shape, axis, exclude)
    if ufunc is not np.add:
        _check_nonempty(ufunc.__name__, shape, axes)
    r = _KEEP[data.stype](data, pre, ufunc, axes)
    if finish is not None:
        r = finish(r, math.prod([shape[a] for a in axes]))
    out = np.asarray(r, dtype=data.dtype if dtype is None else dtype)
    return NDArray(out.reshape(_shape(shape, axes, keepdims)), data.context)


def _dense_result(data, **attrs):
    return "default"


def _reduced_shape(ins, attrs):
    """Shape rule of a reduction over ``axis`` (``exclude`` where the operator has it)."""
    s = ins[0]
    if s is None:
        return ins, [None]
    axes = _axes(s, attrs["axis"], attrs.get("exclude", False))
    return ins, [_shape(s, axes, attrs["keepdims"])]


_REDUCE_ATTRS = {"axis": None, "keepdims": False, "exclude": False}
_ARGS_DOC = """
``axis``: None (every axis), an int or a tuple of ints; ``keepdims``: keep reduced
axes with size 1; ``exclude``: reduce the axes not in ``axis``. Output shape
``(1,)`` when no axis is left (MXNet 1.x). Sparse inputs reduce natively,
implicit zeros included; the result is dense unless stated above.
"""


def _declare(name, pre, ufunc, finish, doc):
    op = Op(name, ("data",), _REDUCE_ATTRS, doc=doc + _ARGS_DOC)
    op.infer(_dense_result)
    op.shape(_reduced_shape)

    def impl(data, axis, keepdims, exclude):
        return _reduce(data, pre, ufunc, finish, axis, keepdims, exclude)
    for stype in _KEEP:
        op.impl(stype)(impl)
    return op


sum = _declare("sum", None, np.add, None, "Sum of array elements over the given axes.")
mean = _declare("mean", None, np.add, _mean, "Mean of array elements over the given axes.")
max = _declare("max", None, np.maximum, None, """\
Maximum over the given axes (an axis of size 0 raises ``ShapeError``).

On a sparse input every unstored element counts as 0: the max of a row or
column with any unstored element is ``max(0, largest stored value)``.""")
min = _declare("min", None, np.minimum, None, """\
Minimum over the given axes (an axis of size 0 raises ``ShapeError``).

On a sparse input every unstored element counts as 0: the min of a row or
column with any unstored element is ``min(0, smallest stored value)``.""")


# -- norm --------------------------------------------------------------------------------
norm = Op("norm", ("data",), {"ord": 2, "axis": None, "out_dtype": None, "keepdims": False},
          doc="""\
The L1 (``ord=1``) or L2 (``ord=2``) norm over ``axis`` (default: every element).

The selected axes are treated as one vector, as MXNet computes it: a 2-tuple
``axis`` gives the entrywise (Frobenius for ``ord=2``) matrix norm. ``out_dtype``
sets the result's dtype (default: the input's). A full reduction has shape
``(1,)``. Sparse inputs (any axis) reduce natively into a dense result.
""")
norm.infer(_dense_result)
norm.shape(_reduced_shape)
norm.dtype(lambda d, a: as_dtype(a["out_dtype"], d[0]))
norm.grad_stype(lambda data, **attrs: (data,))  # g times sign(x) or x / |x|: x's pattern


def _norm(data, ord, axis, out_dtype, keepdims):
    if ord not in (1, 2):
        raise NetsError(f"norm: ord={ord!r} is not supported; use 1 or 2")
    pre, finish = (np.abs, None) if ord == 1 else (np.square, _sqrt)
    return _reduce(data, pre, np.add, finish, axis, keepdims,
                   dtype=None if out_dtype is None else as_dtype(out_dtype))


for _stype in _KEEP:
    norm.impl(_stype)(_norm)


# -- square_sum --------------------------------------------------------------------------
square_sum = Op("square_sum", ("data",), _REDUCE_ATTRS, doc="""\
``sum(square(data), axis, keepdims, exclude)`` as one op (MXNet's ``_square_sum``),
made for row-sparse arrays such as gradients (squared norms per row or overall).

Storage (MXNet's rule, generalised to n-d): a row_sparse input with
``keepdims=True`` and ``axis`` holding only positive axes (or, with
``exclude=True``, holding 0) keeps its rows, so the result is row_sparse with
the input's row indices (``square_sum(rsp, axis=1, keepdims=True)``). Every other
case is dense. Inference sees no shapes, so a negative axis gives a dense result.

Gradient (``2 * data`` times the incoming gradient): row_sparse for a row_sparse input.
In the row-keeping case with a row_sparse incoming gradient it holds only the rows that
both the input and the incoming gradient store (MXNet's ``_backward_square_sum`` gives
the incoming gradient's rows, accepting only incoming rows that the input stores); rows
the incoming gradient lacks are left out, not stored as zeros, so a lazy optimizer leaves
them untouched: in a factorization machine, ``dot(x.square(), square_sum(v, axis=1,
keepdims=True))`` gives ``v`` only the rows of the batch's features. With a dense
incoming gradient it holds the input's rows.
""" + _ARGS_DOC)


def _keeps_rows(axis, keepdims, exclude):
    given = _given(axis)
    if not (keepdims and given):
        return False
    return 0 in given if exclude else all(a > 0 for a in given)


@square_sum.infer
def _(data, axis, keepdims, exclude):
    return ("row_sparse" if data == "row_sparse" and _keeps_rows(axis, keepdims, exclude)
            else "default")


square_sum.shape(_reduced_shape)
square_sum.grad_stype(lambda data, **attrs: (data,))  # g times 2 * data: its pattern


# numpy's pairwise sum keeps 8 running sums over blocks of 128 elements: a row up to this
# long is summed as accurately by the kernel's running sums per SIMD lane
_SHORT_ROW = 128


def _row_square_sums(a, axes):
    """The sum of squares of each row of numpy ``a`` over ``axes``, shape ``(len(a),)``, by
    ``kernels.reduce.row_square_sums`` (the cores sharing the rows): one pass, no squared
    copy. None where that kernel does not serve: ``axes`` other than every axis but the
    first, a dtype other than float32/float64, a non-contiguous array, empty or long rows
    (numpy reduces those)."""
    n = math.prod(a.shape[1:])
    if (a.ndim < 2 or axes != tuple(range(1, a.ndim)) or not 0 < n <= _SHORT_ROW
            or a.dtype not in (np.float32, np.float64) or not a.flags.c_contiguous):
        return None
    rows, out = a.reshape(len(a), n), np.empty(len(a), a.dtype)
    parallel.parallel_for(lambda lo, hi: kernels.reduce.row_square_sums(rows, out, lo, hi),
                          len(a), work=a.size)
    return out


@square_sum.impl("default")
@square_sum.impl("csr")
def _square_sum(data, axis, keepdims, exclude):
    if data.stype == "default":
        axes = _axes(data.shape, axis, exclude)
        r = _row_square_sums(data.values, axes)
        if r is not None:
            return NDArray(r.reshape(_shape(data.shape, axes, keepdims)), data.context)
    return _reduce(data, np.square, np.add, None, axis, keepdims, exclude)


@square_sum.impl("row_sparse")
def _(data, axis, keepdims, exclude):
    axes = _axes(data.shape, axis, exclude)
    r = _row_square_sums(data.values, axes)
    if not _keeps_rows(axis, keepdims, exclude):
        if r is None:
            return _square_sum(data, axis, keepdims, exclude)
        out = np.zeros(data.shape[0], data.dtype)  # absent rows sum to 0
        out[data.index_array] = r
        return NDArray(out.reshape(_shape(data.shape, axes, keepdims)), data.context)
    rows = (np.add.reduce(np.square(data.values), axis=axes, keepdims=True) if r is None
            else r.reshape((len(r),) + (1,) * (len(data.shape) - 1)))
    return RowSparseNDArray(rows, data.index_array, _shape(data.shape, axes, True),
                            data.context)  # (index buffers are never written: shared)


# -- argmax / argmin -----------------------------------------------------------------------
_ARG_DOC = """\
Index of the {what} value along ``axis`` (an int; None: of the flattened array,
shape ``(1,)``), the first one on ties. As in MXNet the indices are floats, of
dtype ``np.result_type(data.dtype, float32)``: float32, float64 for float64 input;
float16 input gets float32, since float16 cannot hold indices past 2048.
Dense only: a sparse input falls back (warns). The gradient is zero (as in MXNet): the
index is piecewise constant in ``data``, so a recorded ``{name}`` passes nothing back.
"""


def _declare_arg(name, fn, what):
    op = Op(name, ("data",), {"axis": None, "keepdims": False},
            doc=_ARG_DOC.format(what=what, name=name))
    op.infer(_dense_result)
    op.shape(_reduced_shape)
    op.dtype(lambda d, a: np.result_type(d[0], np.float32))
    op.grad_stype(lambda data, axis, keepdims: (None,))
    op.vjp(lambda node, g: None)  # a zero gradient (piecewise constant)

    @op.impl("default")
    def _(data, axis, keepdims):
        x = data.values
        if axis is not None and not isinstance(axis, (int, np.integer)):
            raise ShapeError(f"{name}: axis={axis!r} must be an int or None")
        axes = _axes(x.shape, axis)
        _check_nonempty(name, x.shape, axes)
        idx = fn(x) if len(axes) == x.ndim else fn(x, axis=axes[0])
        out = np.asarray(idx, dtype=np.result_type(x.dtype, np.float32))
        return NDArray(out.reshape(_shape(x.shape, axes, keepdims)), data.context)
    return op


argmax = _declare_arg("argmax", np.argmax, "largest")
argmin = _declare_arg("argmin", np.argmin, "smallest")


# -- gradients -----------------------------------------------------------------------------
_backward_sum = Op("_backward_sum", ("data",), {"shape": REQUIRED, "axes": REQUIRED, "scale": 1.0},
                   doc="""\
The adjoint of ``sum`` over ``axes`` (sorted ints) of an array of ``shape``: ``data``
(the sum's shape, reduced axes dropped or kept) times ``scale``, copied along ``axes``
back to ``shape``. The gradient of ``sum`` (``scale`` 1) and ``mean`` (1 / count) in
one operator; its own gradient is ``sum`` times ``scale``.
""")
_backward_sum.shape(shape_attr)


@_backward_sum.impl("default")
def _(data, shape, axes, scale):
    g = data.values.reshape(_shape(shape, axes, True))
    if scale != 1:
        g = np.multiply(g, scale).astype(data.dtype, copy=False)  # as ``g * scale`` computes
    out = np.empty(shape, data.dtype)
    out[...] = g
    return NDArray(out, data.context)


@_backward_sum.vjp
def _(node, g):
    a = node.attrs
    d = reshape(_sum_to(as_dense(g), shape=_shape(a["shape"], a["axes"], True)),
                shape=node.inputs[0].shape)
    return d if a["scale"] == 1 else multiply(d, a["scale"])


def _expand(g, data, axes, scale=1.0):
    """``g`` (shape of a reduction of ``data`` over ``axes``) times ``scale``, broadcast back
    to ``data``'s shape."""
    return _backward_sum(g, shape=data.shape, axes=axes, scale=scale)


def _reduction_vjp(op, local, uses_output=False):
    """Register ``op``'s vjp as ``expand(g) * local(data, expand(y), count)`` where ``local``
    is the derivative of the reduction w.r.t. each element (None: 1; a number is folded
    into the expansion); ``expand(y)`` is only built for a ``local`` that ``uses_output``
    (None in its place otherwise)."""
    @op.vjp
    def _(node, g):
        data, attrs = node.inputs[0], node.attrs
        axes = _axes(data.shape, attrs["axis"], attrs.get("exclude", False))
        count = math.prod(data.shape[a] for a in axes)
        if local is None:
            return _expand(g, data, axes)
        y = _expand(node.output(0), data, axes) if uses_output else None
        d = local(data, y, count, attrs)
        if isinstance(d, float):
            return _expand(g, data, axes, d)
        return multiply(_expand(g, data, axes), d)


_reduction_vjp(sum, None)
_reduction_vjp(mean, lambda x, y, n, a: 1.0 / n)
# max/min: every element equal to the result gets the gradient (MXNet's rule on ties)
_reduction_vjp(max, lambda x, y, n, a: equal(x, y), uses_output=True)
_reduction_vjp(min, lambda x, y, n, a: equal(x, y), uses_output=True)
# |x|_1' = sign(x); |x|_2' = x / |x|_2 (0 where the norm is 0), as x times 1 / |x|_2 so
# that a sparse x keeps its pattern (x / dense would be a dense result: 0/0 is NaN there)
_reduction_vjp(norm, lambda x, y, n, a: sign(x) if a["ord"] == 1 else
               elemwise_mul(x, reciprocal(maximum(y, float(np.finfo(x.dtype).tiny)))),
               uses_output=True)


@square_sum.vjp
def _(node, g):
    """d/dx sum(x^2) = 2x times the incoming gradient, expanded over the reduced axes.

    A row_sparse input with a row_sparse incoming gradient (the row-keeping case,
    ``square_sum(rsp, axis=1, keepdims=True)``) gets a row_sparse gradient holding only
    the rows both store: a row the input lacks is 0 there, and a row the incoming gradient
    lacks gets no gradient, so it is left out rather than stored as zeros (MXNet's
    ``_backward_square_sum`` gives the incoming gradient's rows, and accepts only the cases
    where those lie among the input's; the intersection is that rule for any two row sets).
    A lazy optimizer then touches only those rows. A dense incoming gradient gives the
    input's rows (MXNet's rule too)."""
    data, attrs = node.inputs[0], node.attrs
    if data.stype == g.stype == "row_sparse" and _keeps_rows(
            attrs["axis"], attrs["keepdims"], attrs["exclude"]):
        rows, at_data, at_g = _common_rows(data, g)
        d = data.values if at_data is None else np.take(data.values, at_data, axis=0)
        gv = g.values if at_g is None else np.take(g.values, at_g, axis=0)
        d = np.multiply(d, gv, dtype=data.dtype)
        d *= 2
        return RowSparseNDArray(d, rows, data.shape, data.context)
    axes = _axes(data.shape, attrs["axis"], attrs["exclude"])
    return multiply(_expand(as_dense(g), data, axes), multiply(data, 2.0))


def _common_rows(a, b):
    """``(rows, a_at, b_at)``: the sorted row ids both row_sparse ``a`` and ``b`` store, and
    their positions among ``a``'s and ``b``'s stored rows (None: all of them, in order).
    A binary search of the shorter id list in the longer; none when the lists are one
    array or equal, or when one array stores every row (its ids are then ``0 .. n-1``)."""
    ia, ib = a.index_array, b.index_array
    n = a.shape[0]
    if ia is ib or (len(ia) == len(ib) and (len(ia) == n or np.array_equal(ia, ib))):
        return ia, None, None
    if len(ia) == n:
        return ib, ib, None
    if len(ib) == n:
        return ia, None, ia
    short, long_ = (ia, ib) if len(ia) <= len(ib) else (ib, ia)
    pos = np.searchsorted(long_, short)
    hit = pos < len(long_)
    hit[hit] = long_[pos[hit]] == short[hit]
    if hit.all():
        rows, at_short = short, None
    else:
        rows, at_short, pos = short[hit], np.flatnonzero(hit), pos[hit]
    return (rows, at_short, pos) if short is ia else (rows, pos, at_short)


# -- the sum of a product: one step of a cached graph -----------------------------------------
_mul_sum = Op("_mul_sum", ("lhs", "rhs"), _REDUCE_ATTRS, doc="""\
``sum(broadcast_mul(lhs, rhs), axis, keepdims, exclude)`` of two dense arrays as one
operator: what a hybridized graph runs for the sum of a product that nothing else reads
(see ``fuse_sum_of_product``), such as the batch of dot products ``sum(user * item,
axis=1)`` of matrix factorization. The product is broadcast_mul's and its reduction sum's,
so the values are theirs; the gradient of each operand is the incoming gradient,
broadcast over the reduced axes, times the other operand, without materializing that
broadcast (and one tape node instead of two). Other storage types fall back (the fusion
only chooses this operator for dense operands).
""" + _ARGS_DOC)
_mul_sum.infer(lambda lhs, rhs, **attrs: "default")
_mul_sum.grad_stype(lambda lhs, rhs, **attrs: (  # expand(g) times the other operand
    broadcast_mul.infer_stype("default", rhs)[0], broadcast_mul.infer_stype("default", lhs)[0]))


@_mul_sum.shape
def _(ins, attrs):
    if None in ins:
        return ins, [None]
    return ins, _reduced_shape([tuple(np.broadcast_shapes(*ins))], attrs)[1]


@_mul_sum.impl("default", "default")
def _(lhs, rhs, axis, keepdims, exclude):
    a, b = lhs.values, rhs.values
    if a.shape == b.shape and a.dtype == b.dtype and b.flags.c_contiguous:
        axes = _axes(a.shape, axis, exclude)
        n = _short_rows(a, axes)
        if n and a.size <= 1 << 18:  # (where the sum of the product runs ``row_sums``)
            sums = kernels.reduce.row_dots(a.reshape(-1, n), b.reshape(-1, n))
            return NDArray(sums.reshape(_shape(a.shape, axes, keepdims)), lhs.context)
    product = broadcast_mul.find_impl(("default", "default"))(lhs, rhs)
    return sum.find_impl(("default",))(product, axis, keepdims, exclude)


@_mul_sum.vjp
def _(node, g):
    """``d lhs = expand(g) * rhs`` and ``d rhs = expand(g) * lhs``, each summed back to its
    operand's shape where it was broadcast: sum's vjp followed by broadcast_mul's."""
    lhs, rhs = node.inputs
    attrs = node.attrs
    shape = lhs.shape
    if rhs.shape != shape:
        shape = np.broadcast_shapes(shape, rhs.shape)
    axes = _axes(shape, attrs["axis"], attrs["exclude"])
    g = as_dense(g)
    pairs = ((lhs, rhs, node.parents[0]), (rhs, lhs, node.parents[1]))
    if RECORDER.get() is None and lhs.stype == rhs.stype == "default":
        # not differentiated again: numpy broadcasts g in the product itself
        gk, ctx = g.values.reshape(_shape(shape, axes, True)), g.context
        return tuple([None if parent is None else
                      NDArray(_product_grad(gk, other.values, x.shape, shape), ctx)
                      for x, other, parent in pairs])
    expanded = _backward_sum(g, shape=shape, axes=axes, scale=1.0)
    return tuple(None if parent is None else _unbroadcast(expanded * other, x)
                 for x, other, parent in pairs)


def _product_grad(gk, other, x_shape, shape):
    """``gk * other`` (``gk``: the gradient with the reduced axes kept) as an operand of
    ``shape``'s product receives it: at the product's shape, then summed to ``x_shape``."""
    kept = gk.ndim  # gk's axes up to its trailing ones of size 1
    while kept and gk.shape[kept - 1] == 1:
        kept -= 1
    if (x_shape == other.shape == shape and gk.dtype == other.dtype in FLOAT_DTYPES
            and other.flags.c_contiguous and gk.shape[:kept] == shape[:kept] and gk.size):
        # only trailing axes were reduced: each row of ``other`` scaled by one value of gk
        rows = other.reshape(gk.size, -1)
        return kernels.reduce.scale_rows(gk.reshape(-1), rows).reshape(shape)  # (no warnings)
    with np.errstate(all="ignore"):  # as broadcast_mul's vjp (nan, inf follow numpy)
        d = np.multiply(gk, other).astype(gk.dtype, copy=False)
        if d.shape != shape:  # the other operand and gk both broadcast along an axis of x
            d = np.broadcast_to(d, shape).copy()
        return d if x_shape == shape else _np_sum_to(d, x_shape)


def fuse_sum_of_product(host, host_attrs, host_stypes, op, attrs):
    """``(_mul_sum, attrs)`` for ``sum(**attrs)`` of a dense ``broadcast_mul`` or
    ``elemwise_mul`` (one operator call instead of two), else None: a fusion rule of
    cached graphs (``nets.ops.fusion``)."""
    if (op is sum and host in (broadcast_mul, elemwise_mul)
            and host_stypes == ("default", "default")):
        return _mul_sum, dict(attrs)
    return None
