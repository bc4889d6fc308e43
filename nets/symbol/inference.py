"""Shape, dtype and storage-type inference over a symbol graph.

Storage types come from each operator's own ``infer_stype`` (the registry's table, the
one imperative calls use), applied forward from the variables' stypes.

Shapes: an operator's output shape is computed, never guessed, in one of two ways:

1. a shape rule in ``SHAPE_RULES`` (below): a function of the known input shapes and the
   attributes that returns the input shapes (filling the ones it can deduce, e.g.
   ``FullyConnected``'s weight ``(num_hidden, in_units)`` from the data, a regression
   label from the prediction) and the output shapes. Every operator of nets has one
   today; they cost nothing whatever the shapes.
2. otherwise, once every input shape is known, evaluating the operator on zero arrays
   of those shapes and storage types - only when that is cheap: sparse zeros store
   nothing, and the dense inputs together must hold at most ``EVAL_LIMIT`` elements.
   A bigger one is left unknown, and ``infer_shape`` names it (give that operator a
   rule here).

Both run in passes over the graph until nothing changes, so shapes also flow from
outputs back into variables through the rules. Dtypes flow forward (numpy promotion of
the value inputs, with rules for the operators whose output dtype is their own), and a
value input with no dtype takes its fellow inputs'; what stays unknown is float32.
"""
import math
import warnings

import numpy as np

from .. import autograd
from ..base import NetsError, ShapeError, StorageFallbackWarning, as_dtype
from ..ndarray.creation import zeros
from ..ops import elemwise, reduce as red, shape as shp, unary
from .symbol import FUNCTIONS

__all__ = ["SHAPE_RULES", "EVAL_LIMIT", "infer_shape", "infer_type", "infer_storage_type"]

EVAL_LIMIT = 1 << 20
SHAPE_RULES = {}


def _rule(*names):
    def register(fn):
        for name in names:
            SHAPE_RULES[name] = fn
        return fn
    return register


def _first(shapes):
    return next((s for s in shapes if s is not None), None)


# -- shape rules: (input shapes, attrs) -> (input shapes, output shapes); None = unknown ----

@_rule(*unary.__all__, *elemwise.SCALAR_OPS, *FUNCTIONS, "_softrelu", "Activation", "_dropout",
       "cast_storage", "zeros_like", "ones_like", "softmax", "log_softmax", "MakeLoss",
       "retain")
def _same_as_data(ins, attrs):
    return ins, [ins[0]]


@_rule(*{getattr(elemwise, n).name for n in elemwise.__all__ if n.startswith("elemwise_")},
       "add_n")
def _all_same(ins, attrs):
    shape = _first(ins)
    return [shape] * len(ins), [shape]


@_rule("_sigmoid_bce", "_l2_loss")
def _fused_loss(ins, attrs):
    # the label has pred's shape or the output's (``shape``, when given)
    pred, label = ins
    out = attrs.get("shape")
    if out is None:
        pred = label = _first(ins)
        return [pred, label], [pred]
    out = tuple(out)
    return [pred, out if label is None else label], [out]


@_rule(*{getattr(elemwise, n).name for n in elemwise.__all__ if n.startswith("broadcast_")})
def _broadcast(ins, attrs):
    if None in ins:
        return ins, [None]
    try:
        return ins, [tuple(np.broadcast_shapes(*ins))]
    except ValueError:
        raise ShapeError(f"shapes {ins[0]} and {ins[1]} cannot be broadcast together") from None


@_rule("dot")
def _dot(ins, attrs):
    a, b = ins
    if a is None or b is None:
        return ins, [None]
    ta, tb = attrs["transpose_a"], attrs["transpose_b"]
    k_a, k_b = (a[0] if ta else a[-1]), (b[-1] if tb else b[0])
    if k_a != k_b:
        raise ShapeError(f"dot: lhs {a} (transpose_a={ta}) and rhs {b} (transpose_b={tb}) "
                         f"do not share the contracted dimension")
    return ins, [(a[1:] if ta else a[:-1]) + (b[:-1] if tb else b[1:])]


@_rule("FullyConnected")
def _fully_connected(ins, attrs):
    data, weight, bias = ins
    n = attrs["num_hidden"]
    bias = None if attrs["no_bias"] else (n,)
    if data is None:
        return [data, weight, bias], [None]
    lead = data[:1] if attrs["flatten"] else data[:-1]
    return [data, (n, math.prod(data[len(lead):])), bias], [lead + (n,)]


@_rule("_dot_bias")
def _dot_bias(ins, attrs):
    data, weight, bias = ins  # (an absent bias is never assigned the shape given for it)
    units = weight[1] if weight is not None else bias[0] if bias is not None else None
    if units is None:
        return ins, [None]
    if data is None:
        return [data, weight, (units,)], [None]
    return [data, (data[1], units), (units,)], [(data[0], units)]


