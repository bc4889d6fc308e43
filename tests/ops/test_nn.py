"""nn operators against direct numpy formulas: FullyConnected, ``_dot_bias``, Embedding,
Activation, softmax/log_softmax, Dropout."""
import numpy as np
import pytest

import nets
from nets import nd
from nets.base import DTypeError, NetsError, ShapeError
from nets.ops.nn import _dot_bias
from nets.ops.registry import TRAINING
from nets.test_utils import DENSITIES, assert_almost_equal, rand_ndarray
from tests.ops.conftest import dense_result, dense_values

DTYPES = ("float32", "float64")


@pytest.fixture
def training():
    token = TRAINING.set(True)
    yield
    TRAINING.reset(token)


# -- FullyConnected ----------------------------------------------------------------------------

@pytest.mark.parametrize("stype", ["default", "csr"])
@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_fully_connected(stype, density, dtype, no_densify):
    x = rand_ndarray((5, 7), stype, density, dtype)
    w, b = rand_ndarray((3, 7), dtype=dtype), rand_ndarray((3,), dtype=dtype)
    want = dense_values(x) @ w._np.T + b._np
    y = nd.FullyConnected(x, w, b, num_hidden=3)
    assert y.stype == "default" and y.dtype == np.dtype(dtype)
    assert_almost_equal(y, want)


@pytest.mark.parametrize("stype", ["default", "csr"])
def test_fully_connected_no_bias(stype):
    x = rand_ndarray((4, 6), stype, 0.5)
    w = rand_ndarray((2, 6))
    y = nd.FullyConnected(x, w, None, num_hidden=2, no_bias=True)
    assert_almost_equal(y, x.asnumpy() @ w.asnumpy().T)


@pytest.mark.parametrize("flatten, out_shape", [(True, (2, 4)), (False, (2, 3, 4))])
def test_fully_connected_flatten(flatten, out_shape):
    x = rand_ndarray((2, 3, 5))
    in_units = 15 if flatten else 5
    w, b = rand_ndarray((4, in_units)), rand_ndarray((4,))
    y = nd.FullyConnected(x, w, b, num_hidden=4, flatten=flatten)
    want = x.asnumpy().reshape(-1, in_units) @ w.asnumpy().T + b.asnumpy()
    assert y.shape == out_shape
    assert_almost_equal(y, want.reshape(out_shape))


def test_fully_connected_row_sparse_weight_falls_back():
    x, w, b = rand_ndarray((3, 4)), rand_ndarray((2, 4), "row_sparse", 0.5), rand_ndarray((2,))
    with pytest.warns(nets.StorageFallbackWarning, match="FullyConnected"):
        y = nd.FullyConnected(x, w, b, num_hidden=2)
    assert_almost_equal(y, x.asnumpy() @ w.asnumpy().T + b.asnumpy())


@pytest.mark.parametrize("wshape, bshape, kwargs, err, match", [
    ((3, 6), (3,), {"num_hidden": 4}, ShapeError, r"weight has shape \(3, 6\).*num_hidden=4"),
    ((3, 5), (3,), {"num_hidden": 3}, ShapeError, r"data of shape \(4, 6\).*6 input units.*5"),
    ((3, 6), (2,), {"num_hidden": 3}, ShapeError, r"bias has shape \(2,\)"),
    ((3, 6), None, {"num_hidden": 3}, NetsError, "no_bias=False but bias is missing"),
    ((3, 6), (3,), {"num_hidden": 3, "no_bias": True}, NetsError, "no_bias=True but bias is given"),
    ((3, 6), (3,), {}, TypeError, "num_hidden"),
])
def test_fully_connected_errors(wshape, bshape, kwargs, err, match):
    bias = None if bshape is None else nd.zeros(bshape)
    with pytest.raises(err, match=match):
        nd.FullyConnected(nd.zeros((4, 6)), nd.zeros(wshape), bias, **kwargs)


@pytest.mark.parametrize("stype, data, weight, bias, name", [
    ("default", "int64", "float32", "float32", "data"),
    ("default", "float64", "float32", "float32", "data"),
    ("csr", "float64", "float32", "float32", "data"),
    ("default", "float32", "float32", "float64", "bias"),
])
def test_fully_connected_mixed_dtypes(stype, data, weight, bias, name):
    """One dtype for all inputs (MXNet): numpy would promote int64 data with a float32
    weight to a float64 output whose gradient then fails in dot."""
    x = rand_ndarray((4, 6), stype, 0.5, data)
    w, b = rand_ndarray((3, 6), dtype=weight), rand_ndarray((3,), dtype=bias)
    other = data if name == "data" else bias
    with pytest.raises(DTypeError, match=f"{name} has dtype {other} but weight has dtype "
                                         f"{weight}"):
        nd.FullyConnected(x, w, b, num_hidden=3)


