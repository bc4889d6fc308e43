"""``Block`` and ``HybridBlock`` (MXNet Gluon's).

Children and parameters register by attribute assignment (``self.fc = Dense(4)``,
``self.weight = Parameter(...)``) and by ``self.params.get(...)`` inside
``with self.name_scope():`` (the MXNet tutorial style). Names follow MXNet 1.x:
a block is named after its class and a counter (``dense0``), its parameters
``dense0_weight``; saved files use structural names (``0.weight``), stable
across runs.
"""
from __future__ import annotations

import os
import threading
import types
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from .. import nd as _nd
from .. import symbol as _symbol
from ..symbol.checkpoint import save_checkpoint
from ..base import NetsError
from ..serialization import load_arrays, save_arrays
from .parameter import Parameter, ParameterDict

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from ..arrays import NDArray
    from ..base import Context
    from ..init import Initializer
    from ..symbol import Symbol

__all__ = ["Block", "HybridBlock"]


def op_in(F, op):
    """Operator ``op`` as ``hybrid_forward``'s namespace ``F`` has it: ``op`` itself for
    ``nets.nd`` (which hides private operators such as the fused losses), ``nets.sym``'s
    graph builder of that name when tracing."""
    return op if F is _nd else getattr(F, op.name, op)


class _Scope:
    """Naming scope: the block whose ``name_scope()`` is open, and name counters."""

    _local = threading.local()
    _global_counts = {}

    @classmethod
    def current(cls):
        return getattr(cls._local, "block", None)

    @classmethod
    def make_prefix(cls, prefix, alias):
        parent = cls.current()
        if prefix is not None:
            return prefix if parent is None else parent.prefix + prefix
        counts = cls._global_counts if parent is None else parent._child_counts
        n = counts.get(alias, 0)
        counts[alias] = n + 1
        return (parent.prefix if parent is not None else "") + f"{alias}{n}_"


class _NameScope:
    def __init__(self, block):
        self._block, self._saved = block, None

    def __enter__(self):
        self._saved = _Scope.current()
        _Scope._local.block = self._block
        return self

    def __exit__(self, *exc):
        _Scope._local.block = self._saved