@_rule("Embedding")
def _embedding(ins, attrs):
    data = ins[0]
    out = None if data is None else data + (attrs["output_dim"],)
    return [data, (attrs["input_dim"], attrs["output_dim"])], [out]


@_rule("LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput")
def _regression(ins, attrs):
    data, label = ins
    if data is not None and label is None:  # MXNet's default: (batch,) for (batch, 1) data
        label = data[:1] if len(data) == 2 and data[1] == 1 else data
    return [data, label], [data]


@_rule("SoftmaxOutput")
def _softmax_output(ins, attrs):
    data, label = ins
    if data is not None and label is None:
        label = (data[:1] + data[2:] if attrs["multi_output"] else
                 data[:-1] if attrs["preserve_shape"] else data[:1])
    return [data, label], [data]


def _reduced(ins, attrs, exclude=False):
    s = ins[0]
    if s is None:
        return ins, [None]
    axes = red._axes(s, attrs["axis"], exclude)
    return ins, [red._shape(s, axes, attrs["keepdims"])]


SHAPE_RULES.update({n: lambda ins, a: _reduced(ins, a, a["exclude"])
                    for n in ("sum", "mean", "max", "min", "square_sum")})
SHAPE_RULES.update({n: _reduced for n in ("norm", "argmax", "argmin")})


def _unary_shape(fn):
    """A rule for a one-input operator whose output shape is ``fn(shape, **attrs)``."""
    def rule(ins, attrs):
        return ins, [None if ins[0] is None else tuple(fn(ins[0], **attrs))]
    return rule


def _sliced(shape, key):
    return tuple(len(range(*k.indices(d))) for k, d in zip(key, shape))


def _expand(s, axis):
    axis = shp._axis(axis, len(s), extra=1)
    return s[:axis] + (1,) + s[axis:]


SHAPE_RULES.update({
    "reshape": _unary_shape(lambda s, shape, reverse: shp._reshape_target(shape, s, reverse)),
    "flatten": _unary_shape(shp._flat_shape),
    "transpose": _unary_shape(lambda s, axes: [s[p] for p in shp._perm(axes, len(s))]),
    "expand_dims": _unary_shape(_expand),
    "slice_axis": _unary_shape(lambda s, axis, begin, end: _sliced(
        s, shp._axis_key(s, axis, begin, end))),
    "slice": _unary_shape(lambda s, begin, end, step: _sliced(
        s, shp._slice_key(s, begin, end, step))),
    "one_hot": _unary_shape(lambda s, depth, **_: s + (int(depth),)),
    "_sum_to": lambda ins, a: (ins, [tuple(a["shape"])]),
    "_backward_slice": lambda ins, a: (ins, [tuple(a["shape"])]),
    "_backward_take": lambda ins, a: (ins, [tuple(a["shape"])]),
})


@_rule("broadcast_to")
def _broadcast_to(ins, attrs):
    s = ins[0]
    if s is None:
        return ins, [None]
    target = tuple(attrs["shape"])
    lead = len(target) - len(s)
    return ins, [tuple(s[i - lead] if d == 0 and i >= lead else d for i, d in enumerate(target))]


@_rule("concat")
def _concat(ins, attrs):
    if None in ins:
        return ins, [None]
    dim = shp._axis(attrs["dim"], len(ins[0]), "dim")
    out = list(ins[0])
    out[dim] = sum(s[dim] for s in ins)
    return ins, [tuple(out)]


@_rule("stack")
def _stack(ins, attrs):
    s = _first(ins)
    if s is None:
        return ins, [None]
    axis = shp._axis(attrs["axis"], len(s), extra=1)
    return [s] * len(ins), [s[:axis] + (len(ins),) + s[axis:]]


