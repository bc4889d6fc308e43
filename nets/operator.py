"""Python-defined operators (MXNet's ``mx.operator``): ``CustomOp``, ``CustomOpProp``,
``register`` and the imperative ``Custom`` (``nets.nd.Custom``; ``nets.sym.Custom``
builds the same node in a graph).

A registered ``CustomOpProp`` subclass is run by one operator of the op table, ``Custom``,
whose ``op_type`` attribute names the registered Prop and whose ``params`` attribute holds
the call's other keyword arguments as ``(name, str(value))`` pairs: MXNet hands them to the
Prop's ``__init__`` as strings, and so does nets (``positive_cls_weight=2`` arrives as
``'2'``). Being an ordinary ``Op``, a custom operator is treated like any other by storage
inference, autograd, ``nets.sym`` graphs (``simple_bind``, ``Module``), hybridized blocks
and ``tojson``/``load_json``. Its declarations ask the Prop:

- output storage types: ``infer_storage_type`` (default: every output takes the first
  input's stype); the storage type of each input's gradient:
  ``infer_storage_type_backward`` (default: all 'default');
- shapes: ``infer_shape`` (default: every output has the first input's shape), asked once
  every input shape is known;
- dtype: ``infer_type`` (default: the first input's). Each output is allocated in its own
  dtype; graph inference (``Symbol.infer_type``), which holds one dtype per operator,
  reports the first output's for every output.

Auxiliary states (``list_auxiliary_states()``, MXNet's): arrays the operator keeps across
calls and updates in place, such as a running mean. They are the node's last inputs, after
the arguments: ``nd.Custom`` takes them as trailing inputs (as MXNet's), ``sym.Custom``
makes the variables ``<name>_<state>``, which a symbol lists in ``list_auxiliary_states()``
(not among its arguments), binds through ``aux_states`` and a ``Module`` returns in
``get_params()``'s ``aux_params``. The Prop's inference methods get the arguments only and
return the states' shapes, dtypes and stypes as their third list; graph inference takes the
shapes from it, and gives a state variable that declares no dtype its arguments' dtype. The
states get no gradient.

The implementation creates the operator with ``create_operator(ctx, in_shapes,
in_dtypes)`` (the shapes and dtypes of every input, states included), allocates zeros of
the inferred shape, dtype and storage type for each output and calls ``forward(is_train,
req=['write', ...], in_data, out_data, aux)``. The vjp calls ``backward(req, out_grad,
in_data, out_data, in_grad, aux)`` on the operator instance that ran the call's forward
(state it kept is there): the call's autograd node holds that instance (``node.saved``)
and lets it go with the graph, so two calls keep separate instances and no table
outlives them. It gets zeros allocated for each
``in_grad`` in its declared storage type and ``req`` 'write' for each input that wants a
gradient, 'null' for the others (integer labels, constants). ``out_grad``, ``in_data`` and
``out_data`` hold the arrays ``declare_backward_dependency`` names and None for the others
(MXNet passes empty arrays there): by default every input and output, and the output
gradients only when ``need_top_grad`` (a loss operator declares ``need_top_grad=False``).
Recording is off while user code runs, so the operators it calls are not differentiated
through.

An exception raised by user code (the Prop's constructor or methods, ``forward``,
``backward``) surfaces as ``NetsError`` naming the ``op_type`` and the method, chained to
the original.
"""
import numpy as np

from .base import RECORDER, TRAINING, NetsError, current_context
from .arrays.creation import zeros
from .arrays.dense import NDArray
from .ops.registry import REQUIRED, Op, save_for_backward

__all__ = ["CustomOp", "CustomOpProp", "register", "get_all_registered_operators", "Custom",
           "bind_custom"]


class CustomOp:
    """Base class of a Python operator's computation: override ``forward`` and
    ``backward``, writing results with ``self.assign(dst, req, src)``."""

    def __init__(self):
        pass

    def forward(self, is_train, req, in_data, out_data, aux):
        """Compute ``out_data`` (arrays allocated for you) from ``in_data``; ``req[i]`` says
        how to write ``out_data[i]`` ('write', 'add' or 'null'); ``is_train`` is
        ``autograd.is_training()``."""

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """Compute ``in_grad`` (zeros allocated for you) from the output gradients
        ``out_grad`` and the forward's ``in_data``/``out_data``, honouring ``req``."""

    def assign(self, dst, req, src):
        """Write ``src`` into ``dst`` as ``req`` says: 'write' (or 'inplace') copies (``dst``
        keeps its storage type), 'add' accumulates, 'null' does nothing."""
        if req == "null":
            return
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] += src
        else:
            raise NetsError(f"assign: req={req!r} is not one of 'write', 'inplace', 'add', "
                            f"'null'")


