"""MXNet 1.9.1 names and semantics: gamma/gammaln, stop_gradient/BlockGrad/make_loss,
dot(forward_stype=), division of sparse arrays, broadcast_like, crop, contrib ops, random
samplers with out=. Expected values from MXNet's documented semantics (numpy/scipy)."""
import warnings

import numpy as np
import pytest
from scipy import special

import nets
from nets import autograd, nd, sym
from nets.base import DenseResultWarning, StorageFallbackWarning
from nets.test_utils import assert_almost_equal, check_numeric_gradient

X = np.array([[0.5, 0.0, 2.5], [0.0, 1.5, 0.0]])


@pytest.mark.parametrize("name, ref", [("gamma", special.gamma), ("gammaln", special.gammaln)])
def test_gamma_dense_and_sparse_fallback(name, ref):
    op = getattr(nd, name)
    dense = nd.array(X, dtype="float64")
    assert_almost_equal(op(dense), ref(X))
    for stype in ("csr", "row_sparse"):
        with pytest.warns(StorageFallbackWarning):  # f(0) = inf: MXNet falls back to dense
            out = op(dense.tostype(stype))
        assert out.stype == "default"
        assert_almost_equal(out, ref(X))
    pos = nd.array([[0.5, 1.5], [2.5, 3.2]])
    check_numeric_gradient(op, [pos])
    assert getattr(sym.sparse, name) is not None


def test_stop_gradient_and_make_loss_nd():
    a, b = nd.array([1., 2.]), nd.array([0., 1.])
    a.attach_grad()
    b.attach_grad()
    with autograd.record():
        loss = nd.make_loss(nd.stop_gradient(3 * b) + a)
    loss.backward()
    assert_almost_equal(loss, [1., 5.])  # MXNet's BlockGrad example
    assert_almost_equal(a.grad, [1., 1.])
    assert_almost_equal(b.grad, [0., 0.])
    assert nd.BlockGrad is nd.stop_gradient
    rsp = nd.array(X).tostype("row_sparse")
    assert nd.stop_gradient(rsp).stype == nd.make_loss(rsp).stype == "row_sparse"


def test_stop_gradient_and_make_loss_sym():
    a, b = sym.Variable("a"), sym.Variable("b")
    loss = sym.MakeLoss(sym.BlockGrad(3 * b) + a)
    exe = loss.simple_bind(nets.cpu(), a=(1, 2), b=(1, 2))
    exe.forward(is_train=True, a=np.array([[1., 2.]]), b=np.array([[0., 1.]]))
    assert_almost_equal(exe.outputs[0], [[1., 5.]])
    exe.backward()
    assert_almost_equal(exe.grad_dict["a"], [[1., 1.]])
    assert_almost_equal(exe.grad_dict["b"], [[0., 0.]])
    exe = sym.make_loss(a * 2).simple_bind(nets.cpu(), a=(2,))
    exe.forward(is_train=True, a=np.array([1., 3.]))
    exe.backward()
    assert_almost_equal(exe.grad_dict["a"], [2., 2.])  # ones through make_loss, times 2


@pytest.mark.parametrize("lhs_stype", ["default", "csr", "row_sparse"])
@pytest.mark.parametrize("forward_stype", [None, "default", "csr", "row_sparse"])
def test_dot_forward_stype(lhs_stype, forward_stype):
    a, b = np.random.rand(4, 3), np.random.rand(3, 2)
    out = nd.dot(nd.array(a).tostype(lhs_stype), nd.array(b), forward_stype=forward_stype)
    if forward_stype is not None:
        assert out.stype == forward_stype
    assert_almost_equal(out, a @ b)
    s = sym.dot(sym.Variable("l", stype=lhs_stype), sym.Variable("r"), forward_stype=forward_stype)
    assert s.infer_storage_type(l=lhs_stype, r="default")[1][0] == (
        forward_stype or nd.dot(nd.array(a).tostype(lhs_stype), nd.array(b)).stype)


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_division_by_scalar_keeps_stype(stype):
    x = nd.array(X).tostype(stype)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StorageFallbackWarning)
        for scalar in (2.0, 0.0):
            out = x / scalar
            assert out.stype == stype
            stored = (X != 0) if stype == "csr" else (X != 0).any(axis=1)  # rows for rsp
            want = np.zeros_like(X)
            with np.errstate(all="ignore"):
                want[stored] = X[stored] / scalar  # scipy.sparse: unstored entries stay 0
            assert_almost_equal(out, want, equal_nan=True)


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_elementwise_division_by_dense(stype):
    x = nd.array(X).tostype(stype)
    d = np.array([[1., 0., 2.], [2., 0., 0.]])
    with np.errstate(all="ignore"):
        want = X / d  # 0 / 0 = nan, 0 / x = 0 where x stores nothing
    for out in (nd.elemwise_div(x, nd.array(d)), x / nd.array(d),
                nd.divide(x, nd.array(d))):
        assert out.stype == "default"
        np.testing.assert_array_equal(out.asnumpy(), want.astype(np.float32))
    # broadcast_div by a vector keeps the sparse stype (MXNet's csr rule)
    v = nd.array([[2.], [0.]])
    out = nd.broadcast_div(x, v)
    assert out.stype == stype
    want = np.where(X != 0, X / np.array([[2.], [np.inf]]), 0)
    assert_almost_equal(out.asnumpy()[0], want[0])


