"""Executors: a symbol bound to arrays (MXNet's ``Executor``), run on the autograd engine.

A graph is compiled once into a flat ``Program`` of operator calls over numbered slots.
``forward(is_train=True)`` runs it inside ``autograd.record()`` with the arguments that
want gradients as leaves whose gradient buffers are the executor's ``grad_dict``;
auxiliary states (``aux_dict``) are handed to their operators, which update them in place;
``backward()`` is ``autograd.backward`` over the outputs. There is no second
differentiation mechanism: every operator's own vjp runs, and gradients arrive in the
buffers' storage types (row_sparse where declared).

At bind time each operator node's input and output storage types are inferred (the
operators' own tables); a node whose input stypes have no implementation is reported
with a ``StorageFallbackWarning`` naming the node, and ``NETS_STORAGE_VERBOSE=1`` logs
every node's storage types.
"""
from __future__ import annotations

import collections
import warnings
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import autograd
from ..base import NetsError, ShapeError, StorageFallbackWarning, current_context
from ..arrays.creation import array, zeros
from ..arrays.dense import NDArray
from ..kernels import load_runtime
from ..ops.fusion import fuse
from ..ops.registry import RECORDER, Op, log_storage, storage_verbose
from .inference import infer_grad_storage_type, node_stypes

if TYPE_CHECKING:
    from ..base import Context

__all__ = ["Executor", "Program", "simple_bind", "bind"]

GRAD_REQS = ("write", "add", "null")


class Program:
    """``symbol`` compiled to operator calls over slots: the arguments ``arg_names``
    (default ``list_arguments()``) first, then every node output. ``run(args)`` calls
    the operators, so ``autograd.record()`` around it records them.

    ``keyed``: how many leading arguments the caller keeps to one signature (shape, dtype,
    stype) per program (a hybridized block's inputs: it keeps a program per signature);
    the other arguments (parameters, an executor's bound arrays) must be the very arrays
    of the run that validated the program, or the run validates again."""

    def __init__(self, symbol, arg_names=None, keyed=0):
        self.arg_names = symbol.list_arguments() if arg_names is None else list(arg_names)
        self.keyed = keyed
        slots = {name: i for i, name in enumerate(self.arg_names)}
        where, size, self.steps = {}, len(self.arg_names), []
        for node in symbol._nodes():
            if node.op is None:
                if node.name not in slots:
                    raise NetsError(f"the graph's variable {node.name!r} is not among the "
                                    f"arguments {self.arg_names}")
                where[node, 0] = slots[node.name]
                continue
            ins = tuple(-1 if e is None else where[e] for e in node.inputs)
            attrs = dict(node.op.attrs)  # complete, as a direct implementation call needs
            attrs.update(node.attrs)
            self.steps.append((node.op, ins, attrs, size, node.num_outputs))
            for k in range(node.num_outputs):
                where[node, k] = size + k
            size += node.num_outputs
        self.size, self.heads = size, [where[e] for e in symbol._outputs]
        self._outs = (None,) * (size - len(self.arg_names) + 1)  # the outputs' slots, and -1's
        self._plan = None  # the steps, each with the implementation the first run() noted
        # (position, weak reference) of each argument not keyed, as last validated: an array
        # replaced since is not kept alive by the program
        self._kept = ()

    def run(self, args):
        """The outputs for the argument arrays ``args`` (in ``arg_names`` order).

        The first run calls every operator in full (checks, storage-type inference,
        fallbacks with their warning) and notes the implementation each step's input
        storage types select, folding the pairs of steps that one operator computes
        (``_fuse``); later runs call those directly, skipping the dispatch and the
        operators' checks (MXNet's CachedOp): the signature of the keyed arguments is
        the caller's key, and every other argument is the array the checks validated
        (another one makes the run a full one again). Inside ``autograd.record()`` each
        step is recorded as its operator call records, so outputs and gradients are the
        imperative ones."""
        plan = self._plan
        if plan is not None:
            for i, x in self._kept:
                if args[i] is not x():
                    plan = None
                    break
        full = plan is None
        if full:
            plan = [(*step, None) for step in self.steps]
        vals = [*args, *self._outs]  # (the last slot stays None: an absent input's, -1)
        recorder = RECORDER.get()
        for op, ins, attrs, at, n, fn in plan:
            inputs = tuple([vals[i] for i in ins])
            out = NotImplemented if fn is None else fn(*inputs, **attrs)
            if out is NotImplemented:  # the full call (it records itself)
                try:
                    out = op(*inputs, **attrs)
                except NetsError:
                    raise
                except (TypeError, ValueError) as e:  # (attributes the operator cannot use,
                    # e.g. a_min='abc' from a JSON file: the first run makes every full call)
                    raise NetsError(f"{op.name} with attributes {attrs!r:.200}: "
                                    f"{type(e).__name__}: {e}") from e
                vals[at:at + n] = (out,) if n == 1 else out
                continue
            if isinstance(out, NDArray):
                vals[at] = out
                out = (out,)
            else:
                vals[at:at + n] = out = tuple(out)
            if recorder is not None:
                recorder(op, inputs, attrs, out)
        if full and not storage_verbose():  # (verbose: every call logs its stypes)
            if self._plan is None:
                stypes = [None if v is None else v.stype for v in vals]
                self.steps = _fuse(self.steps, self.heads, stypes)
                self._plan = [(op, ins, attrs, at, n,
                               op.find_impl(tuple([stypes[i] for i in ins]))
                               if isinstance(op, Op) else None)
                              for op, ins, attrs, at, n in self.steps]
            self._kept = tuple([(i, weakref.ref(args[i])) for i in range(self.keyed, len(args))])
        return [vals[h] for h in self.heads]


