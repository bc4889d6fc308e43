"""MXNet's ``_hypot`` and ``_scatter_*`` operators (``nd._internal``/``sym._internal``), the
error of an operator called with an argument it does not take, and Embedding's gradient
storage rule, against numpy and MXNet's documented semantics."""
import warnings

import numpy as np
import pytest

import nets
from nets import autograd, nd, sym
from nets.base import MXNetError, NetsError, OperatorArgumentError, StorageFallbackWarning

A = np.array([[0, 3, 0], [0, 0, 0], [1, -2, 0], [0, 0, 0]], np.float64)
B = np.array([[0, 4, 2], [0, 1, 0], [0, 0, 0], [5, 0, 0]], np.float64)


def _as(stype, a):
    x = nd.array(a, dtype=a.dtype)
    return x if stype == "default" else x.tostype(stype)


# -- argument errors ---------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda: nd.sparse.retain(nd.ones((2, 2)).tostype("row_sparse"), nd.array([0]),
                             invalid_arg="garbage_value"),
    lambda: nd.sparse.retain(nd.ones((2, 2)).tostype("row_sparse")),
    lambda: sym.sparse.retain(sym.var("a"), sym.var("i"), invalid_arg=1)])
def test_an_argument_the_operator_does_not_take_is_an_mxnet_error_and_a_type_error(call):
    with pytest.raises(OperatorArgumentError, match="retain") as info:
        call()
    assert isinstance(info.value, MXNetError) and isinstance(info.value, TypeError)
    assert MXNetError is NetsError


def test_the_error_names_the_argument():
    with pytest.raises(OperatorArgumentError, match="'invalid_arg'"):
        nd.relu(nd.ones(2), invalid_arg=1)


# -- _hypot ------------------------------------------------------------------------------------

@pytest.mark.parametrize("lhs, rhs, out", [
    ("default", "default", "default"), ("row_sparse", "row_sparse", "row_sparse"),
    ("csr", "csr", "csr"), ("row_sparse", "default", "default"),
    ("default", "csr", "default")])
def test_hypot_values_and_storage(lhs, rhs, out):
    # MXNet: hypot(0, 0) = 0, so two operands of one sparse stype keep it; else dense
    y = nd._internal._hypot(_as(lhs, A), _as(rhs, B))
    assert y.stype == out
    np.testing.assert_allclose(y.asnumpy(), np.hypot(A, B))
    s = sym._internal._hypot(sym.var("l", stype=lhs), sym.var("r", stype=rhs))
    exe = s.bind(nets.cpu(), {"l": _as(lhs, A), "r": _as(rhs, B)})
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), np.hypot(A, B))


def test_hypot_is_same_shape_only_and_broadcast_hypot_broadcasts():
    with pytest.raises(nets.base.ShapeError):
        nd._internal._hypot(nd.ones((2, 3)), nd.ones((1, 3)))
    np.testing.assert_allclose(nd.broadcast_hypot(nd.array(A), nd.array(B[:1])).asnumpy(),
                               np.hypot(A, B[:1]))


@pytest.mark.parametrize("stype", ["default", "row_sparse", "csr"])
def test_hypot_gradient_is_dense_and_nan_where_both_are_zero(stype):
    # d hypot / da = a / hypot(a, b): nan at (0, 0), where MXNet's dense backward gives
    # g * nan also where g is an unstored zero
    h = np.hypot(A, B)
    with np.errstate(invalid="ignore"):
        want_a, want_b = A / h, B / h
    g = np.arange(12, dtype=np.float64).reshape(4, 3) % 3
    x, y = _as(stype, A), _as(stype, B)
    for v in (x, y):
        v.attach_grad(stype="default")
    with autograd.record():
        out = nd._internal._hypot(x, y)
    out.backward(_as(stype, g) if stype != "default" else nd.array(g, dtype=g.dtype))
    grads = x.grad, y.grad
    assert all(gr.stype == "default" for gr in grads)
    np.testing.assert_allclose(grads[0].asnumpy(), g * want_a, equal_nan=True)
    np.testing.assert_allclose(grads[1].asnumpy(), g * want_b, equal_nan=True)


