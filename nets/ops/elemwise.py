"""Elementwise binary operators, declared from one table (``_BINARY``).

Each row gives MXNet's operators: ``broadcast_<op>`` (numpy broadcasting),
``elemwise_<op>`` (same shape; add/sub/mul/div; MXNet's ``_hypot`` for hypot),
``_<op>_scalar`` and its reflected ``_r<op>_scalar`` (array with a scalar ``scalar``),
and the public ``add``/``subtract``/...
that pick one of them from their arguments (an array or a scalar on either side), as
NDArray's Python operators do. Results have the operands' dtype; comparisons give 0/1.

Storage rules of two array operands, from each row's zero rule:

================  =====================  =======================  ======================
zero rule         csr op csr,            sparse op dense,         anything else
                  rsp op rsp             dense op sparse          (csr with rsp, ...)
================  =====================  =======================  ======================
``intersection``  that stype: entries    the sparse stype: its    dense fallback
(multiply)        stored in both         pattern, values times
                                         the dense ones
``union``         that stype: entries    dense, native: f of the  dense fallback
(f(0, 0) == 0)    stored in either       dense operand and zero,
                                         sparse values scattered
``left``          dense fallback         ``broadcast_div``: a     dense fallback
(divide)                                 sparse lhs keeps its
                                         stype and pattern (0 /
                                         rhs is 0); otherwise
                                         dense, native
none              dense fallback         dense, native (same)     dense fallback
================  =====================  =======================  ======================

A dense operand of a sparse one is read only at the stored entries (``_dense_at``): a
row or column vector scaling a csr matrix is a gather of ``v[indices]`` or a repeat of
``v`` over each row's entries, O(nnz), as MXNet's ``broadcast_mul``/``broadcast_div``
of csr by a vector (which keep csr, as here). ``broadcast_div`` of a sparse lhs by a
dense rhs follows MXNet's csr by a vector: an unstored entry stays 0 even where the
divisor is 0. ``elemwise_div(sparse, dense)`` (and ``sparse / dense`` of the same shape,
which the ``/`` operator and ``divide`` send to it) is dense and holds numpy's ``0 / x``
where the lhs stores nothing: ``0 / 0 = nan``, ``0 / x = 0`` (MXNet's and scipy's).

A sparse operand's unstored entries are exact zeros, so with ``intersection``
``0 * inf == 0`` (MXNet and scipy agree). Native sparse paths need the sparse operand(s)
to have the output's shape (a dense operand may broadcast); broadcasting that enlarges
a sparse operand falls back. Sparse outputs are canonical (sorted, unique entries;
MXNet's csr + csr could emit duplicates). Entries that cancel (``x - x``) stay stored as
explicit zeros, as in MXNet: dropping them would cost another pass.

Array with scalar: the rule of ``nets.ops.unary`` on ``f(0, scalar)``: ``rsp * 2`` and
``csr / 2`` keep the stype, ``rsp + 1`` is dense (filled natively), ``csr + 0`` keeps
csr. Division by a scalar keeps a sparse stype whatever the scalar, unstored entries
staying 0: ``csr / 0`` is csr with inf/nan only at stored entries (MXNet and scipy.sparse).

Gradients: each row's derivative columns (``df/dlhs``, ``df/drhs``: a number, a formula
of nets operators in the operands and the output, or None) serve its array and scalar
operators alike (``nets.ops.unary.declare_vjp``): an operand's gradient is ``g`` times
its derivative, summed back over the axes that broadcasting added or stretched
(``_sum_to``). Comparisons have none (a zero gradient, as in MXNet); a scalar operand
gets none. ``maximum``/``minimum`` give a tie's gradient to ``lhs`` (MXNet). Storage
follows the tables above applied to ``g * derivative``: ``rsp * 2`` and ``rsp + rsp``
pass ``g`` on in its own stype (a row_sparse ``g`` stays row_sparse); ``dense * csr``
gives the dense operand the csr gradient ``g * csr`` (cast where it reaches a leaf); a
derivative that is not zero where a sparse operand stores nothing (``maximum``'s lhs,
``divide``) gives a dense gradient. ``hypot``'s gradients are always dense, nan where
both operands are 0 (its derivative ``a / hypot(a, b)`` is undefined there; MXNet's
backward computes the same nan densely).
"""
import numbers

