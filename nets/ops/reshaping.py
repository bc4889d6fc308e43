"""Reshaping operators: reshape, transpose, expand_dims, flatten, broadcast_to.

Storage rules (MXNet's, plus the native sparse paths marked +):

=========================================  ==============  =================================
call                                       output          how
=========================================  ==============  =================================
transpose(csr)                             csr             scipy's linear-time transpose
flatten(csr) / flatten(rsp)                same stype      copy / reshape of stored rows (+)
anything else with a sparse input          default         dense fallback (warns)
=========================================  ==============  =================================

Gradients (the vjp beside each op): reshape / flatten / expand_dims reshape back,
transpose applies the inverse permutation, broadcast_to sums over the broadcast axes.
A row_sparse gradient of flatten stays row_sparse (rows map to rows); otherwise
gradients are dense.
"""
import math

import numpy as np

from ..base import ShapeError
from ..arrays.dense import NDArray
from ..arrays.row_sparse import RowSparseNDArray
from .elemwise import _sum_to
from .registry import REQUIRED, RECORDER, Op
from .shape_helpers import _axis, _copy, _csr_transpose, _dense, _tuple, _unary_shape, _vjp
from .unary import as_dense

__all__ = ["reshape", "Reshape", "transpose", "expand_dims", "broadcast_to", "broadcast_like",
           "flatten", "Flatten"]


# -- reshape ---------------------------------------------------------------------------