# -- _scatter_* ------------------------------------------------------------------------------

@pytest.mark.parametrize("name, f", [("_scatter_plus_scalar", np.add),
                                     ("_scatter_minus_scalar", np.subtract)])
@pytest.mark.parametrize("stype", ["default", "row_sparse", "csr"])
def test_scatter_scalar_changes_stored_values_only(name, f, stype):
    x = _as(stype, A)
    y = getattr(nd._internal, name)(x, 9)
    assert y.stype == stype
    if stype == "default":
        want = f(A, 9)
    else:  # the stored entries (whole stored rows of row_sparse) change; the rest stays 0
        stored = np.zeros(A.shape, bool)
        if stype == "csr":
            stored[A != 0] = True
        else:
            stored[np.any(A != 0, axis=1)] = True
        want = np.where(stored, f(A, 9), 0)
    np.testing.assert_allclose(y.asnumpy(), want)
    if stype != "default":
        np.testing.assert_array_equal(y.indices.asnumpy(), x.indices.asnumpy())
    x.attach_grad(stype="default")
    g = np.arange(12, dtype=np.float64).reshape(4, 3)
    with autograd.record():
        z = getattr(nd._internal, name)(x, 9)
    z.backward(nd.array(g, dtype=g.dtype))
    np.testing.assert_allclose(x.grad.asnumpy(), g)  # MXNet's _copy: g passed through


@pytest.mark.parametrize("rhs", ["default", "row_sparse", "csr"])
def test_scatter_div_of_row_sparse_keeps_its_rows(rhs):
    x = _as("row_sparse", A)
    y = nd._internal._scatter_elemwise_div(x, _as(rhs, B))
    assert y.stype == "row_sparse"
    np.testing.assert_array_equal(y.indices.asnumpy(), [0, 2])  # lhs's rows
    with np.errstate(all="ignore"):
        want = A / B
    out = y.asnumpy()
    np.testing.assert_allclose(out[[0, 2]], want[[0, 2]], equal_nan=True)
    assert not out[[1, 3]].any()  # unstored rows stay 0 whatever B holds there


def test_scatter_div_of_other_lhs_is_elemwise_div():
    with np.errstate(all="ignore"):
        want = A / B
    y = nd._internal._scatter_elemwise_div(nd.array(A, dtype=A.dtype), nd.array(B, dtype=B.dtype))
    np.testing.assert_allclose(y.asnumpy(), want, equal_nan=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StorageFallbackWarning)  # MXNet's fallback too
        y = nd._internal._scatter_elemwise_div(_as("csr", A), _as("csr", B))
    assert y.stype == "default"
    np.testing.assert_allclose(y.asnumpy(), want, equal_nan=True)


def test_scatter_div_gradient_is_backward_div():
    a = np.array([[1.0, 2.0], [3.0, -4.0]])
    b = np.array([[2.0, -1.0], [0.5, 4.0]])
    g = np.array([[1.0, 2.0], [3.0, 4.0]])
    x, y = nd.array(a, dtype=a.dtype), nd.array(b, dtype=b.dtype)
    x.attach_grad()
    y.attach_grad()
    with autograd.record():
        z = nd._internal._scatter_elemwise_div(x, y)
    z.backward(nd.array(g, dtype=g.dtype))
    np.testing.assert_allclose(x.grad.asnumpy(), g / b)
    np.testing.assert_allclose(y.grad.asnumpy(), -g * a / b ** 2)


# -- Embedding's gradient storage type ------------------------------------------------------

