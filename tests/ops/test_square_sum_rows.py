"""``square_sum``'s gradient for a row_sparse input and a row_sparse incoming gradient
holds the rows both store (MXNet's ``_backward_square_sum`` gives the incoming gradient's
rows), so lazy Adam in a factorization-machine step leaves every other row of the factor
table untouched; and the forward kernel's values against numpy."""
import numpy as np
import pytest

from nets import autograd, nd
from nets.optim import Adam
from nets.test_utils import assert_almost_equal, check_numeric_gradient

DENSITIES = [0.0, "one row", 0.01, 0.5, 1.0]


def _rows(rng, n, density):
    """Sorted unique stored rows of an ``n``-row array at ``density``."""
    if density == "one row":
        return np.array([rng.integers(n)])
    return np.flatnonzero(rng.random(n) < density)


def _rsp(rng, shape, density, dtype):
    """A row_sparse array of ``shape`` storing random rows (values never 0) and its dense
    equivalent."""
    rows = _rows(rng, shape[0], density)
    dense = np.zeros(shape, dtype)
    dense[rows] = (rng.uniform(0.5, 1.5, (len(rows),) + shape[1:])
                   * rng.choice([-1, 1], (len(rows),) + shape[1:]))
    return nd.array(dense, dtype=dtype).tostype("row_sparse"), dense, rows


def _grad(v, g, **kwargs):
    v = v.copy()
    v.attach_grad(stype="row_sparse")
    with autograd.record():
        s = nd.square_sum(v, **kwargs)
    assert s.stype == "row_sparse"
    s.backward(g)
    return v.grad


# (shape, attributes): MXNet's case (2-D, axis=1, keepdims) and its n-d generalisations
CASES = [((200, 6), {"axis": 1, "keepdims": True}),
         ((200, 3, 4), {"axis": (1, 2), "keepdims": True}),
         ((200, 3, 4), {"axis": 0, "keepdims": True, "exclude": True}),
         ((200, 3, 4), {"axis": 2, "keepdims": True})]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("g_density", DENSITIES)
@pytest.mark.parametrize("v_density", DENSITIES)
def test_gradient_rows_are_the_intersection(v_density, g_density, dtype):
    rng = np.random.default_rng([DENSITIES.index(v_density), DENSITIES.index(g_density),
                                 len(dtype)])
    for shape, kwargs in CASES:
        v, vd, v_rows = _rsp(rng, shape, v_density, dtype)
        out_shape = nd.square_sum(v, **kwargs).shape
        g, gd, g_rows = _rsp(rng, out_shape, g_density, dtype)
        grad = _grad(v, g, **kwargs)
        assert grad.stype == "row_sparse" and grad.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(grad.indices.asnumpy(), np.intersect1d(v_rows, g_rows))
        assert_almost_equal(grad, 2 * vd * gd)  # (gd broadcasts over the reduced axes)


@pytest.mark.parametrize("same", ["one array", "equal arrays"])
def test_same_rows(same):
    """Input and incoming gradient storing the same rows (MXNet's common case, the rows a
    batch pulled): every row comes back."""
    rng = np.random.default_rng(3)
    v, vd, rows = _rsp(rng, (50, 4), 0.3, "float32")
    if same == "one array":
        g = nd.sparse.row_sparse_array((np.ones((len(rows), 1), "float32"), v.indices),
                                       shape=(50, 1))
    else:
        g = nd.array(np.where(vd[:, :1] != 0, 1.0, 0.0), dtype="float32").tostype("row_sparse")
    grad = _grad(v, g, axis=1, keepdims=True)
    np.testing.assert_array_equal(grad.indices.asnumpy(), rows)
    assert_almost_equal(grad, 2 * vd)


def test_dense_incoming_gradient_gives_the_input_rows():
    rng = np.random.default_rng(4)
    v, vd, rows = _rsp(rng, (40, 5), 0.2, "float64")
    g = rng.normal(size=(40, 1))
    grad = _grad(v, nd.array(g, dtype="float64"), axis=1, keepdims=True)
    assert grad.stype == "row_sparse"
    np.testing.assert_array_equal(grad.indices.asnumpy(), rows)
    assert_almost_equal(grad, 2 * vd * g)


