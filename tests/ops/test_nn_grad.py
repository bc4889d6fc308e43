"""Gradients of the nn operators against float64 central differences
(``check_numeric_gradient``): FullyConnected, ``_dot_bias``, Embedding, Activation (and
``_softrelu``), softmax, log_softmax, ``_dropout``; plus the exact form of Embedding's
row_sparse gradient."""
import numpy as np
import pytest

from nets import NetsError, autograd, nd
from nets.ops.nn import _dot_bias, _dropout, _softrelu
from nets.test_utils import assert_almost_equal, check_numeric_gradient, rand_ndarray
from tests.ops.conftest import dense_result


def _away_from_zero(x):
    """``x`` with every stored value moved to ``[0.2, 1.2)`` in magnitude (same stype and
    pattern): no relu kink within ``eps`` of a stored value."""
    x = x.copy()
    values = x._np if x.stype == "default" else x._data
    values += np.where(values < 0, -0.2, 0.2)
    return x


def check_second_order(fn, x, eps=1e-4):
    """``grad(create_graph=True)`` differentiated again against central differences of
    the first-order gradient: ``d/dx <u, J(x)^T v>`` for random ``u``, ``v`` (float64)."""
    def f64(a):
        return nd.array(a, dtype="float64")

    rng = np.random.default_rng(1)
    x = x.asnumpy().astype(np.float64)
    v = f64(rng.normal(size=fn(f64(x)).shape))
    u = rng.normal(size=x.shape)

    def first(xv):
        leaf = f64(xv)
        leaf.attach_grad()
        with autograd.record():
            y = fn(leaf)
        return autograd.grad(y, leaf, v).asnumpy()

    numeric = np.zeros(x.shape)
    for j in range(x.size):
        step = np.zeros(x.shape)
        step.flat[j] = eps
        numeric.flat[j] = np.sum(u * (first(x + step) - first(x - step))) / (2 * eps)
    leaf = f64(x)
    leaf.attach_grad()
    with autograd.record():
        dx = autograd.grad(fn(leaf), [leaf], v, create_graph=True)[0]
    dx.backward(f64(u))
    assert_almost_equal(leaf.grad, numeric, rtol=1e-4, atol=1e-6)


def _pattern_grad(x):
    """A random output gradient that is zero wherever sparse ``x`` stores nothing: the
    gradient of a sparse input keeps the input's pattern, so unstored entries are not
    variables and the numeric check must not see them."""
    mask = np.zeros(x.shape)
    if x.stype == "csr":
        mask[np.repeat(np.arange(x.shape[0]), np.diff(x._indptr)), x._indices] = 1
    else:
        mask[x._indices] = 1
    return mask * np.random.default_rng(0).normal(size=x.shape)


# -- FullyConnected ----------------------------------------------------------------------------

@pytest.mark.parametrize("shape, flatten", [((3, 4), True), ((3, 4), False), ((2, 3, 2), True),
                                            ((2, 3, 4), False), ((4,), False)])
@pytest.mark.parametrize("no_bias", [False, True])
@pytest.mark.parametrize("units", [5, 1])  # 1: the data gradient is an outer product
def test_fully_connected_dense(shape, flatten, no_bias, units):
    in_units = int(np.prod(shape[1:])) if flatten else shape[-1]
    x, w, b = rand_ndarray(shape), rand_ndarray((units, in_units)), rand_ndarray((units,))

    def fc(x, w, b=None):
        return nd.FullyConnected(x, w, b, num_hidden=units, no_bias=no_bias, flatten=flatten)
    check_numeric_gradient(fc, [x, w] if no_bias else [x, w, b])


