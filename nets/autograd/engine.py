"""Reverse-mode differentiation over the recorded graph: ``backward`` and ``grad``."""
from heapq import heappop, heappush
from operator import attrgetter

import numpy as np

from ..base import NetsError, ShapeError
from ..arrays.creation import array, zeros
from ..arrays.dense import WRITES, NDArray
from ..ops.registry import OPS, Op
from ..ops.sparse_ops import values_at
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


def _zero_grad(x, stype):
    """The zero gradient of ``x`` in storage type ``stype``: a CSR leaf's csr gradient has
    the leaf's pattern (zeros at its stored values), any other is empty or dense zeros."""
    if x.stype == stype == "csr":
        return values_at(_zeros_like(x, "row_sparse"), x)
    return _zeros_like(x, stype)


def _as_list(x, name):
    if x is None or isinstance(x, NDArray):
        return [x]
    if isinstance(x, (list, tuple)):
        return list(x)
    raise TypeError(f"{name} must be an NDArray or a list of NDArrays, got {type(x).__name__}")


def _head_entries(heads, head_grads):
    """``[(entry, grad)]`` for each head (``head_grads`` default to ones)."""
    if head_grads is None and heads.__class__ is NDArray:  # (``loss.backward()``)
        e = heads._node
        if e is not None and e[0].parents is not None:
            return [(e, _ones_like(heads))]
    heads = (heads,) if heads.__class__ is NDArray else _as_list(heads, "heads")
    if head_grads is None:
        head_grads = (None,) * len(heads)
    else:
        head_grads = _as_list(head_grads, "head_grads")
        if len(head_grads) != len(heads):
            raise NetsError(f"got {len(heads)} heads but {len(head_grads)} head_grads")
    out = []
    for i, h in enumerate(heads):
        g = head_grads[i]
        if not isinstance(h, NDArray):
            raise TypeError(f"heads[{i}] must be an NDArray, got {type(h).__name__}")
        e = h._node
        if e is not None:
            if e[0].parents is None:
                raise NetsError(f"cannot differentiate heads[{i}]: {_FREED}")
        elif h._grad_slot is not None:
            e = h  # a leaf is its own head
        else:
            raise NetsError(f"heads[{i}] was not computed inside autograd.record() from arrays "
                            f"with attach_grad(), so there is no graph to differentiate: call "
                            f"attach_grad() on the inputs and run the forward pass inside "
                            f"`with autograd.record():`")
        if g is None:
            g = _ones_like(h)
        else:
            if not isinstance(g, NDArray):
                g = array(g, dtype=h.dtype)
            if tuple(g.shape) != tuple(h.shape):
                raise ShapeError(f"head_grads[{i}] has shape {tuple(g.shape)}, but heads[{i}] "
                                 f"has shape {tuple(h.shape)}")
        out.append((e, g))
    return out


def _ones_like(h):
    """Dense ones of ``h``'s shape and dtype: the default head gradient."""
    ones = np.empty(h.shape, h.dtype)
    ones.fill(1)  # (np.ones costs twice as much: a Python-level wrapper)
    return NDArray(ones, h.context)


_SEQ = attrgetter("seq")


