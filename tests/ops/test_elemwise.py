"""Binary elementwise operators vs numpy: values, output stype and fallback warnings."""
import numpy as np
import pytest

import nets
from nets import nd
from nets.base import ShapeError
from nets.test_utils import DENSITIES, assert_almost_equal, rand_ndarray
from tests.ops.conftest import dense_result

STYPES = ("default", "csr", "row_sparse")
DTYPES = (np.float32, np.float64)
SHAPE = (5, 4)

# The oracle and the storage rules, written independently of nets.ops.elemwise.
ORACLE = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
          "modulo": np.mod, "power": np.power, "maximum": np.maximum, "minimum": np.minimum,
          "equal": np.equal, "not_equal": np.not_equal, "greater": np.greater,
          "greater_equal": np.greater_equal, "lesser": np.less, "lesser_equal": np.less_equal}
# how two sparse operands of one stype combine without falling back
PATTERN = {"multiply": "intersection", "add": "union", "subtract": "union", "maximum": "union",
           "minimum": "union", "not_equal": "union", "greater": "union", "lesser": "union"}
# a sparse lhs with a dense rhs keeps the lhs's pattern: its unstored entries stay 0, also
# where the rhs is 0 (MXNet's csr / dense), and two sparse operands fall back
LEFT = {"divide"}
BROADCAST = {"add": "broadcast_add", "subtract": "broadcast_sub", "multiply": "broadcast_mul",
             "divide": "broadcast_div", "modulo": "broadcast_mod", "power": "broadcast_power",
             **{n: f"broadcast_{n}" for n in ("maximum", "minimum", "equal", "not_equal",
                                               "greater", "greater_equal", "lesser",
                                               "lesser_equal")}}
SAME_SHAPE = {"add": "elemwise_add", "subtract": "elemwise_sub", "multiply": "elemwise_mul",
              "divide": "elemwise_div"}
OPERATOR = {"add": "__add__", "subtract": "__sub__", "multiply": "__mul__",
            "divide": "__truediv__", "power": "__pow__", "equal": "__eq__",
            "not_equal": "__ne__", "greater": "__gt__", "greater_equal": "__ge__",
            "lesser": "__lt__", "lesser_equal": "__le__"}


@pytest.fixture(autouse=True)
def _seed():
    nets.random.seed(7)


def expected_storage(name, ls, rs, broadcast=False):
    """(output stype, whether it falls back) for two operands of one shape; ``broadcast``:
    the ``broadcast_<op>`` operator (a sparse lhs divided by a dense rhs keeps its stype
    there, MXNet's csr rule; ``elemwise_div``, ``divide`` and ``/`` of one shape are dense,
    holding numpy's 0 / x where the lhs stores nothing)."""
    pattern = PATTERN.get(name)
    if ls == rs:
        return (ls, False) if ls == "default" or pattern else ("default", True)
    if name in LEFT and rs == "default":
        return (ls if broadcast else "default"), False
    if "default" in (ls, rs):
        sparse = ls if rs == "default" else rs
        return (sparse if pattern == "intersection" else "default"), False
    return "default", True


def oracle(name, a, b, dtype):
    with np.errstate(all="ignore"):
        return np.asarray(ORACLE[name](a, b)).astype(dtype)


def expected(name, a, b, stype, dtype=np.float32):
    """The oracle, with a ``LEFT`` operator's unstored entries of a sparse result zero."""
    want = oracle(name, a.asnumpy(), b.asnumpy(), dtype)
    return np.where(stored(a), want, 0).astype(dtype) if (
        name in LEFT and stype != "default") else want


def check(out, want, stype):
    assert out.stype == stype
    assert out.dtype == want.dtype
    assert_almost_equal(out, want, equal_nan=True)
    if stype != "default":
        out.check_format(full_check=True)  # canonical: sorted, unique, in range