class CustomOpProp:
    """Base class of a Python operator's declaration: its arguments and outputs, shape, type
    and storage inference, and ``create_operator``. ``need_top_grad=False`` marks an
    operator (a loss) whose backward does not use the output gradient."""

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape):
        """``(in_shapes, out_shapes[, aux_shapes])`` from the argument shapes; default:
        every output has the first argument's shape."""
        return in_shape, [in_shape[0]] * len(self.list_outputs()), []

    def infer_type(self, in_type):
        """``(in_types, out_types[, aux_types])`` from the argument dtypes; default: the
        first argument's dtype everywhere."""
        return (in_type, [in_type[0]] * len(self.list_outputs()),
                [in_type[0]] * len(self.list_auxiliary_states()))

    def infer_storage_type(self, in_stype):
        """``(in_stypes, out_stypes[, aux_stypes])``; default: every output takes the first
        argument's storage type."""
        return (in_stype, [in_stype[0]] * len(self.list_outputs()),
                [in_stype[0]] * len(self.list_auxiliary_states()))

    def infer_storage_type_backward(self, ograd_stype, in_stype, out_stype, igrad_stype,
                                    aux_stype):
        """``(ograd, in, out, igrad[, aux])`` storage types of the backward pass; nets uses
        ``igrad`` (each input's gradient). Default: all 'default'."""
        lists = [ograd_stype, in_stype, out_stype, igrad_stype, aux_stype]
        return tuple(["default"] * len(s) for s in lists)

    def list_outputs(self):
        """Names of the outputs (default ``['output']``)."""
        return ["output"]

    def list_arguments(self):
        """Names of the array arguments, in call order (default ``['data']``)."""
        return ["data"]

    def list_auxiliary_states(self):
        """Names of the auxiliary states (default ``[]``): arrays the operator keeps across
        calls and may update in place (a running mean), handed to ``forward`` and
        ``backward`` as ``aux``, never differentiated. ``infer_shape`` (and
        ``infer_type``/``infer_storage_type``, whose defaults do) must then return their
        shapes as a third list."""
        return []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """The ids (from the given lists of ids) of the arrays ``backward`` reads; the others
        reach it as None. Default: the output gradients when ``need_top_grad``, every input
        and every output."""
        return (list(out_grad) if self.need_top_grad_ else []) + list(in_data) + list(out_data)

    def create_operator(self, ctx, in_shapes, in_dtypes):
        """The ``CustomOp`` computing this operator for these input shapes and dtypes."""
        return CustomOp()


_REGISTRY = {}  # op_type -> CustomOpProp subclass
_PROPS = {}     # (op_type, params) -> the Prop instance built from them


def register(reg_name):
    """Class decorator: ``@register('name')`` makes a ``CustomOpProp`` subclass the
    ``op_type='name'`` of ``Custom`` (registering a name again replaces it)."""
    if not isinstance(reg_name, str) or not reg_name:
        raise NetsError(f"register: reg_name={reg_name!r} must be a non-empty string")

    def do_register(prop_cls):
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise NetsError(f"register({reg_name!r}): {prop_cls!r} is not a subclass of "
                            f"nets.operator.CustomOpProp")
        _REGISTRY[reg_name] = prop_cls
        for key in [k for k in _PROPS if k[0] == reg_name]:
            del _PROPS[key]
        return prop_cls
    return do_register


def get_all_registered_operators():
    """The registered ``op_type`` names, sorted."""
    return sorted(_REGISTRY)


def _user(op_type, what, fn, *args):
    """Call user code, naming ``op_type`` and ``what`` in the error it raises."""
    try:
        return fn(*args)
    except Exception as e:
        raise NetsError(f"Custom operator op_type={op_type!r}: {what} raised "
                        f"{type(e).__name__}: {e}") from e


def _prop(op_type, params):
    """The Prop of ``op_type`` built from the string ``params`` (one per pair: inference
    asks it often)."""
    key = (op_type, params)
    prop = _PROPS.get(key)
    if prop is None:
        cls = _REGISTRY.get(op_type)
        if cls is None:
            raise NetsError(f"Custom: op_type={op_type!r} is not registered; registered "
                            f"operators: {get_all_registered_operators()}")
        prop = _user(op_type, f"{cls.__name__}(**{dict(params)})", lambda: cls(**dict(params)))
        _PROPS[key] = prop
    return prop


def _counts(prop, op_type):
    """``(arguments, outputs, auxiliary states)``: how many the Prop lists."""
    return tuple(len(_user(op_type, f"{m.__name__}()", m)) for m in (
        prop.list_arguments, prop.list_outputs, prop.list_auxiliary_states))


