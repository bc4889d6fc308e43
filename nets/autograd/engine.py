"""Reverse-mode differentiation over the recorded graph: ``backward`` and ``grad``."""
import numpy as np

from ..base import NetsError, ShapeError
from ..ndarray.creation import array, zeros
from ..ndarray.dense import NDArray
from ..ops.registry import OPS
from .tape import _Scope

__all__ = ["backward", "grad"]

_FREED = ("the graph was freed by a previous backward(); pass retain_graph=True to that "
          "backward() to differentiate the same graph again")


def _sum(grads):
    """Sum gradient contributions with ``add_n``: row_sparse ones over the union of their
    rows (never densified), dense + sparse by scatter-adding the stored values. Recording
    is off here unless ``create_graph``, so nothing is recorded."""
    return grads[0] if len(grads) == 1 else OPS["add_n"](*grads)


def _zeros_like(x, stype=None):
    return zeros(x.shape, x.context, x.dtype, stype or x.stype)


def _as_list(x, name):
    if x is None or isinstance(x, NDArray):
        return [x]
    if isinstance(x, (list, tuple)):
        return list(x)
    raise TypeError(f"{name} must be an NDArray or a list of NDArrays, got {type(x).__name__}")


def _head_entries(heads, head_grads):
    """``[(entry, grad)]`` for each head (``head_grads`` default to ones)."""
    heads = _as_list(heads, "heads")
    head_grads = [None] * len(heads) if head_grads is None else _as_list(head_grads, "head_grads")
    if len(head_grads) != len(heads):
        raise NetsError(f"got {len(heads)} heads but {len(head_grads)} head_grads")
    out = []
    for i, (h, g) in enumerate(zip(heads, head_grads)):
        if not isinstance(h, NDArray):
            raise TypeError(f"heads[{i}] must be an NDArray, got {type(h).__name__}")
        if h._node is not None:
            if h._node[0].parents is None:
                raise NetsError(f"cannot differentiate heads[{i}]: {_FREED}")
            e = h._node
        elif h._grad is not None:
            e = h  # a leaf is its own head
        else:
            raise NetsError(f"heads[{i}] was not computed inside autograd.record() from arrays "
                            f"with attach_grad(), so there is no graph to differentiate: call "
                            f"attach_grad() on the inputs and run the forward pass inside "
                            f"`with autograd.record():`")
        if g is None:
            g = NDArray(np.ones(h.shape, h.dtype), h.context)
        elif not isinstance(g, NDArray):
            g = array(g, dtype=h.dtype)
        if tuple(g.shape) != tuple(h.shape):
            raise ShapeError(f"head_grads[{i}] has shape {tuple(g.shape)}, but heads[{i}] has "
                             f"shape {tuple(h.shape)}")
        out.append((e, g))
    return out


def _graph(entries):
    """The nodes reachable from ``entries``, in creation (topological) order."""
    seen = {}
    stack = [e[0] for e in entries if isinstance(e, tuple)]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        if node.parents is None:
            raise NetsError(f"cannot differentiate through part of this graph: {_FREED}")
        seen[node] = None
        stack.extend(p[0] for p in node.parents if isinstance(p, tuple))
    return sorted(seen, key=lambda n: n.seq)


def _backprop(heads, head_grads, is_target, target_entries, retain_graph, train_mode,
              create_graph):
    """Propagate from the heads to the targets: leaves for which ``is_target(leaf)`` and
    node outputs in ``target_entries``. Returns ``({id: (leaf, grad)}, {entry: grad})``;
    a target leaf the heads reach gets None when no gradient arrived, one they do not
    reach is absent."""
    heads = _head_entries(heads, head_grads)
    nodes = _graph([e for e, _ in heads])
    grads, leaves = {}, {}
    for e, g in heads:
        if not isinstance(e, tuple):
            if not is_target(e):
                continue
            leaves[id(e)] = e
            e = id(e)
        grads.setdefault(e, []).append(g)

    # A node runs its vjp only if a gradient must flow through it to a target.
    needed = set()
    for node in nodes:
        for p in node.parents:
            if p is None:
                continue
            if isinstance(p, tuple):
                if p[0] in needed or p in target_entries:
                    needed.add(node)
            elif is_target(p):
                needed.add(node)
                leaves[id(p)] = p

    results = {}
    with _Scope(create_graph, train_mode):
        for node in reversed(nodes):
            out_grads = [grads.pop((node, k), None) for k in range(len(node.outputs))]
            out_grads = [None if g is None else _sum(g) for g in out_grads]
            for k, g in enumerate(out_grads):
                if (node, k) in target_entries:
                    results[node, k] = g
            if node not in needed or all(g is None for g in out_grads):
                continue
            for p, g in zip(node.parents, _vjp(node, out_grads)):
                if g is None or p is None:
                    continue
                if isinstance(p, tuple):
                    if p[0] in needed or p in target_entries:
                        grads.setdefault(p, []).append(g)
                elif id(p) in leaves:
                    grads.setdefault(id(p), []).append(g)
        leaf_grads = {k: (x, _sum(grads[k]) if k in grads else None) for k, x in leaves.items()}
    if not retain_graph:
        for node in nodes:
            node.free()
    return leaf_grads, results