def stored(x):
    """Boolean mask of the entries a sparse array stores (dense arrays: None)."""
    if x.stype == "default":
        return None
    mask = np.zeros(x.shape, bool)
    if x.stype == "csr":
        ptr = x.indptr.asnumpy()
        mask[np.repeat(np.arange(len(ptr) - 1), np.diff(ptr)), x.indices.asnumpy()] = True
    else:
        mask[x.indices.asnumpy()] = True
    return mask


def expected_pattern(name, a, b):
    """Stored entries of a sparse result: union, intersection, or the sparse operand's."""
    ma, mb = stored(a), stored(b)
    if ma is None or mb is None:
        return mb if ma is None else ma
    return ma & mb if PATTERN[name] == "intersection" else ma | mb


def run(fn, fallback, *args):
    if fallback:
        with pytest.warns(nets.StorageFallbackWarning):
            return fn(*args)
    return fn(*args)


def dense(shape, dtype=np.float32):
    # rand_ndarray needs at least one dimension
    return nd.array(nets.random.generator().uniform(-1, 1, shape), dtype=dtype)


def operand(stype, density, dtype, shape=SHAPE):
    # dense operands get zeros too (density 0.5), so 0/0, 0**0, 0 == 0 are exercised
    return rand_ndarray(shape, stype, 0.5 if stype == "default" else density, dtype)


@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rs", STYPES)
@pytest.mark.parametrize("ls", STYPES)
@pytest.mark.parametrize("name", ORACLE)
def test_binary_table(name, ls, rs, dtype, density):
    a, b = operand(ls, density, dtype), operand(rs, density, dtype)
    ops = [getattr(nd, name), getattr(nd, BROADCAST[name])]
    if name in SAME_SHAPE:
        ops.append(getattr(nd, SAME_SHAPE[name]))
    for fn in ops:
        stype, falls_back = expected_storage(name, ls, rs, fn is ops[1])
        want = expected(name, a, b, stype, dtype)
        out = run(fn, falls_back, a, b)
        check(out, want, stype)
        if stype != "default":
            assert np.array_equal(stored(out), expected_pattern(name, a, b))


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "maximum", "greater"])
@pytest.mark.parametrize("rs", ["default", "row_sparse"])
def test_row_sparse_3d(name, rs):
    shape = (6, 3, 2)
    a = rand_ndarray(shape, "row_sparse", 0.5, np.float64)
    b = rand_ndarray(shape, rs, 0.5, np.float64)
    stype, _ = expected_storage(name, "row_sparse", rs)
    check(getattr(nd, name)(a, b), oracle(name, a.asnumpy(), b.asnumpy(), np.float64), stype)
    check(getattr(nd, name)(b, a), oracle(name, b.asnumpy(), a.asnumpy(), np.float64), stype)


def test_csr_add_overlapping_columns_is_canonical():
    # MXNet's csr + csr emitted duplicate entries here; ours has each (row, col) once
    a = nd.sparse.csr_matrix(([1.0, 2.0, 3.0], [0, 2, 3], [0, 2, 3]), shape=(2, 4))
    b = nd.sparse.csr_matrix(([4.0, 5.0, 6.0], [2, 3, 1], [0, 2, 3]), shape=(2, 4))
    out = a + b
    out.check_format(full_check=True)
    assert out.indices.asnumpy().tolist() == [0, 2, 3, 1, 3]
    assert out.indptr.asnumpy().tolist() == [0, 3, 5]
    assert out.data.asnumpy().tolist() == [1.0, 6.0, 5.0, 6.0, 3.0]
    prod = a * b
    assert prod.indices.asnumpy().tolist() == [2] and prod.indptr.asnumpy().tolist() == [0, 1, 1]
    assert prod.data.asnumpy().tolist() == [8.0]


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_cancellation_keeps_explicit_zeros(stype):
    x = rand_ndarray(SHAPE, stype, 0.5)
    out = x - x
    assert out.stype == stype and np.array_equal(out.indices.asnumpy(), x.indices.asnumpy())
    assert not out.asnumpy().any()


