"""The gradient slot contract: what a leaf declares (buffer, storage type, grad_req,
freshness), how backward delivers into it for dense and row_sparse gradients alike,
and that delivery never shares memory with an array someone else holds."""
import ast
import pathlib

import numpy as np
import pytest

import nets
from nets import autograd, nd
from nets.base import NetsError
from nets.test_utils import assert_almost_equal

STYPES = ["default", "row_sparse"]


def _rsp(rows, data, shape):
    return nd.sparse.row_sparse_array((np.asarray(data), np.asarray(rows, np.int64)), shape=shape)


class Give(autograd.Function):
    """The identity whose gradient is an array the caller chose (and still holds)."""

    def __init__(self, grad):
        super().__init__()
        self.grad = grad

    def forward(self, x):
        return x.copy()

    def backward(self, g):
        return self.grad


def _leaf(stype, req="write"):
    x = nd.array(np.ones((5, 2), np.float32))
    x.attach_grad(req, stype=stype)
    return x


def _backward_of(x, *grads):
    """backward of ``sum_k Give(grads[k])(x)``: x receives the given arrays."""
    with autograd.record():
        heads = [Give(g)(x) for g in grads]
    autograd.backward(heads)


def _grad(rows, values, stype):
    """A (5, 2) gradient holding ``values`` in ``rows``, as ``stype``."""
    dense = np.zeros((5, 2), np.float32)
    dense[rows] = values
    return nd.array(dense).tostype(stype) if stype != "default" else nd.array(dense)


def _values(a):
    """The numpy memory of ``a``'s stored values (no copy)."""
    return np.asarray(a if a.stype == "default" else a.data)


def test_attach_grad_declares_a_slot():
    x = nd.array(np.ones((3, 2)))
    assert autograd.grad_slot(x) is None and x.grad is None
    x.attach_grad("add", stype="row_sparse")
    slot = autograd.grad_slot(x)
    assert isinstance(slot, autograd.GradSlot)
    assert slot.buffer is x.grad and slot.stype == "row_sparse" and slot.req == "add"
    assert not slot.fresh and x.grad.indices.size == 0  # nothing delivered yet
    buf = nd.zeros((3, 2))
    autograd.mark_variables([x], [buf], "write")  # the caller's buffer
    assert autograd.grad_slot(x).buffer is buf and x.grad is buf
    autograd.release_grad(x)
    assert x.grad is None and autograd.grad_slot(x) is None
    with pytest.raises(NetsError, match="grad_req='sum' is not one of"):
        autograd.mark_variables([x], [buf], "sum")


@pytest.mark.parametrize("stype", STYPES)
@pytest.mark.parametrize("req", ["write", "add", "null"])
def test_grad_req_over_two_backwards(stype, req):
    x = _leaf(stype, req)
    buf = x.grad
    first, second = _grad([1, 3], [[1, 2], [3, 4]], "default"), _grad([3, 4], 10, "default")
    _backward_of(x, first.tostype(stype) if stype != "default" else first)
    _backward_of(x, second.tostype(stype) if stype != "default" else second)
    expected = {"write": second.asnumpy(), "add": first.asnumpy() + second.asnumpy(),
                "null": np.zeros((5, 2))}[req]
    assert x.grad is buf and buf.stype == stype and buf.dtype == np.float32
    assert_almost_equal(buf, expected)
    if stype == "row_sparse":  # only the rows holding a gradient, sorted
        rows = {"write": [3, 4], "add": [1, 3, 4], "null": []}[req]
        assert buf.indices.asnumpy().tolist() == rows
    assert autograd.grad_slot(x).fresh == (req != "null")


@pytest.mark.parametrize("stype", STYPES)
def test_contributions_of_any_stype_arrive_in_the_declared_stype(stype):
    x = _leaf(stype)
    dense, sparse = _grad([0], 1, "default"), _grad([0, 2], 2, "row_sparse")
    _backward_of(x, dense, sparse)
    assert x.grad.stype == stype
    assert_almost_equal(x.grad, dense.asnumpy() + sparse.asnumpy())


@pytest.mark.parametrize("stype", STYPES)
def test_delivery_never_shares_memory_with_arrays_the_caller_holds(stype):
    x = _leaf(stype)
    held = _grad([1, 2], 5, stype)
    _backward_of(x, held)  # the vjp hands back the caller's own array
    assert_almost_equal(x.grad, held.asnumpy())
    _values(held)[...] = 7  # the caller writes into their array...
    assert_almost_equal(x.grad, _grad([1, 2], 5, "default").asnumpy())  # ...not x's gradient

    head = _grad([0, 4], 3, stype)
    x.backward(head)  # a leaf as its own head: its gradient is the head gradient
    _values(head)[...] = 9
    assert_almost_equal(x.grad, _grad([0, 4], 3, "default").asnumpy())

    y = _leaf(stype)
    shared = _grad([2], 4, stype)
    with autograd.record():
        z = Give(shared)(x) + Give(shared)(y)  # one array delivered to two leaves
    z.backward()
    for leaf in (x, y):
        assert_almost_equal(leaf.grad, _grad([2], 4, "default").asnumpy())
    x.grad[:] = _grad([0], 1, stype)
    assert_almost_equal(y.grad, _grad([2], 4, "default").asnumpy())