# -- _dot_bias (FullyConnectedSparse) --------------------------------------------------------

@pytest.mark.parametrize("stype", ["default", "csr"])
@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 7, 3), (1, 4, 1), (9, 1, 5)])
@pytest.mark.parametrize("bias", [True, False])
def test_dot_bias(stype, density, dtype, shape, bias, no_densify):
    rows, in_units, units = shape
    x = rand_ndarray((rows, in_units), stype, density, dtype)
    w, b = rand_ndarray((in_units, units), dtype=dtype), rand_ndarray((units,), dtype=dtype)
    y = _dot_bias(x, w, b if bias else None)
    assert y.stype == "default" and y.dtype == np.dtype(dtype) and y.shape == (rows, units)
    assert_almost_equal(y, dense_values(x) @ w._np + (b._np if bias else 0))


@pytest.mark.parametrize("stype", ["default", "csr"])
def test_dot_bias_empty_batch(stype):
    x = nd.zeros((0, 6)).tostype(stype)
    y = _dot_bias(x, rand_ndarray((6, 2)), rand_ndarray((2,)))
    assert y.shape == (0, 2) and y.stype == "default"


def test_dot_bias_shared_between_threads(shared_kernels):
    """A csr batch shared between threads in chunks of rows: each chunk starts from the
    bias."""
    x = rand_ndarray((40, 30), "csr", 0.3)
    w, b = rand_ndarray((30, 8)), rand_ndarray((8,))
    assert_almost_equal(_dot_bias(x, w, b), x.asnumpy() @ w.asnumpy() + b.asnumpy())


@pytest.mark.parametrize("wshape, bshape, dtypes, err, match", [
    ((6, 3), (3,), ("float32", "float64", "float32"), DTypeError,
     "weight has dtype float64 but data has dtype float32"),
    ((6, 3), (3,), ("float32", "float32", "float64"), DTypeError, "bias has dtype float64"),
    ((5, 3), (3,), ("float32",) * 3, ShapeError, r"data \(4, 6\) and weight \(5, 3\)"),
    ((6, 3), (2,), ("float32",) * 3, ShapeError, r"bias has shape \(2,\), expected \(3,\)"),
])
@pytest.mark.parametrize("stype", ["default", "csr"])
def test_dot_bias_errors(wshape, bshape, dtypes, err, match, stype):
    x = rand_ndarray((4, 6), stype, 0.5, dtypes[0])
    with pytest.raises(err, match=match):
        _dot_bias(x, nd.zeros(wshape, dtype=dtypes[1]), nd.zeros(bshape, dtype=dtypes[2]))


# -- Embedding ---------------------------------------------------------------------------------

@pytest.mark.parametrize("wstype", ["default", "row_sparse"])
@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("id_dtype", ["int32", "float32"])
def test_embedding(wstype, density, dtype, id_dtype, no_densify):
    w = rand_ndarray((6, 3), wstype, density, dtype)
    ids = np.array([[0, 5, 2], [2, 2, 4]], dtype=id_dtype)
    y = nd.Embedding(nd.array(ids, dtype=id_dtype), w, input_dim=6, output_dim=3)
    assert y.stype == "default" and y.dtype == np.dtype(dtype) and y.shape == (2, 3, 3)
    assert_almost_equal(y, dense_values(w)[ids.astype(int)])


@pytest.mark.parametrize("wdtype", ["float16", "int32", "uint64", "bool"])
@pytest.mark.parametrize("id_dtype", ["int64", "uint8", "bool", "float16", "float64"])
def test_embedding_gathers_any_dtype(wdtype, id_dtype):
    """The gather moves bits, so every weight dtype nets supports is looked up exactly."""
    w = np.arange(18).reshape(6, 3).astype(wdtype)
    ids = np.array([[1, 0], [1, 1]], dtype=id_dtype)
    y = nd.Embedding(nd.array(ids, dtype=id_dtype), nd.array(w, dtype=wdtype), 6, 3)
    assert y.dtype == np.dtype(wdtype) and y.shape == (2, 2, 3)
    np.testing.assert_array_equal(y.asnumpy(), w[ids.astype(int)])


