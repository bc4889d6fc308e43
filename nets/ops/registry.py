"""``Op``: every operator is declared once, with

1. its signature (array inputs, then attributes with defaults; ``REQUIRED`` marks an
   attribute without a default);
2. inference, beside each other:

   - ``@op.infer``: output storage type(s) from input stypes (+ attributes);
   - ``@op.shape``: input and output shapes from the known input shapes;
   - ``@op.dtype``: output dtype (default: numpy promotion of the value inputs; inputs
     listed in ``index=`` hold ids or conditions and take no part);
   - ``@op.grad_stype``: the storage type each input's gradient comes out in
     (default: ``'default'``), for gradients arriving in the output's storage type;

   the one table used by imperative calls, ``nets.sym`` (which only walks graphs and
   asks these), executors allocating gradients, the docs and the test matrix. Families
   of operators share one rule (``same_shape``; ``nets.ops.unary.declare_vjp`` declares
   its operators' gradient stypes);
3. ``@op.impl(*stypes)``: implementations keyed by exactly the input stype combinations
   that run natively; one may return ``NotImplemented`` to decline a case its stypes
   alone cannot rule out (an attribute value, a broadcast shape);
4. a dense fallback: when no combination matches (or the impl declined), sparse
   inputs are densified, the all-default implementation runs, the result is
   cast to the inferred stype and ``StorageFallbackWarning`` names the op, the
   stypes and the bytes;
   float16: an operator whose floating-point inputs are all float16 computes in float32
   (numba has no float16 arithmetic, as MXNet's CPU kernels widen half floats): those
   inputs are cast to float32, the implementation runs, and the outputs are cast back
   to float16 where the op's dtype rule says float16 for the original inputs. Value
   inputs (not ``index=`` ones) of mixed float dtypes run as given (numpy promotes; ops
   that need one dtype refuse);
5. ``@op.vjp``: its vector-Jacobian product (used by ``nets.autograd``); a vjp calls
   operators the ordinary way, so there is one call path;
6. for graphs: ``@op.graph_inputs`` (the inputs a node takes for its attributes, each one
   not given becoming a variable) and ``@op.aux`` (how many trailing inputs are
   auxiliary states, which the operator may update in place).

Patterns hold stypes (None: an absent optional input) and may end with ``...`` (repeat
the previous element for variadic ops); ``'*'`` (any stype) is only for a variadic
operator whose every mix of stypes runs natively (``add_n``).
Recording for autograd is a hook: ``RECORDER`` holds a callable while
``autograd.record()`` is active, so ops never import autograd and cost nothing
extra outside ``record()``. ``NETS_STORAGE_VERBOSE=1`` (read when nets is imported,
or ``set_storage_verbose``) logs every call's storage types through ``log_storage``.
"""
import contextvars
import inspect
import logging
import os
import warnings

import numpy as np

from ..base import (RECORDER, TRAINING, DenseResultWarning, NetsError, OperatorArgumentError,
                    StorageFallbackWarning)
from ..arrays.creation import array as _to_array
from ..arrays.dense import NDArray

__all__ = ["Op", "OPS", "REQUIRED", "RECORDER", "TRAINING", "stype_of", "get_op",
           "DENSE_EXPECTED", "storage_verbose", "set_storage_verbose", "log_storage",
           "same_shape", "all_same_shape", "shape_attr", "save_for_backward", "take_saved", "SAVED"]

OPS = {}
REQUIRED = inspect.Parameter.empty  # the default of an attribute a call must give
_log = logging.getLogger("nets.storage")
_VERBOSE = os.environ.get("NETS_STORAGE_VERBOSE") == "1"  # read once, when nets is imported
_HALF, _SINGLE = np.dtype(np.float16), np.dtype(np.float32)


def get_op(name):
    """The operator declared as ``name`` (MXNet's ``_internal`` ones included, e.g.
    ``get_op('_l2_loss')``), or None."""
    return OPS.get(name)


def storage_verbose():
    """Whether every operator call logs its storage types (``NETS_STORAGE_VERBOSE=1``)."""
    return _VERBOSE


def set_storage_verbose(on):
    """Turn the storage log on or off (``NETS_STORAGE_VERBOSE`` sets it at import)."""
    global _VERBOSE
    _VERBOSE = bool(on)


def log_storage(name, in_stypes, out_stypes):
    """Log one line ``<name>: inputs <in_stypes> -> outputs <out_stypes>`` to the
    ``nets.storage`` logger (given a stderr handler when logging is not configured)."""
    if not _log.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[nets.storage] %(message)s"))
        _log.addHandler(handler)
        _log.setLevel(logging.INFO)
    _log.info("%s: inputs %s -> outputs %s", name, in_stypes, out_stypes)


def same_shape(ins, attrs):
    """Shape rule of an operator whose one output has its first input's shape."""
    return ins, [ins[0]]