def _fuse(steps, heads, stypes):
    """``steps`` with each one-input step whose input comes from a single-output step that
    nothing else reads folded into that step where an operator computes both
    (``nets.ops.fusion``: an activation inside a FullyConnected or _dot_bias, the sum of a
    dense product): one operator call and one tape node instead of two, the same values
    and gradients. ``stypes``: each slot's storage type in the run that showed them. The
    fused step writes the second step's slot; the first one's stays empty."""
    reads = collections.Counter(heads)
    for _, ins, _, _, _ in steps:
        reads.update(ins)
    producer = {at: k for k, (_, _, _, at, n) in enumerate(steps) if n == 1}
    fused, dropped = list(steps), set()
    for k, (op, ins, attrs, at, n) in enumerate(steps):
        if n != 1 or len(ins) != 1 or reads[ins[0]] != 1 or ins[0] not in producer:
            continue
        p = producer[ins[0]]
        host, host_ins, host_attrs, _, _ = fused[p]
        merged = fuse(host, host_attrs, tuple([stypes[i] for i in host_ins]), op, attrs)
        if merged is not None:
            fused[p] = (merged[0], host_ins, merged[1], at, 1)
            dropped.add(k)
    return [step for k, step in enumerate(fused) if k not in dropped]


class Executor:
    """A symbol bound to arrays: ``arg_dict`` (argument arrays by name), ``grad_dict``
    (gradient buffers of the arguments whose ``grad_req`` is not 'null'), ``aux_dict``
    (the auxiliary states, which their operators update in place during ``forward``),
    ``outputs`` (the latest forward's results). Created by ``Symbol.simple_bind``/
    ``Symbol.bind``.

    Assigning ``exe.arg_dict['x'][:] = value`` writes into the bound array and keeps
    its storage type. ``storage_report`` lists ``(node, op, input stypes, output stypes,
    falls back)`` for every operator node.

    Parameters
    ----------
    symbol : Symbol
        The graph (``nets.sym.Symbol``).
    ctx : Context
        The device.
    arg_dict : dict of str to NDArray
        The argument arrays, in ``symbol.list_arguments()`` order.
    grad_dict : dict of str to NDArray
        The gradient buffers of the arguments whose ``grad_req`` is not ``'null'``.
    grad_req : dict of str to str
        ``'write'``, ``'add'`` or ``'null'`` for every argument.
    aux_dict : dict of str to NDArray
        The auxiliary states, in ``symbol.list_auxiliary_states()`` order.
    """

    def __init__(self, symbol: Any, ctx: Context, arg_dict: dict[str, NDArray],
                 grad_dict: dict[str, NDArray], grad_req: dict[str, str],
                 aux_dict: dict[str, NDArray]):
        self._symbol, self._ctx = symbol, ctx
        self.arg_dict, self.grad_dict, self.aux_dict = arg_dict, grad_dict, aux_dict
        self._grad_req = grad_req
        self._program = Program(symbol, list(arg_dict) + list(aux_dict))
        self._args = list(arg_dict.values()) + list(aux_dict.values())
        self.outputs = self._allocate_outputs()
        self._recorded = False
        for name, req in grad_req.items():
            if req != "null":
                autograd.mark_variables([arg_dict[name]], [grad_dict[name]], req)
        self.storage_report = self._check_storage()
        # A bound executor is about to run kernels: the kernel runtime loads at bind, as
        # MXNet's engine is loaded before an executor runs, not inside the first forward.
        load_runtime()

    def _allocate_outputs(self):
        """Zeros of each output's inferred shape, dtype and storage type (MXNet allocates
        the outputs at bind, so ``exe.outputs[0].shape`` is known before ``forward``);
        ``[]`` when an output's shape cannot be inferred from the bound arrays."""
        bound = {**self.arg_dict, **self.aux_dict}
        sym = self._symbol
        try:
            _, shapes, _ = sym.infer_shape_partial(**{n: a.shape for n, a in bound.items()})
            _, dtypes, _ = sym.infer_type(**{n: a.dtype for n, a in bound.items()})
            _, stypes, _ = sym.infer_storage_type(**{n: a.stype for n, a in bound.items()})
        except NetsError:
            return []
        if any(s is None or d is None for s, d in zip(shapes, dtypes)):
            return []
        return [zeros(s, self._ctx, d, st) for s, d, st in zip(shapes, dtypes, stypes)]

    def _check_storage(self):
        report, verbose = [], storage_verbose()
        stypes = {n: a.stype for d in (self.arg_dict, self.aux_dict) for n, a in d.items()}
        for node, ins, outs in node_stypes(self._symbol, stypes):
            fallback = node.op.find_impl(ins) is None
            report.append((node.name, node.op.name, ins, outs, fallback))
            if verbose:
                log_storage(f"node {node.name!r} ({node.op.name})", ins, outs)
            if fallback:
                warnings.warn(f"node {node.name!r} ({node.op.name}): no implementation for "
                              f"input storage types {ins}; it will densify them and run the "
                              f"dense implementation", StorageFallbackWarning, stacklevel=4)
        return report

    @property
    def arg_arrays(self):
        return list(self.arg_dict.values())

    @property
    def grad_arrays(self):
        return [self.grad_dict.get(n) for n in self.arg_dict]

    @property
    def aux_arrays(self):
        return list(self.aux_dict.values())

    @property
    def output_dict(self):
        return dict(zip(self._symbol.list_outputs(), self.outputs))

    def forward(self, is_train: bool = False, **kwargs: Any) -> list[NDArray]:
        """Run the graph after copying ``kwargs`` into the bound arrays.

        Parameters
        ----------
        is_train : bool, default False
            Record for ``backward`` and run in train mode (Dropout drops).
        **kwargs : NDArray or array_like
            New values of arguments by name, copied into the bound arrays (their storage
            types are kept).

        Returns
        -------
        list of NDArray
            The outputs (also in ``outputs``).
        """
        for name, value in kwargs.items():
            if name not in self.arg_dict:
                raise NetsError(f"forward: {name!r} is not an argument of the symbol; "
                                f"arguments are {list(self.arg_dict)}")
            self.arg_dict[name][:] = value
        scope = autograd.record(train_mode=True) if is_train else autograd.pause(False)
        with scope:
            self.outputs = self._program.run(self._args)
        self._recorded = is_train
        return self.outputs

    def backward(self, out_grads: NDArray | Sequence[NDArray | None] | None = None,
                 is_train: bool = True) -> None:
        """Gradients of the outputs into ``grad_dict`` (by each argument's ``grad_req``).
        Needs a ``forward(is_train=True)`` first; as in MXNet, backward may run again on the
        same forward (another ``out_grads``; ``'add'`` accumulates once more). The recorded
        graph is kept until the next ``forward``; writing an array it read in between
        (an argument, an auxiliary state) makes the next ``backward`` raise ``NetsError``
        rather than use the old values.

        Parameters
        ----------
        out_grads : NDArray or list of NDArray, optional
            The head gradients, one per output; default ones. Output layers
            (``SoftmaxOutput``...) ignore them.
        is_train : bool, default True
            Run the backward pass in train mode.
        """
        if not self._recorded:
            raise NetsError("backward() needs a forward(is_train=True) first")
        outs = self.outputs
        grads = [None] * len(outs) if out_grads is None else (
            [out_grads] if isinstance(out_grads, NDArray) else list(out_grads))
        if len(grads) != len(outs):
            raise NetsError(f"backward: {len(grads)} out_grads for {len(outs)} outputs")
        pairs = [(o, g if g is None or isinstance(g, NDArray) else array(g, dtype=o.dtype))
                 for o, g in zip(outs, grads) if autograd.in_graph(o)]
        if pairs:
            autograd.backward([o for o, _ in pairs], [g for _, g in pairs],
                              retain_graph=True, train_mode=is_train)

    def copy_params_from(self, arg_params: Mapping[str, NDArray],
                         aux_params: Mapping[str, NDArray] | None = None,
                         allow_extra_params: bool = False) -> None:
        """Copy values into the bound argument and auxiliary arrays (storage types kept).

        Parameters
        ----------
        arg_params : dict of str to NDArray
            Argument values by name.
        aux_params : dict of str to NDArray, optional
            Auxiliary state values by name.
        allow_extra_params : bool, default False
            Skip names that are not arguments (auxiliary states) instead of raising
            ``NetsError``.
        """
        for params, bound, what in ((arg_params, self.arg_dict, "an argument"),
                                    (aux_params or {}, self.aux_dict, "an auxiliary state")):
            for name, value in params.items():
                if name in bound:
                    bound[name][:] = value
                elif not allow_extra_params:
                    raise NetsError(f"copy_params_from: {name!r} is not {what}; pass "
                                    f"allow_extra_params=True to skip it")

    def reshape(self, partial_shaping: bool = False, allow_up_sizing: bool = False,
                **shapes: tuple[int, ...]) -> Executor:
        """A new executor for new argument shapes; arrays whose shape is unchanged (the
        parameters) are shared with this one.

        As in MXNet, an argument or auxiliary state not named in ``shapes`` whose shape
        the new shapes would change (a weight, when a batch's feature width changes) raises
        ``ShapeError`` naming it, unless ``partial_shaping``: a new executor would give it
        fresh zeros and the trained values would be lost.

        Parameters
        ----------
        partial_shaping : bool, default False
            Allow arguments not named in ``shapes`` to change shape (they get new zero
            arrays).
        allow_up_sizing : bool, default False
            Accepted for MXNet (its executors share one memory pool; nets allocates each
            array).
        **shapes : tuple of int
            New shapes of arguments by name.

        Returns
        -------
        Executor
            The new executor.
        """
        bound = {**self.arg_dict, **self.aux_dict}
        if not partial_shaping:
            arg_shapes, _, aux_shapes = self._symbol.infer_shape_partial(**shapes)
            names = self._symbol.list_arguments() + self._symbol.list_auxiliary_states()
            for name, shape in zip(names, arg_shapes + aux_shapes):
                if name not in shapes and shape is not None and tuple(shape) != \
                        bound[name].shape:
                    raise ShapeError(
                        f"Executor.reshape: {name!r} would change shape from "
                        f"{bound[name].shape} to {tuple(shape)} with the new shapes {shapes}; "
                        f"its values would be lost (pass partial_shaping=True to allow it)")
        return simple_bind(self._symbol, self._ctx, self._grad_req,
                           {n: a.dtype for n, a in bound.items()},
                           {n: a.stype for n, a in bound.items()}, self, shapes)

    def __repr__(self):
        return f"<Executor {self._symbol.list_outputs()} @{self._ctx}>"