# -- broadcasting ------------------------------------------------------------------

@pytest.mark.parametrize("lshape, rshape", [((2, 3), (3,)), ((4, 1), (1, 5)), ((2, 1, 3), (4, 1)),
                                            ((), (2, 2)), ((3, 2), (3, 2))])
@pytest.mark.parametrize("name", ORACLE)
def test_dense_broadcasting(name, lshape, rshape):
    a, b = dense(lshape, np.float64), dense(rshape, np.float64)
    want = oracle(name, a.asnumpy(), b.asnumpy(), np.float64)
    check(getattr(nd, BROADCAST[name])(a, b), want, "default")
    check(getattr(nd, name)(a, b), want, "default")


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
@pytest.mark.parametrize("dshape", [(4,), (1, 4), (5, 1), ()])
@pytest.mark.parametrize("name", ["multiply", "add", "divide", "greater_equal"])
def test_sparse_with_broadcast_dense_is_native(name, dshape, stype):
    s = rand_ndarray(SHAPE, stype, 0.5)
    d = dense(dshape)
    for a, b in ((s, d), (d, s)):  # (shapes differ: divide runs broadcast_div)
        stype_out, _ = expected_storage(name, a.stype, b.stype, broadcast=True)
        with dense_result(stype_out == "default"):
            out = getattr(nd, name)(a, b)
        check(out, expected(name, a, b, stype_out), stype_out)


@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("vector", ["row", "row_1d", "column", "one"])
@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
@pytest.mark.parametrize("name", ["broadcast_mul", "broadcast_div"])
def test_sparse_scaled_by_a_vector_keeps_its_pattern(name, stype, vector, dtype, density):
    """MXNet's ``broadcast_mul``/``broadcast_div(csr, dense row or column vector)`` keep
    csr (and row_sparse here): the sparse operand's pattern, each stored value scaled by
    the vector's entry of its column (row vector) or row (column vector). The divisor has
    zeros: the unstored entries stay 0 there (MXNet's rule; numpy's 0/0 is nan)."""
    s = rand_ndarray(SHAPE, stype, density, dtype)
    shape = {"row": (1, SHAPE[1]), "row_1d": (SHAPE[1],), "column": (SHAPE[0], 1),
             "one": (1,)}[vector]
    v = nd.array(np.arange(np.prod(shape)).reshape(shape) - 1.0, dtype=dtype)  # one zero
    x, vv = s.asnumpy(), v.asnumpy()
    with np.errstate(all="ignore"):
        want = x * vv if name == "broadcast_mul" else x / vv
    want = np.where(stored(s), want, 0).astype(dtype)
    for fn in (getattr(nd, name), (lambda a, b: a * b) if name == "broadcast_mul" else
               (lambda a, b: a / b)):
        out = fn(s, v)
        check(out, want, stype)
        assert np.array_equal(stored(out), stored(s))


@pytest.mark.parametrize("name, ls, rs, lshape, rshape, stype", [
    ("multiply", "csr", "default", (1, 4), (5, 4), "csr"),
    ("add", "default", "row_sparse", (5, 4), (1, 4), "default"),
    ("add", "row_sparse", "row_sparse", (1, 4), (5, 4), "row_sparse"),
    ("multiply", "csr", "csr", (5, 4), (5, 1), "csr"),
])
def test_broadcasting_a_sparse_operand_falls_back(name, ls, rs, lshape, rshape, stype):
    a, b = rand_ndarray(lshape, ls, 1.0), rand_ndarray(rshape, rs, 1.0)
    with pytest.warns(nets.StorageFallbackWarning, match=BROADCAST[name]):
        out = getattr(nd, name)(a, b)
    check(out, oracle(name, a.asnumpy(), b.asnumpy(), np.float32), stype)


@pytest.mark.parametrize("ls, rs", [("default", "default"), ("csr", "default"),
                                    ("row_sparse", "row_sparse")])