import numpy as np

from .. import ops as nd  # the package, partly built now: derivative formulas use it on call
from ..base import ShapeError
from ..arrays.csr import CSRNDArray
from ..arrays.dense import NDArray
from ..arrays.row_sparse import RowSparseNDArray
from .registry import REQUIRED, RECORDER, Op, all_same_shape, shape_attr
from .unary import as_dense, declare_vjp, map_op, positions

__all__ = []  # extended below from the table

UNION, INTERSECTION, LEFT = "union", "intersection", "left"
# the stems that also get a same-shape operator, by its MXNet name
_SAME_SHAPE = {"add": "elemwise_add", "sub": "elemwise_sub", "mul": "elemwise_mul",
               "div": "elemwise_div", "hypot": "_hypot"}
# rows whose derivatives are not 0 where both operands are 0 (hypot's a / hypot(a, b) is
# nan at (0, 0)): dense gradients (``declare_vjp(dense=True)``), MXNet's dense backward
_DENSE_GRADS = ("hypot",)

def _div_keeping(y, b):
    """``y / b`` keeping a sparse ``y``'s stype (``broadcast_div``; ``/`` of one shape would
    be dense): the output gradient of a division by ``b``."""
    if isinstance(y, NDArray) and isinstance(b, NDArray) and y.stype != "default":
        return nd.broadcast_div(y, b)
    return y / b


_BINARY = (  # public name, broadcast stem, scalar stem, reflected scalar stem, f, zero rule,
    # then df/dlhs, df/drhs: a number, None or a formula of lhs a, rhs b and y = f(a, b)
    ("add", "add", "plus", "plus", np.add, UNION, 1, 1),
    ("subtract", "sub", "minus", "rminus", np.subtract, UNION, 1, -1),
    ("multiply", "mul", "mul", "mul", np.multiply, INTERSECTION,
     lambda a, b, y: b, lambda a, b, y: a),
    ("divide", "div", "div", "rdiv", np.divide, LEFT,
     lambda a, b, y: 1 / b, lambda a, b, y: -_div_keeping(y, b)),
    ("modulo", "mod", "mod", "rmod", np.mod, None, 1, lambda a, b, y: -nd.floor(a / b)),
    ("power", "power", "power", "rpower", np.power, None,
     lambda a, b, y: b * a ** (b - 1), lambda a, b, y: y * _log(a)),
    # ties give lhs the gradient (MXNet); `<` and `>` keep two sparse operands native
    ("maximum", "maximum", "maximum", "maximum", np.maximum, UNION,
     lambda a, b, y: 1 - (a < b), lambda a, b, y: a < b),
    ("minimum", "minimum", "minimum", "minimum", np.minimum, UNION,
     lambda a, b, y: 1 - (a > b), lambda a, b, y: a > b),
    ("hypot", "hypot", "hypot", "hypot", np.hypot, UNION,
     lambda a, b, y: a / y, lambda a, b, y: b / y),
    ("equal", "equal", "equal", "equal", np.equal, None, None, None),
    ("not_equal", "not_equal", "not_equal", "not_equal", np.not_equal, UNION, None, None),
    ("greater", "greater", "greater", "lesser", np.greater, UNION, None, None),
    ("greater_equal", "greater_equal", "greater_equal", "lesser_equal", np.greater_equal, None,
     None, None),
    ("lesser", "lesser", "lesser", "greater", np.less, UNION, None, None),
    ("lesser_equal", "lesser_equal", "lesser_equal", "greater_equal", np.less_equal, None,
     None, None),
)

_STORAGE = {
    INTERSECTION: "csr/row_sparse with the same stype keeps it (entries stored in both); a "
                  "sparse operand with a dense one keeps the sparse stype",
    UNION: "csr/row_sparse with the same stype keeps it (entries stored in either); a sparse "
           "operand with a dense one gives dense natively",
    LEFT: "broadcast_div: a sparse lhs with a dense rhs keeps the lhs's stype and pattern "
          "(unstored entries stay 0, also where rhs is 0: MXNet's csr-by-vector rule); "
          "elemwise_div: a sparse lhs with a dense rhs gives dense natively, 0 / 0 = nan and "
          "0 / x = 0 where the lhs stores nothing (MXNet, scipy); a dense lhs with a sparse "
          "rhs gives dense natively; two sparse operands fall back to dense",
    None: "two sparse operands fall back to dense; a sparse operand with a dense one gives "
          "dense natively",
}


