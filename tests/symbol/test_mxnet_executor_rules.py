"""MXNet's executor and symbol-call rules that its unit tests rely on: backward again on one
forward, bind ignoring names that are not arguments, ``out=`` given to a symbol function."""
import numpy as np
import pytest

import nets
from nets import nd, sym
from nets.base import NetsError


def _fc():
    x, w = sym.var("x"), sym.var("w")
    return sym.FullyConnected(x, weight=w, no_bias=True, num_hidden=2)


@pytest.mark.parametrize("req", ["write", "add"])
def test_backward_twice_on_one_forward(req):
    xv = np.arange(12, dtype=np.float32).reshape(3, 4)
    exe = _fc().simple_bind(nets.cpu(), x=(3, 4), grad_req=req)
    exe.arg_dict["x"][:] = xv
    exe.arg_dict["w"][:] = 1
    head = np.array([[1, 2], [3, 4], [5, 6]], np.float32)
    once = head.T @ xv  # d sum(head * x w^T) / dw
    exe.forward(is_train=True)
    exe.backward(nd.array(head))
    exe.backward(nd.array(head))  # the same forward: 'write' gives it again, 'add' sums twice
    np.testing.assert_allclose(exe.grad_dict["w"].asnumpy(), once * (2 if req == "add" else 1))
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(),
                               (head @ np.ones((2, 4))) * (2 if req == "add" else 1))
    exe.backward(nd.array(2 * head))  # another head gradient on the same forward
    np.testing.assert_allclose(exe.grad_dict["w"].asnumpy(), once * (4 if req == "add" else 2))


def test_backward_after_an_input_changed_raises_instead_of_using_old_values():
    exe = _fc().simple_bind(nets.cpu(), x=(3, 4))
    exe.forward(is_train=True)
    exe.backward(nd.ones((3, 2)))
    exe.arg_dict["w"][:] = 2
    with pytest.raises(NetsError, match="modified in place"):
        exe.backward(nd.ones((3, 2)))
    exe.forward()  # a prediction records nothing
    with pytest.raises(NetsError, match=r"forward\(is_train=True\) first"):
        exe.backward(nd.ones((3, 2)))


def test_bind_ignores_names_that_are_not_arguments():
    y = sym.dot(sym.var("x"), sym.var("w"))
    exe = y.bind(nets.cpu(), {"x": nd.ones((2, 3)), "w": nd.ones((3, 1)), "rhs": 9},
                 args_grad={"w": nd.zeros((3, 1)), "other": nd.zeros(1)})
    assert list(exe.arg_dict) == ["x", "w"] and list(exe.grad_dict) == ["w"]
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), [[3], [3]])


def test_out_of_a_symbol_function():
    a, b = sym.var("a"), sym.var("b")
    s = sym.elemwise_add(a, b, out=a)  # MXNet's symbol functions drop out=: a new node
    assert s.list_arguments() == ["a", "b"]
    np.testing.assert_array_equal(s.eval(a=nd.ones(2), b=nd.ones(2))[0].asnumpy(), [2, 2])
    with pytest.raises(NetsError, match="out= has no meaning"):
        sym.elemwise_add(a, b, out=nd.ones(2))  # an array to write into: refused
