"""``Op``: every operator is declared once, with

1. its signature (array inputs, then attributes with defaults);
2. ``@op.infer``: storage-type inference from input stypes (+ attributes) —
   the one table used by imperative calls, graphs, docs and the test matrix;
3. ``@op.impl(*stypes)``: implementations keyed by input stype patterns; one may
   return ``NotImplemented`` to decline a case its stypes alone cannot rule out
   (an attribute value, a broadcast shape);
4. a dense fallback: when no pattern matches (or the impl declined), sparse
   inputs are densified, the all-default implementation runs, the result is
   cast to the inferred stype and ``StorageFallbackWarning`` names the op, the
   stypes and the bytes;
5. ``@op.vjp``: its vector-Jacobian product (used by ``nets.autograd``).

Patterns hold stypes, ``'*'`` (anything, including an absent optional input)
and may end with ``...`` (repeat the previous element for variadic ops).
Recording for autograd is a hook: ``RECORDER`` holds a callable while
``autograd.record()`` is active, so ops never import autograd and cost nothing
extra outside ``record()``.
"""
import inspect
import logging
import os
import warnings

import numpy as np

from ..base import RECORDER, TRAINING, NetsError, StorageFallbackWarning
from ..ndarray.creation import array as _to_array
from ..ndarray.dense import NDArray

__all__ = ["Op", "OPS", "RECORDER", "TRAINING", "stype_of"]

OPS = {}
_log = logging.getLogger("nets.storage")
_VERBOSE = os.environ.get("NETS_STORAGE_VERBOSE") == "1"  # read once, when nets is imported
_EMPTY = inspect.Parameter.empty


def stype_of(x):
    """The storage type of an op input (``None`` for an absent optional input)."""
    return None if x is None else x.stype


def _as_input(x, op, name):
    if x is None or isinstance(x, NDArray):
        return x
    if isinstance(x, np.ndarray) or type(x).__module__.startswith("scipy.sparse"):
        return _to_array(x)
    raise TypeError(f"{op}: input {name!r} must be an NDArray, got {type(x).__name__} ({x!r:.60})")


def _matches(pattern, key):
    if pattern and pattern[-1] is Ellipsis:
        fixed = pattern[:-2]
        if len(key) < len(fixed) + 1:
            return False
        pattern = fixed + (pattern[-2],) * (len(key) - len(fixed))
    return len(pattern) == len(key) and all(p == "*" or p == k for p, k in zip(pattern, key))


