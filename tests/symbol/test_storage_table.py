"""One storage-type table, tested both ways: for every operator of the registry and every
combination of input storage types, the symbolic ``infer_storage_type`` gives the
operator's own ``infer_stype`` answer, and the imperative call on small random inputs
returns arrays of exactly those storage types (falling back with a warning wherever the
operator has no implementation for the combination)."""
import itertools
import warnings

import numpy as np
import pytest

import nets
from nets import autograd, nd, sym
from nets.base import StorageTypeError
from nets.ops.registry import OPS, REQUIRED
from nets.test_utils import rand_ndarray

STYPES = ("default", "csr", "row_sparse")
N = 4

# Attributes for operators whose attributes are required: a valid value to sweep with.
SAMPLE_ATTRS = {
    "Activation": {"act_type": "sigmoid"}, "FullyConnected": {"num_hidden": N},
    "Embedding": {"input_dim": N, "output_dim": N}, "clip": {"a_min": -0.5, "a_max": 0.5},
    "cast_storage": {"stype": "row_sparse"}, "one_hot": {"depth": 3},
    "reshape": {"shape": (2, 8)}, "split": {"num_outputs": 2}, "expand_dims": {"axis": 1},
    "slice_axis": {"axis": 0, "begin": 1, "end": 3}, "slice": {"begin": (1,), "end": (3,)},
    "broadcast_to": {"shape": (2, N, N)}, "_sum_to": {"shape": (1, N)},
}
SAMPLE_ATTRS.update({name: {"scalar": 2.0} for name, op in OPS.items()
                     if op.attrs == {"scalar": REQUIRED}})
# Operators with required attributes that this sweep skips: internal gradient helpers
# whose attributes describe another operator's call, and Custom, whose table is the registered
# Prop's (tests/test_operator.py, tests/symbol/test_custom.py).
# (the optimizer update operators write their inputs in place and refuse CSR rather than
# densify, which would drop the state updates: tests/ops/test_update_ops.py sweeps them)
SKIPPED = {"_backward_slice", "_backward_sum", "_backward_take", "Custom", "sgd_update",
           "sgd_mom_update", "adam_update", "adagrad_update", "ftrl_update", "signsgd_update",
           "signum_update", "rmsprop_update", "rmspropalex_update",
           "_contrib_group_adagrad_update"}
# Input shapes other than (N, N).
SHAPES = {("pick", "index"): (N,), ("SoftmaxOutput", "label"): (N,), ("take", "indices"): (N,),
          ("FullyConnected", "bias"): (N,), ("_dot_bias", "bias"): (N,)}
# Inputs holding whole-number ids in [0, N).
IDS = {("take", "indices"), ("pick", "index"), ("retain", "indices"), ("Embedding", "data"),
       ("one_hot", "indices"), ("SoftmaxOutput", "label")}


def test_required_attribute_lists_are_complete():
    required = {name for name, op in OPS.items() if REQUIRED in op.attrs.values()}
    assert required == set(SAMPLE_ATTRS) | SKIPPED


def _cases():
    for name in sorted(OPS):
        if name in SKIPPED:
            continue
        op = OPS[name]
        names = [op.inputs[0]] * 2 if op.variadic else list(op.inputs)
        choices = [STYPES + ((None,) if i in op.optional else ()) for i in names]
        for stypes in itertools.product(*choices):
            yield name, names, stypes


CASES = list(_cases())


def _input(op, name, stype, rng):
    shape = SHAPES.get((op, name), (N, N))
    if stype == "csr" and len(shape) != 2:
        return None
    if (op, name) in IDS:
        return nd.array(rng.integers(0, N, shape).astype(np.float32)).tostype(stype)
    return rand_ndarray(shape, stype, density=0.5)