_sum_to = Op("_sum_to", ("data",), {"shape": REQUIRED}, doc="""\
``data`` summed to ``shape``: over its leading axes beyond ``shape`` and the axes where
``shape`` has 1 (the gradient of numpy broadcasting; MXNet's ``_broadcast_backward``).""")
_sum_to.shape(shape_attr)


def _np_sum_to(a, shape):
    lead = a.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape)
                                      if n == 1 != a.shape[lead + i])
    out = np.asarray(np.sum(a, axis=axes))  # (asarray: a full reduction gives a scalar)
    return out if out.shape == shape else out.reshape(shape)  # no view: adoptable


@_sum_to.impl("default")
def _(data, shape):
    return NDArray(_np_sum_to(data.values, shape), data.context)


@_sum_to.vjp
def _(node, g):
    return nd.broadcast_to(as_dense(g), shape=node.inputs[0].shape)


def _unbroadcast(grad, x):
    """The gradient ``grad`` of a broadcast output, summed back to input ``x``'s shape
    (in numpy when nothing records: no second derivative needs the sum as a graph)."""
    if grad.shape == x.shape:
        return grad
    grad = as_dense(grad)
    if RECORDER.get() is None:
        return NDArray(_np_sum_to(grad.values, x.shape), grad.context)
    return _sum_to(grad, shape=x.shape)


def _log(v):
    if _is_scalar(v):
        with np.errstate(all="ignore"):
            return np.log(v)
    return nd.log(v)


def _apply(fn, x, y, dtype):
    with np.errstate(all="ignore"):
        return np.asarray(fn(x, y)).astype(dtype, copy=False)


def _out_shape(name, lhs, rhs, broadcast):
    if not broadcast:
        if lhs.shape != rhs.shape:
            raise ShapeError(f"{name}: lhs shape {lhs.shape} and rhs shape {rhs.shape} must be "
                             f"equal (use broadcast_* to broadcast)")
        return lhs.shape
    try:
        return np.broadcast_shapes(lhs.shape, rhs.shape)
    except ValueError:
        raise ShapeError(f"{name}: lhs shape {lhs.shape} and rhs shape {rhs.shape} cannot be "
                         f"broadcast together") from None


def _sparse_dense(fn, keep_sparse, lhs, rhs):
    """One sparse operand, one dense operand broadcastable to the sparse shape."""
    sparse_left = lhs.stype != "default"
    s, d = (lhs, rhs) if sparse_left else (rhs, lhs)
    dtype = np.result_type(lhs.dtype, rhs.dtype)
    at = _dense_at(s, d.values)
    values = (_apply(fn, s.values, at, dtype) if sparse_left
              else _apply(fn, at, s.values, dtype))
    if values.shape != s.values.shape:  # (a dense operand of one element)
        values = np.ascontiguousarray(np.broadcast_to(values, s.values.shape))
    if keep_sparse:
        return s.with_values(values)
    dense = np.broadcast_to(d.values, s.shape)
    at = positions(s)
    zero = np.zeros((), s.dtype)
    out = _apply(fn, zero, dense, dtype) if sparse_left else _apply(fn, dense, zero, dtype)
    out[at] = values  # `out` is fresh: f(0, dense) never aliases the dense operand
    return NDArray(out, s.context)


def _dense_at(s, v):
    """The values of numpy ``v`` (broadcastable to sparse ``s``'s shape) at ``s``'s stored
    entries, in a shape that broadcasts against ``s``'s stored values: O(nnz) gathers of
    the axes ``v`` spans, and none of an axis it broadcasts along (a row or column vector
    scaling csr ``s`` reads ``v[indices]`` or repeats ``v`` over each row's entries)."""
    v = v.reshape((1,) * (len(s.shape) - v.ndim) + v.shape)
    if s.stype == "row_sparse":  # stored values: (stored rows,) + shape[1:]
        return v if v.shape[0] == 1 else v[s.index_array]
    rows, cols = v.shape
    if rows == 1:
        return v[0] if cols == 1 else v[0, s.index_array]
    column = v[:, 0]
    return np.repeat(column, np.diff(s.indptr_array)) if cols == 1 else v[positions(s)]