class Op:
    """An operator: ``Op(name, inputs, attrs, doc)`` then ``infer``/``impl``/``vjp``.

    ``inputs`` names the array inputs in order: ``"bias?"`` is optional
    (defaults to None), ``"*data"`` takes any number. ``attrs`` maps attribute
    names to defaults (``inspect.Parameter.empty`` for required ones).
    Calling the op: ``op(*inputs, *attrs, out=None, **attrs)``.
    """

    def __init__(self, name, inputs=("data",), attrs=None, doc=None):
        if name in OPS:
            raise NetsError(f"operator {name!r} is declared twice")
        OPS[name] = self
        self.name = name
        self.variadic = bool(inputs) and inputs[0].startswith("*")
        self.inputs = tuple(i.strip("*?") for i in inputs)
        self.optional = frozenset(i.strip("?") for i in inputs if i.endswith("?"))
        self.attrs = dict(attrs or {})
        self._required = tuple(k for k, v in self.attrs.items() if v is _EMPTY)
        self._infer_fn = None
        self._impls = []
        self._cache = {}
        self._vjp_fn = None
        self.__doc__ = doc
        self.__name__ = name
        kind = inspect.Parameter
        params = ([kind(self.inputs[0], kind.VAR_POSITIONAL)] if self.variadic else
                  [kind(i, kind.POSITIONAL_OR_KEYWORD,
                        default=None if i in self.optional else _EMPTY) for i in self.inputs])
        attr_kind = kind.KEYWORD_ONLY if self.variadic else kind.POSITIONAL_OR_KEYWORD
        for a, d in self.attrs.items():
            if d is _EMPTY and params and params[-1].default is not _EMPTY:
                attr_kind = kind.KEYWORD_ONLY  # a required attr after an optional input
            params.append(kind(a, attr_kind, default=d))
        params.append(kind("out", kind.KEYWORD_ONLY, default=None))
        self.__signature__ = inspect.Signature(params)

    # -- declaration -----------------------------------------------------------
    def infer(self, fn):
        """Register ``fn(*in_stypes, **attrs) -> stype or tuple of stypes``."""
        self._infer_fn = fn
        return fn

    def impl(self, *pattern):
        """Register an implementation for inputs whose stypes match ``pattern``."""
        def register(fn):
            self._impls.append((tuple(pattern), fn))
            self._cache.clear()
            return fn
        return register

    def vjp(self, fn):
        """Register ``fn(node, *out_grads) -> input grads`` (see ``nets.autograd``)."""
        self._vjp_fn = fn
        return fn

    # -- queries -----------------------------------------------------------------
    def infer_stype(self, *stypes, **attrs):
        """Output stype(s) for input ``stypes`` — a tuple, one entry per output."""
        out = self._infer_fn(*stypes, **self._full_attrs(attrs)) if self._infer_fn else "default"
        return (out,) if isinstance(out, str) else tuple(out)

    def find_impl(self, stypes):
        """The implementation registered for ``stypes``, or None (then: fallback)."""
        stypes = tuple(stypes)
        try:
            return self._cache[stypes]
        except KeyError:
            fn = next((f for p, f in self._impls if _matches(p, stypes)), None)
            self._cache[stypes] = fn
            return fn

    def _full_attrs(self, attrs):
        if len(attrs) == len(self.attrs):
            return attrs
        full = dict(self.attrs)
        full.update(attrs)
        return full

    # -- calling -------------------------------------------------------------------
    def _bind(self, args, kwargs):
        """Split a call into (inputs tuple, attrs dict), like a Python signature would."""
        n = len(self.inputs)
        if self.variadic:
            inputs, attr_args = args, ()
        elif len(args) >= n:  # the common call: every input positional
            inputs, attr_args = args[:n], args[n:]
        else:
            inputs, attr_args = list(args), ()
            for name in self.inputs[len(inputs):]:
                if name in kwargs:
                    inputs.append(kwargs.pop(name))
                elif name in self.optional:
                    inputs.append(None)
                else:
                    raise TypeError(f"{self.name}() missing required input {name!r}")
        attrs = self.attrs.copy()
        if attr_args:
            if len(attr_args) > len(attrs):
                raise TypeError(f"{self.name}() takes {n} inputs and {len(attrs)} attributes, "
                                f"got {len(args)} positional arguments")
            attrs.update(zip(self.attrs, attr_args))
        if kwargs:
            for k in kwargs:
                if k not in attrs:
                    raise TypeError(f"{self.name}() got an unexpected argument {k!r}")
            attrs.update(kwargs)
        if self._required:
            missing = [k for k in self._required if attrs[k] is _EMPTY]
            if missing:
                raise TypeError(f"{self.name}() missing required argument(s) {missing}")
        for x in inputs:
            if x is not None and not isinstance(x, NDArray):  # numpy or scipy: convert
                names = self.inputs * len(inputs) if self.variadic else self.inputs
                return tuple(_as_input(x, self.name, nm) for x, nm in zip(inputs, names)), attrs
        return tuple(inputs), attrs

    def __call__(self, *args, out=None, **kwargs):
        inputs, attrs = self._bind(args, kwargs)
        outputs = self.compute(inputs, attrs)
        recorder = RECORDER.get()
        if recorder is not None:
            recorder(self, inputs, attrs, outputs)
        if out is not None:
            outs = out if isinstance(out, (list, tuple)) else (out,)
            for o, r in zip(outs, outputs):
                o._assign(r)  # keeps the destination's storage type; refuses graph arrays
                if recorder is not None:
                    o._node = r._node  # gradients flow through `out` like the fresh result
            return out
        return outputs[0] if len(outputs) == 1 else list(outputs)

    def in_vjp(self, *inputs, **attrs):
        """``self(*inputs, **attrs)`` as a vjp calls an adjoint operator (every attribute
        given, one output): when nothing records, the implementation registered for the
        inputs' storage types runs directly, without binding the arguments, inferring the
        output storage type or checking it (~3 us less per call); while recording (under
        ``create_graph``), and wherever an implementation is missing or declines, the full
        call, so the gradient is differentiable and a fallback warns as usual (and under
        ``NETS_STORAGE_VERBOSE=1``, so that the call is logged)."""
        if RECORDER.get() is None and not _VERBOSE:
            fn = self.find_impl(tuple([None if x is None else x.stype for x in inputs]))
            if fn is not None:
                out = fn(*inputs, **attrs)
                if out is not NotImplemented:
                    return out
        return self(*inputs, **attrs)

    def compute(self, inputs, attrs):
        """Run the op on bound inputs (``attrs`` complete); always returns a tuple of outputs."""
        stypes = tuple([None if x is None else x.stype for x in inputs])
        out_stypes = "default" if self._infer_fn is None else self._infer_fn(*stypes, **attrs)
        if out_stypes.__class__ is str:
            out_stypes = (out_stypes,)
        try:
            fn = self._cache[stypes]
        except KeyError:
            fn = self.find_impl(stypes)
        result = NotImplemented if fn is None else fn(*inputs, **attrs)
        fallback = result is NotImplemented  # no impl, or the impl declined these attrs/shapes
        if fallback:
            inputs, fn = self._fallback(inputs, stypes)
            result = fn(*inputs, **attrs)
        outputs = (result,) if isinstance(result, NDArray) else tuple(result)
        if fallback:
            cast = OPS["cast_storage"]
            outputs = tuple(r if r.stype == s else cast.compute((r,), {"stype": s})[0]
                            for r, s in zip(outputs, out_stypes))
        elif (outputs[0].stype != out_stypes[0] if len(outputs) == 1 else
              any(r.stype != s for r, s in zip(outputs, out_stypes))):
            raise NetsError(f"internal: {self.name} on {stypes} returned stypes "
                            f"{tuple(r.stype for r in outputs)}, its inference says {out_stypes}")
        if _VERBOSE:
            _verbose(self.name, stypes, tuple(o.stype for o in outputs))
        return outputs

    def _fallback(self, inputs, stypes):
        dense = tuple(x if x is None or x.stype == "default" else NDArray(x.asnumpy(), x.context)
                      for x in inputs)
        fn = self.find_impl(tuple(stype_of(x) for x in dense))
        if fn is None:
            raise NetsError(f"operator {self.name!r} has no implementation for input storage "
                            f"types {stypes}, not even a dense one")
        nbytes = sum(d.nbytes for x, d in zip(inputs, dense) if x is not d)
        warnings.warn(f"{self.name}: no implementation for input storage types {stypes}; "
                      f"densified {nbytes} bytes and ran the dense implementation",
                      StorageFallbackWarning, stacklevel=4)
        return dense, fn

    def __repr__(self):
        return f"<nets operator {self.name}{self.__signature__}>"


def _verbose(name, in_stypes, out_stypes):
    if not _log.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[nets.storage] %(message)s"))
        _log.addHandler(handler)
        _log.setLevel(logging.INFO)
    _log.info("%s: inputs %s -> outputs %s", name, in_stypes, out_stypes)