@pytest.mark.parametrize("stype", STYPES)
def test_a_merged_gradient_is_the_engines_own(stype):
    x = _leaf(stype)
    a, b = _grad([0, 3], 1, stype), _grad([3], 2, stype)
    _backward_of(x, a, b)  # merged by the engine into a new array
    assert_almost_equal(x.grad, _grad([0, 3], [[1, 1], [3, 3]], "default").asnumpy())
    for held in (a, b):
        _values(held)[...] = 9
    assert_almost_equal(x.grad, _grad([0, 3], [[1, 1], [3, 3]], "default").asnumpy())


def test_row_sparse_contributions_merge_their_sorted_rows(monkeypatch):
    from nets import kernels

    def refuse(*args):
        raise AssertionError("the merge numbered the union of the rows afresh")
    monkeypatch.setattr(kernels.embedding, "unique_slots", refuse)  # bitmap or radix sort
    monkeypatch.setattr(kernels.embedding, "radix_order", refuse)
    x = _leaf("row_sparse", "add")
    _backward_of(x, _rsp([0, 3], [[1, 1], [2, 2]], (5, 2)), _rsp([1, 3], [[4, 4], [8, 8]], (5, 2)))
    _backward_of(x, _rsp([3, 4], [[16, 16], [32, 32]], (5, 2)))  # 'add': merged with x.grad
    assert x.grad.indices.asnumpy().tolist() == [0, 1, 3, 4]
    assert_almost_equal(x.grad.data, [[1, 1], [4, 4], [26, 26], [32, 32]])


def test_a_dense_buffer_keeps_its_memory():
    x = _leaf("default")
    view = x.grad[1:3]  # views of the buffer keep showing the gradient
    _backward_of(x, _grad([1, 2], 4, "default"))
    assert_almost_equal(view, np.full((2, 2), 4.0))
    _backward_of(x, _grad([1], 1, "default"), _grad([2], 2, "default"))  # merged
    assert_almost_equal(view, [[1, 1], [2, 2]])


def test_write_without_gradient_zeros_and_freshens_the_slot():
    class NoGrad(Give):
        def backward(self, g):
            return None
    for stype in STYPES:
        x = _leaf(stype)
        _backward_of(x, _grad([1], 3, stype))
        with autograd.record():
            y = NoGrad(None)(x)
        autograd.grad_slot(x).fresh = False
        y.backward()
        assert not x.grad.asnumpy().any() and x.grad.stype == stype
        assert autograd.grad_slot(x).fresh


def test_autograd_grad_leaves_slots_alone():
    x = _leaf("row_sparse")
    with autograd.record():
        y = Give(_grad([1], 2, "row_sparse"))(x)
    g = autograd.grad(y, x)
    assert g.stype == "row_sparse" and x.grad.indices.size == 0
    assert not autograd.grad_slot(x).fresh


def test_the_array_layer_imports_no_autograd_and_gets_its_methods_from_it():
    root = pathlib.Path(nets.__file__).parent / "ndarray"
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [a.name for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            assert not any("autograd" in n for n in names), f"{path.name} imports autograd"
    for name in ("attach_grad", "backward"):
        assert getattr(nd.NDArray, name).__module__.startswith("nets.autograd")
    assert nd.NDArray.grad.fget.__module__.startswith("nets.autograd")


@pytest.mark.parametrize("fresh", [True, False])
def test_a_fresh_vjp_result_is_adopted_and_any_other_copied(monkeypatch, fresh):
    """The row_sparse weight gradient ``dot``'s vjp makes (declared ``fresh``) becomes the
    slot's buffer without a copy; declared not fresh, the same gradient is copied in."""
    from nets.arrays.base_sparse import BaseSparseNDArray
    from nets.ops.registry import get_op
    monkeypatch.setattr(get_op("dot"), "vjp_fresh", fresh)
    copies = []
    original = BaseSparseNDArray._set_parts

    def spy(self, src, copy):
        copies.append(copy)
        return original(self, src, copy)
    monkeypatch.setattr(BaseSparseNDArray, "_set_parts", spy)
    w = nd.array(np.arange(12, dtype=np.float32).reshape(6, 2))
    w.attach_grad(stype="row_sparse")
    x = nd.sparse.csr_matrix(np.array([[0, 1, 0, 0, 2, 0]], dtype=np.float32))
    with autograd.record():
        y = nd.dot(x, w).sum()
    copies.clear()
    y.backward()
    assert copies == [not fresh]
    assert w.grad.indices.asnumpy().tolist() == [1, 4]
    assert_almost_equal(w.grad.data, [[1, 1], [2, 2]])
