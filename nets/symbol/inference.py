"""Shape, dtype and storage-type inference over a symbol graph: walks that ask each node's
operator (its declarations in ``nets.ops``: ``infer_stype``, ``infer_shape``,
``infer_dtype``, ``infer_grad_stype``) and hold no rule of their own.

Storage types flow forward from the variables' stypes. Shapes flow both ways: each
operator's rule returns its input shapes (filling those it can deduce, e.g.
``FullyConnected``'s weight from the data) and its output shapes, in passes until
nothing changes. Dtypes flow forward (a value input with no dtype takes its fellow
inputs'); what stays unknown is float32. Gradient storage types: a variable's declared
``grad_stype``, else the sum (``add_n``'s rule) of what every operator using it declares
for that input, else the variable's own stype. Auxiliary states are variables like the
others in every walk; the results list them apart (``list_auxiliary_states()`` order).
"""
import numbers

import numpy as np

from ..base import NetsError, ShapeError, as_dtype
from ..ops.registry import get_op

__all__ = ["infer_shape", "infer_type", "infer_storage_type", "infer_grad_storage_type",
           "node_stypes"]


# -- the graph walks ------------------------------------------------------------------------

def _is_dim(d):
    """Whether ``d`` is a dimension: a non-negative integer (a whole float counts, as shape
    rules may divide) below 2**63."""
    return (isinstance(d, numbers.Integral) and not isinstance(d, bool)
            or isinstance(d, float) and d.is_integer()) and 0 <= d < 2 ** 63


class _Values:
    """One value per graph entry, variables shared by name."""

    def __init__(self, nodes, given, declared):
        self.vars = {}
        for node in nodes:
            if node.op is None and node.name not in self.vars:
                self.vars[node.name] = given.get(node.name, declared(node))
        unknown = sorted(set(given) - set(self.vars))
        if unknown:
            raise NetsError(f"{unknown} are not arguments of the symbol; its arguments are "
                            f"{list(self.vars)}")
        self.outs = {node: [None] * node.num_outputs for node in nodes if node.op is not None}

    def get(self, entry):
        if entry is None:
            return None
        node, k = entry
        return self.vars[node.name] if node.op is None else self.outs[node][k]

    def args(self, symbol):
        return [self.vars[n] for n in symbol.list_arguments()]

    def aux(self, symbol):
        return [self.vars[n] for n in symbol.list_auxiliary_states()]

    def heads(self, symbol):
        return [self.get(e) for e in symbol._outputs]


def _storage(symbol, given):
    """Declared or ``given`` stypes ('default' otherwise) pushed through each operator's
    ``infer_stype``: ``(values, [(node, input stypes, output stypes)])``."""
    nodes = symbol._nodes()
    v = _Values(nodes, given, lambda n: n.var.get("stype", "default"))
    table = []
    for node in nodes:
        if node.op is not None:
            ins = tuple(map(v.get, node.inputs))
            v.outs[node] = list(node.op.infer_stype(*ins, **node.attrs))
            table.append((node, ins, tuple(v.outs[node])))
    return v, table


def infer_storage_type(symbol, given):
    """See ``Symbol.infer_storage_type``; ``given`` maps argument names to stypes."""
    v, _ = _storage(symbol, given)
    return v.args(symbol), v.heads(symbol), v.aux(symbol)


def node_stypes(symbol, given):
    """``[(node, input stypes, output stypes)]`` for every operator node (bind uses it)."""
    return _storage(symbol, given)[1]


def infer_grad_storage_type(symbol, given):
    """The storage type of each argument's gradient (``list_arguments()`` order): its
    declared ``grad_stype``, else ``add_n``'s stype over what each operator using it
    declares for that input (``op.infer_grad_stype``), else the variable's own stype."""
    v, table = _storage(symbol, given)
    declared = {n.name: n.var["grad_stype"] for n in symbol._nodes()
                if n.op is None and "grad_stype" in n.var}
    parts = {}
    for node, ins, _ in table:
        grads = node.op.infer_grad_stype(*ins, **node.attrs)
        for e, g in zip(node.inputs, grads):
            if e is not None and e[0].op is None and g is not None:
                parts.setdefault(e[0].name, []).append(g)
    add_n = get_op("add_n")
    return [declared[n] if n in declared else
            add_n.infer_stype(*parts[n])[0] if n in parts else v.vars[n]
            for n in symbol.list_arguments()]


def _known(shape):
    return shape is not None and all(d > 0 for d in shape)


def _fits(declared, shape):
    """Whether ``shape`` agrees with a declared one (0: a dimension left to inference)."""
    return len(declared) == len(shape) and all(w in (0, s) for w, s in zip(declared, shape))