def _reshape_target(spec, src, reverse):
    """MXNet's reshape shape inference (codes 0, -1, -2, -3, -4), checked."""
    if type(spec) is tuple and all(type(d) is int and (d > 0 or d == -1) for d in spec):
        # plain dimensions, at most one -1 (the common calls): no codes to parse
        known, size, infer = math.prod(spec), math.prod(src), spec.count(-1)
        if not infer and known == size:
            return spec
        if infer == 1 and size % known == 0:
            return tuple(size // -known if d == -1 else d for d in spec)
    try:
        spec_t = tuple(int(d) for d in ((spec,) if isinstance(spec, (int, np.integer)) else spec))
    except (TypeError, ValueError) as e:
        raise ShapeError(f"reshape: shape={spec!r} is not a tuple of ints") from e
    codes, dims = list(spec_t), list(src)
    if reverse:
        codes.reverse()
        dims.reverse()

    def fail(why):
        return ShapeError(f"reshape: cannot reshape an array of shape {tuple(src)} to "
                          f"shape={spec_t} (reverse={reverse}): {why}")

    def need(k, n, code):
        if k + n > len(dims):
            raise fail(f"code {code} has no input dimension left to use")

    out, k, infer_at, i = [], 0, None, 0
    while i < len(codes):
        d = codes[i]
        if d == 0:
            need(k, 1, d)
            out.append(dims[k])
            k += 1
        elif d == -1:
            if infer_at is not None:
                raise fail("at most one dimension can be -1")
            infer_at = len(out)
            out.append(1)
            k += 1
        elif d == -2:
            out.extend(dims[k:])
            k = len(dims)
        elif d == -3:
            need(k, 2, d)
            out.append(dims[k] * dims[k + 1])
            k += 2
        elif d == -4:
            if i + 2 >= len(codes):
                raise fail("-4 must be followed by two dimensions")
            need(k, 1, d)
            d0, d1, d2 = dims[k], codes[i + 1], codes[i + 2]
            if d1 == -1 and d2 == -1 or d1 < -1 or d2 < -1 or 0 in (d1, d2):
                raise fail(f"-4 splits into ({d1}, {d2}); at most one may be -1, none 0")
            d1 = d0 // d2 if d1 == -1 else d1
            d2 = d0 // d1 if d2 == -1 else d2
            if d1 * d2 != d0:
                raise fail(f"-4 split ({d1}, {d2}) does not multiply to dimension {d0}")
            out += [d1, d2]
            k += 1
            i += 2
        elif d > 0:
            out.append(d)
            k += 1
        else:
            raise fail(f"{d} is not a dimension or a special code (0, -1, -2, -3, -4)")
        i += 1
    size = int(np.prod(src, dtype=np.int64))
    if infer_at is not None:
        known = int(np.prod(out, dtype=np.int64))
        if known == 0 or size % known:
            raise fail(f"the -1 dimension cannot be inferred (size {size}, other dims {known})")
        out[infer_at] = size // known
    if reverse:
        out.reverse()
    if int(np.prod(out, dtype=np.int64)) != size:
        raise fail(f"target shape {tuple(out)} has a different size than {size}")
    return tuple(out)


reshape = Op("reshape", ("data",), {"shape": REQUIRED, "reverse": False}, doc="""\
A copy of ``data`` with a new ``shape`` of the same size (MXNet's ``reshape``).

Special codes in ``shape``: ``0`` copies the input dimension at that position,
``-1`` infers one dimension from the size, ``-2`` copies all remaining input
dimensions, ``-3`` merges two consecutive input dimensions, ``-4, a, b`` splits
one input dimension into ``(a, b)`` (one of them may be -1). ``reverse=True``
matches the codes right to left: ``(10, 5, 4)`` with ``shape=(-1, 0)`` gives
``(40, 5)``, with ``reverse=True`` ``(50, 4)``. Sparse inputs fall back.
""")


reshape.shape(_unary_shape(lambda s, shape, reverse: _reshape_target(shape, s, reverse)))


@reshape.impl("default")
def _(data, shape, reverse):
    return _dense(data, _copy(data.values).reshape(_reshape_target(shape, data.shape, reverse)))


@_vjp(reshape)
def _(node, g):
    g, shape = as_dense(g), node.inputs[0].shape
    if RECORDER.get() is None:  # not differentiated again: numpy's reshape, no dispatch
        return NDArray(g.values.reshape(shape), g.context)
    return reshape(g, shape=shape)


Reshape = reshape  # MXNet's deprecated capitalised name


# -- transpose -------------------------------------------------------------------------

transpose = Op("transpose", ("data",), {"axes": None}, doc="""\
``data`` with its axes permuted by ``axes`` (reversed when None or ``()``).

``transpose(csr)`` is CSR (linear time, canonical sorted columns); other sparse inputs fall back.
""")


def _perm(axes, ndim):
    if axes is None or len(tuple(axes)) == 0:
        return tuple(range(ndim))[::-1]
    perm = tuple(_axis(a, ndim, "axes") for a in axes)
    if sorted(perm) != list(range(ndim)):
        raise ShapeError(f"transpose: axes={tuple(axes)} is not a permutation of the "
                         f"{ndim} axes")
    return perm


transpose.shape(_unary_shape(lambda s, axes: [s[p] for p in _perm(axes, len(s))]))


@transpose.infer
def _(data, axes):
    return "csr" if data == "csr" else "default"


@transpose.impl("csr")
def _(data, axes):
    return data.copy() if _perm(axes, 2) == (0, 1) else _csr_transpose(data)


@transpose.impl("default")
def _(data, axes):
    return _dense(data, _copy(data.values.transpose(_perm(axes, data.ndim))))


@_vjp(transpose)
def _(node, g):
    inverse = np.argsort(_perm(node.attrs["axes"], g.ndim))
    return transpose(as_dense(g), axes=tuple(int(a) for a in inverse))


# -- expand_dims / broadcast_to / flatten ---------------------------------------------------

expand_dims = Op("expand_dims", ("data",), {"axis": REQUIRED}, doc="""\
``data`` with a new axis of size 1 inserted at ``axis`` (in ``[-ndim-1, ndim]``).
Sparse inputs fall back.
""")


@expand_dims.shape
def _(ins, attrs):
    s = ins[0]
    if s is None:
        return ins, [None]
    axis = _axis(attrs["axis"], len(s), extra=1)
    return ins, [s[:axis] + (1,) + s[axis:]]


@expand_dims.impl("default")
def _(data, axis):
    return _dense(data, _copy(np.expand_dims(data.values, _axis(axis, data.ndim, extra=1))))


@_vjp(expand_dims)
def _(node, g):
    return reshape(as_dense(g), shape=node.inputs[0].shape)


broadcast_to = Op("broadcast_to", ("data",), {"shape": REQUIRED}, doc="""\
``data`` broadcast to ``shape`` (a copy). Dimensions of size 1 are repeated; a
``0`` in ``shape`` keeps the input's dimension (MXNet). ``shape`` may add
leading dimensions (numpy's rule). Sparse inputs fall back.
""")


@broadcast_to.shape
def _(ins, attrs):
    s = ins[0]
    if s is None:
        return ins, [None]
    target = tuple(attrs["shape"])
    lead = len(target) - len(s)
    return ins, [tuple(s[i - lead] if d == 0 and i >= lead else d for i, d in enumerate(target))]


@broadcast_to.impl("default")
def _(data, shape):
    target = _tuple(shape, "shape", "broadcast_to")
    src, lead = data.shape, len(target) - data.ndim
    if lead < 0 or any(d is None or d < 0 for d in target) or 0 in target[:lead]:
        raise ShapeError(f"broadcast_to: shape={target} must be non-negative ints with at least "
                         f"the {data.ndim} dimensions of the input shape {src} (0 keeps an "
                         f"input dimension, so it cannot stand in a new leading one)")
    full = tuple(src[i - lead] if d == 0 and i >= lead else int(d) for i, d in enumerate(target))
    if any(s not in (1, t) for s, t in zip(src, full[lead:])):
        raise ShapeError(f"broadcast_to: cannot broadcast shape {src} to shape={target}")
    out = np.empty(full, data.dtype)
    out[...] = data.values  # numpy broadcasts the (checked) source into the copy
    return _dense(data, out)


@_vjp(broadcast_to)
def _(node, g):
    return _sum_to(as_dense(g), shape=node.inputs[0].shape)


broadcast_like = Op("broadcast_like", ("lhs", "rhs"), {"lhs_axes": None, "rhs_axes": None},
                    doc="""\
``lhs`` broadcast to the shape of ``rhs`` (MXNet's ``broadcast_like``): with
``lhs_axes``/``rhs_axes``, only those axes of ``lhs`` take the sizes of those axes of
``rhs``. Only ``rhs``'s shape is read: it gets no gradient; ``lhs``'s gradient sums over
the broadcast axes. Sparse inputs fall back.
""")


def _like_shape(lhs, rhs, lhs_axes, rhs_axes):
    if lhs_axes is None and rhs_axes is None:
        return tuple(rhs)
    lhs_axes, rhs_axes = _tuple(lhs_axes, "lhs_axes", "broadcast_like"), \
        _tuple(rhs_axes, "rhs_axes", "broadcast_like")
    if len(lhs_axes) != len(rhs_axes):
        raise ShapeError(f"broadcast_like: lhs_axes={lhs_axes} and rhs_axes={rhs_axes} differ "
                         f"in length")
    out = list(lhs)
    for a, b in zip(lhs_axes, rhs_axes):
        out[a] = rhs[b]
    return tuple(out)


@broadcast_like.shape
def _(ins, attrs):
    lhs, rhs = ins
    if lhs is None or rhs is None:
        return ins, [None]
    return ins, [_like_shape(lhs, rhs, attrs["lhs_axes"], attrs["rhs_axes"])]


@broadcast_like.grad_stype
def _(lhs, rhs, **attrs):
    return "default", None


@broadcast_like.impl("default", "default")
def _(lhs, rhs, lhs_axes, rhs_axes):
    return broadcast_to(lhs, shape=_like_shape(lhs.shape, rhs.shape, lhs_axes, rhs_axes))


@broadcast_like.vjp
def _(node, g):
    return _sum_to(as_dense(g), shape=node.inputs[0].shape), None


flatten = Op("flatten", ("data",), doc="""\
``data`` reshaped to 2-D ``(d0, d1*...*dk)`` (MXNet's ``Flatten``: the first axis
is kept; a 1-D input becomes ``(d0, 1)``). CSR stays CSR (a copy); row_sparse
stays row_sparse (its stored rows are flattened).
""")


def _flat_shape(shape):
    if not shape:
        raise ShapeError("flatten needs an array with at least one dimension, got a scalar")
    return shape[0], math.prod(shape[1:])


flatten.shape(_unary_shape(_flat_shape))


@flatten.infer
def _(data):
    return data


@flatten.impl("csr")
def _(data):
    return data.copy()


@flatten.impl("row_sparse")
def _(data):
    shape = _flat_shape(data.shape)
    return RowSparseNDArray(_copy(data.values).reshape(len(data.index_array), shape[1]),
                            data.index_array.copy(), shape, data.context)


@flatten.impl("default")
def _(data):
    return _dense(data, _copy(data.values).reshape(_flat_shape(data.shape)))


@_vjp(flatten, keeps_rows=True)
def _(node, g):
    shape = node.inputs[0].shape
    if g.stype == "row_sparse":  # rows stay rows: unflatten the stored ones
        return RowSparseNDArray(_copy(g.values).reshape((len(g.index_array),) + shape[1:]),
                                g.index_array.copy(), shape, g.context)
    return reshape(as_dense(g), shape=shape)


Flatten = flatten  # MXNet's deprecated capitalised name
