"""``Symbol``: a graph of operator applications over named ``Variable``s (MXNet's symbols).

A symbol is built by calling the operators of ``nets.sym`` - the operators of
``nets.ops`` declared once in its registry, composed instead of computed - on
``Variable``s. Omitted weight inputs become variables named ``<node>_<input>`` (as in
MXNet: ``FullyConnected(data, num_hidden=8, name='fc')`` creates ``fc_weight`` and
``fc_bias``). Variables are identified by name: two variables with one name are one
argument. Graphs are immutable; ``tojson``/``load_json`` write and read them as JSON
(loading validates every node and never executes code).
"""
from __future__ import annotations

import inspect
import json
import numbers
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import init as init_mod
from .. import operator, ops
from ..base import DTypeError, NetsError, OperatorArgumentError, as_dtype, check_stype
from ..name import current as current_name_manager
from ..ops.methods import FLUENT_METHODS as _FLUENT_METHODS
from ..ops import elemwise, output
from ..ops.registry import OPS, REQUIRED, Op
from ..serialization import write_atomically
from .executor import bind, simple_bind
from .inference import (infer_grad_storage_type, infer_shape, infer_storage_type,
                        infer_type)

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from ..arrays import NDArray
    from ..base import Context
    from .executor import Executor

__all__ = ["Symbol", "Variable", "var", "Group", "load", "load_json", "namespace"]

_FORMAT = "nets-symbol-1"


_MX_STYPE_IDS = {"default": 0, "row_sparse": 1, "csr": 2}  # MXNet's storage type ids


def _auto_name(op_name):
    return current_name_manager().get(None, op_name.lower())


class _FunctionOp:
    """A plain function of ``nets.ops`` as a graph operator (``Dropout``, which draws its
    mask when it runs): executed by calling it; its inference (storage, shape, dtype,
    gradient storage) and implementations are those of ``rule`` (the operator it calls)
    on the function's array inputs, the others absent."""

    variadic = False
    optional = frozenset()

    def __init__(self, fn, rule):
        self.fn, self.rule = fn, rule
        self.name = self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__signature__ = inspect.signature(fn)
        params = self.__signature__.parameters.values()
        self.inputs = tuple(p.name for p in params if p.default is p.empty)
        self.attrs = {p.name: p.default for p in params if p.default is not p.empty}

    def _rule_stypes(self, stypes):
        return tuple(stypes) + (None,) * (len(self.rule.inputs) - len(stypes))

    def infer_stype(self, *stypes, **attrs):
        return self.rule.infer_stype(*self._rule_stypes(stypes))

    def find_impl(self, stypes):
        return self.rule.find_impl(self._rule_stypes(stypes))

    def infer_shape(self, shapes, attrs):
        ins, outs = self.rule.infer_shape(self._rule_stypes(shapes), {})
        return ins[:len(shapes)], outs

    def infer_dtype(self, dtypes, attrs):
        return self.rule.infer_dtype(self._rule_stypes(dtypes), {})

    @property
    def index_inputs(self):
        return self.rule.index_inputs

    def infer_grad_stype(self, *stypes, **attrs):
        return self.rule.infer_grad_stype(*self._rule_stypes(stypes))[:len(stypes)]

    def takes(self, attrs):
        return self.inputs

    def num_aux(self, attrs):
        return 0

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)


FUNCTIONS = {"Dropout": _FunctionOp(ops.Dropout, OPS["_dropout"])}


def get_op(name):
    """The operator (an ``Op`` or a ``FUNCTIONS`` entry) named ``name``, else None."""
    return OPS.get(name) or FUNCTIONS.get(name)


class _Node:
    """An operator application (``op``, ``inputs``: ``(node, k)`` entries or None for an
    absent optional input, ``attrs``: the attributes given) or a variable (``op`` None,
    ``var``: its declared attributes)."""

    __slots__ = ("op", "name", "inputs", "attrs", "full_attrs", "num_outputs", "num_aux",
                 "var")

    def __init__(self, op, name, inputs=(), attrs=None, var=None):
        self.op, self.name, self.inputs = op, name, tuple(inputs)
        self.attrs, self.var = dict(attrs or {}), var
        self.full_attrs = {} if op is None else {**op.attrs, **self.attrs}
        self.num_outputs = 1 if op is None else len(op.infer_stype(
            *(None if e is None else "default" for e in self.inputs), **self.full_attrs))
        self.num_aux = 0 if op is None else op.num_aux(self.full_attrs)
        for e in self.inputs[len(self.inputs) - self.num_aux:]:
            if e is None or e[0].op is not None:
                raise NetsError(f"node {name!r} ({op.name}): its auxiliary states (its last "
                                f"{self.num_aux} inputs) must be Variables")