def shape_attr(ins, attrs):
    """Shape rule of an operator whose one output has the shape of its ``shape`` attribute."""
    return ins, [tuple(attrs["shape"])]


def all_same_shape(ins, attrs):
    """Shape rule of an operator whose inputs and one output all have one shape."""
    shape = next((s for s in ins if s is not None), None)
    return [shape] * len(ins), [shape]


def stype_of(x):
    """The storage type of an op input (``None`` for an absent optional input)."""
    return None if x is None else x.stype


def _as_input(x, op, name):
    if x is None or isinstance(x, NDArray):
        return x
    if isinstance(x, np.ndarray) or type(x).__module__.startswith("scipy.sparse"):
        return _to_array(x, dtype=x.dtype)  # an operator keeps a numpy input's dtype
    raise TypeError(f"{op}: input {name!r} must be an NDArray, got {type(x).__name__} ({x!r:.60})")


# True while the autograd engine propagates gradients (it sets it): operators then do not
# warn of dense results (``DenseResultWarning``), since the engine computes gradients in
# their declared storage types and the forward operator already warned of the dense
# result those follow from.
DENSE_EXPECTED = contextvars.ContextVar("nets_dense_results_expected", default=False)


# What an implementation kept for the vjp of the call being recorded: ``(op, state)``, or
# None (``save_for_backward``, ``take_saved``).
SAVED = contextvars.ContextVar("nets_saved_for_backward", default=None)


def save_for_backward(op, state):
    """Keep ``state`` for the vjp of the call of ``op`` being computed: what it needs beyond
    the node's inputs, outputs and attributes (a custom operator's Python object that ran
    the forward). An implementation calls it only while recording; the recorder then puts
    ``state`` on the call's node as ``node.saved``, so it lives exactly as long as the node.
    It waits here from the implementation's return to the recorder's call, which follow
    each other with no other recorded call between (``Op.__call__``, a cached graph's
    step): one call's state per context at most, never a table."""
    SAVED.set((op, state))


def take_saved(op):
    """The state ``op``'s implementation kept for the call being recorded (None when it kept
    none), taken away: the recorder calls it once for every node it makes."""
    pending = SAVED.get()
    if pending is None:
        return None
    SAVED.set(None)
    return pending[1] if pending[0] is op else None


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../nets


def _user_level():
    """The ``stacklevel`` that makes a warning name the first caller outside nets (an op
    is reached from user code directly, through ``x + 1``, a layer or a vjp)."""
    frame, level = inspect.currentframe().f_back.f_back, 2  # (the caller of the warner)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE + os.sep):
        frame, level = frame.f_back, level + 1
    return level


