"""Gradients of the sparse operators against float64 central differences
(``check_numeric_gradient``): cast_storage, retain, add_n, zeros_like, ones_like."""
import numpy as np
import pytest

from nets import autograd, nd
from nets.test_utils import assert_almost_equal, check_numeric_gradient, rand_ndarray
from tests.ops.conftest import dense_result

STYPES = ["default", "csr", "row_sparse"]


@pytest.mark.parametrize("density", [0.0, "one_row", 0.5])
@pytest.mark.parametrize("to", STYPES)
@pytest.mark.parametrize("src", STYPES)
def test_cast_storage(src, to, density):
    """The gradient comes back in the input's storage type."""
    x = rand_ndarray((3, 4), src, density)
    check_numeric_gradient(lambda x: nd.cast_storage(x, stype=to), [x], [src])


@pytest.mark.parametrize("indices", [[3, 0, 3], [], [0, 1, 2, 3, 4]])
@pytest.mark.parametrize("stype", ["row_sparse"])
def test_retain(stype, indices):
    """The retained rows of the gradient, row_sparse; none for the indices."""
    x = rand_ndarray((5, 2), stype, 0.6)
    check_numeric_gradient(nd.retain, [x, nd.array(indices)], ["row_sparse", None])


def test_retain_keeps_only_retained_rows():
    x = rand_ndarray((6, 2), "row_sparse", 1.0)
    x.attach_grad(stype="row_sparse")
    with autograd.record():
        y = nd.retain(x, nd.array([4, 1, 4], dtype="int64"))
    g = autograd.grad(y, x, nd.ones((6, 2)))
    assert g.stype == "row_sparse"
    np.testing.assert_array_equal(g.indices.asnumpy(), [1, 4])
    assert_almost_equal(g.data, np.ones((2, 2)))


@pytest.mark.parametrize("stypes", [("default",), ("default", "default", "default"),
                                    ("row_sparse", "row_sparse"), ("csr", "csr"),
                                    ("default", "row_sparse", "csr")])
def test_add_n(stypes):
    xs = [rand_ndarray((3, 4), s, 0.5) for s in stypes]
    check_numeric_gradient(lambda *xs: nd.add_n(*xs), xs)


def test_add_n_repeated_input():
    check_numeric_gradient(lambda x: nd.add_n(x, x, x), [rand_ndarray((2, 3))])


def test_add_n_passes_the_gradient_as_is():
    """A row_sparse output gradient reaches every term unchanged (no densifying)."""
    xs = [rand_ndarray((5, 2), "row_sparse", 0.5) for _ in range(2)]
    for x in xs:
        x.attach_grad(stype="row_sparse")
    head = rand_ndarray((5, 2), "row_sparse", 0.4)
    with autograd.record():
        y = nd.add_n(*xs)
    for g in autograd.grad(y, xs, head):
        assert g.stype == "row_sparse"
        np.testing.assert_array_equal(g.indices.asnumpy(), head.indices.asnumpy())
        assert_almost_equal(g, head)


@pytest.mark.parametrize("stype", STYPES)
@pytest.mark.parametrize("op", [nd.zeros_like, nd.ones_like])
def test_like_ops_have_zero_gradient(op, stype):
    x = rand_ndarray((3, 4), stype, 0.5)
    with dense_result(op is nd.ones_like and stype != "default"):
        check_numeric_gradient(op, [x], [stype])
    # beside a term that does depend on x: only that term's gradient arrives
    with dense_result(op is nd.ones_like and stype != "default"):
        check_numeric_gradient(lambda x: nd.add_n(x, op(x)), [x], ["default"])