@pytest.mark.parametrize("density", [0.0, "one_row", 0.5, 1.0])
@pytest.mark.parametrize("no_bias", [False, True])
def test_fully_connected_csr(density, no_bias):
    """CSR data is a batch: no gradient; the weight's gradient is dense."""
    x, w, b = rand_ndarray((4, 6), "csr", density), rand_ndarray((3, 6)), rand_ndarray((3,))

    def fc(x, w, b=None):
        return nd.FullyConnected(x, w, b, num_hidden=3, no_bias=no_bias)
    check_numeric_gradient(fc, [x, w] if no_bias else [x, w, b],
                           [None, "default"] + ([] if no_bias else ["default"]))


@pytest.mark.parametrize("stype", ["default", "csr"])
def test_fully_connected_float32(stype):
    """float32 stays float32 through the backward pass (the sparse dot needs one dtype)."""
    x = rand_ndarray((4, 6), stype, 0.5, "float32")
    w, b = rand_ndarray((3, 6), dtype="float32"), rand_ndarray((3,), dtype="float32")
    for a in (w, b):
        a.attach_grad()
    head = rand_ndarray((4, 3), dtype="float32")
    with autograd.record():
        y = nd.FullyConnected(x, w, b, num_hidden=3)
    y.backward(head)
    assert w.grad.dtype == b.grad.dtype == np.float32
    assert_almost_equal(w.grad, head.asnumpy().T @ x.asnumpy())
    assert_almost_equal(b.grad, head.asnumpy().sum(axis=0))


# -- _dot_bias (FullyConnectedSparse) --------------------------------------------------------

@pytest.mark.parametrize("no_bias", [False, True])
def test_dot_bias_dense(no_bias):
    x, w, b = rand_ndarray((4, 5)), rand_ndarray((5, 3)), rand_ndarray((3,))
    check_numeric_gradient(_dot_bias, [x, w] if no_bias else [x, w, b])


@pytest.mark.parametrize("density", [0.0, "one_row", 0.5, 1.0])
@pytest.mark.parametrize("no_bias", [False, True])
def test_dot_bias_csr(density, no_bias):
    """CSR data is a batch: no gradient; the weight's gradient is row_sparse (the rows of
    the features the batch touches)."""
    x, w, b = rand_ndarray((4, 6), "csr", density), rand_ndarray((6, 3)), rand_ndarray((3,))
    check_numeric_gradient(_dot_bias, [x, w] if no_bias else [x, w, b],
                           [None, "row_sparse"] + ([] if no_bias else ["default"]))


@pytest.mark.parametrize("stype", ["default", "csr"])
def test_dot_bias_second_order(stype):
    """The vjp is built of operators under ``create_graph``: differentiable again."""
    x, w, b = rand_ndarray((4, 5), stype, 0.6), rand_ndarray((5, 3)), rand_ndarray((3,))
    x, w, b = (a.astype("float64") for a in (x, w, b))
    check_second_order(lambda w: nd.sigmoid(_dot_bias(x, w, b)), w)
    check_second_order(lambda b: nd.sigmoid(_dot_bias(x, w, b)), b)


# -- activations fused into FullyConnected / _dot_bias (act_type) ----------------------------

FUSED = ["relu", "sigmoid", "tanh"]


def _fused_inputs(stype, dtype="float64"):
    x = _away_from_zero(rand_ndarray((4, 6), stype, 0.6, dtype))  # (csr: the batch)
    return x, rand_ndarray((6, 3), dtype=dtype), rand_ndarray((3,), dtype=dtype)


@pytest.mark.parametrize("stype", ["default", "csr"])
@pytest.mark.parametrize("act_type", FUSED)
def test_fused_activation_values_equal_the_two_operators(act_type, stype):
    x, w, b = _fused_inputs(stype, "float32")
    two = nd.Activation(_dot_bias(x, w, b), act_type=act_type)
    assert_almost_equal(_dot_bias(x, w, b, act_type=act_type), two, rtol=0, atol=0)
    wt = w.T.copy()
    two = nd.Activation(nd.FullyConnected(x, wt, b, num_hidden=3), act_type=act_type)
    assert_almost_equal(nd.FullyConnected(x, wt, b, num_hidden=3, act_type=act_type), two,
                        rtol=0, atol=0)