def test_embedding_scalar_id():
    w = rand_ndarray((4, 3))
    y = nd.Embedding(nd.array(np.array(2.0)), w, input_dim=4, output_dim=3)
    assert_almost_equal(y, w.asnumpy()[2], rtol=0, atol=0)


def test_embedding_empty_ids():
    y = nd.Embedding(nd.zeros((0,)), rand_ndarray((4, 2), "row_sparse"), 4, 2)
    assert y.shape == (0, 2)


@pytest.mark.parametrize("ids, match", [
    ([[0, 1], [2.5, 0]], r"data\[1, 0\]=2.5 is not a whole number"),
    ([[0, np.nan], [1, 0]], r"data\[0, 1\]=nan is not a whole number"),
    ([[0, 1], [1, 4]], r"data\[1, 1\]=4.0 is out of range \[0, 4\)"),
    ([[-1, 1], [1, 0]], r"data\[0, 0\]=-1.0 is out of range"),
    ([[0, np.inf], [1, 0]], r"data\[0, 1\]=inf is out of range"),
    ([[0, 9], [0.5, 0]], r"data\[1, 0\]=0.5 is not a whole number"),  # before any range error
])
@pytest.mark.parametrize("wstype", ["default", "row_sparse"])
def test_embedding_bad_ids(ids, match, wstype):
    w = rand_ndarray((4, 2), wstype)
    with pytest.raises(NetsError, match=match):
        nd.Embedding(nd.array(ids), w, input_dim=4, output_dim=2)


def test_embedding_bad_weight_shape():
    with pytest.raises(ShapeError, match=r"weight has shape \(4, 2\).*input_dim=5, output_dim=2"):
        nd.Embedding(nd.array([0, 1]), nd.zeros((4, 2)), input_dim=5, output_dim=2)


# -- Activation --------------------------------------------------------------------------------

def _oracle(act_type, x):
    x = x.astype(np.float64)
    return {"relu": lambda: np.where(x > 0, x, 0), "sigmoid": lambda: 1 / (1 + np.exp(-x)),
            "tanh": lambda: np.tanh(x), "softrelu": lambda: np.log(1 + np.exp(x)),
            "softsign": lambda: x / (1 + np.abs(x))}[act_type]()


ZERO_PRESERVING = {"relu", "tanh", "softsign"}