def test_incompatible_shapes(ls, rs):
    a, b = rand_ndarray((3, 4), ls), rand_ndarray((2, 4), rs)
    with pytest.raises(ShapeError, match=r"\(3, 4\).*\(2, 4\)"):
        nd.broadcast_add(a, b)
    with pytest.raises(ShapeError, match=r"\(3, 4\).*\(2, 4\)"):
        nd.elemwise_mul(a, b)


def test_elemwise_needs_equal_shapes():
    a, b = rand_ndarray((3, 4)), rand_ndarray((1, 4))
    with pytest.raises(ShapeError, match=r"elemwise_add.*\(3, 4\).*\(1, 4\)"):
        nd.elemwise_add(a, b)
    assert nd.broadcast_add(a, b).shape == (3, 4)


# -- scalars ----------------------------------------------------------------------------

def scalar_storage(f, stype, keeps_zeros=False):
    """``keeps_zeros``: division of a sparse array by a scalar, which keeps its stype
    whatever the scalar (unstored entries stay 0: MXNet's and scipy's ``csr / 0``)."""
    if stype == "default":
        return "default", False
    if keeps_zeros:
        return stype, False
    with np.errstate(all="ignore"):
        zero = f(np.float64(0))
    if zero == 0:
        return stype, False
    return "default", not np.isfinite(zero)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scalar", [0.0, 2.5, -1.0])
@pytest.mark.parametrize("stype", STYPES)
@pytest.mark.parametrize("name", ORACLE)
def test_scalar_both_sides(name, stype, scalar, dtype):
    x = rand_ndarray(SHAPE, stype, 0.5, dtype)
    xn = x.asnumpy()
    for f, args in ((lambda v: ORACLE[name](v, scalar), (x, scalar)),
                    (lambda v: ORACLE[name](scalar, v), (scalar, x))):
        keeps = name == "divide" and args[0] is x
        stype_out, falls_back = scalar_storage(f, stype, keeps)
        with np.errstate(all="ignore"):
            want = np.asarray(f(xn)).astype(dtype)
            if keeps and stype != "default":
                want = np.where(stored(x), want, 0).astype(dtype)
        with dense_result(stype_out != stype and not falls_back):
            out = run(getattr(nd, name), falls_back, *args)
        check(out, want, stype_out)


@pytest.mark.parametrize("expr, stype, out_stype", [
    (lambda x: x * 2, "row_sparse", "row_sparse"), (lambda x: 2 * x, "csr", "csr"),
    (lambda x: x / 2, "csr", "csr"), (lambda x: x + 1, "csr", "default"),
    (lambda x: x + 0, "row_sparse", "row_sparse"), (lambda x: 1 - x, "row_sparse", "default"),
    (lambda x: x ** 2, "csr", "csr"), (lambda x: x ** 0, "csr", "default"),
    (lambda x: 2 ** x, "row_sparse", "default"), (lambda x: x > 0.5, "csr", "csr"),
    (lambda x: x >= -1, "csr", "default"), (lambda x: 0 < x, "row_sparse", "row_sparse"),
    (lambda x: -x, "csr", "csr"), (lambda x: abs(x), "row_sparse", "row_sparse"),
])
def test_scalar_storage_rules(expr, stype, out_stype):
    x = rand_ndarray(SHAPE, stype, 0.5)
    with dense_result(out_stype != stype):
        out = expr(x)
    assert out.stype == out_stype
    assert_almost_equal(out, np.asarray(expr(x.asnumpy())).astype(np.float32))


@pytest.mark.parametrize("expr", [lambda x: 1 / x, lambda x: x ** -1])
def test_scalar_with_non_finite_zero_falls_back(expr):  # (csr / 0 keeps csr: test_mxnet_parity)
    x = rand_ndarray(SHAPE, "csr", 0.5)
    with pytest.warns(nets.StorageFallbackWarning):
        out = expr(x)
    with np.errstate(all="ignore"):
        check(out, expr(x.asnumpy()), "default")


