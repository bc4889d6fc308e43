"""The symbol gradient checkers of ``nets.test_utils`` (MXNet's signatures) with csr inputs
whose gradient buffers are csr (nets' rule: the gradient at the input's stored entries) and
with arguments that are not differentiated (row ids stored as floats)."""
import numpy as np
import pytest

from nets import nd, sym
from nets.test_utils import check_numeric_gradient, check_symbolic_backward, rand_ndarray

X = np.array([[1.0, 0, 2.0], [0, 0, 3.0]], np.float32)


def _csr():
    return nd.array(X).tostype("csr")


def test_symbolic_backward_compares_a_csr_buffer_at_the_input_pattern():
    s = sym.elemwise_add(sym.var("a", stype="csr"), sym.var("b", stype="csr"))
    head = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    location = {"a": _csr(), "b": _csr()}
    stypes = {"a": "csr", "b": "csr"}
    # MXNet's expectation (the full head gradient): checked where a and b store values
    grads = check_symbolic_backward(s, location, [head], [head, head], grad_stypes=stypes)
    np.testing.assert_array_equal(grads["a"].asnumpy(), np.where(X != 0, head, 0))
    wrong = head.copy()
    wrong[0, 0] += 1  # a stored entry: compared
    with pytest.raises(AssertionError):
        check_symbolic_backward(s, location, [head], [wrong, head], grad_stypes=stypes)
    # with dense buffers the full gradient is compared
    grads = check_symbolic_backward(s, location, [head], [head, head])
    np.testing.assert_array_equal(grads["a"].asnumpy(), head)


def test_numeric_gradient_of_a_csr_input_with_a_csr_buffer():
    s = sym.dot(sym.var("x", stype="csr"), sym.var("w"))
    w = rand_ndarray((3, 2), dtype=np.float64)
    x = _csr().astype(np.float64)
    check_numeric_gradient(s, {"x": x, "w": w}, grad_stype_dict={"x": "csr"}, dtype=np.float64)
    check_numeric_gradient(s, {"x": x, "w": w}, dtype=np.float64)  # dense buffer: every entry


def test_numeric_gradient_perturbs_only_the_differentiated_arguments():
    # retain's float row ids (as MXNet programs pass them) are not perturbed into fractions
    s = sym.sparse.retain(data=sym.var("data"), indices=sym.var("indices"))
    data = rand_ndarray((5, 3), "row_sparse", density=0.6)
    ids = nd.array([0, 2, 3], dtype=np.float32)
    check_numeric_gradient(s, [data, ids], grad_nodes=["data"],
                           grad_stype_dict={"data": "row_sparse"})
