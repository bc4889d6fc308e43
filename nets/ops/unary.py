"""Elementwise unary operators (``relu``, ``exp``, ``clip``, ...), declared from one table.

Storage rule, derived from each function's value at zero ``f(0)`` (with the call's
attributes, so ``clip`` and the scalar operators of ``elemwise`` follow it too):

=============  ================================================================
``f(0) == 0``  a sparse input keeps its storage type: only the stored values change,
               the index buffers are shared with the input (indices are immutable)
finite         dense output filled with ``f(0)``, the mapped stored values scattered
               in; computed natively, without densifying the input and without warning
not finite     dense fallback with ``StorageFallbackWarning`` (``log``, ``rsqrt``, ...),
               as MXNet's row-sparse tutorial shows for ``nd.log``
=============  ================================================================

The output has the input's dtype (MXNet's rule). Floating-point warnings (log of a
negative, overflow) are silenced: results follow numpy (nan, inf), as MXNet's do.
"""
import numpy as np

from ..base import NetsError
from ..ndarray.csr import row_ids
from ..ndarray.dense import NDArray
from .registry import _EMPTY, Op

__all__ = []  # extended below from the table


def positions(x):
    """Index tuple of a sparse array's stored values within its dense form."""
    return (row_ids(x._indptr), x._indices) if x.stype == "csr" else (x._indices,)


def with_values(x, values):
    """A sparse array with ``x``'s pattern (shared index buffers) holding ``values``."""
    return type(x)(values, *(getattr(x, p) for p in x._parts), shape=x.shape, ctx=x.context)


def _map(fn, x, attrs):
    with np.errstate(all="ignore"):
        return np.asarray(fn(x, **attrs)).astype(x.dtype, copy=False)


def _at_zero(fn, attrs, dtype=np.float64):
    return _map(fn, np.zeros((), dtype), attrs)[()]


_RULE = {
    "keep": "keeps a sparse input's storage type (f(0) = 0: only stored values change)",
    "fill": "gives a dense output filled with f(0) = {zero:g} where a sparse input stores "
            "nothing, computed natively (no fallback warning)",
    "fallback": "falls back to dense for a sparse input (f(0) = {zero} is not finite; "
                "StorageFallbackWarning)",
}
ATTR_RULE = ("keeps a sparse input's storage type when f(0) = 0 for the given attributes; "
             "a finite f(0) gives a dense output filled with it (native, no warning); a "
             "non-finite f(0) falls back to dense with StorageFallbackWarning")


def map_op(name, fn, attrs=None, doc=""):
    """Declare the elementwise operator ``name`` computing ``fn(x, **attrs)``.

    Its storage inference and implementations follow the rule of this module's
    docstring; ``doc`` gets the storage sentence appended.
    """
    if attrs:
        rule = ATTR_RULE
    else:
        zero = _at_zero(fn, {})
        rule = _RULE["keep" if zero == 0 else "fill" if np.isfinite(zero) else "fallback"]
        rule = rule.format(zero=zero)
    op = Op(name, ("data",), attrs, doc=f"{doc}\n\nStorage: {rule}.")

    @op.infer
    def _(data, **kw):
        return data if data == "default" or _at_zero(fn, kw) == 0 else "default"

    @op.impl("default")
    def _(data, **kw):
        return NDArray(_map(fn, data._np, kw), data.context)

    @op.impl("csr")
    @op.impl("row_sparse")
    def _(data, **kw):
        zero = _at_zero(fn, kw)
        if zero == 0:
            return with_values(data, _map(fn, data._data, kw))
        if not np.isfinite(zero):
            return NotImplemented  # f(0) is not finite for these attributes: fallback
        out = np.full(data.shape, _at_zero(fn, kw, data.dtype), data.dtype)
        out[positions(data)] = _map(fn, data._data, kw)
        return NDArray(out, data.context)

    return op


def _round(x):
    # half away from zero (MXNet, C's round); numpy's round is half to even
    t = np.trunc(x)
    return t + np.sign(x) * (np.abs(x - t) >= 0.5)


def _clip(x, a_min, a_max):
    if a_min > a_max:
        raise NetsError(f"clip: a_min={a_min!r} must not exceed a_max={a_max!r}")
    return np.clip(x, a_min, a_max)


_UNARY = (  # name, f(x), summary
    ("negative", np.negative, "-x"),
    ("reciprocal", lambda x: 1 / x, "1 / x"),
    ("abs", np.abs, "|x|"),
    ("sign", np.sign, "-1, 0 or 1: the sign of x"),
    ("round", _round, "x rounded to the nearest integer, halves away from zero (MXNet)"),
    ("rint", np.rint, "x rounded to the nearest integer, halves to even (IEEE; MXNet's rint "
              "rounded n.5 down to n, a defect)"),
    ("ceil", np.ceil, "the smallest integer >= x"),
    ("floor", np.floor, "the largest integer <= x"),
    ("trunc", np.trunc, "x rounded towards zero"),
    ("fix", np.trunc, "x rounded towards zero (same as trunc)"),
    ("square", np.square, "x * x"),
    ("sqrt", np.sqrt, "the square root of x (nan for x < 0)"),
    ("rsqrt", lambda x: 1 / np.sqrt(x), "1 / sqrt(x)"),
    ("cbrt", np.cbrt, "the cube root of x"),
    ("rcbrt", lambda x: 1 / np.cbrt(x), "1 / cbrt(x)"),
    ("exp", np.exp, "e ** x"),
    ("expm1", np.expm1, "exp(x) - 1, accurate for small x"),
    ("log", np.log, "the natural logarithm of x (nan for x < 0, -inf at 0)"),
    ("log10", np.log10, "the base-10 logarithm of x"),
    ("log2", np.log2, "the base-2 logarithm of x"),
    ("log1p", np.log1p, "log(1 + x), accurate for small x"),
    ("relu", lambda x: np.maximum(x, 0), "max(x, 0) (nan stays nan)"),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x)), "1 / (1 + exp(-x))"),
    ("tanh", np.tanh, "the hyperbolic tangent of x"),
    ("softsign", lambda x: x / (1 + np.abs(x)), "x / (1 + |x|)"),
    ("sin", np.sin, "sine (radians)"),
    ("cos", np.cos, "cosine (radians)"),
    ("tan", np.tan, "tangent (radians)"),
    ("arcsin", np.arcsin, "inverse sine"),
    ("arccos", np.arccos, "inverse cosine"),
    ("arctan", np.arctan, "inverse tangent"),
    ("sinh", np.sinh, "hyperbolic sine"),
    ("cosh", np.cosh, "hyperbolic cosine"),
    ("arcsinh", np.arcsinh, "inverse hyperbolic sine"),
    ("arccosh", np.arccosh, "inverse hyperbolic cosine"),
    ("arctanh", np.arctanh, "inverse hyperbolic tangent"),
    ("degrees", np.degrees, "radians converted to degrees"),
    ("radians", np.radians, "degrees converted to radians"),
)

for _name, _fn, _summary in _UNARY:
    globals()[_name] = map_op(_name, _fn, doc=f"Elementwise {_summary}.")
    __all__.append(_name)

clip = map_op("clip", _clip, {"a_min": _EMPTY, "a_max": _EMPTY}, doc="""\
Clip every element of ``data`` into ``[a_min, a_max]`` (``nd.clip(x, 0, 1)`` works).

A sparse input keeps its stype when ``a_min <= 0 <= a_max`` (MXNet); ``a_min > a_max``
raises ``NetsError``.""")
__all__.append("clip")
del _name, _fn, _summary