def infer_shape(symbol, given, partial):
    """See ``Symbol.infer_shape``; ``given`` maps argument names to shapes."""
    nodes = symbol._nodes()
    given = {k: tuple(int(d) for d in s) for k, s in given.items()}
    declared = {}
    for node in nodes:
        if node.op is None and "shape" in node.var:
            declared.setdefault(node.name, node.var["shape"])
    for name, shape in given.items():
        want = declared.get(name)
        if want is not None and not _fits(want, shape):
            raise ShapeError(f"infer_shape: {name!r} is declared with shape {want}, given "
                             f"{shape}")
    v = _Values(nodes, given, lambda n: declared[n.name] if _known(declared.get(n.name))
                else None)

    def put(entry, shape, node):
        dims = tuple(shape) if isinstance(shape, (tuple, list)) else None
        if dims is None or not all(_is_dim(d) for d in dims):
            raise ShapeError(f"infer_shape: node {node.name!r} ({node.op.name}) gives shape "
                             f"{shape!r:.80} from its attributes {node.attrs!r:.200}; shapes "
                             f"are non-negative integers")
        shape = tuple(int(d) for d in dims)
        old = v.get(entry)
        src, k = entry
        if src.op is None:
            want = old if old is not None else declared.get(src.name)
            if want is not None and not _fits(want, shape):
                raise ShapeError(f"infer_shape: {src.name!r} has shape {want}, but node "
                                 f"{node.name!r} ({node.op.name}) needs {shape}")
            v.vars[src.name] = shape
        elif old is not None and old != shape:
            raise ShapeError(f"infer_shape: output {k} of node {src.name!r} has shape {old}, "
                             f"but node {node.name!r} ({node.op.name}) needs {shape}")
        else:
            v.outs[src][k] = shape
        return old is None

    changed = True
    while changed:
        changed = False
        for node in nodes:
            if node.op is None:
                continue
            ins = [v.get(e) for e in node.inputs]
            present = [s for e, s in zip(node.inputs, ins) if e is not None]
            if None not in v.outs[node] and None not in present:
                continue
            try:
                inferred = node.op.infer_shape(ins, node.full_attrs)
            except NetsError as e:
                raise ShapeError(f"infer_shape: node {node.name!r} ({node.op.name}): "
                                 f"{e}") from None
            except (TypeError, ValueError, OverflowError) as e:
                # (attributes the rule cannot use, e.g. num_hidden='abc' from a JSON file)
                raise ShapeError(f"infer_shape: node {node.name!r} ({node.op.name}): its "
                                 f"attributes {node.attrs} do not fit the operator "
                                 f"({type(e).__name__}: {e})") from e
            if inferred is None:
                raise ShapeError(f"infer_shape: node {node.name!r}: operator {node.op.name!r} "
                                 f"declares no shape rule (see nets.ops.registry)")
            new_ins, outs = inferred
            for e, s in zip(node.inputs, new_ins):
                if e is not None and s is not None and put(e, s, node):
                    changed = True
            for k, s in enumerate(outs):
                if s is not None and put((node, k), s, node):
                    changed = True
    args, heads, aux = v.args(symbol), v.heads(symbol), v.aux(symbol)
    if not partial and (None in args or None in heads or None in aux):
        unknown = [n for n in symbol.list_inputs() if v.vars[n] is None]
        unknown += [n for n, s in zip(symbol.list_outputs(), heads) if s is None]
        raise ShapeError(f"infer_shape: cannot infer the shapes of {unknown} from the given "
                         f"shapes {given}")
    return args, heads, aux


def infer_type(symbol, given):
    """See ``Symbol.infer_type``; ``given`` maps argument names to dtypes."""
    nodes = symbol._nodes()
    given = {k: as_dtype(d) for k, d in given.items()}
    v = _Values(nodes, given, lambda n: as_dtype(n.var["dtype"]) if "dtype" in n.var else None)
    while True:
        changed = True
        while changed:
            changed = False
            for node in nodes:
                if node.op is not None:
                    changed |= _type_step(node, v)
        unknown = [n for n, d in v.vars.items() if d is None]
        if not unknown:
            break
        for n in unknown:
            v.vars[n] = np.dtype(np.float32)
    return v.args(symbol), v.heads(symbol), v.aux(symbol)


def _type_step(node, v):
    """Set ``node``'s output dtypes, and its untyped value inputs' from their fellows."""
    ins = [v.get(e) for e in node.inputs]
    index = node.op.index_inputs
    values = [d for i, d in enumerate(ins) if i not in index and d is not None]
    changed = False
    if values:
        common = np.result_type(*values)
        for i, e in enumerate(node.inputs):
            if e is not None and i not in index and ins[i] is None and e[0].op is None:
                v.vars[e[0].name] = ins[i] = common
                changed = True
    if any(d is None for e, d in zip(node.inputs, ins) if e is not None):
        return changed
    out = node.op.infer_dtype(ins, node.full_attrs)
    if out is not None and v.outs[node][0] is None:
        v.outs[node] = list(out) if isinstance(out, tuple) else [out] * node.num_outputs
        changed = True
    return changed