def _backprop(heads, head_grads, is_target, target_entries, retain_graph, prune):
    """Propagate from the heads to the targets: leaves for which ``is_target(leaf)`` and
    node outputs in ``target_entries``. Returns ``({id: (leaf, grad)}, {entry: grad})``;
    a target leaf the heads reach gets None when no gradient arrived, one they do not
    reach is absent; a leaf's gradient is ``(sum, owned)``, ``owned`` telling that the sum
    is a new array nothing else holds: one the engine made from several contributions, or
    the one contribution of a vjp declared ``fresh``. The caller sets the recording and
    training state (``_Scope``).

    Nodes run latest first (a heap on ``seq``: creation order is a topological order), so
    a node runs once every node reading it has and its output gradients are complete;
    only nodes a gradient reached run. A node runs its vjp only if a gradient must flow
    through it to a target. With ``prune`` those nodes are found first (``_leading``: for
    ``grad``, whose variables may be a few of the leaves). Without it every node reached
    leads to a target, since a node is recorded only when an input has a gradient slot or
    comes from a node, unless some slot says 'null' (then a vjp may run in vain); a node
    is then checked (``_leads``) only before an error is raised for it."""
    grads, leaves = {}, {}  # the list of contributions to (node, k) or to id(leaf)
    pending, queued = [], set()  # the heap of (-seq, node) a gradient reached
    heads = _head_entries(heads, head_grads)
    for e, g in heads:
        if type(e) is tuple:
            node = e[0]
            if node not in queued:
                queued.add(node)
                heappush(pending, (-node.seq, node))
        elif is_target(e):
            leaves[id(e)] = e
            e = id(e)
        else:
            continue
        grads.setdefault(e, []).append(g)
    if prune:
        done, needed = _leading([e[0] for e, _ in heads if type(e) is tuple], is_target,
                                target_entries)
    else:
        done, needed = [], None  # (the nodes to free: those run or walked, ``_reach``)
    # ids of leaf gradients a ``fresh`` vjp made (each stays alive in ``grads`` until the
    # end, so no other array can take its id meanwhile)
    results, fresh = {}, set()
    while pending:
        node = heappop(pending)[1]
        parents = node.parents
        if parents is None:
            raise NetsError(f"cannot differentiate through part of this graph: {_FREED}")
        if needed is None:
            done.append(node)
        outputs = node.outputs
        if len(outputs) == 1:  # (most nodes)
            g = grads.pop((node, 0))
            out_grads = (g[0] if len(g) == 1 else _sum(g),)
            if target_entries and (node, 0) in target_entries:
                results[node, 0] = out_grads[0]
        else:
            out_grads = []
            for k, o in enumerate(outputs):
                g = grads.pop((node, k), None)
                if g is not None:
                    g = g[0] if len(g) == 1 else _sum(g)
                    if target_entries and (node, k) in target_entries:
                        results[node, k] = g
                out_grads.append(_zeros_like(o) if g is None else g)
        if needed is not None and node not in needed:
            continue
        # The node's vjp, with every output's gradient (zeros for outputs none reached)
        op = node.op
        fn = getattr(op, "_vjp_fn", None)
        if fn is None or node.writes != WRITES[0]:  # (some array was written since)
            if needed is None and not _leads(node, is_target):
                _reach([node], is_target, leaves, done)
                continue
            node.check_versions()
            if fn is None:
                raise NetsError(f"no gradient for op {_name(op)!r}: it has no vjp, and a "
                                f"gradient must flow through it to reach an array with "
                                f"attach_grad(); compute it outside autograd.record() or under "
                                f"autograd.pause(), or detach() its inputs")
        in_grads = fn(node, *out_grads)
        if in_grads.__class__ is not tuple or op.__class__ is not Op or \
                len(in_grads) != len(parents):  # (the operators' own vjps are tested)
            in_grads = _checked(node, in_grads)
        owned = getattr(op, "vjp_fresh", False)
        for i, p in enumerate(parents):
            if p is None:
                continue
            g = in_grads[i]
            if type(p) is tuple:
                if needed is not None and p[0] not in needed and p not in target_entries:
                    continue
                if g is None:  # (a node input without a gradient: its leaves still count)
                    if needed is not None or _leads(p[0], is_target):
                        _no_gradient(node, i)
                    if needed is None:
                        _reach([p[0]], is_target, leaves, done)
                    continue
                q = p[0]
                if q not in queued:
                    queued.add(q)
                    heappush(pending, (-q.seq, q))
                grads.setdefault(p, []).append(g)
            elif is_target(p):
                k = id(p)
                leaves[k] = p
                if g is None:
                    _no_gradient(node, i)
                    continue
                grads.setdefault(k, []).append(g)
                if owned:
                    fresh.add(id(g))
    leaf_grads = {}
    for k, x in leaves.items():
        c = grads.get(k)
        leaf_grads[k] = x, (None if c is None else _leaf_grad(x, c, fresh))
    if not retain_graph:
        for node in done:
            node.free()
    return leaf_grads, results