def _sparse_sparse(fn, zeros, a, b):
    """Two canonical sparse arrays of one stype and shape: merge their patterns."""
    from .. import kernels
    dtype = np.result_type(a.dtype, b.dtype)
    csr = a.stype == "csr"
    ptrs = [x.indptr_array if csr else np.array([0, len(x.index_array)], np.int64) for x in (a, b)]
    if zeros == UNION:
        indptr, indices, a_pos, b_pos = kernels.elemwise.union_pattern(
            ptrs[0], a.index_array, ptrs[1], b.index_array)
        av = np.zeros((len(indices),) + a.values.shape[1:], a.dtype)
        bv = np.zeros((len(indices),) + b.values.shape[1:], b.dtype)
        av[a_pos], bv[b_pos] = a.values, b.values
        data = _apply(fn, av, bv, dtype)
    else:
        indptr, a_sel, b_sel = kernels.elemwise.intersect_pattern(
            ptrs[0], a.index_array, ptrs[1], b.index_array)
        data = _apply(fn, a.values[a_sel], b.values[b_sel], dtype)
        indices = a.index_array[a_sel]
    if csr:
        return CSRNDArray(data, indices, indptr, a.shape, a.context)
    return RowSparseNDArray(data, indices, a.shape, a.context)


def _broadcast_shapes(ins, attrs):
    if None in ins:
        return ins, [None]
    try:
        return ins, [tuple(np.broadcast_shapes(*ins))]
    except ValueError:
        raise ShapeError(f"shapes {ins[0]} and {ins[1]} cannot be broadcast together") from None


def _binary_op(name, fn, zeros, broadcast, doc, derivatives, dense_grads=False):
    op = Op(name, ("lhs", "rhs"), doc=f"{doc}\n\nStorage: {_STORAGE[zeros]}; other mixes fall "
                                      f"back (see ``nets.ops.elemwise``).")
    op.shape(_broadcast_shapes if broadcast else all_same_shape)

    @op.infer
    def _(lhs, rhs):
        if lhs == rhs:
            return lhs if lhs == "default" or zeros in (UNION, INTERSECTION) else "default"
        if zeros == INTERSECTION and "default" in (lhs, rhs):
            return lhs if rhs == "default" else rhs
        if zeros == LEFT and rhs == "default":
            return lhs if broadcast else "default"
        return "default"

    def run(lhs, rhs):
        if lhs.stype == rhs.stype == "default":
            if lhs.shape != rhs.shape:
                _out_shape(name, lhs, rhs, broadcast)  # raises unless they broadcast
            dtype = lhs.dtype if lhs.dtype == rhs.dtype else np.result_type(lhs.dtype, rhs.dtype)
            return NDArray(_apply(fn, lhs.values, rhs.values, dtype), lhs.context)
        shape = _out_shape(name, lhs, rhs, broadcast)
        if any(x.stype != "default" and x.shape != shape for x in (lhs, rhs)):
            return NotImplemented  # a sparse operand would be broadcast: fallback
        if lhs.stype == rhs.stype:
            return _sparse_sparse(fn, zeros, lhs, rhs)
        return _sparse_dense(fn, zeros == INTERSECTION or (
            zeros == LEFT and rhs.stype == "default" and broadcast), lhs, rhs)

    patterns = [("default", "default")]
    for st in ("csr", "row_sparse"):
        patterns += [(st, "default"), ("default", st)] + (
            [(st, st)] if zeros in (UNION, INTERSECTION) else [])
    for pattern in patterns:
        op.impl(*pattern)(run)
    return declare_vjp(op, derivatives, fit=_unbroadcast, dense=dense_grads)


def _is_scalar(x):
    return not isinstance(x, NDArray) and isinstance(x, (numbers.Number, np.generic))