@pytest.mark.parametrize("op_name", sorted({c[0] for c in CASES}))
def test_symbolic_and_imperative_storage_agree(op_name):
    op = OPS[op_name]
    rng = np.random.default_rng(0)
    checked = 0
    for _, names, stypes in (c for c in CASES if c[0] == op_name):
        attrs = dict(SAMPLE_ATTRS.get(op_name, {}))
        attrs.update({f"no_{n}": True for n, st in zip(names, stypes)
                      if st is None and f"no_{n}" in op.attrs})  # FullyConnected's bias
        expected = op.infer_stype(*stypes, **attrs)
        # symbolic: the graph's inference is the operator's table
        inputs = [None if st is None else sym.var(f"x{i}", stype=st)
                  for i, st in enumerate(stypes)]
        out = getattr(sym, op_name)(*inputs, **attrs)
        assert tuple(out.infer_storage_type()[1]) == expected, (op_name, stypes)
        # imperative: what the call returns
        arrays = [None if st is None else _input(op_name, n, st, rng)
                  for n, st in zip(names, stypes)]
        if any(a is None and st is not None for a, st in zip(arrays, stypes)):
            continue  # a csr array cannot have this input's (1-D) shape
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", nets.StorageFallbackWarning)
            warnings.simplefilter("always", nets.DenseResultWarning)  # (real dense results)
            try:
                result = op(*arrays, **attrs)
            except StorageTypeError as refused:  # an operator refusing its stypes, by name
                assert str(refused).startswith(f"{op_name}: "), refused  # (retain of dense)
                assert op.find_impl(stypes) is not None, (op_name, stypes)
                continue
        result = result if isinstance(result, list) else [result]
        assert tuple(r.stype for r in result) == expected, (op_name, stypes)
        # every result is a new array, never an input object: the recorder links each
        # result to its node and trusts this
        assert not any(r is a for r in result for a in arrays), (op_name, stypes)
        if op.find_impl(stypes) is None:  # no implementation: the fallback must say so
            assert any(issubclass(w.category, nets.StorageFallbackWarning) for w in caught)
        # the same declarations give the shapes and dtypes the call returns
        given = {f"x{i}": a for i, a in enumerate(arrays) if a is not None}
        assert out.infer_shape(**{k: a.shape for k, a in given.items()})[1] == [
            r.shape for r in result], (op_name, stypes)
        assert out.infer_type(**{k: a.dtype for k, a in given.items()})[1] == [
            r.dtype for r in result], (op_name, stypes)
        _check_grad_stypes(op, stypes, arrays, attrs, expected)
        checked += 1
    assert checked


def _check_grad_stypes(op, stypes, arrays, attrs, out_stypes):
    """The vjp, given output gradients in the outputs' storage types, returns each input's
    gradient in the storage type ``infer_grad_stype`` declares (None: no gradient). Each
    leaf's own gradient stype differs from the declared one, so a gradient that never
    came (delivered as zeros of the leaf's stype) cannot pass for a declared one."""
    declared = op.infer_grad_stype(*stypes, **attrs)
    wanted = [k for k, g in enumerate(declared) if g is not None]
    if not wanted:
        return
    leaves = [arrays[k].copy() for k in wanted]
    for k, x in zip(wanted, leaves):
        x.attach_grad(stype="row_sparse" if declared[k] == "default" else "default")
    inputs = list(arrays)
    for k, x in zip(wanted, leaves):
        inputs[k] = x
    # (the forward's warnings were checked on the first call: recorded here, not shown)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("ignore", nets.StorageFallbackWarning)
        warnings.simplefilter("always", nets.DenseResultWarning)
        with autograd.record():
            result = op(*inputs, **attrs)
        result = result if isinstance(result, list) else [result]
        heads = [nd.ones(r.shape, dtype=r.dtype).tostype(st) for r, st in zip(result, out_stypes)]
        grads = autograd.grad(result, leaves, head_grads=heads)
    grads = grads if isinstance(grads, list) else [grads]
    got = tuple(g.stype for g in grads)
    assert got == tuple(declared[k] for k in wanted), (op.name, stypes, got, declared)
