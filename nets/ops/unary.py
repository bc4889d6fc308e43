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

Gradients come from the table's derivative column: ``f'`` as a number or as a formula of
nets operators in the input ``x`` and the output ``y`` (``exp``: ``y``; ``tanh``: ``1 - y
* y``), so ``grad(create_graph=True)`` differentiates it again; the gradient is ``g *
f'``. The rounding ops and ``sign`` have a zero gradient (the vjp gives none; MXNet
gives zeros). Storage follows the forward rule applied to ``f'``: a sparse input whose
derivative keeps zeros (``f'(0) == 0``: ``square``, ``relu``, ``abs``) gets a gradient with
its own pattern, computed on the stored values only; otherwise (``sin``: ``f'(0) = 1``)
the gradient is dense, since it is not zero where the input stores nothing (MXNet's
backward is dense there too). A sparse ``g`` keeps its pattern. Where ``f'(0)`` is
infinite (``sqrt``, ``x ** 0.5``) a sparse input's derivative falls back with a warning
and the gradient holds inf where the input stores nothing.
"""
import numbers

import numpy as np

from .. import ops as nd  # the package, partly built now: derivative formulas use it on call
from ..base import RECORDER, NetsError
from ..arrays.csr import row_ids
from ..arrays.dense import NDArray
from .registry import REQUIRED, Op, same_shape
from .sparse_ops import cast_storage

__all__ = []  # extended below from the table


def positions(x):
    """Index tuple of a sparse array's stored values within its dense form."""
    return (row_ids(x.indptr_array), x.index_array) if x.stype == "csr" else (x.index_array,)


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


def scale(g, d):
    """``g * d``: the gradient ``g`` times a derivative ``d`` (a number or an array).

    A sparse ``g`` keeps its pattern; a csr/row_sparse mix keeps ``g``'s storage type.
    Floating-point warnings are the caller's to silence (the vjps do, once per call).
    """
    if isinstance(d, numbers.Number):
        return g if d == 1 else -g if d == -1 else g * d
    if isinstance(d, np.ndarray):  # a formula evaluated on numpy values (see declare_vjp)
        return NDArray(np.multiply(g.values, d).astype(g.dtype, copy=False), g.context)
    if g.stype == d.stype == "default" and RECORDER.get() is None:
        # not differentiated again: numpy's product directly (what broadcast_mul computes)
        return NDArray(np.multiply(g.values, d.values), g.context)
    if "default" not in (g.stype, d.stype) and g.stype != d.stype:
        d = cast_storage(d, stype=g.stype)
    return g * d


def as_dense(x):
    """``x`` as a dense array (an explicit cast: no fallback warning)."""
    return x if x.stype == "default" else cast_storage(x, stype="default")


def declare_vjp(op, derivatives, fit=None, dense=False):
    """Register ``op``'s vjp from one derivative of its output per input.

    Each is None (no gradient: a constant or piecewise-constant result), a number, or a
    formula ``d(*inputs, y, **attrs)`` of nets operators (a number or an array); the
    input's gradient is ``scale(g, d)``, passed through ``fit(grad, input)`` if given
    (broadcast reduction). Inputs that are constants get none and cost nothing. Each
    input's gradient has the output's storage type (``op.infer_grad_stype``). When
    the output is dense, sparse inputs enter the formula dense: their derivative is
    dense too, and the sparse forms could fall back. ``dense=True`` declares
    derivatives that are not 0 where every input is 0 (``hypot``'s ``a / hypot(a, b)``
    is nan at (0, 0)): every gradient is then dense, ``g`` and the formula's values
    densified first, so an unstored entry of a sparse ``g`` gives ``0 * d`` there
    (MXNet's backward of such an operator is dense). The formulas stay readable as
    ``op.derivatives`` (``Activation`` reuses those of its operators).
    """
    op.derivatives = tuple(derivatives)

    @op.grad_stype
    def _(*stypes, **attrs):  # g arrives in the output's stype; g * d keeps it
        out = "default" if dense else op.infer_stype(*stypes, **attrs)[0]
        return tuple(None if d is None or s is None else out
                     for d, s in zip(derivatives, stypes))

    @op.vjp
    def _(node, g):
        args = []
        grads = []
        if dense:
            g = as_dense(g)
        with np.errstate(all="ignore"):  # as in the forward: results follow numpy (nan, inf)
            for d, x, parent in zip(derivatives, node.inputs, node.parents):
                if d is None or parent is None:
                    grads.append(None)
                    continue
                if callable(d):
                    if not args:
                        args += _formula_args(node, g, dense)
                    d = d(*args, **node.attrs)
                    if isinstance(d, NDArray) and type(args[-1]) is np.ndarray:
                        d = d.values  # a formula calling nets operators on numpy values
                grad = scale(g, d)
                grads.append(grad if fit is None else fit(grad, x))
        return tuple(grads)
    return op


def _formula_args(node, g, dense=False):
    """The values a derivative formula takes: the inputs, then the output. When nothing
    records (no ``create_graph``) and every value is dense, they are the numpy arrays
    themselves: a formula such as ``y * (1 - y)`` is then plain numpy arithmetic instead
    of one operator application per ``*`` and ``-``, and its result cannot be needed as a
    graph. Otherwise nets arrays (sparse inputs dense when the output is, or when
    ``dense``: see ``declare_vjp``)."""
    y = node.output(0)
    dense = dense or y.stype == "default"
    if dense and g.stype == "default" and RECORDER.get() is None and all(
            v.stype == "default" for v in [*node.inputs, y]):
        return [v.values for v in node.inputs] + [y.values]
    return [as_dense(v) if dense else v for v in [*node.inputs, y]]


def map_op(name, fn, attrs=None, doc="", grad=None, zero=None, keeps_zeros=False):
    """Declare the elementwise operator ``name`` computing ``fn(x, **attrs)``.

    Its storage inference and implementations follow the rule of this module's
    docstring; ``doc`` gets the storage sentence appended. ``grad`` is ``f'`` for
    ``declare_vjp``: None (zero gradient), a number, or ``grad(x, y, **attrs)``.
    ``zero`` is ``f(0)`` for the docstring where calling ``fn`` at declaration would
    import what ``import nets`` must not (``scipy_special``); by default ``fn`` is asked.
    ``keeps_zeros``: a sparse input keeps its storage type whatever ``f(0)``, its unstored
    entries staying 0 (``csr / 0``: MXNet's and scipy's rule for division by a scalar).
    """
    if attrs:
        rule = ATTR_RULE
    else:
        zero = _at_zero(fn, {}) if zero is None else zero
        rule = _RULE["keep" if zero == 0 else "fill" if np.isfinite(zero) else "fallback"]
        rule = rule.format(zero=zero)
    op = Op(name, ("data",), attrs, doc=f"{doc}\n\nStorage: {rule}.")
    op.shape(same_shape)

    @op.infer
    def _(data, **kw):
        return data if data == "default" or keeps_zeros or _at_zero(fn, kw) == 0 else "default"

    @op.impl("default")
    def _(data, **kw):
        return NDArray(_map(fn, data.values, kw), data.context)

    @op.impl("csr")
    @op.impl("row_sparse")
    def _(data, **kw):
        zero = 0 if keeps_zeros else _at_zero(fn, kw)
        if zero == 0:
            return data.with_values(_map(fn, data.values, kw))
        if not np.isfinite(zero):
            return NotImplemented  # f(0) is not finite for these attributes: fallback
        out = np.full(data.shape, _at_zero(fn, kw, data.dtype), data.dtype)
        out[positions(data)] = _map(fn, data.values, kw)
        return NDArray(out, data.context)

    op.fn = fn  # (the numpy function itself, for operators that apply it fused)
    return declare_vjp(op, (grad,))


def _round(x):
    # half away from zero (MXNet, C's round); numpy's round is half to even
    t = np.trunc(x)
    return t + np.sign(x) * (np.abs(x - t) >= 0.5)


def _clip(x, a_min, a_max):
    if a_min > a_max:
        raise NetsError(f"clip: a_min={a_min!r} must not exceed a_max={a_max!r}")
    return np.clip(x, a_min, a_max)


def scipy_special(name):
    """``scipy.special.<name>``, imported on its first call: scipy.special is a heavy import
    (it loads numpy.f2py), which ``import nets`` leaves to the first operator needing it."""
    def fn(x):
        from scipy import special
        return getattr(special, name)(x)
    fn.__name__ = name
    return fn


def _digamma(x):
    """scipy's digamma of a dense array (gamma's and gammaln's derivative; not itself
    differentiated again)."""
    from scipy import special
    with np.errstate(all="ignore"):
        if isinstance(x, np.ndarray):  # (a formula may be evaluated on numpy values)
            return special.digamma(x).astype(x.dtype, copy=False)
        return NDArray(special.digamma(x.values).astype(x.dtype, copy=False), x.context)


_LN10, _LN2, _DEG = np.log(10), np.log(2), 180 / np.pi
_ERF_SLOPE, _ERFINV_SLOPE = 2 / np.sqrt(np.pi), np.sqrt(np.pi) / 2

_UNARY = (  # name, f(x), summary, f' (a number, a formula of x and y = f(x), None: zero)
    ("negative", np.negative, "-x", -1),
    ("reciprocal", lambda x: 1 / x, "1 / x", lambda x, y: -y * y),
    ("abs", np.abs, "|x|", lambda x, y: nd.sign(x)),
    ("sign", np.sign, "-1, 0 or 1: the sign of x", None),
    ("round", _round, "x rounded to the nearest integer, halves away from zero (MXNet)", None),
    ("rint", np.rint, "x rounded to the nearest integer, halves to even (IEEE; MXNet's rint "
              "rounded n.5 down to n, a defect)", None),
    ("ceil", np.ceil, "the smallest integer >= x", None),
    ("floor", np.floor, "the largest integer <= x", None),
    ("trunc", np.trunc, "x rounded towards zero", None),
    ("fix", np.trunc, "x rounded towards zero (same as trunc)", None),
    ("square", np.square, "x * x", lambda x, y: 2 * x),
    ("sqrt", np.sqrt, "the square root of x (nan for x < 0)", lambda x, y: 0.5 / y),
    ("rsqrt", lambda x: 1 / np.sqrt(x), "1 / sqrt(x)", lambda x, y: -0.5 * y / x),
    ("cbrt", np.cbrt, "the cube root of x", lambda x, y: 1 / (3 * y * y)),
    ("rcbrt", lambda x: 1 / np.cbrt(x), "1 / cbrt(x)", lambda x, y: -y / (3 * x)),
    ("exp", np.exp, "e ** x", lambda x, y: y),
    ("expm1", np.expm1, "exp(x) - 1, accurate for small x", lambda x, y: y + 1),
    ("log", np.log, "the natural logarithm of x (nan for x < 0, -inf at 0)",
     lambda x, y: 1 / x),
    ("log10", np.log10, "the base-10 logarithm of x", lambda x, y: 1 / (_LN10 * x)),
    ("log2", np.log2, "the base-2 logarithm of x", lambda x, y: 1 / (_LN2 * x)),
    ("log1p", np.log1p, "log(1 + x), accurate for small x", lambda x, y: 1 / (1 + x)),
    ("relu", lambda x: np.maximum(x, 0), "max(x, 0) (nan stays nan)", lambda x, y: x > 0),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x)), "1 / (1 + exp(-x))",
     lambda x, y: y * (1 - y)),
    ("tanh", np.tanh, "the hyperbolic tangent of x", lambda x, y: 1 - y * y),
    ("softsign", lambda x: x / (1 + np.abs(x)), "x / (1 + |x|)",
     lambda x, y: 1 / nd.square(1 + nd.abs(x))),
    ("sin", np.sin, "sine (radians)", lambda x, y: nd.cos(x)),
    ("cos", np.cos, "cosine (radians)", lambda x, y: -nd.sin(x)),
    ("tan", np.tan, "tangent (radians)", lambda x, y: 1 + y * y),
    ("arcsin", np.arcsin, "inverse sine", lambda x, y: nd.rsqrt(1 - x * x)),
    ("arccos", np.arccos, "inverse cosine", lambda x, y: -nd.rsqrt(1 - x * x)),
    ("arctan", np.arctan, "inverse tangent", lambda x, y: 1 / (1 + x * x)),
    ("sinh", np.sinh, "hyperbolic sine", lambda x, y: nd.cosh(x)),
    ("cosh", np.cosh, "hyperbolic cosine", lambda x, y: nd.sinh(x)),
    ("arcsinh", np.arcsinh, "inverse hyperbolic sine", lambda x, y: nd.rsqrt(x * x + 1)),
    ("arccosh", np.arccosh, "inverse hyperbolic cosine", lambda x, y: nd.rsqrt(x * x - 1)),
    ("arctanh", np.arctanh, "inverse hyperbolic tangent", lambda x, y: 1 / (1 - x * x)),
    ("erf", scipy_special("erf"), "the Gauss error function",
     lambda x, y: _ERF_SLOPE * nd.exp(-x * x)),
    ("erfinv", scipy_special("erfinv"),
     "the inverse error function (nan outside [-1, 1], +-inf at +-1)",
     lambda x, y: _ERFINV_SLOPE * nd.exp(y * y)),
    ("logical_not", lambda x: x == 0, "1 where x is 0, else 0 (in x's dtype)", None),
    ("gamma", scipy_special("gamma"), "the gamma function (MXNet: dense output)",
     lambda x, y: y * _digamma(x)),
    ("gammaln", scipy_special("gammaln"), "log |gamma(x)| (MXNet: dense output)",
     lambda x, y: _digamma(x)),
    ("degrees", np.degrees, "radians converted to degrees", _DEG),
    ("radians", np.radians, "degrees converted to radians", 1 / _DEG),
)

# f(0) of the scipy.special ones, imported on use
_LAZY_ZERO = {"erf": 0.0, "erfinv": 0.0, "gamma": np.inf, "gammaln": np.inf}

for _name, _fn, _summary, _grad in _UNARY:
    globals()[_name] = map_op(_name, _fn, doc=f"Elementwise {_summary}.", grad=_grad,
                              zero=_LAZY_ZERO.get(_name))
    __all__.append(_name)

clip = map_op("clip", _clip, {"a_min": REQUIRED, "a_max": REQUIRED}, doc="""\
Clip every element of ``data`` into ``[a_min, a_max]`` (``nd.clip(x, 0, 1)`` works).

A sparse input keeps its stype when ``a_min <= 0 <= a_max`` (MXNet); ``a_min > a_max``
raises ``NetsError``. The gradient passes where ``a_min <= x <= a_max`` (MXNet's rule).""",
              grad=lambda x, y, a_min, a_max: (x >= a_min) * (x <= a_max))
__all__.append("clip")
del _name, _fn, _summary, _grad