def _grad_reqs(names, grad_req):
    if isinstance(grad_req, str):
        reqs = dict.fromkeys(names, grad_req)
    elif isinstance(grad_req, dict):
        unknown = set(grad_req) - set(names)
        if unknown:
            raise NetsError(f"grad_req names {sorted(unknown)}, which are not arguments")
        reqs = {n: grad_req.get(n, "null") for n in names}
    else:
        grad_req = list(grad_req)
        if len(grad_req) != len(names):
            raise NetsError(f"grad_req has {len(grad_req)} entries for {len(names)} arguments")
        reqs = dict(zip(names, grad_req))
    bad = {n: r for n, r in reqs.items() if r not in GRAD_REQS}
    if bad:
        raise NetsError(f"grad_req {bad}: each must be one of {GRAD_REQS}")
    return reqs


def simple_bind(symbol, ctx, grad_req, type_dict, stype_dict, shared_exec, shapes):
    """Bind ``symbol`` to zeros of each argument's and auxiliary state's inferred shape,
    dtype and storage type (``shapes``/``type_dict``/``stype_dict`` by name, else declared,
    else inferred) and gradient buffers of the inferred gradient storage types
    (``infer_grad_storage_type``: as MXNet, ``dot(csr, w)`` gives ``w`` a row_sparse one)
    for ``grad_req`` (a string, a list or a dict). Arrays of ``shared_exec`` with the same
    name, shape, dtype and stype are reused; its shapes fill what the given ones leave
    unknown."""
    ctx = current_context(ctx)
    names, aux_names = symbol.list_arguments(), symbol.list_auxiliary_states()
    shapes = dict(shapes)
    old_args = {} if shared_exec is None else {**shared_exec.arg_dict, **shared_exec.aux_dict}
    old_grads = shared_exec.grad_dict if shared_exec is not None else {}
    if shared_exec is not None:
        partial = symbol.infer_shape_partial(**shapes)
        shapes.update({n: old_args[n].shape for n, s in zip(names + aux_names,
                                                             partial[0] + partial[2])
                       if s is None and n in old_args})
    arg_shapes, _, aux_shapes = symbol.infer_shape(**shapes)
    arg_types, _, aux_types = symbol.infer_type(**(type_dict or {}))
    arg_stypes, _, aux_stypes = symbol.infer_storage_type(**(stype_dict or {}))
    grad_stypes = infer_grad_storage_type(symbol, dict(zip(names, arg_stypes)))
    reqs = _grad_reqs(names, grad_req)

    def reuse(old, shape, dtype, stype):
        if old is not None and (old.shape, old.dtype, old.stype) == (shape, dtype, stype):
            return old
        return zeros(shape, ctx, dtype, stype)

    args, grads = {}, {}
    for n, shape, dtype, stype, grad_stype in zip(names, arg_shapes, arg_types, arg_stypes,
                                                  grad_stypes):
        args[n] = reuse(old_args.get(n), shape, dtype, stype)
        if reqs[n] != "null":
            grads[n] = reuse(old_grads.get(n), shape, dtype, grad_stype)
    aux = {n: reuse(old_args.get(n), *spec)
           for n, *spec in zip(aux_names, aux_shapes, aux_types, aux_stypes)}
    return Executor(symbol, ctx, args, grads, reqs, aux)