@pytest.mark.parametrize("act_type", ["relu", "sigmoid", "tanh", "softrelu", "softsign"])
@pytest.mark.parametrize("stype", ["default", "csr", "row_sparse"])
@pytest.mark.parametrize("density", DENSITIES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_activation(act_type, stype, density, dtype, no_densify):
    x = rand_ndarray((4, 5), stype, density, dtype, distribution="normal")
    with dense_result(stype != "default" and act_type not in ZERO_PRESERVING):
        y = nd.Activation(x, act_type=act_type)
    assert y.stype == (stype if act_type in ZERO_PRESERVING else "default")
    assert y.dtype == np.dtype(dtype)
    if y.stype != "default":
        y.check_format()
    assert_almost_equal(dense_values(y), _oracle(act_type, dense_values(x)).astype(dtype))


def test_activation_stable_for_large_inputs():
    x = nd.array([-1000.0, -50.0, 0.0, 50.0, 1000.0])
    with np.errstate(all="raise", under="ignore"):
        sig = nd.Activation(x, act_type="sigmoid").asnumpy()
        soft = nd.Activation(x, act_type="softrelu").asnumpy()
    assert_almost_equal(sig, [0, np.exp(-50.0), 0.5, 1, 1], atol=1e-30)
    assert_almost_equal(soft, [0, np.exp(-50.0), np.log(2), 50, 1000], atol=1e-30)


def test_activation_bad_act_type():
    with pytest.raises(NetsError, match=r"act_type='gelu' is not one of"):
        nd.Activation(nd.zeros((2,)), act_type="gelu")


# -- softmax / log_softmax ---------------------------------------------------------------------

def _softmax_oracle(x, axis, temperature):
    e = np.exp(x.astype(np.float64) / (temperature or 1.0))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("temperature", [None, 2.5])
@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_and_log_softmax(axis, temperature, dtype):
    x = rand_ndarray((3, 4, 2), dtype=dtype, distribution="normal")
    want = _softmax_oracle(x.asnumpy(), axis, temperature)
    y = nd.softmax(x, axis=axis, temperature=temperature)
    ly = nd.log_softmax(x, axis, temperature)
    assert y.dtype == ly.dtype == np.dtype(dtype)
    assert_almost_equal(y, want)
    assert_almost_equal(ly, np.log(want))


def test_softmax_stable_and_dtype():
    x = nd.array([[1000.0, 1000.0, -1000.0], [0.0, 1.0, 2.0]])
    with np.errstate(all="raise", under="ignore"):
        y = nd.softmax(x, dtype="float64")
        ly = nd.log_softmax(x)
    assert y.dtype == np.float64 and ly.dtype == np.float32
    assert_almost_equal(y[0], [0.5, 0.5, 0.0], atol=1e-30)
    assert_almost_equal(ly[0], [-np.log(2), -np.log(2), -2000 - np.log(2)])
    assert nd.softmax(nd.array([1, 2], dtype="int64")).dtype == np.float32
    assert x.softmax().shape == (2, 3)  # fluent method


def test_softmax_sparse_falls_back():
    x = rand_ndarray((3, 4), "csr", 0.5)
    with pytest.warns(nets.StorageFallbackWarning, match="softmax"):
        y = nd.softmax(x)
    assert y.stype == "default"
    assert_almost_equal(y, _softmax_oracle(x.asnumpy(), -1, None))


@pytest.mark.parametrize("op", [nd.softmax, nd.log_softmax])
def test_softmax_errors(op):
    with pytest.raises(ShapeError, match="axis=2 is out of range"):
        op(nd.zeros((2, 3)), axis=2)
    with pytest.raises(NetsError, match="temperature=0 must be positive"):
        op(nd.zeros((2, 3)), temperature=0)


# -- Dropout -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_dropout_statistics(dtype, training):
    p = 0.3
    x = nd.ones((200, 500), dtype=dtype)
    y = nd.Dropout(x, p=p).asnumpy()
    assert y.dtype == np.dtype(dtype)
    zero = y == 0
    assert abs(zero.mean() - p) < 0.01  # 100k Bernoulli draws: 7 standard deviations
    assert np.all(y[~zero] == np.asarray(1 / (1 - p), dtype))  # inverted scaling, exact
    assert abs(y.mean() - 1.0) < 0.02


def test_dropout_inactive_outside_training():
    x = rand_ndarray((4, 5))
    y = nd.Dropout(x, p=0.5)
    assert nets.test_utils.same(y, x)
    y[0, 0] = 99.0
    assert x.asnumpy()[0, 0] != 99.0  # a copy, not a view


def test_dropout_always_and_p_zero(training):
    x = nd.ones((50, 40))
    token = TRAINING.set(False)
    try:
        assert (nd.Dropout(x, p=0.5, mode="always").asnumpy() == 0).any()
    finally:
        TRAINING.reset(token)
    assert nets.test_utils.same(nd.Dropout(x, p=0.0), x)


def test_dropout_axes_share_the_mask(training):
    y = nd.Dropout(nd.ones((30, 40)), p=0.5, axes=(0,)).asnumpy()
    assert np.all(y == y[:1])  # one mask value per column, shared along axis 0
    assert 0 < (y[0] == 0).sum() < 40


def test_dropout_reproducible(training):
    x = nd.ones((10, 10))
    nets.random.seed(7)
    a = nd.Dropout(x).asnumpy()
    nets.random.seed(7)
    assert np.array_equal(a, nd.Dropout(x).asnumpy())


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_dropout_sparse(stype, training):
    x = rand_ndarray((6, 5), stype, 0.5)
    token = TRAINING.set(False)
    try:
        y = nd.Dropout(x)  # inactive: a native copy
    finally:
        TRAINING.reset(token)
    assert y.stype == stype and nets.test_utils.same(y, x)
    with pytest.warns(nets.StorageFallbackWarning, match="_dropout"):
        y = nd.Dropout(x, p=0.5)
    assert y.stype == stype
    kept = y.asnumpy() != 0
    assert_almost_equal(y.asnumpy()[kept], 2 * x.asnumpy()[kept])


@pytest.mark.parametrize("kwargs, match", [
    ({"p": 1.0}, r"p=1.0 must be a number in \[0, 1\)"),
    ({"p": -0.1}, r"p=-0.1"),
    ({"p": "half"}, r"p='half'"),
    ({"mode": "test"}, r"mode='test'"),
    ({"axes": (2,)}, r"axes=\(2,\) out of range"),
])
def test_dropout_errors(kwargs, match):
    with pytest.raises(NetsError, match=match):
        nd.Dropout(nd.zeros((2, 3)), **kwargs)
