"""MXNet's test_utils signatures and semantics (values from MXNet 1.9.1's documented
behaviour): tolerances per dtype, almost_equal, symbolic checks, powerlaw arrays."""
import numpy as np
import pytest

from nets import nd
from nets import sym
from nets.test_utils import (almost_equal, assert_almost_equal, assert_exception,
                             check_numeric_gradient, check_symbolic_backward,
                             check_symbolic_forward, create_sparse_array,
                             create_sparse_array_zd, default_atols, default_rtols,
                             default_tolerances,
                             rand_ndarray, random_arrays, random_sample, assign_each)


@pytest.fixture
def mxnet_defaults():
    """MXNet's default tolerances (the suite runs under nets' strict ones)."""
    with default_tolerances("mxnet"):
        yield


def test_strict_and_mxnet_defaults_differ_where_documented():
    assert default_atols()[np.dtype(np.float32)] == 1e-5  # (the suite's strict ones)
    assert default_rtols()[np.dtype(np.float64)] == 1e-7
    with default_tolerances("mxnet"):
        assert default_atols()[np.dtype(np.float32)] == 1e-3
        with default_tolerances("strict"):
            assert default_atols()[np.dtype(np.float32)] == 1e-5
        assert default_atols()[np.dtype(np.float32)] == 1e-3
    with pytest.raises(ValueError, match="kind='loose'"):
        with default_tolerances("loose"):
            pass


def test_default_tolerances_are_mxnets(mxnet_defaults):
    assert default_rtols()[np.dtype(np.float32)] == 1e-4
    assert default_atols()[np.dtype(np.float32)] == 1e-3
    assert default_rtols()[np.dtype(np.float64)] == 1e-5
    assert default_atols()[np.dtype(np.float16)] == 1e-1
    assert default_atols()[np.dtype(np.int32)] == 0
    assert_almost_equal(np.float32([1.0]), np.float32([1.0005]))  # within float32's atol
    with pytest.raises(AssertionError):
        assert_almost_equal(np.int64([1]), np.int64([2]))
    with pytest.raises(AssertionError):
        assert_almost_equal(np.float64([1.0]), np.float64([1.0005]))
    assert_almost_equal(np.ones((2, 3)), 1.0)  # broadcast, as MXNet's np.allclose


def test_almost_equal_uses_float64_defaults():
    assert almost_equal(np.array([1.0]), np.array([1.0 + 1e-7]))
    assert not almost_equal(np.array([1.0]), np.array([1.001]))
    assert not almost_equal(np.ones(3), np.ones((1, 3)), use_broadcast=False)
    assert almost_equal(np.array([np.nan]), np.array([np.nan]), equal_nan=True)


def test_assert_exception_and_samples():
    assert_exception(lambda: 1 / 0, ZeroDivisionError)
    with pytest.raises(AssertionError):
        assert_exception(lambda: 1, ZeroDivisionError)
    a, b = random_arrays((2, 3), ())
    assert a.shape == (2, 3) and a.dtype == np.float32 and b.shape == ()
    s = random_sample(list(range(10)), 4)
    assert len(s) == 4 and len(set(s)) == 4
    assert_almost_equal(assign_each(np.array([1.0, 2.0]), lambda v: v * 3), [3.0, 6.0])


@pytest.mark.parametrize("shape, density", [((10, 100), 0.2), ((5, 16), 0.5), ((8, 4), 0.9)])
def test_powerlaw_rows_follow_mxnets_pattern(shape, density):
    x = rand_ndarray(shape, "csr", density=density, distribution="powerlaw")
    counts = np.diff(x.indptr.asnumpy())
    budget = int(shape[0] * shape[1] * density)
    assert counts.sum() == budget
    left = budget - shape[0]
    for i, c in enumerate(counts):  # row i: min(2**(i+1), cols) values until spent
        want = 1 + min(min(2 ** (i + 1), shape[1]) - 1, max(left, 0))
        left -= want - 1
        assert c == want, (i, counts)
    v = x.data.asnumpy()
    assert v.min() > 1.0 and v.max() < 3.0
    with pytest.raises(ValueError):
        rand_ndarray((10, 10), "csr", density=0.1, distribution="powerlaw")


def test_rand_ndarray_mxnet_arguments():
    x = rand_ndarray((6, 5), "csr", 0.5, None, None, True)  # modifier_func, shuffle_csr_indices
    assert x.stype == "csr" and x.data.shape[0] == 15
    y = rand_ndarray((4, 3), "row_sparse", 1.0, modifier_func=lambda v: 7.0)
    assert (y.data.asnumpy() == 7.0).all()
    z = create_sparse_array((5, 3), "row_sparse", data_init=2.0, rsp_indices=[3, 1])
    assert list(z.indices.asnumpy()) == [1, 3] and (z.data.asnumpy() == 2.0).all()
    e = create_sparse_array_zd((5, 3), "row_sparse", density=0.9)
    assert e.data.shape[0] == 0


def test_check_symbolic_forward_and_backward():
    lhs, rhs = sym.Variable("lhs"), sym.Variable("rhs")
    a, b = np.array([[1., 2], [3, 4]]), np.array([[5., 6], [7, 8]])
    check_symbolic_forward(sym.dot(lhs, rhs), [a, b], [a @ b])
    check_symbolic_forward(sym.dot(lhs, rhs), {"lhs": a, "rhs": b}, [a @ b])
    og = np.ones((2, 2))
    check_symbolic_backward(sym.elemwise_add(lhs, rhs), [a, b], [og], [og, og])
    check_symbolic_backward(sym.elemwise_mul(lhs, rhs), [a, b], [og], {"lhs": b, "rhs": a},
                            grad_req={"lhs": "write", "rhs": "add"})
    with pytest.raises(AssertionError):
        check_symbolic_forward(sym.dot(lhs, rhs), [a, b], [a @ b + 1])


def test_check_numeric_gradient_mxnet_signature():
    x, w = sym.Variable("x"), sym.Variable("w")
    loc = {"x": np.random.rand(3, 4), "w": np.random.rand(4, 2)}
    check_numeric_gradient(sym.dot(x, w), loc, numeric_eps=1e-3, rtol=1e-2, atol=1e-3)
    check_numeric_gradient(sym=sym.tanh(x), location=[loc["x"]], grad_nodes=["x"])
    # a row_sparse weight's gradient buffer by grad_stype_dict
    ws = sym.Variable("w", stype="row_sparse")
    loc2 = {"x": nd.array(np.random.rand(3, 4)).tostype("csr"),
            "w": nd.array(np.random.rand(4, 2)).tostype("row_sparse")}
    check_numeric_gradient(sym.dot(sym.Variable("x", stype="csr"), ws), loc2,
                           grad_nodes=["w"], grad_stype_dict={"w": "row_sparse"},
                           rtol=1e-2, atol=1e-3)
    # ours: a function of arrays
    check_numeric_gradient(lambda a: a * a, [nd.array([[1., 2.]])])