@pytest.mark.parametrize("v_density", [0.2, 1.0])
def test_numeric_gradient_through_a_sparse_dot(v_density):
    """``dot(csr, square_sum(v))``: the incoming gradient is row_sparse on the batch's
    columns (``dot(csr.T, g)``), as in a factorization machine."""
    rng = np.random.default_rng(5)
    v, _, _ = _rsp(rng, (12, 3), v_density, "float64")
    x = nd.array(np.where(rng.random((4, 12)) < 0.25, rng.normal(size=(4, 12)), 0.0),
                 dtype="float64").tostype("csr")
    check_numeric_gradient(
        lambda a, b: nd.dot(b.square(), nd.square_sum(a, axis=1, keepdims=True)), [v, x],
        grad_stypes=["row_sparse", None])


def _fm_step(v, w, x, y, opt):
    """One factorization-machine step: square_sum of the whole factor table ``v``, the two
    dot products, logistic loss, Adam."""
    for p in (v, w):
        p.attach_grad(stype="row_sparse")
    with autograd.record():
        linear = nd.dot(x, w)
        self_inter = nd.dot(x.square(), nd.square_sum(v, axis=1, keepdims=True))
        xv = nd.dot(x, v)
        out = linear + 0.5 * (nd.sum(xv * xv, axis=1, keepdims=True) - self_inter)
        loss = nd.sum(nd.log(1 + nd.exp(-y * out)))
    loss.backward()
    assert v.grad.stype == "row_sparse"
    np.testing.assert_array_equal(v.grad.indices.asnumpy(), np.unique(x.indices.asnumpy()))
    opt.step(0, v, v.grad)
    opt.step(1, w, w.grad)


def _dense(a):
    return a.asnumpy() if hasattr(a, "asnumpy") else np.asarray(a)


def test_lazy_adam_leaves_untouched_rows_of_the_factor_table():
    rng = np.random.default_rng(6)
    n, k = 300, 4
    v = nd.array(rng.normal(0, 0.1, (n, k)), dtype="float32").tostype("row_sparse")
    w = nd.array(rng.normal(0, 0.1, (n, 1)), dtype="float32").tostype("row_sparse")
    assert len(v.indices) == n  # every row stored: the whole table
    v0 = v.asnumpy().copy()
    opt = Adam(learning_rate=0.1, wd=0.01, lazy_update=True)
    touched = np.zeros(n, bool)
    for _ in range(3):
        cols = rng.choice(n // 2, 20, replace=False)  # rows n/2.. are never in a batch
        dense = np.zeros((8, n), "float32")
        dense[rng.integers(8, size=20), cols] = rng.uniform(0.5, 2, 20)
        x = nd.array(dense).tostype("csr")
        y = nd.array(rng.choice([-1.0, 1.0], (8, 1)), dtype="float32")
        _fm_step(v, w, x, y, opt)
        touched[np.unique(x.indices.asnumpy())] = True
        state = opt.state[0].state
        for s in state:
            s = _dense(s)
            assert not s[~touched].any()  # moments never decay or move there
            assert s[touched].any()
        after = v.asnumpy()
        np.testing.assert_array_equal(after[~touched].view(np.uint32),
                                      v0[~touched].view(np.uint32))  # bit for bit
        assert (after[touched] != v0[touched]).any(axis=1).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("stype", ["default", "row_sparse"])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("shape", [(0, 5), (7, 0), (1000, 16), (33, 300), (3, 4, 5)])
def test_forward_values(shape, keepdims, stype, dtype):
    rng = np.random.default_rng(7)
    a = rng.normal(size=shape).astype(dtype)
    if shape[0]:
        a[rng.random(shape[0]) < 0.5] = 0
    x = nd.array(a, dtype=dtype)
    if stype == "row_sparse":
        x = x.tostype("row_sparse")
    for axis in [1, (1, 2)] if len(shape) == 3 else [1]:
        got = nd.square_sum(x, axis=axis, keepdims=keepdims)
        want = np.sum(np.square(a.astype(np.float64)), axis=axis, keepdims=keepdims)
        assert got.dtype == np.dtype(dtype) and got.shape == (want.shape or (1,))
        assert_almost_equal(got.asnumpy(), want, rtol=1e-5 if dtype == "float32" else 1e-12,
                            atol=0)