def _leading(nodes, is_target, target_entries):
    """``(reached, needed)``: the nodes reachable from ``nodes`` and those among them a
    gradient must flow through to reach a target."""
    reached = []
    _reach(nodes, is_target, {}, reached)
    reached.sort(key=_SEQ)  # (creation order is a topological order)
    needed = set()
    for node in reached:
        for p in node.parents:
            if p is not None and ((p[0] in needed or p in target_entries)
                                  if type(p) is tuple else is_target(p)):
                needed.add(node)
                break
    return reached, needed


def _leads(node, is_target):
    """Whether a target leaf is reachable from ``node``."""
    found = {}
    _reach([node], is_target, found, [])
    return bool(found)


def _reach(nodes, is_target, leaves, done):
    """Note the target leaves under ``nodes``, which the heads reach though no gradient
    may flow to them this way (``backward`` delivers them zeros), in ``leaves``, and the
    nodes walked in ``done``."""
    stack, seen = list(nodes), set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        parents = node.parents
        if parents is None:
            raise NetsError(f"cannot differentiate through part of this graph: {_FREED}")
        seen.add(node)
        done.append(node)
        for p in parents:
            if type(p) is tuple:
                stack.append(p[0])
            elif p is not None and is_target(p):
                leaves[id(p)] = p


def _leaf_grad(x, contributions, fresh):
    """``(sum, owned)`` of a leaf's gradient contributions (a list; ``fresh``: the ids of
    those a ``fresh`` vjp made). A CSR leaf with a csr
    gradient slot receives the gradient with respect to its stored values
    (docs/mxnet-compat.md, "Gradient of a CSR input"): the sum sampled at its pattern
    (``values_at``), as ``torch.sparse.mm`` gives; a leaf
    declaring a dense or row_sparse gradient receives the full one."""
    if len(contributions) == 1:
        g = contributions[0]
        merged = id(g) in fresh
    else:
        g, merged = _sum(contributions), True
    if x.stype == "csr" and x._grad_slot.stype == "csr":
        sampled = values_at(g, x)
        merged, g = merged or sampled is not g, sampled
    return g, merged


def _no_gradient(node, i):
    """Raise when operator ``node.op`` has no gradient for its csr input ``i`` although it
    has one for a dense input there (e.g. ``FullyConnected``'s csr data): a gradient
    asked of that input must never arrive as silent zeros."""
    op, x = node.op, node.inputs[i]
    if op.__class__ is not Op or x is None or x.stype != "csr":
        return
    stypes = [None if y is None else y.stype for y in node.inputs]
    dense = list(stypes)
    dense[i] = "default"
    if op.infer_grad_stype(*stypes, **node.attrs)[i] is None and \
            op.infer_grad_stype(*dense, **node.attrs)[i] is not None:
        name = op.inputs[0] if op.variadic else op.inputs[i]
        raise NetsError(f"no gradient for the csr input {name!r} of op {op.name!r}: the "
                        f"operator computes none for csr data; detach() that input, declare "
                        f"it grad_req='null', or pass it dense (x.tostype('default'))")