def dispatchers(lookup):
    """``{name: function}`` of the public ``add``, ``subtract``, ... (every ``_BINARY``
    row), each picking its array or scalar operator from its arguments, the operators
    found by ``lookup(op name)``: the operators themselves here, their symbol builders
    in ``nets.sym``."""
    return {name: _public(name, fn, lookup(f"broadcast_{stem}"), lookup(f"_{sstem}_scalar"),
                          lookup(f"_{rstem}_scalar"),
                          lookup(f"elemwise_{stem}") if zeros == LEFT else None)
            for name, stem, sstem, rstem, fn, zeros, *_ in _BINARY}


def _public(name, fn, array_op, scalar_op, rscalar_op, same_shape_op=None):
    scalar_ops = sorted({scalar_op.name, rscalar_op.name})

    def public(lhs, rhs):
        if _is_scalar(rhs):
            return fn(lhs, rhs) if _is_scalar(lhs) else scalar_op(lhs, scalar=float(rhs))
        if _is_scalar(lhs):
            return rscalar_op(rhs, scalar=float(lhs))
        if (same_shape_op is not None and isinstance(lhs, NDArray) and lhs.stype != "default"
                and isinstance(rhs, NDArray) and rhs.stype == "default"
                and lhs.shape == rhs.shape):
            return same_shape_op(lhs, rhs)  # `rsp / dense`: elementwise, numpy's 0 / 0
        return array_op(lhs, rhs)
    public.__name__ = public.__qualname__ = name
    public.__doc__ = (f"``{name}(lhs, rhs)`` elementwise, an array or a scalar on either side: "
                      f"two arrays run ``{array_op.name}`` (numpy broadcasting), an array "
                      f"and a scalar ``{'`` or ``'.join(scalar_ops)}``; see those for "
                      f"storage rules.")
    return public


def _scalar_op(stem, fn, reflected, d, keeps_zeros=False):
    """``_<stem>_scalar``: ``fn`` of the array and ``scalar``; ``d`` is the row's
    derivative w.r.t. the array's side (``df/drhs`` when ``reflected``)."""
    expr = f"{fn.__name__}(scalar, data)" if reflected else f"{fn.__name__}(data, scalar)"
    f = (lambda x, scalar: fn(scalar, x)) if reflected else (lambda x, scalar: fn(x, scalar))
    grad = d
    if callable(d):
        grad = ((lambda x, y, scalar: d(scalar, x, y)) if reflected else
                (lambda x, y, scalar: d(x, scalar, y)))
    return map_op(f"_{stem}_scalar", f, {"scalar": REQUIRED},
                  f"Elementwise ``{expr}`` with a Python scalar ``scalar``.", grad,
                  keeps_zeros=keeps_zeros)


def _declare(name, stem, sstem, rstem, fn, zeros, dl, dr):
    """The array operators of one ``_BINARY`` row, by name."""
    what = f"``{fn.__name__}(lhs, rhs)``"
    dense_grads = name in _DENSE_GRADS
    bop = _binary_op(f"broadcast_{stem}", fn, zeros, True,
                     f"Elementwise {what} with numpy broadcasting.", (dl, dr), dense_grads)
    out = {bop.name: bop}
    if stem in _SAME_SHAPE:
        out[_SAME_SHAPE[stem]] = _binary_op(
            _SAME_SHAPE[stem], fn, zeros, False,
            f"Elementwise {what} of two arrays of the same shape (``ShapeError`` otherwise).",
            (dl, dr), dense_grads)
    return out


# Private operators (MXNet's _internal), not in __all__: _plus_scalar, _rminus_scalar, ...
SCALAR_OPS = {f"_{sstem}_scalar": _scalar_op(sstem, fn, False, dl, keeps_zeros=sstem == "div")
              for _, _, sstem, _, fn, _, dl, _ in _BINARY}
SCALAR_OPS.update({f"_{rstem}_scalar": _scalar_op(rstem, fn, True, dr)  # f(scalar, x)
                   for _, _, _, rstem, fn, _, _, dr in _BINARY
                   if f"_{rstem}_scalar" not in SCALAR_OPS})