def _returned(prop, op_type, what, ret):
    """The ``(inputs, outputs, aux)`` lists a Prop inference method returned (2 or 3 of
    them: aux defaults to ``[]``), checked against the Prop's counts."""
    if not isinstance(ret, (list, tuple)) or len(ret) not in (2, 3):
        raise NetsError(f"Custom operator op_type={op_type!r}: {what} must return 2 or 3 "
                        f"lists, got {ret!r}")
    ret = tuple(ret) + ((),) * (3 - len(ret))
    for lst, n, name in zip(ret, _counts(prop, op_type),
                            ("inputs", "outputs", "auxiliary states")):
        if len(lst) != n:
            raise NetsError(f"Custom operator op_type={op_type!r}: {what} returned "
                            f"{len(lst)} entries for {n} {name}")
    return ret


def _num_outputs(prop, op_type):
    return _counts(prop, op_type)[1]


def _input_names(prop, op_type):
    """The names of a Custom node's inputs: the arguments, then the auxiliary states."""
    return (_user(op_type, "list_arguments()", prop.list_arguments)
            + _user(op_type, "list_auxiliary_states()", prop.list_auxiliary_states))


def _split(prop, op_type, inputs):
    """``(arguments, auxiliary states)`` of a Custom node's inputs (the states come last)."""
    n_args, _, n_aux = _counts(prop, op_type)
    if len(inputs) != n_args + n_aux:
        names = _input_names(prop, op_type)
        raise NetsError(f"Custom operator op_type={op_type!r} takes {len(names)} inputs "
                        f"{names}, got {len(inputs)}")
    return list(inputs[:n_args]), list(inputs[n_args:])


def _outputs_inferred(prop, op_type, stypes):
    args = _split(prop, op_type, stypes)[0]
    ret = _user(op_type, "infer_storage_type", prop.infer_storage_type, args)
    return tuple(_returned(prop, op_type, "infer_storage_type", ret)[1])


custom_op = Op("Custom", ("*data",), {"op_type": REQUIRED, "params": ()}, doc="""\
The operator of a registered ``CustomOpProp`` (``op_type``), called with its arguments in
``list_arguments()`` order; ``params`` holds the Prop's keyword arguments as ``(name,
string)`` pairs. Call it as ``nd.Custom``/``sym.Custom`` (see ``nets.operator``).""")


@custom_op.aux
def _(attrs):
    return _counts(_prop(attrs["op_type"], attrs["params"]), attrs["op_type"])[2]


@custom_op.infer
def _(*stypes, op_type, params):
    return _outputs_inferred(_prop(op_type, params), op_type, stypes)


@custom_op.shape
def _(ins, attrs):
    op_type = attrs["op_type"]
    prop = _prop(op_type, attrs["params"])
    args = _split(prop, op_type, ins)[0]
    if any(s is None for s in args):
        return ins, [None] * _num_outputs(prop, op_type)
    ret = _user(op_type, "infer_shape", prop.infer_shape, [list(s) for s in args])
    args, outs, aux = _returned(prop, op_type, "infer_shape", ret)
    return ([_shape(op_type, s) for s in list(args) + list(aux)],
            [_shape(op_type, s) for s in outs])


def _shape(op_type, shape):
    """A shape ``infer_shape`` returned, as a tuple of non-negative ints, or ``NetsError``
    naming the operator and the value."""
    try:
        out = tuple(int(d) for d in shape)
        ok = not isinstance(shape, (str, bytes)) and all(
            d >= 0 and d == s for d, s in zip(out, shape))
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        raise NetsError(f"Custom operator op_type={op_type!r}: infer_shape returned "
                        f"{shape!r:.200} where a shape (a list of non-negative integers) "
                        f"belongs")
    return out


def _dtypes(prop, op_type, dtypes):
    args = _split(prop, op_type, dtypes)[0]
    ret = _user(op_type, "infer_type", prop.infer_type, [np.dtype(d) for d in args])
    return [np.dtype(d) for d in _returned(prop, op_type, "infer_type", ret)[1]]


@custom_op.dtype
def _(dtypes, attrs):
    return _dtypes(_prop(attrs["op_type"], attrs["params"]), attrs["op_type"], dtypes)[0]


@custom_op.grad_stype
def _(*stypes, op_type, params):
    prop = _prop(op_type, params)
    outs = list(_outputs_inferred(prop, op_type, stypes))
    args, aux = _split(prop, op_type, stypes)
    ret = _user(op_type, "infer_storage_type_backward", prop.infer_storage_type_backward,
                list(outs), args, list(outs), ["default"] * len(args), aux)
    if not isinstance(ret, (list, tuple)) or len(ret) not in (4, 5) or len(ret[3]) != len(args):
        raise NetsError(f"Custom operator op_type={op_type!r}: infer_storage_type_backward "
                        f"must return 4 or 5 lists, the fourth with one stype per argument; "
                        f"got {ret!r}")
    return tuple(ret[3]) + (None,) * len(aux)  # (auxiliary states get no gradient)