class Block:
    """Base class of layers and models: override ``forward(*args)``.

    Parameters
    ----------
    prefix : str, optional
        The prefix of the names of this block's parameters and children; default the
        class name and a counter (``dense0_``), under the enclosing ``name_scope``'s.
    params : ParameterDict, optional
        Parameters to share: ``params.get(name)`` returns the one of that full name
        there instead of creating a new one.
    """

    def __init__(self, prefix: str | None = None, params: ParameterDict | None = None):
        object.__setattr__(self, "_children", OrderedDict())
        object.__setattr__(self, "_reg_params", OrderedDict())
        self._child_counts = {}
        self._prefix = _Scope.make_prefix(prefix, type(self).__name__.lower())
        self._name = self._prefix[:-1] if self._prefix.endswith("_") else self._prefix
        self._params = ParameterDict(self._prefix, shared=params)

    # -- naming / registration -----------------------------------------------------
    @property
    def prefix(self) -> str:
        """The prefix of this block's names (``dense0_``)."""
        return self._prefix

    @property
    def name(self) -> str:
        """The block's name: the prefix without its trailing ``_``."""
        return self._name

    @property
    def params(self) -> ParameterDict:
        """This block's own ``ParameterDict`` (not its children's)."""
        return self._params

    def name_scope(self) -> _NameScope:
        """``with self.name_scope():`` — blocks and parameters created inside get this
        block's prefix.

        Returns
        -------
        context manager
            Entering it makes this block the naming scope.
        """
        return _NameScope(self)

    def __setattr__(self, name, value):
        if isinstance(value, Block):
            self.register_child(value, name)
        elif isinstance(value, Parameter):
            if value.name not in self._params and not value.name.startswith(self._prefix):
                value.name = self._prefix + value.name
            self._params._add(value)
            self._reg_params[name] = value
        object.__setattr__(self, name, value)

    def register_child(self, block: Block, name: str | None = None) -> None:
        """Register ``block`` as a child (attribute assignment does this).

        Parameters
        ----------
        block : Block
            The child.
        name : str, optional
            Its name among the children (and in saved files); default its index.
        """
        self._children[name if name is not None else str(len(self._children))] = block

    def collect_params(self, select: str | None = None) -> ParameterDict:
        """The parameters of this block and all its descendants.

        Parameters
        ----------
        select : str, optional
            A regular expression: keep only the parameters whose full name matches it
            (e.g. ``'.*weight'``).

        Returns
        -------
        ParameterDict
            The parameters by full name.
        """
        out = ParameterDict(self._prefix)
        out.update(self._params)
        for child in self._children.values():
            out.update(child.collect_params())
        return out if select is None else out.select(select)

    def _structural_params(self, prefix=""):
        """``{'0.weight': param, 'fc.bias': param, ...}``: names from the block tree."""
        out = {prefix + name: p for name, p in self._reg_params.items()}
        for p in self._params.values():  # params.get(...) ones not bound to an attribute
            if p not in out.values():
                out[prefix + p.name[len(self._prefix):]] = p
        for cname, child in self._children.items():
            out.update(child._structural_params(f"{prefix}{cname}."))
        return out

    # -- lifecycle ---------------------------------------------------------------------
    def initialize(self, init: Initializer | str | None = None,
                   ctx: Context | list[Context] | None = None, verbose: bool = False,
                   force_reinit: bool = False) -> None:
        """Initialize all parameters (a parameter of unknown shape waits for the first
        forward pass).

        Parameters
        ----------
        init : Initializer or str, optional
            The initializer of the parameters that have none of their own; default
            ``Uniform(0.07)`` (biases zero).
        ctx : Context or list of Context, optional
            The device; default the current context.
        verbose : bool, default False
            Print each parameter's name as it is initialized.
        force_reinit : bool, default False
            Re-initialize parameters that already have values (otherwise they are kept,
            with a warning).
        """
        self.collect_params().initialize(init, ctx, verbose, force_reinit)

    def zero_grad(self) -> None:
        """Reset all gradients (a row_sparse gradient becomes empty)."""
        self.collect_params().zero_grad()

    def hybridize(self, active: bool = True, **kwargs: Any) -> None:
        """Hybridize every ``HybridBlock`` below this block (see ``HybridBlock.hybridize``);
        a plain ``Block`` itself always runs imperatively.

        Parameters
        ----------
        active : bool, default True
            True runs hybrid children as cached graphs, False imperatively again.
        **kwargs
            Accepted for MXNet's options (``static_alloc``, ...), which change nothing.
        """
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    def cast(self, dtype: DTypeLike) -> None:
        """Cast every parameter (data and gradient) to ``dtype``.

        Parameters
        ----------
        dtype : str or numpy dtype
            The new element type (e.g. ``'float64'``).
        """
        for p in self.collect_params().values():
            p.cast(dtype)

    def save_parameters(self, filename: str | os.PathLike, extra: Any = None) -> None:
        """Save the parameters (sparse ones as sparse) under structural names
        (``0.weight``), atomically.

        Parameters
        ----------
        filename : str or path-like
            The ``.npz`` file to write.
        extra : JSON-able, optional
            Any configuration stored beside the parameters (read back by
            ``read_extra``).
        """
        params = self._structural_params()
        save_arrays(filename, {k: p.data() for k, p in params.items()},
                    {"kind": "parameters", "names": {k: p.name for k, p in params.items()},
                     "extra": extra})

    @staticmethod
    def read_extra(filename: str | os.PathLike) -> Any:
        """The ``extra`` configuration a ``save_parameters`` file holds.

        Parameters
        ----------
        filename : str or path-like
            A file written by ``save_parameters``.

        Returns
        -------
        JSON-able or None
            The ``extra`` value given to ``save_parameters`` (None if none).
        """
        return load_arrays(filename)[1].get("extra")

    def load_parameters(self, filename: str | os.PathLike,
                        ctx: Context | list[Context] | None = None,
                        allow_missing: bool = False, ignore_extra: bool = False) -> None:
        """Load parameters saved by ``save_parameters``.

        Each stored array must have its parameter's shape exactly (nothing broadcasts; a
        deferred parameter's unknown dimensions are taken from the file) and a dtype that
        converts to the parameter's without loss of meaning (``Parameter.set_data``'s
        rule); otherwise ``NetsError`` names the parameter, the file's shape and dtype and
        the expected ones, before any parameter is changed.

        Parameters
        ----------
        filename : str or path-like
            A file written by ``save_parameters``.
        ctx : Context or list of Context, optional
            Accepted for MXNet; the parameters stay on their device.
        allow_missing : bool, default False
            Keep the current values of parameters the file lacks (otherwise
            ``NetsError``).
        ignore_extra : bool, default False
            Skip arrays of the file that no parameter of this block takes (otherwise
            ``NetsError``).
        """
        params = self._structural_params()

        def check(config, declared):
            # names, shapes and dtypes against the model before any value is inflated
            missing = sorted(set(params) - set(declared))
            extra = sorted(set(declared) - set(params))
            if missing and not allow_missing:
                raise NetsError(f"{filename}: no values for parameters {missing} "
                                f"(pass allow_missing=True to keep their current values)")
            if extra and not ignore_extra:
                raise NetsError(f"{filename}: holds parameters {extra} that this block does "
                                f"not have (pass ignore_extra=True to skip them)")
            for name, d in declared.items():
                if name in params:
                    params[name]._checked(d, f"{filename}: parameter {name!r}")

        arrays, _ = load_arrays(filename, check=check)
        values = {name: p._checked(arrays[name], f"{filename}: parameter {name!r}")
                  for name, p in params.items() if name in arrays}
        for name, value in values.items():
            params[name]._set_checked(value)

    # -- calling -----------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def forward(self, *args: Any) -> Any:
        """Override to define the computation.

        Parameters
        ----------
        *args : NDArray
            The inputs.

        Returns
        -------
        NDArray or tuple of NDArray
            The outputs.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement forward()")

    def summary(self, *inputs: NDArray) -> None:
        """Print each parameter's shape, storage types, and the bytes of its weight and
        gradient, measured after one forward/backward pass on ``inputs`` (gradients are
        reset afterwards). This is the MXNet sparse tutorial's memory table, built in.

        Parameters
        ----------
        *inputs : NDArray
            One batch of inputs, as the block is called with.
        """
        from .. import autograd
        with autograd.record():
            outputs = self(*inputs)
        outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        autograd.backward(outputs)
        rows = []
        for name, p in self._structural_params().items():
            data = p.data()
            grad = data.grad
            rows.append((name, str(p.shape), p.stype, p.grad_stype if grad is not None else "-",
                         data.nbytes, grad.nbytes if grad is not None else 0))
        self.zero_grad()
        totals = sum(r[4] for r in rows), sum(r[5] for r in rows)
        rows = [r[:4] + (f"{r[4]:,}", f"{r[5]:,}") for r in rows]
        header = ("Parameter", "Shape", "stype", "grad stype", "Weight bytes", "Grad bytes")
        widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(6)]
        line = "  ".join(f"{{:<{w}}}" if i < 4 else f"{{:>{w}}}" for i, w in enumerate(widths))
        print(line.format(*header))
        for r in rows:
            print(line.format(*r))
        print(f"Total: {totals[0]:,} weight bytes, {totals[1]:,} gradient bytes; "
              f"outputs {[tuple(o.shape) for o in outputs]}")

    def __repr__(self):
        lines = [f"{type(self).__name__}("]
        for name, child in self._children.items():
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        return "\n".join(lines) + "\n)" if self._children else f"{type(self).__name__}()"


class HybridBlock(Block):
    """A block whose computation is ``hybrid_forward(F, x, *args, **params)`` with ``F``
    the ``nets.nd`` namespace and ``params`` this block's parameter arrays by attribute
    name. Unknown parameter shapes are filled by ``infer_shape(x, *args)`` (override it
    in layers that support deferred initialization) on the first call.

    ``hybridize()`` switches to a graph: the next call traces ``hybrid_forward`` with
    ``F = nets.sym`` (parameters become variables named after them, the inputs
    ``data`` or ``data0, data1, ...``) and every later call with inputs of the same
    shapes, dtypes and storage types runs that cached graph: the operators'
    implementations are looked up once, on the first call, then called directly, without
    the block calls, argument binding and storage-type dispatch of the imperative path.
    The same implementations run on the same arrays and ``autograd.record()`` records
    each of them, so outputs and gradients (row_sparse ones and second derivatives
    included) equal the imperative path's.
    Deferred parameter shapes come from the graph's shape inference. ``export(path)``
    saves the latest graph and the parameters (``nets.mod.Module.load`` reads them).

    Parameters
    ----------
    prefix : str, optional
        The prefix of the names of this block's parameters and children; default the
        class name and a counter (``dense0_``).
    params : ParameterDict, optional
        Parameters to share (see ``Block``).
    """

    def __init__(self, prefix: str | None = None, params: ParameterDict | None = None):
        super().__init__(prefix=prefix, params=params)
        self._active = False
        self._cached = {}  # (shape, dtype, stype) of each input -> (program, params, kind)
        self._graph = None  # the latest traced Symbol, for export()

    def hybridize(self, active: bool = True, **kwargs: Any) -> None:
        """Run this block (and its hybrid children) as a cached graph. Retraces on the
        next call.

        Parameters
        ----------
        active : bool, default True
            True runs the cached graph, False imperatively again.
        **kwargs
            Accepted for MXNet's options (``static_alloc``, ...), which change nothing.
        """
        self._active = bool(active)
        self._cached.clear()
        super().hybridize(active, **kwargs)

    def __call__(self, *args, **kwargs):
        if self._active and not kwargs:
            return self._call_cached(args)
        return self.forward(*args, **kwargs)

    def forward(self, x: NDArray | Symbol, *args: NDArray | Symbol) -> Any:
        """``hybrid_forward(F, x, *args, **parameter arrays)`` with ``F`` = ``nets.nd``
        (``nets.sym`` when ``x`` is a ``Symbol``: the block composes a graph).

        Parameters
        ----------
        x : NDArray or Symbol
            The first input.
        *args : NDArray or Symbol
            More inputs.

        Returns
        -------
        NDArray, Symbol or tuple of them
            What ``hybrid_forward`` returns.
        """
        if isinstance(x, _symbol.Symbol):
            return self.hybrid_forward(_symbol, x, *args, **{
                name: _symbol.var(p.name, shape=p.shape, dtype=p.dtype, stype=p.stype,
                                  grad_stype=p.grad_stype, lr_mult=p.lr_mult,
                                  wd_mult=p.wd_mult)
                for name, p in self._reg_params.items()})
        return self.hybrid_forward(_nd, x, *args, **self._param_arrays(x, *args))

    def _call_cached(self, args):
        key = []  # the input signature, which selects the program
        for a in args:
            if not isinstance(a, _nd.NDArray):
                if any([isinstance(a, _symbol.Symbol) for a in args]):
                    return self.forward(*args)  # (Symbol inputs: composing a larger graph)
                return self._call_cached([a if isinstance(a, _nd.NDArray) else _nd.array(a)
                                          for a in args])
            key.append((a.shape, a.dtype, a.stype))
        key = tuple(key)
        entry = self._cached.get(key)
        if entry is None:
            entry = self._cached[key] = self._trace(list(args))
        program, params, kind = entry
        args = [*args]
        for p in params:
            a = p._array
            args.append(a if a is not None else p.data())  # (data() says why there is none)
        outs = program.run(args)
        return outs[0] if kind is None else kind(outs)

    def _trace(self, args):
        """Trace ``forward`` on variables shaped like ``args``; finish deferred parameter
        initialization from the graph's shapes; compile the graph."""
        from ..symbol.executor import Program
        names = ["data"] if len(args) == 1 else [f"data{i}" for i in range(len(args))]
        out = self.forward(*[_symbol.var(n, shape=a.shape, dtype=a.dtype, stype=a.stype)
                             for n, a in zip(names, args)])
        kind = type(out) if isinstance(out, (list, tuple)) else None  # several outputs
        graph = out if kind is None else _symbol.Group(out)
        by_name = dict(self.collect_params().items())
        arguments = graph.list_arguments()
        unknown = [n for n in arguments if n not in names and n not in by_name]
        if unknown:
            raise NetsError(f"{type(self).__name__}.hybridize: the graph uses variables "
                            f"{unknown} that are neither inputs nor parameters of the block")
        params = [by_name[n] for n in arguments if n in by_name]
        if any(p._array is None for p in params):
            shapes = dict(zip(arguments, graph.infer_shape_partial(
                **{n: a.shape for n, a in zip(names, args)})[0]))
            for p in params:
                if p._array is None and p._deferred is not None and shapes[p.name]:
                    p.shape = shapes[p.name]
                    p._finish_deferred_init()
        self._graph = graph
        return Program(graph, names + [p.name for p in params], keyed=len(names)), params, kind

    def export(self, path: str, epoch: int = 0) -> None:
        """Save the latest traced graph to ``<path>-symbol.json`` and its parameters to
        ``<path>-<epoch:04d>.params.npz`` (``nets.mod.save_checkpoint``'s files). Needs
        ``hybridize()`` and one call first.

        Parameters
        ----------
        path : str
            The files' prefix.
        epoch : int, default 0
            The epoch number in the parameters file's name.
        """
        if self._graph is None:
            raise NetsError(f"{type(self).__name__}.export needs a graph: call hybridize() "
                            f"and run the block once first")
        params = dict(self.collect_params().items())
        save_checkpoint(path, epoch, self._graph, {n: params[n].data() for n in
                                                   self._graph.list_arguments()
                                                   if n in params})

    def _param_arrays(self, *inputs):
        if not self._reg_params:  # (activations, losses)
            return {}
        arrays = {name: p._array for name, p in self._reg_params.items()}
        for a in arrays.values():
            if a is None:
                break
        else:
            return arrays
        pending = [p for p in self._reg_params.values() if p._array is None]
        if any(p._deferred is not None for p in pending):
            self.infer_shape(*inputs)
        for p in pending:
            p._finish_deferred_init()
            p._check_initialized()
        return {name: p._array for name, p in self._reg_params.items()}

    def infer_shape(self, *args: NDArray) -> None:
        """Set unknown parameter shapes from the inputs (layers override this).

        Parameters
        ----------
        *args : NDArray
            The inputs of the first call.
        """
        unknown = [p.name for p in self._reg_params.values() if p._deferred is not None]
        raise NetsError(f"{type(self).__name__} cannot infer the shapes of {unknown}; give "
                        f"the full shape when creating them")

    def hybrid_forward(self, F: types.ModuleType, x: NDArray | Symbol, *args: Any,
                       **params: Any) -> Any:
        """Override to define the computation.

        Parameters
        ----------
        F : module
            The operator namespace: ``nets.nd``, or ``nets.sym`` while tracing a graph.
        x : NDArray or Symbol
            The first input.
        *args : NDArray or Symbol
            More inputs.
        **params : NDArray or Symbol
            The block's parameter arrays by attribute name (``weight``, ``bias``).

        Returns
        -------
        NDArray, Symbol or tuple of them
            The outputs.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement hybrid_forward()")