globals().update(SCALAR_OPS)
for _row in _BINARY:
    _ops = _declare(*_row)
    globals().update(_ops)
    __all__ += [n for n in _ops if not n.startswith("_")]  # `_hypot`: MXNet's _internal
_ops = dispatchers(lambda op_name: globals()[op_name])
globals().update(_ops)
__all__ += list(_ops)
broadcast_plus, broadcast_minus = globals()["broadcast_add"], globals()["broadcast_sub"]
__all__ += ["broadcast_plus", "broadcast_minus"]
del _row, _ops


# MXNet's _scatter_* operators (_internal): a sparse operand's stored values only change,
# its pattern kept (its unstored entries stay 0, whatever the scalar or divisor)
for _stem, _fn in (("plus", np.add), ("minus", np.subtract)):
    globals()[f"_scatter_{_stem}_scalar"] = map_op(
        f"_scatter_{_stem}_scalar", lambda x, scalar, f=_fn: f(x, scalar), {"scalar": REQUIRED},
        f"``{_fn.__name__}(data, scalar)`` at the stored values of a sparse ``data`` (its "
        f"unstored entries stay 0: the stype and pattern are kept), at every element of a "
        f"dense one. The gradient passes ``g`` through (MXNet's ``_copy``).", 1,
        keeps_zeros=True)

_scatter_elemwise_div = Op("_scatter_elemwise_div", ("lhs", "rhs"), doc="""\
``lhs / rhs`` (one shape), computed only at the rows a row_sparse ``lhs`` stores: the
result is row_sparse with ``lhs``'s rows (``rhs``, of any stype, read at those rows only);
an unstored row stays 0 whatever ``rhs`` holds there. Any other ``lhs`` gives
``elemwise_div``'s dense result (two dense operands natively, others by the dense
fallback, as MXNet). Gradients ``g / rhs`` and ``-g * lhs / rhs ** 2`` are dense (MXNet's
``_backward_div``), nan where ``rhs`` is 0 and ``lhs`` or ``g`` is too.""")
_scatter_elemwise_div.shape(all_same_shape)


@_scatter_elemwise_div.infer
def _(lhs, rhs):
    return "row_sparse" if lhs == "row_sparse" else "default"


@_scatter_elemwise_div.impl("default", "default")
def _(lhs, rhs):
    _out_shape("_scatter_elemwise_div", lhs, rhs, False)
    return NDArray(_apply(np.divide, lhs.values, rhs.values,
                          np.result_type(lhs.dtype, rhs.dtype)), lhs.context)


def _rows_of(x, rows):
    """Rows ``rows`` (sorted, unique) of ``x`` (any stype) as a dense numpy block, reading
    only those rows."""
    if x.stype == "default":
        return x.values[rows]
    out = np.zeros((len(rows),) + x.shape[1:], x.dtype)
    if x.stype == "row_sparse":
        at = np.minimum(np.searchsorted(x.index_array, rows), len(x.index_array) - 1)
        hit = (x.index_array[at] == rows) if len(x.index_array) else np.zeros(len(rows), bool)
        out[hit] = x.values[at[hit]]
        return out
    starts, counts = x.indptr_array[rows], np.diff(x.indptr_array)[rows]
    first = np.cumsum(counts) - counts  # where each row's entries start among the picked
    pos = np.arange(counts.sum()) - np.repeat(first - starts, counts)
    out[np.repeat(np.arange(len(rows)), counts), x.index_array[pos]] = x.values[pos]
    return out


@_scatter_elemwise_div.impl("row_sparse", "default")
@_scatter_elemwise_div.impl("row_sparse", "row_sparse")
@_scatter_elemwise_div.impl("row_sparse", "csr")
def _(lhs, rhs):
    _out_shape("_scatter_elemwise_div", lhs, rhs, False)
    return lhs.with_values(_apply(np.divide, lhs.values, _rows_of(rhs, lhs.index_array),
                                  np.result_type(lhs.dtype, rhs.dtype)))


declare_vjp(_scatter_elemwise_div, (lambda a, b, y: 1 / b, lambda a, b, y: -a / (b * b)),
            dense=True)
del _stem, _fn