def _topo(heads):
    """The nodes ``heads`` depend on, inputs before users (depth-first, inputs in order)."""
    order, done = [], set()
    for head in heads:
        stack = [(head, 0)]
        while stack:
            node, i = stack[-1]
            if node in done:
                stack.pop()
            elif i < len(node.inputs):
                stack[-1] = (node, i + 1)
                e = node.inputs[i]
                if e is not None and e[0] not in done:
                    stack.append((e[0], 0))
            else:
                stack.pop()
                done.add(node)
                order.append(node)
    return order


def _output_name(node, k):
    if node.op is None:
        return node.name
    return f"{node.name}_output" if node.num_outputs == 1 else f"{node.name}_output{k}"


class Symbol:
    """One or more outputs of a graph (a ``Group`` when several).

    Build with ``Variable`` and the operators of ``nets.sym``; Python operators and the
    fluent methods of ``NDArray`` (``x.sum(axis=1)``) compose too. ``shape``/``dtype``/
    ``stype`` of a single output are inferred from the variables' declared attributes
    (known when every variable it depends on declares a shape, as in ``hybridize``).

    Parameters
    ----------
    outputs : iterable of (node, int)
        The graph's output entries (built by ``Variable``, the operators and ``Group``;
        not usually called directly).
    """

    __slots__ = ("_outputs",)
    __array_priority__ = 1001.0  # numpy defers to our reflected operators

    def __init__(self, outputs: Iterable[tuple[Any, int]]):
        self._outputs = tuple(outputs)

    # -- structure --------------------------------------------------------------------------
    def _nodes(self):
        return _topo([node for node, _ in self._outputs])

    def _single(self, what):
        if len(self._outputs) != 1:
            raise NetsError(f"{what} must be a single-output Symbol, got one with "
                            f"{len(self._outputs)} outputs {self.list_outputs()}")
        return self._outputs[0]

    @property
    def name(self):
        """The node's name for a single output (None for a group)."""
        return self._outputs[0][0].name if len(self._outputs) == 1 else None

    def _variables(self):
        """``(arguments, auxiliary states)``: the names of the variables, each in
        depth-first order; a variable is an auxiliary state when an operator takes it as
        one (``Op.aux``: running statistics the operator updates in place)."""
        nodes = self._nodes()
        aux, plain = set(), set()
        for n in nodes:
            first_aux = len(n.inputs) - n.num_aux
            for j, e in enumerate(n.inputs):
                if e is not None and e[0].op is None:
                    (aux if j >= first_aux else plain).add(e[0].name)
        if aux & plain:
            raise NetsError(f"variables {sorted(aux & plain)} are both auxiliary states and "
                            f"arguments of the symbol")
        names = list(dict.fromkeys(n.name for n in nodes if n.op is None))
        args = [n for n in names if n not in aux]
        return args, [n for n in names if n in aux]

    def list_arguments(self) -> list[str]:
        """Names of the variables other than auxiliary states, in depth-first order (each
        name once).

        Returns
        -------
        list of str
            The argument names.
        """
        return self._variables()[0]

    def list_inputs(self) -> list[str]:
        """Names of every variable, arguments and auxiliary states, in depth-first order."""
        return list(dict.fromkeys(n.name for n in self._nodes() if n.op is None))

    def list_outputs(self) -> list[str]:
        """Output names: a variable's name, ``<node>_output`` (``_output<k>`` when the node
        has several outputs).

        Returns
        -------
        list of str
            One name per output.
        """
        return [_output_name(node, k) for node, k in self._outputs]

    def list_auxiliary_states(self) -> list[str]:
        """Names of the auxiliary states: variables an operator takes as arrays it updates
        in place (a custom operator's ``list_auxiliary_states()``), not as arguments; they
        get no gradient and are bound through ``aux_states``.

        Returns
        -------
        list of str
            The auxiliary states' names, in depth-first order.
        """
        return self._variables()[1]

    def get_internals(self):
        """A group of every output of every node (variables included), in graph order."""
        return Symbol([(n, k) for n in self._nodes() for k in range(n.num_outputs)])

    def get_children(self):
        """A group of the head node's inputs (None for a variable or a group)."""
        if len(self._outputs) != 1 or self._outputs[0][0].op is None:
            return None
        return Symbol([e for e in self._outputs[0][0].inputs if e is not None])

    def attr_dict(self):
        """``{node name: attributes}``: a variable's declared ones (shape, dtype, stype,
        init, lr_mult, ...), an operator node's given ones."""
        return {n.name: dict(n.var if n.op is None else n.attrs) for n in self._nodes()}

    def list_attr(self):
        """The attributes of this single output's node."""
        node, _ = self._single("list_attr()")
        return dict(node.var if node.op is None else node.attrs)

    def attr(self, key):
        """Attribute ``key`` of this single output's node (None if unset). MXNet's key
        ``__storage_type__`` answers a variable's declared storage type as MXNet's id
        (``'0'`` default, ``'1'`` row_sparse, ``'2'`` csr)."""
        attrs = self.list_attr()
        if key == "__storage_type__" and key not in attrs:
            stype = attrs.get("stype")
            return None if stype is None else str(_MX_STYPE_IDS[stype])
        return attrs.get(key)

    def __len__(self):
        return len(self._outputs)

    def __iter__(self):
        return (Symbol([e]) for e in self._outputs)

    def __getitem__(self, index):
        if isinstance(index, str):
            names = self.list_outputs()
            if index not in names:
                raise NetsError(f"no output named {index!r}; outputs are {names}")
            index = names.index(index)
        return Symbol([self._outputs[index]])

    def __bool__(self):
        raise NetsError("a Symbol has no truth value (it is a graph, not an array)")

    __hash__ = object.__hash__

    def __repr__(self):
        if len(self._outputs) == 1:
            return f"<Symbol {self.name}>"
        return f"<Symbol group [{', '.join(self.list_outputs())}]>"

    # -- inference (see nets.symbol.inference) ----------------------------------------------
    def infer_shape(self, *args: tuple[int, ...] | None,
                    **kwargs: tuple[int, ...]) -> tuple[list, list, list]:
        """The shapes of every argument, output and auxiliary state, from the shapes of
        some arguments and the declared ones.

        Parameters
        ----------
        *args : tuple of int or None
            Shapes of the arguments in ``list_arguments()`` order (None: not given).
        **kwargs : tuple of int
            Shapes of arguments by name (not together with ``args``).

        Returns
        -------
        tuple of three lists
            ``(arg_shapes, out_shapes, aux_shapes)``, each a list of shape tuples in
            ``list_arguments()``, ``list_outputs()`` and ``list_auxiliary_states()`` order.

        Raises
        ------
        ShapeError
            Naming what stays unknown (``infer_shape_partial`` gives None instead).
        """
        return infer_shape(self, self._given(args, kwargs, "infer_shape"), partial=False)

    def infer_shape_partial(self, *args: tuple[int, ...] | None,
                            **kwargs: tuple[int, ...]) -> tuple[list, list, list]:
        """``infer_shape`` with None for whatever cannot be inferred.

        Parameters
        ----------
        *args : tuple of int or None
            Shapes of the arguments in ``list_arguments()`` order (None: not given).
        **kwargs : tuple of int
            Shapes of arguments by name (not together with ``args``).

        Returns
        -------
        tuple of three lists
            ``(arg_shapes, out_shapes, aux_shapes)``; an unknown shape is None.
        """
        return infer_shape(self, self._given(args, kwargs, "infer_shape_partial"), partial=True)

    def infer_type(self, *args: DTypeLike | None,
                   **kwargs: DTypeLike) -> tuple[list, list, list]:
        """The dtypes of every argument, output and auxiliary state from some arguments'
        dtypes (undeclared values default to float32).

        Parameters
        ----------
        *args : dtype or None
            Dtypes of the arguments in ``list_arguments()`` order (None: not given).
        **kwargs : dtype
            Dtypes of arguments by name (not together with ``args``).

        Returns
        -------
        tuple of three lists
            ``(arg_dtypes, out_dtypes, aux_dtypes)``.
        """
        return infer_type(self, self._given(args, kwargs, "infer_type"))

    def infer_storage_type(self, *args: str | None,
                           **kwargs: str) -> tuple[list, list, list]:
        """The storage types of every argument, output and auxiliary state: each
        operator's own storage inference (``op.infer_stype``, the table imperative calls
        use) applied through the graph. ``infer_grad_storage_type`` gives the backward
        pass's.

        Parameters
        ----------
        *args : str or None
            Storage types of the arguments in ``list_arguments()`` order (None: not
            given).
        **kwargs : str
            Storage types of arguments by name (not together with ``args``).

        Returns
        -------
        tuple of three lists
            ``(arg_stypes, out_stypes, aux_stypes)``.
        """
        return infer_storage_type(self, self._given(args, kwargs, "infer_storage_type"))

    def infer_grad_storage_type(self, *args: str | None, **kwargs: str) -> list[str]:
        """The storage type of each argument's gradient (``list_arguments()`` order) for
        the given argument stypes: what ``simple_bind`` allocates and ``backward``
        produces. A variable's declared ``grad_stype`` wins; otherwise each operator using
        it declares one (``dot(csr, w)``: ``w``'s is row_sparse; ``Embedding(...,
        sparse_grad=True)``: the weight's is row_sparse), several summed by ``add_n``'s
        rule; a variable no operator differentiates keeps its own stype.

        Parameters
        ----------
        *args : str or None
            Storage types of the arguments in ``list_arguments()`` order (None: not
            given).
        **kwargs : str
            Storage types of arguments by name (not together with ``args``).

        Returns
        -------
        list of str
            One gradient storage type per argument.
        """
        return infer_grad_storage_type(self, self._given(args, kwargs,
                                                         "infer_grad_storage_type"))

    def _given(self, args, kwargs, what):
        if args:
            names = self.list_arguments()
            if len(args) > len(names) or kwargs:
                raise NetsError(f"{what}: pass values by name or all positionally (one per "
                                f"argument {names})")
            return {n: v for n, v in zip(names, args) if v is not None}
        return kwargs

    def _inferred(self, which):
        self._single(f"Symbol.{which}")
        if which == "shape":
            shape = infer_shape(self, {}, partial=True)[1][0]
            if shape is None:
                raise NetsError(f"the shape of {self!r} is unknown: its variables do not "
                                f"declare enough shapes")
            return shape
        return (infer_type if which == "dtype" else infer_storage_type)(self, {})[1][0]

    shape = property(lambda self: self._inferred("shape"), doc="The inferred output shape.")
    dtype = property(lambda self: self._inferred("dtype"), doc="The inferred output dtype.")
    stype = property(lambda self: self._inferred("stype"), doc="The inferred storage type.")
    ndim = property(lambda self: len(self.shape), doc="The inferred number of dimensions.")
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)),
                    doc="The inferred number of elements.")

    # -- binding ------------------------------------------------------------------------------
    def simple_bind(self, ctx: Context | None = None,
                    grad_req: str | Sequence[str] | Mapping[str, str] = "write",
                    type_dict: Mapping[str, DTypeLike] | None = None,
                    stype_dict: Mapping[str, str] | None = None,
                    shared_exec: Executor | None = None,
                    **shapes: tuple[int, ...]) -> Executor:
        """An ``Executor`` with zeros of each argument's and auxiliary state's inferred
        shape, dtype and storage type, and gradient buffers of the inferred gradient
        storage types (``infer_grad_storage_type``: as MXNet, ``dot(csr, w)`` gives ``w``
        a row_sparse one).

        Parameters
        ----------
        ctx : Context, optional
            The device; default the current context.
        grad_req : str, list of str or dict of str to str, default 'write'
            ``'write'``, ``'add'`` or ``'null'``: one for every argument, one per argument
            (``list_arguments()`` order) or by name (missing names: ``'null'``).
        type_dict : dict of str to dtype, optional
            Dtypes of arguments by name (else declared, else inferred; float32).
        stype_dict : dict of str to str, optional
            Storage types of arguments by name (else declared, else ``'default'``).
        shared_exec : Executor, optional
            An executor whose arrays of the same name, shape, dtype and stype are reused;
            its shapes fill what the given ones leave unknown.
        **shapes : tuple of int
            Shapes of arguments by name (``data=(32, 100)``).

        Returns
        -------
        Executor
            The bound executor.
        """
        return simple_bind(self, ctx, grad_req, type_dict, stype_dict, shared_exec, shapes)

    def bind(self, ctx: Context | None,
             args: Mapping[str, NDArray] | Sequence[NDArray],
             args_grad: Mapping[str, NDArray] | Sequence[NDArray | None] | None = None,
             grad_req: str | Sequence[str] | Mapping[str, str] = "write",
             aux_states: Mapping[str, NDArray] | Sequence[NDArray] | None = None) -> Executor:
        """An ``Executor`` over the given arrays (shared, not copied).

        Parameters
        ----------
        ctx : Context or None
            The device; None for the current context.
        args : dict of str to NDArray, or list of NDArray
            The argument arrays by name, or in ``list_arguments()`` order (array-likes
            are converted).
        args_grad : dict of str to NDArray, or list of NDArray, optional
            Gradient buffers by name or in ``list_arguments()`` order; an argument
            without one gets ``grad_req='null'``.
        grad_req : str, list of str or dict of str to str, default 'write'
            ``'write'``, ``'add'`` or ``'null'``: one for all, per argument or by name.
        aux_states : dict of str to NDArray, or list of NDArray, optional
            The auxiliary states by name or in ``list_auxiliary_states()`` order.

        Returns
        -------
        Executor
            The bound executor.
        """
        return bind(self, ctx, args, args_grad, grad_req, aux_states)

    def eval(self, ctx: Context | None = None, **kwargs: NDArray) -> list[NDArray]:
        """The outputs for the given argument arrays (bind, then forward).

        Parameters
        ----------
        ctx : Context, optional
            The device; default the current context.
        **kwargs : NDArray
            Every argument's array, by name.

        Returns
        -------
        list of NDArray
            The outputs.
        """
        return self.bind(ctx, kwargs, grad_req="null").forward()

    # -- serialization -------------------------------------------------------------------------
    def tojson(self) -> str:
        """The graph as JSON text (``load_json`` reads it back).

        Returns
        -------
        str
            The JSON text.
        """
        nodes = self._nodes()
        ids = {node: i for i, node in enumerate(nodes)}
        out = []
        for node in nodes:
            where = f"node {node.name!r}"
            attrs = node.var if node.op is None else node.attrs
            out.append({"op": "null" if node.op is None else node.op.name, "name": node.name,
                        "attrs": {k: _to_json(v, where, k) for k, v in attrs.items()},
                        "inputs": [None if e is None else [ids[e[0]], e[1]]
                                   for e in node.inputs]})
        heads = [[ids[node], k] for node, k in self._outputs]
        return json.dumps({"format": _FORMAT, "nodes": out, "heads": heads})

    def save(self, fname: str | os.PathLike) -> None:
        """Write ``tojson()`` to a text file, atomically (an interrupted save leaves the
        previous file intact).

        Parameters
        ----------
        fname : str or path-like
            The file (conventionally ``<prefix>-symbol.json``).
        """
        text = self.tojson().encode()
        write_atomically(os.fspath(fname), lambda f: f.write(text))

    # -- operators ------------------------------------------------------------------------------
    def reshape(self, *shape, **kwargs):
        """``reshape``; accepts ``reshape(2, 3)`` or ``reshape((2, 3))`` like ``NDArray``."""
        if len(shape) == 1 and not isinstance(shape[0], numbers.Integral):
            shape = shape[0]
        if shape:
            kwargs["shape"] = tuple(shape)
        return _NAMESPACE["reshape"](self, **kwargs)

    @property
    def T(self):
        return _NAMESPACE["transpose"](self)

    def __neg__(self):
        return _NAMESPACE["negative"](self)

    def __abs__(self):
        return _NAMESPACE["abs"](self)