def _vjp(node, out_grads):
    """Call the node's vjp with every output's gradient (zeros for outputs none reached)
    and check that it returns one gradient (or None) per input, each of the input's shape."""
    op = node.op
    fn = getattr(op, "_vjp_fn", None)
    name = getattr(op, "name", repr(op))
    if fn is None:
        raise NetsError(f"no gradient for op {name!r}: it has no vjp, and a gradient must flow "
                        f"through it to reach an array with attach_grad(); compute it outside "
                        f"autograd.record() or under autograd.pause(), or detach() its inputs")
    out_grads = [_zeros_like(o) if g is None else g for g, o in zip(out_grads, node.outputs)]
    in_grads = fn(node, *out_grads)
    if in_grads is None or isinstance(in_grads, NDArray):
        in_grads = (in_grads,)
    in_grads = tuple(in_grads)
    if len(in_grads) != len(node.inputs):
        raise NetsError(f"the gradient of op {name!r} returned {len(in_grads)} gradients for "
                        f"its {len(node.inputs)} inputs; it must return one per input (None "
                        f"where there is none)")
    for i, (g, x) in enumerate(zip(in_grads, node.inputs)):
        if g is None:
            continue
        if not isinstance(g, NDArray):
            raise TypeError(f"the gradient of op {name!r} for input {i} must be an NDArray or "
                            f"None, got {type(g).__name__}")
        if x is not None and tuple(g.shape) != tuple(x.shape):
            raise ShapeError(f"the gradient of op {name!r} for input {i} has shape "
                             f"{tuple(g.shape)}, but the input has shape {tuple(x.shape)}")
    return in_grads


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):
    """Compute the gradients of ``heads`` (an array or a list; ``head_grads`` default to
    ones) with respect to every leaf they depend on, and deliver each into ``leaf.grad`` in
    that buffer's storage type: ``grad_req='write'`` overwrites (zeros when no gradient
    reaches a leaf the heads depend on), ``'add'`` accumulates (row union when row_sparse),
    ``'null'`` skips. The graph is freed unless ``retain_graph``; ``train_mode`` is
    ``is_training()`` during the backward pass."""
    leaf_grads, _ = _backprop(heads, head_grads, lambda x: x._grad_req != "null", (),
                              retain_graph, train_mode, False)
    with _Scope(False, train_mode):
        for x, g in leaf_grads.values():
            buf = x._grad
            if x._grad_req == "add":
                if g is not None:
                    buf._assign(_sum([buf, g]))
            else:
                buf[:] = _zeros_like(buf) if g is None else g  # copies; casts to buf's stype
            x._fresh_grad = True  # the Trainer refuses stale gradients (not set since a step)


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False,
         train_mode=True):
    """The gradients of ``heads`` with respect to ``variables`` (leaves with
    ``attach_grad`` or arrays recorded inside ``record()``), returned without touching any
    ``.grad``. Each comes in the storage type the gradient computation produced (zeros of
    the variable's gradient stype when none reaches it). ``create_graph`` records the
    computation so the result can be differentiated again; ``retain_graph`` defaults to
    ``create_graph``. Returns an array for a single variable, else a list."""
    single = isinstance(variables, NDArray)
    variables = _as_list(variables, "variables")
    leaf_ids, entries = set(), set()
    for i, v in enumerate(variables):
        if not isinstance(v, NDArray):
            raise TypeError(f"variables[{i}] must be an NDArray, got {type(v).__name__}")
        if v._node is not None:
            if v._node[0].parents is None:
                raise NetsError(f"cannot differentiate with respect to variables[{i}]: {_FREED}")
            entries.add(v._node)
        elif v._grad is not None:
            leaf_ids.add(id(v))
        else:
            raise NetsError(f"cannot differentiate with respect to variables[{i}]: it is not "
                            f"differentiable (call attach_grad() on it before "
                            f"autograd.record(), or pass an array computed inside record())")
    if retain_graph is None:
        retain_graph = create_graph
    leaf_grads, results = _backprop(heads, head_grads, lambda x: id(x) in leaf_ids, entries,
                                    retain_graph, train_mode, create_graph)
    out = []
    for v in variables:
        g = results.get(v._node) if v._node is not None else leaf_grads.get(id(v), (v, None))[1]
        out.append(_zeros_like(v, v._grad.stype if v._grad is not None else v.stype)
                   if g is None else g)
    return out[0] if single else out