@_rule("split")
def _split(ins, attrs):
    s, n = ins[0], int(attrs["num_outputs"])
    if s is None:
        return ins, [None] * n
    axis = shp._axis(attrs["axis"], len(s))
    part = () if attrs["squeeze_axis"] else (s[axis] // n,)
    return ins, [s[:axis] + part + s[axis + 1:]] * n


@_rule("take")
def _take(ins, attrs):
    a, idx = ins
    if a is None or idx is None:
        return ins, [None]
    axis = shp._axis(attrs["axis"], len(a))
    return ins, [a[:axis] + idx + a[axis + 1:]]


@_rule("pick")
def _pick(ins, attrs):
    data = ins[0]
    if data is None:
        return ins, [None]
    axis = shp._axis(attrs["axis"], len(data))
    kept = (1,) if attrs["keepdims"] else ()
    return ins, [data[:axis] + kept + data[axis + 1:]]


@_rule("where")
def _where(ins, attrs):
    value = _first(ins[1:])
    return [ins[0], value, value], [value]


# -- dtype rules: (input dtypes, attrs) -> output dtype -------------------------------------

def _float_of(dtype):
    return dtype if dtype.kind == "f" else np.dtype(np.float32)


DTYPE_RULES = {
    "Embedding": lambda d, a: d[1],
    "take": lambda d, a: d[0], "pick": lambda d, a: d[0], "retain": lambda d, a: d[0],
    "_backward_take": lambda d, a: d[0],
    "where": lambda d, a: np.result_type(d[1], d[2]),
    "one_hot": lambda d, a: as_dtype(a["dtype"]),
    "argmax": lambda d, a: np.result_type(d[0], np.float32),
    "argmin": lambda d, a: np.result_type(d[0], np.float32),
    "softmax": lambda d, a: as_dtype(a["dtype"], _float_of(d[0])),
    "log_softmax": lambda d, a: as_dtype(a["dtype"], _float_of(d[0])),
    "norm": lambda d, a: as_dtype(a["out_dtype"], d[0]),
    "SoftmaxOutput": lambda d, a: d[0],
}
# Inputs that hold ids or conditions, not values: they take no part in dtype promotion.
INDEX_INPUTS = {"Embedding": {0}, "take": {1}, "pick": {1}, "retain": {1}, "one_hot": {0},
                "where": {0}, "_backward_take": {1}, "SoftmaxOutput": {1}}


# -- the graph walks ------------------------------------------------------------------------

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
    return v.args(symbol), v.heads(symbol), []


def node_stypes(symbol, given):
    """``[(node, input stypes, output stypes)]`` for every operator node (bind uses it)."""
    return _storage(symbol, given)[1]


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
    stypes = dtypes = None
    skipped = {}

    def put(entry, shape, node):
        shape = tuple(int(d) for d in shape)
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
            rule = SHAPE_RULES.get(node.op.name)
            try:
                if rule is not None:
                    new_ins, outs = rule(ins, node.full_attrs)
                elif None in present:
                    continue
                else:
                    if stypes is None:  # input stypes per node, argument dtypes
                        stypes = {n: i for n, i, _ in node_stypes(symbol, {})}
                        dtypes = dict(zip(symbol.list_arguments(), infer_type(symbol, {})[0]))
                    new_ins, outs = ins, _evaluate(node, ins, stypes[node], dtypes, skipped)
            except NetsError as e:
                raise ShapeError(f"infer_shape: node {node.name!r} ({node.op.name}): "
                                 f"{e}") from None
            for e, s in zip(node.inputs, new_ins):
                if e is not None and s is not None and put(e, s, node):
                    changed = True
            for k, s in enumerate(outs):
                if s is not None and put((node, k), s, node):
                    changed = True
    args, heads = v.args(symbol), v.heads(symbol)
    if not partial and (None in args or None in heads):
        names = symbol.list_arguments()
        unknown = [n for n, s in zip(names, args) if s is None]
        unknown += [n for n, s in zip(symbol.list_outputs(), heads) if s is None]
        why = "".join(f"; {w}" for w in skipped.values())
        raise ShapeError(f"infer_shape: cannot infer the shapes of {unknown} from the given "
                         f"shapes {given}{why}")
    return args, heads, []


def _evaluate(node, shapes, stypes, arg_dtypes, skipped):
    """Output shapes of an operator without a rule, from a run on zero arrays (if cheap)."""
    dense = sum(math.prod(s) for s, st in zip(shapes, stypes) if st == "default")
    if dense > EVAL_LIMIT:
        skipped[node] = (f"node {node.name!r} ({node.op.name}) has no shape rule and its dense "
                         f"inputs hold {dense} elements, more than nets evaluates to infer "
                         f"shapes ({EVAL_LIMIT}); add a rule to nets.symbol.inference")
        return [None] * node.num_outputs
    arrays = [None if e is None else zeros(
        s, dtype=arg_dtypes[e[0].name] if e[0].op is None else np.float32, stype=st)
        for e, s, st in zip(node.inputs, shapes, stypes)]
    with autograd.pause(), warnings.catch_warnings():
        warnings.simplefilter("ignore", StorageFallbackWarning)
        result = node.op(*arrays, **node.attrs)
    return [r.shape for r in (result if isinstance(result, (list, tuple)) else [result])]


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
    return v.args(symbol), v.heads(symbol), []


def _type_step(node, v):
    """Set ``node``'s output dtypes, and its untyped value inputs' from their fellows."""
    ins = [v.get(e) for e in node.inputs]
    index = INDEX_INPUTS.get(node.op.name, ())
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
    rule = DTYPE_RULES.get(node.op.name)
    out = rule(ins, node.full_attrs) if rule else np.result_type(*values) if values else None
    if out is not None and v.outs[node][0] is None:
        v.outs[node] = [np.dtype(out)] * node.num_outputs
        changed = True
    return changed