def _binary(name, reflected=False):
    def method(self, other):
        fn = _NAMESPACE[name]
        return fn(other, self) if reflected else fn(self, other)
    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


def _fluent(name):
    def method(self, *args, **kwargs):
        return _NAMESPACE[name](self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"Fluent form of ``nets.sym.{name}(self, ...)``."
    return method


for _py, _name in (("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
                   ("truediv", "divide"), ("pow", "power"), ("mod", "modulo")):
    setattr(Symbol, f"__{_py}__", _binary(_name))
    setattr(Symbol, f"__r{_py}__", _binary(_name, True))
for _py, _name in (("eq", "equal"), ("ne", "not_equal"), ("gt", "greater"),
                   ("ge", "greater_equal"), ("lt", "lesser"), ("le", "lesser_equal")):
    setattr(Symbol, f"__{_py}__", _binary(_name))
for _name in _FLUENT_METHODS:
    if _name != "reshape":
        setattr(Symbol, _name, _fluent(_name))
del _py, _name


# -- building graphs --------------------------------------------------------------------------

def Variable(name: str, attr: Mapping[str, Any] | None = None,
             shape: int | tuple[int, ...] | None = None, lr_mult: float | None = None,
             wd_mult: float | None = None, dtype: DTypeLike | None = None,
             init: init_mod.Initializer | str | None = None, stype: str | None = None,
             grad_stype: str | None = None) -> Symbol:
    """A named placeholder for an array (an argument of the graph); ``var`` is the same.

    Parameters
    ----------
    name : str
        The variable's name (non-empty); two variables with one name are one argument.
    attr : dict, optional
        Extra JSON-able attributes.
    shape : int or tuple of int, optional
        The shape; a 0 leaves that dimension to inference.
    lr_mult : float, optional
        Multiplier of the optimizer's learning rate for this argument.
    wd_mult : float, optional
        Multiplier of the optimizer's weight decay for this argument.
    dtype : str or numpy dtype, optional
        The element type (bool, integer or float).
    init : Initializer or str, optional
        The initializer (or its name) ``Module.init_params`` uses.
    stype : {'default', 'csr', 'row_sparse'}, optional
        The storage type of the array it holds (``simple_bind`` allocates zeros of it).
    grad_stype : {'default', 'csr', 'row_sparse'}, optional
        The storage type of its gradient; default row_sparse for a row_sparse variable,
        else what the operators using it declare.

    Returns
    -------
    Symbol
        A single-output symbol.
    """
    if not isinstance(name, str) or not name:
        raise NetsError(f"Variable: name={name!r} must be a non-empty string")
    spec = {}
    if shape is not None:
        dims = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
        if not all(isinstance(d, numbers.Integral) and d >= 0 for d in dims):
            raise NetsError(f"Variable {name!r}: shape={shape!r} must hold non-negative "
                            f"integers (0 for a dimension to infer)")
        spec["shape"] = tuple(int(d) for d in dims)
    if dtype is not None:
        dtype = as_dtype(dtype)
        if dtype.kind not in "biuf":
            raise DTypeError(f"Variable {name!r}: dtype={dtype.name!r}; arrays hold bool, "
                             f"integer or float values")
        spec["dtype"] = dtype.name
    for key, value in (("stype", stype), ("grad_stype", grad_stype)):
        if value is not None:
            spec[key] = check_stype(value, key)
    if init is not None:
        spec["init"] = init_mod.create(init)
    for key, value in (("lr_mult", lr_mult), ("wd_mult", wd_mult)):
        if value is not None:
            spec[key] = float(value)
    if attr:
        spec["attr"] = dict(attr)
    return Symbol([(_Node(None, name, var=spec), 0)])


var = Variable


def Group(symbols: Iterable[Symbol]) -> Symbol:
    """One symbol whose outputs are those of ``symbols``, in order.

    Parameters
    ----------
    symbols : iterable of Symbol
        The symbols to join.

    Returns
    -------
    Symbol
        A symbol with every output of ``symbols``.
    """
    symbols = list(symbols)
    for i, s in enumerate(symbols):
        if not isinstance(s, Symbol):
            raise TypeError(f"Group: symbols[{i}] is a {type(s).__name__}, not a Symbol")
    return Symbol([e for s in symbols for e in s._outputs])


def _compose(op, args, kwargs):
    """A node applying ``op`` to Symbol inputs; omitted inputs become variables."""
    name = kwargs.pop("name", None)
    try:
        given = op.__signature__.bind_partial(*args, **kwargs).arguments
    except TypeError as e:
        raise OperatorArgumentError(f"{op.name}(): {e}") from None
    if given.get("out") is not None and not isinstance(given["out"], Symbol):
        raise NetsError(f"{op.name}: out= has no meaning for a symbol")  # (an array: refused)
    # out= a Symbol is ignored, as by MXNet's symbol functions: a graph node has no
    # destination buffer, its output is the new symbol
    name = _auto_name(op.name) if name is None else name
    attrs = {k: given[k] for k in op.attrs if k in given}
    missing = [k for k, d in op.attrs.items() if d is REQUIRED and k not in attrs]
    if missing:
        raise OperatorArgumentError(f"{op.name}() missing required argument(s) {missing}")
    if op.variadic:
        inputs = list(given.get(op.inputs[0], ()))
        names = [op.inputs[0]] * len(inputs)
    else:
        names, takes = op.inputs, op.takes(attrs)
        inputs = [given[i] if i in given else  # an omitted weight: MXNet's implicit variable
                  Variable(f"{name}_{i}") if i in takes else None for i in names]
    for k, v in attrs.items():
        if isinstance(v, Symbol):
            raise TypeError(f"{op.name}: attribute {k!r} must be a value, not a Symbol")
    entries = []
    for i, x in zip(names, inputs):
        if x is not None and not isinstance(x, Symbol):
            raise TypeError(f"{op.name}: input {i!r} must be a Symbol, got {type(x).__name__} "
                            f"(bind arrays to Variables instead)")
        entries.append(None if x is None else x._single(f"{op.name}: input {i!r}"))
    node = _Node(op, name, entries, attrs)
    return Symbol([(node, k) for k in range(node.num_outputs)])


def _builder(op):
    """The ``nets.sym`` function of ``op``: same arguments, plus ``name``; returns a Symbol."""
    def build(*args, **kwargs):
        return _compose(op, args, kwargs)
    build.__name__ = build.__qualname__ = op.name
    build.name = op.name
    build.__doc__ = op.__doc__
    params = [p for p in op.__signature__.parameters.values() if p.name != "out"]
    params.append(inspect.Parameter("name", inspect.Parameter.KEYWORD_ONLY, default=None))
    build.__signature__ = inspect.Signature(params)
    return build


def namespace():
    """``{name: function}`` of every operator as a symbol builder: each ``Op`` of the
    registry under its name and its aliases, the plain wrappers of ``nets.ops`` rebuilt
    over the symbolic operators (``add`` picks ``broadcast_add`` or ``_plus_scalar``
    exactly as ``nd.add`` does) and ``Dropout``."""
    ns = {name: _builder(op) for name, op in OPS.items()}
    for module, names in ((ops, ops.__all__), (output, output.__all__)):
        for alias in names:
            obj = getattr(module, alias)
            if isinstance(obj, Op):
                ns[alias] = ns[obj.name]
    ns.update(elemwise.dispatchers(ns.__getitem__))
    ns.update({name: _builder(fop) for name, fop in FUNCTIONS.items()})
    ns["Custom"] = Custom
    return ns


def Custom(*args, name=None, **kwargs):
    """A node of the registered operator ``op_type`` (``nets.operator``) over the symbols
    ``args`` (and symbols passed by argument name); arguments not given become variables
    ``<name>_<argument>``; the other keyword arguments reach its Prop as strings (MXNet's
    ``mx.sym.Custom``)."""
    name = _auto_name("Custom") if name is None else name
    inputs, attrs = operator.bind_custom(args, kwargs, lambda v: isinstance(v, Symbol),
                                         lambda arg: Variable(f"{name}_{arg}"))
    return _compose(OPS["Custom"], inputs, {**attrs, "name": name})


Custom.name = "Custom"


_NAMESPACE = namespace()


# -- JSON -----------------------------------------------------------------------------------------

def _to_json(value, where, key):
    if isinstance(value, init_mod.Initializer):
        name = type(value).__name__.lower()
        try:  # (what load_json will call)
            registered = type(init_mod.create(name, **vars(value))) is type(value)
        except (NetsError, TypeError):
            registered = False
        if not registered:
            raise NetsError(f"{where}: initializer {value!r} is not registered in nets.init, "
                            f"so it cannot be saved")
        return [name, {k: _to_json(v, where, key) for k, v in vars(value).items()}]
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (numbers.Number, np.generic)):
        return value.item() if isinstance(value, np.generic) else value
    if isinstance(value, (tuple, list)):
        return [_to_json(v, where, key) for v in value]
    if isinstance(value, dict):
        return {str(k): _to_json(v, where, key) for k, v in value.items()}
    if isinstance(value, (np.dtype, type)):
        return as_dtype(value).name
    raise NetsError(f"{where}: attribute {key}={value!r} cannot be saved as JSON")


def _from_json(value):
    """JSON lists back to tuples (nets attributes hold tuples: shapes, axes)."""
    if isinstance(value, list):
        return tuple(_from_json(v) for v in value)
    if isinstance(value, dict):
        return {k: _from_json(v) for k, v in value.items()}
    return value


_VAR_KEYS = {"shape", "dtype", "stype", "grad_stype", "init", "lr_mult", "wd_mult", "attr"}


def _load_variable(name, attrs):
    unknown = set(attrs) - _VAR_KEYS
    if unknown:
        raise NetsError(f"variable {name!r} has unknown attributes {sorted(unknown)}")
    attrs = _from_json(attrs)
    init = attrs.get("init")
    if init is not None:
        if not (isinstance(init, tuple) and len(init) == 2 and isinstance(init[1], dict)):
            raise NetsError(f"variable {name!r}: init={init!r} is not [name, arguments]")
        attrs["init"] = init_mod.create(init[0], **init[1])
    if "attr" in attrs:
        attrs["attr"] = dict(attrs["attr"])
    return Variable(name, **attrs)._outputs[0][0]


def _load_node(i, spec, nodes):
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
        raise NetsError(f"node {i} is not an object with a name")
    name, op_name = spec["name"], spec.get("op")
    attrs, inputs = spec.get("attrs", {}), spec.get("inputs", [])
    if not isinstance(attrs, dict) or not isinstance(inputs, list):
        raise NetsError(f"node {i} ({name!r}): attrs must be an object and inputs a list")
    if op_name == "null":
        if inputs:
            raise NetsError(f"variable {name!r} (node {i}) cannot have inputs")
        try:
            return _load_variable(name, attrs)
        except (TypeError, ValueError) as e:
            raise NetsError(f"variable {name!r} (node {i}): {e}") from None
    op = get_op(op_name) if isinstance(op_name, str) else None
    if op is None:
        raise NetsError(f"node {i} ({name!r}): unknown operator {op_name!r}")
    unknown = set(attrs) - set(op.attrs)
    if unknown:
        raise NetsError(f"node {i} ({name!r}): {op_name} has no attributes {sorted(unknown)}")
    if not op.variadic and len(inputs) != len(op.inputs):
        raise NetsError(f"node {i} ({name!r}): {op_name} takes {len(op.inputs)} inputs, the "
                        f"file gives {len(inputs)}")
    entries = []
    for j, e in enumerate(inputs):
        if e is None and not op.variadic and op.inputs[j] in op.optional:
            entries.append(None)
            continue
        if not (isinstance(e, list) and len(e) == 2 and all(type(v) is int for v in e)
                and 0 <= e[0] < i and 0 <= e[1] < nodes[e[0]].num_outputs):
            raise NetsError(f"node {i} ({name!r}): input {j} = {e!r} is not an output of an "
                            f"earlier node")
        entries.append((nodes[e[0]], e[1]))
    try:
        return _Node(op, name, entries, _from_json(attrs))
    except (NetsError, TypeError, ValueError) as e:
        raise NetsError(f"node {i} ({name!r}): {e}") from None


_MAX_DEPTH = 32  # JSON nesting a symbol file may have: nodes, attributes, shapes, init args


def _depth(value):
    """How deeply ``value`` (parsed JSON) nests lists and objects, counted without
    recursion (the validation and conversion of a loaded graph recurse only after it)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        value, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(value, dict):
            stack.extend((v, level + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, level + 1) for v in value)
    return deepest


def load_json(text: str) -> Symbol:
    """The Symbol written by ``Symbol.tojson``. Everything is validated (operators exist,
    attributes are theirs, inputs point at earlier nodes); nothing is executed.

    Parameters
    ----------
    text : str
        The JSON text.

    Returns
    -------
    Symbol
        The graph.
    """
    try:
        graph = json.loads(text)
    except (TypeError, ValueError) as e:
        raise NetsError(f"load_json: not JSON ({e})") from None
    except RecursionError:
        raise NetsError("load_json: the JSON is nested too deeply") from None
    if _depth(graph) > _MAX_DEPTH:
        raise NetsError(f"load_json: the JSON is nested more than {_MAX_DEPTH} levels deep (a "
                        f"symbol file needs a few)")
    if not isinstance(graph, dict) or graph.get("format") != _FORMAT:
        raise NetsError(f"load_json: not a nets symbol (format must be {_FORMAT!r})")
    specs, heads = graph.get("nodes"), graph.get("heads")
    if not isinstance(specs, list) or not isinstance(heads, list) or not heads:
        raise NetsError("load_json: 'nodes' and 'heads' must be lists (heads non-empty)")
    nodes = []
    for i, spec in enumerate(specs):
        try:
            nodes.append(_load_node(i, spec, nodes))
        except NetsError as e:
            raise NetsError(f"load_json: {e}") from None
    outputs = []
    for h in heads:
        if not (isinstance(h, list) and len(h) == 2 and all(type(v) is int for v in h)
                and 0 <= h[0] < len(nodes) and 0 <= h[1] < nodes[h[0]].num_outputs):
            raise NetsError(f"load_json: head {h!r} is not an output of a node")
        outputs.append((nodes[h[0]], h[1]))
    return Symbol(outputs)


def load(fname: str | os.PathLike) -> Symbol:
    """The Symbol saved by ``Symbol.save``.

    Parameters
    ----------
    fname : str or path-like
        The JSON file.

    Returns
    -------
    Symbol
        The graph (validated as ``load_json`` does; nothing is executed).
    """
    try:
        with open(fname) as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise NetsError(f"{fname}: cannot read a symbol file ({e})") from None
    try:
        return load_json(text)
    except NetsError as e:
        raise NetsError(f"{fname}: {e}") from None