def _checked(node, in_grads):
    """What a vjp other than an operator's own returned, as one gradient (or None) per
    input, each checked to be an NDArray of the input's shape."""
    op = node.op
    if in_grads is None or isinstance(in_grads, NDArray):
        in_grads = (in_grads,)
    elif not isinstance(in_grads, tuple):
        in_grads = tuple(in_grads)
    if op.__class__ is Op and len(in_grads) == len(node.inputs):
        return in_grads
    if len(in_grads) != len(node.inputs):
        raise NetsError(f"the gradient of op {_name(op)!r} returned {len(in_grads)} gradients "
                        f"for its {len(node.inputs)} inputs; it must return one per input "
                        f"(None where there is none)")
    for i, (g, x) in enumerate(zip(in_grads, node.inputs)):
        if g is None:
            continue
        if not isinstance(g, NDArray):
            raise TypeError(f"the gradient of op {_name(op)!r} for input {i} must be an NDArray "
                            f"or None, got {type(g).__name__}")
        if x is not None and g.shape != x.shape:
            raise ShapeError(f"the gradient of op {_name(op)!r} for input {i} has shape "
                             f"{tuple(g.shape)}, but the input has shape {tuple(x.shape)}")
    return in_grads


def _name(op):
    return getattr(op, "name", None) or repr(op)


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):
    """Compute the gradients of ``heads`` (an array or a list; ``head_grads`` default to
    ones) with respect to every leaf they depend on, and deliver each into its leaf's
    gradient slot (``leaf.grad``, in the slot's storage type) by the slot's ``grad_req``:
    ``'write'`` overwrites (zeros when no gradient reaches a leaf the heads depend on),
    ``'add'`` accumulates (row union when row_sparse), ``'null'`` skips; each slot
    delivered to becomes fresh. The graph is freed unless ``retain_graph``;
    ``train_mode`` is ``is_training()`` during the backward pass."""
    with _Scope(False, train_mode, engine=True):  # (propagation and delivery)
        leaf_grads, _ = _backprop(heads, head_grads, _delivers, (), retain_graph, False)
        for x, g in leaf_grads.values():
            if g is None and x.stype == x._grad_slot.stype == "csr":
                g = _zero_grad(x, "csr"), True  # zeros at the leaf's pattern
            _deliver(x._grad_slot, g)


def _delivers(x):
    slot = x._grad_slot
    return slot is not None and slot.req != "null"


def _deliver(slot, grad):
    """Deliver ``grad`` (``(sum, owned)`` or None) into ``slot``'s buffer, keeping the
    buffer object and its storage type. Dense buffers are written in place (views of
    them keep showing the gradient). A sparse buffer's parts are replaced on every
    write; it takes the parts of an array nothing else holds (a merge of several
    contributions, the ``'add'`` sum, or what a ``fresh`` vjp made) and copies those of
    any other array, which a vjp may share with a caller (a head gradient passed through,
    a saved input)."""
    buf = slot.buffer
    if slot.req == "add":
        if grad is not None:
            buf.assign_result(_sum([buf, grad[0]]))
    elif grad is None:
        buf[:] = 0  # (a sparse buffer becomes empty)
    elif grad[1]:
        buf.assign_result(grad[0])
    else:
        buf[:] = grad[0]  # copies, cast to the buffer's storage type and dtype
    slot.fresh = True


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
        elif v._grad_slot is not None:
            leaf_ids.add(id(v))
        else:
            raise NetsError(f"cannot differentiate with respect to variables[{i}]: it is not "
                            f"differentiable (call attach_grad() on it before "
                            f"autograd.record(), or pass an array computed inside record())")
    if retain_graph is None:
        retain_graph = create_graph
    with _Scope(create_graph, train_mode, engine=True):
        leaf_grads, results = _backprop(heads, head_grads, lambda x: id(x) in leaf_ids,
                                        entries, retain_graph, True)
    out = []
    for v in variables:
        if v._node is not None:
            g = results.get(v._node)
        else:
            g = leaf_grads.get(id(v), (v, None))[1]
            g = None if g is None else g[0]
        slot = v._grad_slot
        out.append(_zero_grad(v, v.stype if slot is None else slot.stype) if g is None else g)
    return out[0] if single else out