def test_scalar_cases():
    assert nd.add(1, 2) == 3
    x = nd.array([[1.0, -2.0]], dtype="float64")
    assert nd.lesser(x, 0).dtype == np.float64
    assert nd.add(np.float32(1), x).asnumpy().tolist() == [[2.0, -1.0]]
    assert nd.add(np.array([[1.0, 1.0]]), x).asnumpy().tolist() == [[2.0, -1.0]]
    assert (x > 0).asnumpy().tolist() == [[1.0, 0.0]]


# -- Python operators, in place, dtypes, out= ------------------------------------------

@pytest.mark.parametrize("name", OPERATOR)
@pytest.mark.parametrize("ls, rs", [("default", "default"), ("csr", "csr"),
                                    ("row_sparse", "default"), ("default", "csr")])
def test_python_operators(name, ls, rs):
    a, b = rand_ndarray(SHAPE, ls, 0.5), rand_ndarray(SHAPE, rs, 0.5)
    stype, falls_back = expected_storage(name, ls, rs)
    out = run(getattr(a, OPERATOR[name]), falls_back, b)
    check(out, expected(name, a, b, stype), stype)


@pytest.mark.parametrize("other_stype", [None, "default", "csr", "row_sparse"])
@pytest.mark.parametrize("op", ["__iadd__", "__isub__", "__imul__", "__itruediv__"])
def test_inplace_dense_writes_same_buffer(op, other_stype):
    x = rand_ndarray(SHAPE, dtype=np.float64)
    other = 1.5 if other_stype is None else rand_ndarray(SHAPE, other_stype, 0.5, np.float64)
    before, buf = x.asnumpy(), np.asarray(x)
    with np.errstate(all="ignore"):
        want = getattr(before, op.replace("__i", "__"))(
            other if other_stype is None else other.asnumpy())
    y = getattr(x, op)(other)  # dense op sparse is native: no fallback warning
    assert y is x and np.asarray(x) is buf
    assert_almost_equal(x, want, equal_nan=True)


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_inplace_sparse_keeps_stype(stype):
    x = rand_ndarray(SHAPE, stype, 0.5, np.float64)
    y = rand_ndarray(SHAPE, stype, 0.5, np.float64)
    d = rand_ndarray(SHAPE, dtype=np.float64)
    want = x.asnumpy()
    for other, op in ((y, "__iadd__"), (d, "__iadd__"), (2.0, "__imul__"), (y, "__isub__"),
                      (4.0, "__itruediv__"), (d, "__imul__")):
        want = getattr(want, op.replace("__i", "__"))(
            other if isinstance(other, float) else other.asnumpy())
        assert getattr(x, op)(other) is x
        assert x.stype == stype
        x.check_format(full_check=True)
        assert_almost_equal(x, want)


def test_mixed_dtypes_promote():
    a, b = rand_ndarray(SHAPE, "csr", 0.5, np.float32), rand_ndarray(SHAPE, dtype=np.float64)
    out = a * b
    assert out.stype == "csr" and out.dtype == np.float64
    assert_almost_equal(out, a.asnumpy() * b.asnumpy())
    assert (a.tostype("default") + b).dtype == np.float64


def test_out_argument():
    a, b = rand_ndarray(SHAPE), rand_ndarray(SHAPE, "csr", 0.5)
    out = nd.zeros(SHAPE)
    assert nd.broadcast_mul(a, b, out=out) is out
    assert_almost_equal(out, a.asnumpy() * b.asnumpy())


def test_docs_state_storage_rules():
    for name in list(BROADCAST.values()) + list(SAME_SHAPE.values()):
        assert "Storage:" in getattr(nd, name).__doc__
    assert nd.broadcast_plus is nd.broadcast_add and nd.broadcast_minus is nd.broadcast_sub