def _by_name(values, names, what, kind="arguments"):
    """``values`` by name: a dict keeps only the entries of ``names`` (MXNet's bind ignores
    the others, so one dict of arrays may serve several graphs); a list must have one entry
    per name, in order."""
    if isinstance(values, dict):
        return {n: values[n] for n in names if n in values}
    values = list(values)
    if len(values) != len(names):
        raise NetsError(f"bind: {len(values)} {what} for {len(names)} {kind} {names}")
    return dict(zip(names, values))


def _arrays(values, names, what, kind, ctx):
    """``values`` (a dict by name, or a list in ``names`` order) as arrays, one per name."""
    values = _by_name(values, names, what, kind)
    missing = [n for n in names if n not in values]
    if missing:
        raise NetsError(f"bind: no arrays for {kind} {missing}")
    return {n: values[n] if isinstance(values[n], NDArray) else array(values[n], ctx)
            for n in names}


def bind(symbol, ctx, args, args_grad, grad_req, aux_states):
    """Bind ``symbol`` to the given arrays (shared, not copied): ``args`` and
    ``args_grad`` map argument names to arrays (or list them in ``list_arguments()``
    order), ``aux_states`` the auxiliary states (``list_auxiliary_states()`` order); an
    argument without a gradient array gets ``grad_req='null'``."""
    ctx = current_context(ctx)
    names, aux_names = symbol.list_arguments(), symbol.list_auxiliary_states()
    args = _arrays(args, names, "args", "arguments", ctx)
    aux = _arrays(aux_states or {}, aux_names, "aux_states", "auxiliary states", ctx)
    symbol.infer_shape_partial(**{n: a.shape for d in (args, aux) for n, a in d.items()})
    grads = {} if args_grad is None else {
        n: g for n, g in _by_name(args_grad, names, "args_grad").items() if g is not None}
    reqs = {n: r if n in grads else "null" for n, r in _grad_reqs(names, grad_req).items()}
    return Executor(symbol, ctx, args, {n: grads[n] for n in names if reqs[n] != "null"},
                    reqs, aux)
