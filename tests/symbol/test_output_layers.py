"""Output layers against numpy: forward is the prediction, backward the loss gradient
scaled by grad_scale whatever the head gradient (MXNet's semantics)."""
import numpy as np
import pytest

from nets import autograd, nd
from nets.base import NetsError, ShapeError
from nets.ops import output
from nets.ops.output import LinearRegressionOutput, MakeLoss, SoftmaxOutput
from nets.test_utils import assert_almost_equal, rand_ndarray


def _grad(op, data, *inputs, head=None, **attrs):
    """(output, d data) with a random head gradient, which output layers must ignore."""
    data.attach_grad()
    with autograd.record():
        out = op(data, *inputs, **attrs)
    out.backward(nd.array(np.random.default_rng(1).standard_normal(out.shape)) if head is None
                 else head)
    return out.asnumpy(), data.grad.asnumpy()


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, forward, delta", [
    ("LinearRegressionOutput", lambda x: x, lambda o, y: o - y),
    ("LogisticRegressionOutput", _sigmoid, lambda o, y: o - y),
    ("MAERegressionOutput", lambda x: x, lambda o, y: np.sign(o - y)),
])
@pytest.mark.parametrize("shape, label_shape", [((5, 3), (5, 3)), ((5, 1), (5,))])
def test_regression_outputs(name, forward, delta, shape, label_shape, dtype):
    op = getattr(output, name)
    x = rand_ndarray(shape, dtype=dtype)
    y = rand_ndarray(label_shape, dtype=dtype)
    out, grad = _grad(op, x, y, grad_scale=3.0)
    expected = forward(x.asnumpy())
    assert_almost_equal(out, expected)
    m = np.prod(label_shape) / label_shape[0]
    assert_almost_equal(grad, delta(expected, y.asnumpy().reshape(shape)) * 3.0 / m)
    assert grad.dtype == np.dtype(dtype)


def test_regression_label_may_be_sparse_and_must_fit():
    x, y = rand_ndarray((4, 6)), rand_ndarray((4, 6), "csr", density=0.3)
    _, grad = _grad(LinearRegressionOutput, x, y)  # no fallback warning (an error in tests)
    assert_almost_equal(grad, (x.asnumpy() - y.asnumpy()) / 6)
    with pytest.raises(ShapeError, match="label has shape"):
        LinearRegressionOutput(x, nd.zeros((3, 8)))


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_output_gradient_and_options(dtype):
    rng = np.random.default_rng(0)
    x = nd.array(rng.standard_normal((6, 4)), dtype=dtype)
    ids = np.array([0, 3, 1, 2, 3, 1])
    out, grad = _grad(SoftmaxOutput, x, nd.array(ids), grad_scale=2.0)
    p = _softmax(x.asnumpy())
    assert_almost_equal(out, p)
    onehot = np.eye(4)[ids]
    assert_almost_equal(grad, (p - onehot) * 2.0)
    # ignored labels and normalization
    ids_ignored = ids.astype(float)
    ids_ignored[[1, 4]] = -1
    _, grad = _grad(SoftmaxOutput, x, nd.array(ids_ignored), use_ignore=True,
                    normalization="valid")
    keep = (ids_ignored != -1)[:, None]
    want = (p - np.eye(4)[np.where(keep[:, 0], ids, 0)]) * keep / keep.sum()
    assert_almost_equal(grad, want)
    _, grad = _grad(SoftmaxOutput, x, nd.array(ids), normalization="batch", smooth_alpha=0.3)
    target = np.where(onehot == 1, 0.7, 0.1)
    assert_almost_equal(grad, (p - target) / 6)
    # probabilities as labels, and out_grad
    soft = _softmax(rng.standard_normal((6, 4)))
    head = rng.standard_normal((6, 4))
    _, grad = _grad(SoftmaxOutput, x, nd.array(soft, dtype=dtype), out_grad=True,
                    head=nd.array(head, dtype=dtype))
    assert_almost_equal(grad, (p - soft) * head, rtol=1e-4, atol=1e-5)


def test_softmax_output_multi_output_and_preserve_shape():
    rng = np.random.default_rng(0)
    x = nd.array(rng.standard_normal((2, 3, 5)))
    ids = rng.integers(0, 3, (2, 5))
    out, grad = _grad(SoftmaxOutput, x, nd.array(ids), multi_output=True)
    p = _softmax(x.asnumpy(), axis=1)
    assert_almost_equal(out, p)
    assert_almost_equal(grad, p - np.moveaxis(np.eye(3)[ids], -1, 1))
    ids = rng.integers(0, 5, (2, 3))
    out, grad = _grad(SoftmaxOutput, x, nd.array(ids), preserve_shape=True)
    assert_almost_equal(grad, _softmax(x.asnumpy()) - np.eye(5)[ids])
    out = SoftmaxOutput(x, nd.array([1, 14]))  # default: each example's values flattened
    assert_almost_equal(out, _softmax(x.asnumpy().reshape(2, 15)).reshape(2, 3, 5))


def test_softmax_output_rejects_bad_labels():
    x = rand_ndarray((2, 3))
    x.attach_grad()
    with autograd.record():
        out = SoftmaxOutput(x, nd.array([0, 3]))
    with pytest.raises(NetsError, match=r"label\[1\]=3.*out of range"):
        out.backward()
    with pytest.raises(ShapeError, match="label has shape"):
        SoftmaxOutput(x, nd.zeros((3,)))
    with pytest.raises(NetsError, match="normalization"):
        SoftmaxOutput(x, nd.zeros((2,)), normalization="mean")


@pytest.mark.parametrize("normalization, scale", [("null", 1.0), ("batch", 1 / 4),
                                                  ("valid", 1 / 5)])
def test_make_loss(normalization, scale):
    x = nd.array(np.arange(12).reshape(4, 3) - 6.0)  # 5 elements above 0
    out, grad = _grad(MakeLoss, x, grad_scale=2.0, normalization=normalization)
    assert_almost_equal(out, x.asnumpy())
    assert_almost_equal(grad, np.full((4, 3), 2.0 * scale))
