"""The methods ``nets.ops`` installs on the array classes (``nets.ops.methods``): Python
operators, comparisons, ``-x``/``abs``/``T``/``tostype``/``reshape`` and the fluent
methods, checked against numpy."""
import operator

import numpy as np
import pytest

import nets
from nets import nd
from nets.ops.methods import FLUENT_METHODS

A = np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]], dtype=np.float32)
B = np.array([[2.0, 1.0, -3.0], [0.5, 2.0, 2.0]], dtype=np.float32)


@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.mul, operator.truediv,
                                operator.eq, operator.ne, operator.lt, operator.le,
                                operator.gt, operator.ge])
def test_binary_operators_on_arrays_and_scalars(op):
    x, y = nd.array(A), nd.array(B)
    np.testing.assert_allclose(op(x, y).asnumpy(), op(A, B).astype(np.float32), rtol=1e-6)
    np.testing.assert_allclose(op(x, 2.0).asnumpy(), op(A, 2.0).astype(np.float32), rtol=1e-6)
    np.testing.assert_allclose(op(2.0, x).asnumpy(), op(2.0, A).astype(np.float32), rtol=1e-6)


def test_power_and_modulo_with_reflection():
    x = nd.array(np.abs(A) + 1)
    np.testing.assert_allclose((x ** 2).asnumpy(), (np.abs(A) + 1) ** 2, rtol=1e-6)
    np.testing.assert_allclose((2 ** x).asnumpy(), 2 ** (np.abs(A) + 1), rtol=1e-6)
    np.testing.assert_allclose((x % 2).asnumpy(), np.mod(np.abs(A) + 1, 2), rtol=1e-6)
    np.testing.assert_allclose((7 % x).asnumpy(), np.mod(7, np.abs(A) + 1), rtol=1e-6)


def test_numpy_on_the_left_defers_to_the_array():
    out = B + nd.array(A)
    assert isinstance(out, nets.arrays.NDArray)
    np.testing.assert_allclose(out.asnumpy(), A + B)


def test_unary_operators_and_properties():
    x = nd.array(A)
    np.testing.assert_array_equal((-x).asnumpy(), -A)
    np.testing.assert_array_equal(abs(x).asnumpy(), np.abs(A))
    np.testing.assert_array_equal(x.T.asnumpy(), A.T)
    np.testing.assert_array_equal(x.reshape(3, 2).asnumpy(), A.reshape(3, 2))
    np.testing.assert_array_equal(x.reshape((6,)).asnumpy(), A.reshape(6))
    assert x.tostype("csr").stype == "csr"
    np.testing.assert_array_equal(x.tostype("row_sparse").asnumpy(), A)


def test_inplace_operators_update_the_same_array():
    x = nd.array(A)
    before = x
    x += 1
    x *= 2
    x -= nd.array(B)
    x /= 4
    assert x is before
    np.testing.assert_allclose(x.asnumpy(), ((A + 1) * 2 - B) / 4, rtol=1e-6)


def test_sparse_arrays_inherit_the_operators():
    rsp = nd.array(np.array([[0, 0], [1, 2], [0, 0]], dtype=np.float32)).tostype("row_sparse")
    doubled = rsp * 2
    assert doubled.stype == "row_sparse"
    np.testing.assert_array_equal(doubled.asnumpy(), [[0, 0], [2, 4], [0, 0]])
    csr = nd.array(A).tostype("csr")
    np.testing.assert_allclose(csr.sum().asnumpy(), [A.sum()], rtol=1e-6)


def test_arrays_stay_hashable_by_identity():
    x, y = nd.array(A), nd.array(A)
    table = {x: "x", y: "y"}
    assert table[x] == "x" and table[y] == "y"
    assert (x == y).asnumpy().all()


FLUENT_CASES = [
    ("sum", {"axis": 1}, lambda a: a.sum(axis=1)),
    ("mean", {}, lambda a: np.array([a.mean()])),
    ("max", {"axis": 0}, lambda a: a.max(axis=0)),
    ("min", {}, lambda a: np.array([a.min()])),
    ("argmax", {"axis": 1}, lambda a: a.argmax(axis=1).astype(np.float32)),
    ("abs", {}, np.abs),
    ("sign", {}, np.sign),
    ("square", {}, np.square),
    ("exp", {}, np.exp),
    ("relu", {}, lambda a: np.maximum(a, 0)),
    ("sigmoid", {}, lambda a: 1 / (1 + np.exp(-a))),
    ("tanh", {}, np.tanh),
    ("clip", {"a_min": -1.0, "a_max": 2.0}, lambda a: np.clip(a, -1, 2)),
    ("floor", {}, np.floor),
    ("ceil", {}, np.ceil),
    ("transpose", {}, np.transpose),
    ("flatten", {}, lambda a: a.reshape(a.shape[0], -1)),
    ("expand_dims", {"axis": 0}, lambda a: a[None]),
    ("zeros_like", {}, np.zeros_like),
    ("ones_like", {}, np.ones_like),
]


@pytest.mark.parametrize("name, kwargs, oracle", FLUENT_CASES, ids=[c[0] for c in FLUENT_CASES])
def test_fluent_methods_match_numpy(name, kwargs, oracle):
    got = getattr(nd.array(A), name)(**kwargs).asnumpy()
    np.testing.assert_allclose(got, oracle(A), rtol=1e-5, atol=1e-6)


def test_every_fluent_method_is_installed_and_documented():
    x = nd.array(A)
    for name in FLUENT_METHODS:
        method = getattr(x, name)
        assert method.__name__ == name
        assert f"nets.nd.{name}" in method.__doc__
        assert hasattr(nd, name), name
    assert {c[0] for c in FLUENT_CASES} <= set(FLUENT_METHODS)


def test_symbols_have_the_same_fluent_methods():
    s = nets.sym.var("x")
    for name in FLUENT_METHODS:
        assert callable(getattr(s, name)), name


def test_row_sparse_retain_method():
    """RowSparseNDArray.retain(ids) is nd.sparse.retain(x, ids): the listed rows it stores."""
    x = nd.sparse.row_sparse_array((np.arange(6.0).reshape(3, 2), [0, 2, 4]), shape=(5, 2))
    y = x.retain(nd.array([4, 1, 0]))
    assert y.stype == "row_sparse" and y.shape == (5, 2)
    np.testing.assert_array_equal(y.indices.asnumpy(), [0, 4])
    np.testing.assert_array_equal(y.asnumpy(), [[0, 1], [0, 0], [0, 0], [0, 0], [4, 5]])
    assert not hasattr(nd.ones((2, 2)), "retain")  # MXNet: row_sparse arrays only