def test_elementwise_division_gradient():
    check_numeric_gradient(lambda a, b: nd.elemwise_div(a, b),
                           [nd.array(X + 1).tostype("row_sparse"), nd.array(X + 2)],
                           grad_stypes=[None, "default"])


def test_broadcast_like_and_crop():
    x = nd.array([[1., 2., 3.]])
    out = nd.broadcast_like(x, nd.ones((4, 3)))
    assert_almost_equal(out, np.broadcast_to([[1., 2., 3.]], (4, 3)))
    assert_almost_equal(nd.broadcast_like(nd.array([9.]), nd.ones((5,)), lhs_axes=(0,),
                                          rhs_axes=(-1,)), [9.] * 5)
    with pytest.warns(StorageFallbackWarning):
        assert x.tostype("csr").broadcast_like(nd.ones((2, 3))).shape == (2, 3)
    check_numeric_gradient(lambda a: nd.broadcast_like(a, nd.ones((4, 3), dtype="float64")),
                           [x])
    m = nd.array(np.arange(12.).reshape(3, 4))
    assert_almost_equal(nd.crop(m, begin=(1, 1), end=(3, 3)),
                        np.arange(12.).reshape(3, 4)[1:3, 1:3])


def test_contrib_quadratic_and_getnnz():
    x = nd.array(X).tostype("csr")
    out = nd.contrib.quadratic(x, a=2.0, b=3.0, c=0.0)
    assert out.stype == "csr"
    assert_almost_equal(out, 2 * X ** 2 + 3 * X)
    with pytest.warns(DenseResultWarning):
        dense = nd.contrib.quadratic(x, a=2.0, b=3.0, c=1.0)
    assert dense.stype == "default"
    assert_almost_equal(dense, 2 * X ** 2 + 3 * X + 1)
    check_numeric_gradient(lambda a: nd.contrib.quadratic(a, a=2.0, b=3.0, c=1.0),
                           [nd.array(X)])
    sp = x.asscipy()
    assert nd.contrib.getnnz(x).asnumpy().tolist() == [sp.getnnz()]
    assert nd.contrib.getnnz(x, axis=0).asnumpy().tolist() == sp.getnnz(axis=0).tolist()
    assert nd.contrib.getnnz(x, axis=1).asnumpy().tolist() == sp.getnnz(axis=1).tolist()
    assert sym.contrib.quadratic(sym.Variable("d"), a=1.0) is not None


def test_random_names_and_out():
    nets.random.seed(3)
    a = nd.random.gamma(alpha=2.0, beta=1.5, shape=(2000,))
    assert abs(a.asnumpy().mean() - 3.0) < 0.2  # E = alpha * beta
    for fn in (nd.random.uniform, nd.random.normal, nd.random.gamma):
        dns, rsp = nd.zeros((5, 4)), nd.zeros((5, 4), stype="row_sparse")
        nets.random.seed(0)
        fn(shape=(5, 4), out=dns)
        nets.random.seed(0)
        fn(shape=(5, 4), out=rsp)
        assert rsp.stype == "row_sparse"
        assert_almost_equal(dns, rsp)
    assert nd.random_uniform(shape=(2, 3)).shape == (2, 3)
    assert nd.uniform(shape=(2,)).shape == nets.random.normal(shape=(2,)).shape == (2,)


@pytest.mark.parametrize("bias_stype", ["default", "row_sparse"])
def test_fully_connected_takes_mxnets_column_bias(bias_stype):
    x, w, b = np.random.rand(3, 4), np.random.rand(2, 4), np.random.rand(2, 1)
    bias = nd.array(b).tostype(bias_stype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StorageFallbackWarning)  # a row_sparse bias falls back
        out = nd.FullyConnected(nd.array(x), nd.array(w), bias, num_hidden=2)
    assert_almost_equal(out, x @ w.T + b.ravel())
    check_numeric_gradient(lambda d, ww, bb: nd.FullyConnected(d, ww, bb, num_hidden=2),
                           [nd.array(x), nd.array(w), nd.array(b)])