def _operator(prop, op_type, inputs):
    ctx = inputs[0].context if inputs else current_context()
    return _user(op_type, "create_operator", prop.create_operator, ctx,
                 [list(x.shape) for x in inputs], [x.dtype for x in inputs])


class _Paused:
    """Recording off while user code runs (its operator calls are not differentiated)."""

    def __enter__(self):
        self._token = RECORDER.set(None)

    def __exit__(self, *exc):
        RECORDER.reset(self._token)


@custom_op.impl("*", ...)
def _(*inputs, op_type, params):
    prop = _prop(op_type, params)
    stypes = _outputs_inferred(prop, op_type, [x.stype for x in inputs])
    shapes = custom_op.infer_shape([x.shape for x in inputs], {"op_type": op_type,
                                                               "params": params})[1]
    dtypes = _dtypes(prop, op_type, [x.dtype for x in inputs])
    ctx = inputs[0].context if inputs else current_context()
    outs = [zeros(s, ctx, d, st) for s, d, st in zip(shapes, dtypes, stypes)]
    op = _operator(prop, op_type, inputs)
    args, aux = _split(prop, op_type, inputs)
    recording = RECORDER.get() is not None
    with _Paused():
        _user(op_type, "forward", op.forward, TRAINING.get(), ["write"] * len(outs), args,
              outs, aux)
    if recording:  # the call's node keeps the instance for backward (node.saved)
        save_for_backward(custom_op, op)
    return tuple(outs)


@custom_op.vjp
def _(node, *out_grads):
    op_type, params = node.attrs["op_type"], node.attrs["params"]
    prop = _prop(op_type, params)
    op = node.saved  # the instance that ran this call's forward
    stypes = custom_op.infer_grad_stype(*[x.stype for x in node.inputs], op_type=op_type,
                                        params=params)
    args, aux = _split(prop, op_type, node.inputs)
    in_grads = [zeros(x.shape, x.context, x.dtype, st) for x, st in zip(args, stypes)]
    req = ["null" if p is None else "write" for p in node.parents[:len(args)]]
    given = list(out_grads) + args + list(node.outputs)
    n_out, n_in = len(out_grads), len(args)
    ids = list(range(len(given)))
    deps = set(_user(op_type, "declare_backward_dependency", prop.declare_backward_dependency,
                     ids[:n_out], ids[n_out:n_out + n_in], ids[n_out + n_in:]))
    given = [v if i in deps else None for i, v in enumerate(given)]
    with _Paused():
        _user(op_type, "backward", op.backward, req, given[:n_out], given[n_out:n_out + n_in],
              given[n_out + n_in:], in_grads, aux)
    return tuple(None if r == "null" else g for r, g in zip(req, in_grads)) + (None,) * len(aux)


def bind_custom(args, kwargs, is_input, missing):
    """Split a ``Custom(*args, op_type=..., **kwargs)`` call into ``(inputs, attrs)`` for
    the ``Custom`` operator: keyword arguments for which ``is_input`` holds are inputs by
    their ``list_arguments()`` name (after the positional ones), the others are the Prop's
    parameters, passed as strings; an argument not given is ``missing(name)``."""
    kwargs = dict(kwargs)
    op_type = kwargs.pop("op_type", None)
    if not isinstance(op_type, str):
        raise NetsError(f"Custom: op_type={op_type!r} must name a registered operator; "
                        f"registered: {get_all_registered_operators()}")
    named = {k: kwargs.pop(k) for k in list(kwargs) if is_input(kwargs[k])}
    params = tuple(sorted((k, str(v)) for k, v in kwargs.items()))
    names = _input_names(_prop(op_type, params), op_type)
    if len(args) > len(names):
        raise NetsError(f"Custom operator op_type={op_type!r} takes {len(names)} inputs "
                        f"{names}, got {len(args)} positional ones")
    inputs = list(args)
    for name in names[len(args):]:
        inputs.append(named.pop(name) if name in named else missing(name))
    if named:
        raise NetsError(f"Custom operator op_type={op_type!r}: {sorted(named)} are not among "
                        f"the inputs {names} still to give")
    return inputs, {"op_type": op_type, "params": params}


def _missing(name):
    raise NetsError(f"Custom: input {name!r} is not given")


def Custom(*args, out=None, **kwargs):
    """Run the registered operator ``op_type`` on the arrays ``args`` (and arrays passed by
    argument name); the other keyword arguments reach its Prop as strings (MXNet's
    ``mx.nd.Custom``). Returns an array, or a list for several outputs."""
    inputs, attrs = bind_custom(args, kwargs, lambda v: isinstance(v, NDArray), _missing)
    return custom_op(*inputs, out=out, **attrs)