@pytest.mark.parametrize("stype", ["default", "csr"])
@pytest.mark.parametrize("act_type", FUSED)
def test_fused_activation_gradients(act_type, stype):
    x, w, b = _fused_inputs(stype)
    w = _away_from_zero(w)  # (relu: no pre-activation within eps of its kink, mostly)
    csr = stype == "csr"  # (csr data is a batch: the weight and bias are the variables)

    def fused(*args):
        return _dot_bias(*([x] if csr else []), *args, act_type=act_type)
    check_numeric_gradient(fused, [w, b] if csr else [x, w, b],
                           ["row_sparse", "default"] if csr else None)
    check_numeric_gradient(
        lambda *a: nd.FullyConnected(*([x] if csr else []), *a, num_hidden=3,
                                     act_type=act_type),
        [w.T.copy(), b] if csr else [x, w.T.copy(), b])


@pytest.mark.parametrize("act_type", FUSED)
def test_fused_activation_second_order(act_type):
    x, w, b = _fused_inputs("default")
    check_second_order(lambda w: _dot_bias(x, w, b, act_type=act_type), w)
    check_second_order(lambda x: nd.FullyConnected(x, w.T.copy(), b, num_hidden=3,
                                                   act_type=act_type), x)


def test_fused_activation_rejects_other_act_types():
    x, w, b = _fused_inputs("default")
    with pytest.raises(NetsError, match=r"act_type='softrelu' is not one of"):
        _dot_bias(x, w, b, act_type="softrelu")
    with pytest.raises(NetsError, match=r"FullyConnected: act_type='gelu'"):
        nd.FullyConnected(x, w.T.copy(), b, num_hidden=3, act_type="gelu")


# -- Embedding ---------------------------------------------------------------------------------

IDS = {"1d": [3, 0, 3, 5, 3], "2d": [[1, 4, 1], [4, 4, 0]]}  # repeated ids: rows summed