@pytest.mark.parametrize("sparse_grad", [False, True])
def test_embedding_gradient_stype_follows_sparse_grad_alone(sparse_grad):
    # MXNet's EmbeddingOpBackwardStorageType: row_sparse iff sparse_grad, for any weight
    ids = np.array([3, 0, 3])
    head = np.arange(6, dtype=np.float32).reshape(3, 2)
    want = np.zeros((5, 2), np.float32)
    np.add.at(want, ids, head)
    w = nd.array(np.arange(10, dtype=np.float32).reshape(5, 2)).tostype("row_sparse")
    w.attach_grad(stype="row_sparse" if sparse_grad else "default")
    with autograd.record():
        y = nd.Embedding(nd.array(ids), w, input_dim=5, output_dim=2, sparse_grad=sparse_grad)
    g = autograd.grad(y, w, nd.array(head))
    assert g.stype == ("row_sparse" if sparse_grad else "default")
    np.testing.assert_allclose(g.asnumpy(), want)


# -- random inputs against numpy, and numeric gradients ---------------------------------------

def _random(shape, stype, density, dtype, seed):
    """A random array of ``stype`` whose unstored entries are 0, and its dense values."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-2, 2, shape) * (rng.random(shape) < density)
    if stype == "row_sparse" and a.size:  # (whole rows stored or not)
        a[rng.random(shape[0]) >= density] = 0
    a = a.astype(dtype)
    return _as(stype, a), a


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("density", [0.0, 0.4, 1.0])
@pytest.mark.parametrize("shape", [(5, 4), (1, 7), (0, 3)])
@pytest.mark.parametrize("stype", ["default", "row_sparse", "csr"])
def test_random_inputs_against_numpy(stype, shape, density, dtype):
    x, a = _random(shape, stype, density, dtype, seed=1)
    y, b = _random(shape, stype, density, dtype, seed=2)
    rtol = 1e-6 if dtype == "float32" else 1e-12
    got = nd._internal._hypot(x, y)
    assert got.stype == stype and got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got.asnumpy(), np.hypot(a, b), rtol=rtol)
    stored = np.zeros(shape, bool)  # the entries a sparse x stores
    if stype == "csr":
        stored.flat[[i * shape[1] + j for i in range(shape[0])
                     for j in x.indices.asnumpy()[x.indptr.asnumpy()[i]:
                                                  x.indptr.asnumpy()[i + 1]]]] = True
    elif stype == "row_sparse":
        stored[x.indices.asnumpy()] = True
    else:
        stored[:] = True
    for name, f in (("_scatter_plus_scalar", np.add), ("_scatter_minus_scalar", np.subtract)):
        got = getattr(nd._internal, name)(x, 1.5)
        assert got.stype == stype
        np.testing.assert_allclose(got.asnumpy(), np.where(stored, f(a, a.dtype.type(1.5)), 0),
                                   rtol=rtol)


@pytest.mark.parametrize("stype", ["default", "row_sparse", "csr"])
def test_hypot_numeric_gradient(stype):
    # a sparse lhs (unstored entries 0) against a dense rhs without zeros: hypot is smooth
    # there, with derivative 0 in a where a = 0
    x, _ = _random((4, 5), stype, 0.5, "float64", seed=3)
    rng = np.random.default_rng(4)
    b = rng.uniform(0.5, 2, (4, 5)) * rng.choice([-1, 1], (4, 5))
    nets.test_utils.check_numeric_gradient(
        lambda u, v: nd._internal._hypot(u, v), [x, nd.array(b, dtype=b.dtype)],
        grad_stypes=["default", "default"])


@pytest.mark.parametrize("name", ["_scatter_plus_scalar", "_scatter_minus_scalar"])
def test_scatter_scalar_numeric_gradient(name):
    x, _ = _random((4, 5), "default", 1.0, "float64", seed=5)
    nets.test_utils.check_numeric_gradient(lambda u: getattr(nd._internal, name)(u, 0.5), [x])


def test_scatter_div_numeric_gradient():
    rng = np.random.default_rng(6)
    a = rng.uniform(-2, 2, (4, 5))
    b = rng.uniform(0.5, 2, (4, 5)) * rng.choice([-1, 1], (4, 5))
    nets.test_utils.check_numeric_gradient(
        lambda u, v: nd._internal._scatter_elemwise_div(u, v),
        [nd.array(a, dtype=a.dtype), nd.array(b, dtype=b.dtype)])