def _check_dense_result(name, inputs, outputs):
    """Warn when a dense output has the shape of a sparse input and is larger than every
    dense input: the operator materialised the sparse array's full size (``exp(csr)``,
    ``csr + 1``, ``broadcast_add(csr, row)``). Explicit conversions (``cast_storage``,
    ``tostype``) are asked for and do not warn; operators declared ``entrywise=False`` are
    not asked (see ``Op``)."""
    if name == "cast_storage" or DENSE_EXPECTED.get():
        return
    dense = max((x.size for x in inputs if x is not None and x.stype == "default"), default=0)
    for o in outputs:
        if o.stype != "default" or o.size <= dense:
            continue
        for x in inputs:
            if x is not None and x.stype != "default" and x.shape == o.shape:
                warnings.warn(f"{name}: the result is dense ({o.nbytes} bytes, the full size of "
                              f"its {x.stype} input of shape {x.shape}): no sparse result can "
                              f"hold it", DenseResultWarning, stacklevel=_user_level())
                return


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
    ``entrywise=False`` declares an operator whose output is not laid out like its inputs
    (a product or a lookup: ``dot``, ``take``, ``Embedding``): a dense output that has a
    sparse input's shape is then a coincidence of sizes, not that input densified, and
    does not warn (``DenseResultWarning``).
    Calling the op: ``op(*inputs, *attrs, out=None, **attrs)``.
    """

    def __init__(self, name, inputs=("data",), attrs=None, doc=None, entrywise=True):
        if name in OPS:
            raise NetsError(f"operator {name!r} is declared twice")
        OPS[name] = self
        self.name = name
        self.entrywise = entrywise
        self.variadic = bool(inputs) and inputs[0].startswith("*")
        self.inputs = tuple(i.strip("*?") for i in inputs)
        self.optional = frozenset(i.strip("?") for i in inputs if i.endswith("?"))
        self.attrs = dict(attrs or {})
        self._required = tuple(k for k, v in self.attrs.items() if v is REQUIRED)
        self._infer_fn = None
        self._shape_fn = None
        self._dtype_fn = None
        self.index_inputs = frozenset()
        self._grad_fn = None
        self._impls = []
        self._cache = {}
        self._check_fn = None
        self._vjp_fn = None
        self.vjp_fresh = False
        self._inputs_fn = self._aux_fn = None
        self.__doc__ = doc
        self.__name__ = name
        kind = inspect.Parameter
        params = ([kind(self.inputs[0], kind.VAR_POSITIONAL)] if self.variadic else
                  [kind(i, kind.POSITIONAL_OR_KEYWORD,
                        default=None if i in self.optional else REQUIRED) for i in self.inputs])
        attr_kind = kind.KEYWORD_ONLY if self.variadic else kind.POSITIONAL_OR_KEYWORD
        for a, d in self.attrs.items():
            if d is REQUIRED and params and params[-1].default is not REQUIRED:
                attr_kind = kind.KEYWORD_ONLY  # a required attr after an optional input
            params.append(kind(a, attr_kind, default=d))
        params.append(kind("out", kind.KEYWORD_ONLY, default=None))
        self.__signature__ = inspect.Signature(params)

    # -- declaration -----------------------------------------------------------
    def infer(self, fn):
        """Register ``fn(*in_stypes, **attrs) -> stype or tuple of stypes``."""
        self._infer_fn = fn
        return fn

    def shape(self, fn):
        """Register ``fn(in_shapes, attrs) -> (in_shapes, out_shapes)``: ``attrs`` complete,
        an unknown shape is None; it returns the input shapes with those it can deduce
        filled in (a weight's shape from the data's) and one shape (or None) per output.
        A shape that cannot fit raises ``ShapeError``."""
        self._shape_fn = fn
        return fn

    def dtype(self, fn=None, index=()):
        """Declare the output dtype: ``fn(in_dtypes, attrs) -> dtype``, or a tuple of one
        per output (all inputs known; default: numpy promotion of the value inputs);
        ``index`` lists the positions of inputs that hold ids or conditions, which take no
        part in promotion."""
        self.index_inputs = frozenset(index)
        if fn is not None:
            self._dtype_fn = fn
        return fn

    def grad_stype(self, fn):
        """Register ``fn(*in_stypes, **attrs) -> stype or None per input``: the storage
        type of each input's gradient when the output gradients arrive in the outputs'
        storage types (None: no gradient for that input)."""
        self._grad_fn = fn
        return fn

    def impl(self, *pattern):
        """Register an implementation for inputs whose stypes match ``pattern``."""
        def register(fn):
            self._impls.append((tuple(pattern), fn))
            self._cache.clear()
            return fn
        return register

    def check(self, fn):
        """Register ``fn(*inputs, **attrs)``, which validates a call's operands against each
        other and the attributes (shapes, dtypes), raising ``ShapeError``, ``DTypeError`` or
        ``NetsError`` naming what is wrong; ``compute`` runs it before the implementation,
        which then trusts its operands. A cached graph (``nets.symbol.executor.Program``)
        calls the implementations alone on later runs over operands of the signature its
        first, checked, run validated."""
        self._check_fn = fn
        return fn

    def vjp(self, fn=None, *, fresh=False):
        """Register ``fn(node, *out_grads) -> input grads`` (see ``nets.autograd``);
        ``@op.vjp`` or ``@op.vjp(fresh=True)``. ``fresh`` declares that every gradient ``fn``
        returns is a new array nothing else holds (not an output gradient passed through,
        not a saved input or output, not one array for two inputs), so the engine may hand
        it to a leaf's gradient slot without copying it."""
        if fn is None:
            return lambda f: self.vjp(f, fresh=fresh)
        self._vjp_fn, self.vjp_fresh = fn, fresh
        return fn

    def graph_inputs(self, fn):
        """Register ``fn(attrs) -> input names``: the inputs a graph node with these
        attributes takes (MXNet's ListArguments); ``nets.sym`` makes each one not given the
        variable ``<node>_<input>``. Default: the required inputs, and each optional ``x``
        whose attribute ``no_x`` is False."""
        self._inputs_fn = fn
        return fn

    def aux(self, fn):
        """Register ``fn(attrs) -> n``: the last ``n`` inputs are auxiliary states (MXNet's
        FMutateInputs), arrays the operator may update in place and does not differentiate;
        a graph lists their variables in ``list_auxiliary_states()``, apart from its
        arguments."""
        self._aux_fn = fn
        return fn

    # -- queries -----------------------------------------------------------------
    def takes(self, attrs):
        """The names of the inputs a graph node with ``attrs`` takes (see ``graph_inputs``)."""
        attrs = self._full_attrs(attrs)
        if self._inputs_fn is not None:
            return tuple(self._inputs_fn(attrs))
        return tuple(i for i in self.inputs
                     if i not in self.optional or attrs.get(f"no_{i}") is False)

    def num_aux(self, attrs):
        """How many trailing inputs are auxiliary states (see ``aux``)."""
        return 0 if self._aux_fn is None else int(self._aux_fn(self._full_attrs(attrs)))

    def infer_stype(self, *stypes, **attrs):
        """Output stype(s) for input ``stypes`` — a tuple, one entry per output."""
        out = self._infer_fn(*stypes, **self._full_attrs(attrs)) if self._infer_fn else "default"
        return (out,) if isinstance(out, str) else tuple(out)

    def infer_shape(self, shapes, attrs):
        """``(input shapes, output shapes)`` by the declared rule (None: unknown); None
        when the operator declares no shape rule."""
        if self._shape_fn is None:
            return None
        return self._shape_fn(list(shapes), self._full_attrs(attrs))

    def infer_dtype(self, dtypes, attrs):
        """The output dtype for the input ``dtypes`` (None for an absent input): one for
        every output, or a tuple of one per output."""
        if self._dtype_fn is not None:
            out = self._dtype_fn(list(dtypes), self._full_attrs(attrs))
            return tuple(map(np.dtype, out)) if isinstance(out, tuple) else np.dtype(out)
        values = [d for i, d in enumerate(dtypes) if i not in self.index_inputs and d is not None]
        return np.result_type(*values) if values else None

    def infer_grad_stype(self, *stypes, **attrs):
        """The storage type of each input's gradient (None: no gradient, or no input)."""
        if self._vjp_fn is None:
            return (None,) * len(stypes)
        if self._grad_fn is None:
            return tuple(None if s is None else "default" for s in stypes)
        return tuple(self._grad_fn(*stypes, **self._full_attrs(attrs)))

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
                    raise OperatorArgumentError(f"{self.name}() missing required input {name!r}")
        attrs = self.attrs.copy()
        if attr_args:
            if len(attr_args) > len(attrs):
                raise OperatorArgumentError(f"{self.name}() takes {n} inputs and {len(attrs)} "
                                            f"attributes, got {len(args)} positional "
                                            f"arguments")
            attrs.update(zip(self.attrs, attr_args))
        if kwargs:
            for k in kwargs:
                if k not in attrs:
                    raise OperatorArgumentError(f"{self.name}() got an unexpected argument {k!r}")
            attrs.update(kwargs)
        if self._required:
            missing = [k for k in self._required if attrs[k] is REQUIRED]
            if missing:
                raise OperatorArgumentError(f"{self.name}() missing required argument(s) "
                                            f"{missing}")
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
                o.assign_result(r)  # keeps the destination's storage type; refuses graph arrays
                if recorder is not None:
                    o._node = r._node  # gradients flow through `out` like the fresh result
            return out
        return outputs[0] if len(outputs) == 1 else list(outputs)

    def compute(self, inputs, attrs):
        """Run the op on bound inputs (``attrs`` complete); always returns a tuple of outputs."""
        # (float16 is handled by helpers called here, not by a wrapper around this method)
        half = None
        for x in inputs:
            if x is not None and x.dtype == _HALF:
                half, inputs = self._widen_half(inputs)
                break
        if self._check_fn is not None:
            self._check_fn(*inputs, **attrs)
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
        elif (self.entrywise and ("csr" in stypes or "row_sparse" in stypes)
              and "default" in out_stypes):
            _check_dense_result(self.name, inputs, outputs)
        if _VERBOSE:
            log_storage(self.name, stypes, tuple(o.stype for o in outputs))
        return outputs if half is None else self._narrow_half(half, outputs, attrs)

    def _widen_half(self, inputs):
        """``(dtypes, inputs)`` for inputs holding float16, which compute in float32 (see
        the module doc): the inputs' dtypes and the inputs with float16 cast to float32;
        ``(None, inputs)`` when value inputs mix float dtypes (the op decides)."""
        dtypes = [None if x is None else x.dtype for x in inputs]
        if any(d is not None and d.kind == "f" and d != _HALF
               for i, d in enumerate(dtypes) if i not in self.index_inputs):
            return None, inputs
        return dtypes, tuple(x.astype(_SINGLE) if d == _HALF else x
                             for x, d in zip(inputs, dtypes))

    def _narrow_half(self, dtypes, outputs, attrs):
        """The float32 ``outputs`` cast back to float16 where the dtype rule gives float16
        for the inputs' original ``dtypes``."""
        want = self.infer_dtype(dtypes, attrs)
        wants = want if isinstance(want, tuple) else (want,) * len(outputs)
        return tuple(o.astype(_HALF) if w == _HALF and o.dtype == _SINGLE else o
                     for o, w in zip(outputs, wants))

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
                      StorageFallbackWarning, stacklevel=_user_level())
        return dense, fn

    def __repr__(self):
        return f"<nets operator {self.name}{self.__signature__}>"