@pytest.mark.parametrize("ids", sorted(IDS))
@pytest.mark.parametrize("sparse_grad", [False, True])
@pytest.mark.parametrize("weight_stype", ["default", "row_sparse"])
def test_embedding(ids, sparse_grad, weight_stype):
    w = rand_ndarray((6, 3), weight_stype, 0.5)
    # MXNet's rule: the weight gradient's stype follows sparse_grad alone, whatever the weight's
    grad_stype = "row_sparse" if sparse_grad else "default"
    check_numeric_gradient(
        lambda d, w: nd.Embedding(d, w, input_dim=6, output_dim=3, sparse_grad=sparse_grad),
        [nd.array(IDS[ids]), w], [None, grad_stype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_embedding_sparse_grad_is_canonical(dtype):
    """sparse_grad=True: the batch's unique ids, sorted, each row the sum of its
    occurrences' output gradients; equal to the dense gradient's rows."""
    ids = np.array([[7, 2, 7], [0, 9, 2]], dtype=np.int64)
    rng = np.random.default_rng(3)
    head = rng.normal(size=ids.shape + (4,)).astype(dtype)
    want = np.zeros((10, 4))
    np.add.at(want, ids.reshape(-1), head.reshape(-1, 4))
    grads = {}
    for sparse_grad in (True, False):
        w = rand_ndarray((10, 4), dtype=dtype)
        w.attach_grad()
        with autograd.record():
            y = nd.Embedding(nd.array(ids, dtype="int64"), w, input_dim=10, output_dim=4,
                             dtype=dtype, sparse_grad=sparse_grad)
        grads[sparse_grad] = autograd.grad(y, w, nd.array(head, dtype=dtype))
    rsp, dense = grads[True], grads[False]
    assert rsp.stype == "row_sparse" and dense.stype == "default"
    assert rsp.dtype == dense.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(rsp.indices.asnumpy(), [0, 2, 7, 9])
    assert_almost_equal(rsp.data, dense.asnumpy()[[0, 2, 7, 9]], rtol=0, atol=0)
    assert_almost_equal(dense, want)


@pytest.mark.parametrize("id_dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("sparse_grad", [False, True])
def test_embedding_gradient_of_non_int64_ids(id_dtype, sparse_grad):
    """Ids as float32 (as MXNet programs pass them), float64 or int32 give the gradient of
    the same ids as int64: the backward casts the ids the forward checked, large ids
    included."""
    n = 1 << 21
    ids = np.array([[7, 2, 7], [0, 9, 2], [1 << 20, 3, n - 1]], dtype=np.int64)
    head = nd.array(np.random.default_rng(4).normal(size=ids.shape + (2,)))
    grads = {}
    for dtype in ("int64", id_dtype):
        w = nd.array(np.arange(2 * n, dtype=np.float32).reshape(n, 2))
        w.attach_grad(stype="row_sparse" if sparse_grad else "default")
        with autograd.record():
            y = nd.Embedding(nd.array(ids, dtype=dtype), w, input_dim=n, output_dim=2,
                             sparse_grad=sparse_grad)
        assert_almost_equal(y, w.asnumpy()[ids], rtol=0, atol=0)
        y.backward(head)
        grads[dtype] = w.grad
    want, got = grads["int64"], grads[id_dtype]
    assert got.stype == want.stype
    if sparse_grad:
        np.testing.assert_array_equal(got.indices.asnumpy(), want.indices.asnumpy())
        np.testing.assert_array_equal(got.data.asnumpy(), want.data.asnumpy())
    else:
        np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())


@pytest.mark.parametrize("bad", [2.5, float("nan"), -1.0, 6.0])
def test_embedding_bad_float_id_raises_while_recording(bad):
    """The backward trusts the ids: a fractional, NaN or out-of-range float id is refused
    by the recorded forward, before any gradient is taken."""
    w = rand_ndarray((6, 3))
    w.attach_grad()
    with autograd.record():
        with pytest.raises(NetsError, match=r"data\[1\]"):
            nd.Embedding(nd.array([1.0, bad]), w, input_dim=6, output_dim=3, sparse_grad=True)


@pytest.mark.parametrize("sparse_grad", [False, True])
def test_embedding_second_order(sparse_grad):
    """The weight gradient is an operator (take's adjoint), so create_graph records it."""
    ids = nd.array(IDS["2d"])
    check_second_order(lambda w: nd.Embedding(ids, w, input_dim=6, output_dim=3,
                                              sparse_grad=sparse_grad) ** 2, rand_ndarray((6, 3)))


# -- Activation --------------------------------------------------------------------------------

ACTS = ["relu", "sigmoid", "tanh", "softrelu", "softsign"]


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 2)])
@pytest.mark.parametrize("act_type", ACTS)
def test_activation_dense(act_type, shape):
    x = _away_from_zero(rand_ndarray(shape))
    check_numeric_gradient(lambda x: nd.Activation(x, act_type=act_type), [x])


@pytest.mark.parametrize("density", [0.0, "one_row", 0.5, 1.0])
@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
@pytest.mark.parametrize("act_type", ACTS)
def test_activation_sparse(act_type, stype, density):
    """The operator's gradient: relu's (f'(0) = 0) keeps the input's stype and pattern;
    the others' are dense, unstored entries included (f'(0) != 0)."""
    x = _away_from_zero(rand_ndarray((4, 5), stype, density))
    act = lambda x: nd.Activation(x, act_type=act_type)  # noqa: E731
    if act_type == "relu":  # the unstored zeros sit on the kink: no gradient arrives there
        check_numeric_gradient(act, [x], [stype], out_grad=_pattern_grad(x))
    else:
        with dense_result(act_type in ("sigmoid", "softrelu")):  # (tanh, softsign keep zeros)
            check_numeric_gradient(act, [x], ["default"])


@pytest.mark.parametrize("act_type", ACTS)
def test_activation_second_order(act_type):
    x = _away_from_zero(rand_ndarray((2, 3)))
    check_second_order(lambda x: nd.Activation(x, act_type=act_type), x)


@pytest.mark.parametrize("stype", ["default", "csr"])
def test_softrelu_op(stype):
    x = rand_ndarray((3, 4), stype, 0.5)
    with dense_result(stype == "csr"):
        check_numeric_gradient(_softrelu, [x], ["default"])


def test_activation_relu_sparse_gradient_pattern():
    """relu of a sparse input: the gradient holds exactly the input's stored entries."""
    x = _away_from_zero(rand_ndarray((5, 6), "csr", 0.4))
    x.attach_grad(stype="csr")
    with autograd.record():
        y = nd.Activation(x, act_type="relu")
    g = autograd.grad(y, x, nd.ones((5, 6)))
    np.testing.assert_array_equal(g.indptr.asnumpy(), x.indptr.asnumpy())
    np.testing.assert_array_equal(g.indices.asnumpy(), x.indices.asnumpy())
    assert_almost_equal(g.data, x.data.asnumpy() > 0)


# -- softmax / log_softmax ---------------------------------------------------------------------

@pytest.mark.parametrize("shape, axis", [((3, 4), -1), ((3, 4), 0), ((2, 3, 4), 1), ((5,), 0)])
@pytest.mark.parametrize("temperature", [None, 2.0])
@pytest.mark.parametrize("op", [nd.softmax, nd.log_softmax])
def test_softmax(op, shape, axis, temperature):
    x = rand_ndarray(shape, distribution="normal")
    check_numeric_gradient(lambda x: op(x, axis=axis, temperature=temperature), [x])


@pytest.mark.parametrize("axis, temperature", [(-1, None), (0, 2.0)])
@pytest.mark.parametrize("op", [nd.softmax, nd.log_softmax])
def test_softmax_second_order(op, axis, temperature):
    """The vjp is written in operators from the output, which create_graph links back."""
    x = rand_ndarray((3, 4), distribution="normal")
    check_second_order(lambda x: op(x, axis=axis, temperature=temperature), x)


@pytest.mark.parametrize("op", [nd.softmax, nd.log_softmax])
def test_softmax_dtype_attr(op):
    """An output dtype other than the input's: the gradient has the input's dtype."""
    x = rand_ndarray((2, 3), dtype="float32")
    x.attach_grad()
    with autograd.record():
        y = op(x, dtype="float64")
    g = autograd.grad(y, x, nd.ones((2, 3), dtype="float64"))
    assert g.dtype == np.float32
    if op is nd.softmax:
        assert_almost_equal(g, np.zeros((2, 3)), atol=1e-6)  # rows of softmax sum to 1
    else:
        want = 1 - 3 * np.exp(y.asnumpy())
        assert_almost_equal(g, want)


# -- _dropout ----------------------------------------------------------------------------------

@pytest.mark.parametrize("mask_shape", [(3, 4), (1, 4), None])
def test_dropout(mask_shape):
    x = rand_ndarray((3, 4))
    if mask_shape is None:
        check_numeric_gradient(_dropout, [x])
        return
    keep = np.random.default_rng(0).random(mask_shape) < 0.5
    check_numeric_gradient(_dropout, [x, nd.array(keep * 2.0)], ["default", None])


def test_dropout_public_gradient_is_the_mask():
    """``Dropout`` while training: the gradient is the scaled mask it drew (y / x)."""
    x = nd.array(np.random.default_rng(0).uniform(1, 2, (4, 5)), dtype=np.float64)
    x.attach_grad()
    with autograd.record():
        y = nd.Dropout(x, p=0.5)
    y.backward()
    mask = y.asnumpy() / x.asnumpy()
    assert set(np.unique(mask)) <= {0.0, 2.0}
    assert_almost_equal(x.grad, mask)


def test_dropout_sparse_without_mask():
    x = rand_ndarray((4, 3), "row_sparse", 0.5)
    check_numeric_gradient(_dropout, [x], ["default"])
