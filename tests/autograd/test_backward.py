"""The autograd engine, driven by custom ``autograd.Function``s computed in numpy (full
control over each gradient's values and storage type) and by fake ops recorded through
the same hook as real operators (the vjp contract)."""
import gc
import threading
import weakref

import numpy as np
import pytest

import nets
from nets import autograd, nd
from nets.base import NetsError, ShapeError, StorageTypeError
from nets.ops.registry import RECORDER
from nets.test_utils import assert_almost_equal


def _nd(a):
    return nd.array(np.asarray(a), dtype=np.asarray(a).dtype)


def _rsp(rows, data, shape):
    return nd.sparse.row_sparse_array((np.asarray(data), np.asarray(rows, np.int64)), shape=shape)


class Mul(autograd.Function):
    def forward(self, x, y):
        self.save_for_backward(x, y)
        return _nd(x.asnumpy() * y.asnumpy())

    def backward(self, g):
        x, y = self.saved_tensors
        return _nd(g.asnumpy() * y.asnumpy()), _nd(g.asnumpy() * x.asnumpy())


class Exp(autograd.Function):
    def forward(self, x):
        y = _nd(np.exp(x.asnumpy()))
        self.save_for_backward(y)
        return y

    def backward(self, g):
        y, = self.saved_tensors
        return _nd(g.asnumpy() * y.asnumpy())


class Rows(autograd.Function):
    """``w[ids]`` (an embedding lookup): its gradient is row_sparse, duplicates coalesced."""

    def __init__(self, ids):
        super().__init__()
        self.ids = np.asarray(ids, np.int64)

    def forward(self, w):
        self.shape = w.shape
        return _nd(w.asnumpy()[self.ids])

    def backward(self, g):
        rows, inverse = np.unique(self.ids, return_inverse=True)
        data = np.zeros((len(rows),) + self.shape[1:], g.dtype)
        np.add.at(data, inverse, g.asnumpy())
        return _rsp(rows, data, self.shape)


class Split(autograd.Function):
    """Two outputs: the first and the last columns."""

    def forward(self, x):
        a = x.asnumpy()
        return _nd(a[:, :1]), _nd(a[:, 1:])

    def backward(self, ga, gb):
        return _nd(np.concatenate([ga.asnumpy(), gb.asnumpy()], axis=1))


class Square(autograd.Function):
    """``x * x`` whose backward is itself made of recorded Functions (for create_graph)."""

    def forward(self, x):
        self.save_for_backward(x)
        return _nd(x.asnumpy() ** 2)

    def backward(self, g):
        x, = self.saved_tensors
        return Mul()(Mul()(g, x), _nd(np.full(x.shape, 2.0, x.dtype)))


class TrainFlag(autograd.Function):
    """Identity that remembers ``is_training()`` during its backward."""

    seen = []

    def forward(self, x):
        return x.copy()

    def backward(self, g):
        TrainFlag.seen.append(autograd.is_training())
        return g


class FakeOp:
    """Stands for a registered operator: recorded through ``registry.RECORDER``."""

    def __init__(self, name, vjp=None):
        self.name, self._vjp_fn = name, vjp

    def __call__(self, inputs, attrs, outputs):
        recorder = RECORDER.get()
        if recorder is not None:
            recorder(self, inputs, attrs, outputs)
        return outputs


def _leaf(a, **kw):
    x = _nd(a)
    x.attach_grad(**kw)
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_chain_product_rule_and_fan_out(dtype):
    rng = np.random.default_rng(0)
    xv, yv = rng.normal(size=(3, 4)).astype(dtype), rng.normal(size=(3, 4)).astype(dtype)
    x, y = _leaf(xv), _leaf(yv)
    with autograd.record():
        z = Exp()(Mul()(Mul()(x, y), x))  # exp(x^2 y): x reaches z twice
    z.backward()
    e = np.exp(xv * xv * yv)
    assert x.grad.dtype == dtype
    assert_almost_equal(x.grad, e * 2 * xv * yv)
    assert_almost_equal(y.grad, e * xv * xv)


def test_head_grads_and_several_heads():
    x = _leaf([1.0, 2.0, 3.0])
    with autograd.record():
        a, b = Exp()(x), Mul()(x, x)
    autograd.backward([a, b], [_nd([1.0, 0.0, 2.0]), np.array([3.0, 3.0, 3.0])])
    assert_almost_equal(x.grad, np.exp([1, 2, 3]) * [1, 0, 2] + 6 * np.array([1, 2, 3]))


def test_grad_req_write_add_null():
    xs = {req: _leaf([1.0, 2.0], grad_req=req) for req in ("write", "add", "null")}
    for _ in range(2):
        with autograd.record():
            heads = [Mul()(x, _nd([3.0, 4.0])) for x in xs.values()]
        autograd.backward(heads)
    assert_almost_equal(xs["write"].grad, [3.0, 4.0])
    assert_almost_equal(xs["add"].grad, [6.0, 8.0])
    assert_almost_equal(xs["null"].grad, [0.0, 0.0])


def test_write_keeps_the_buffer_object_and_dtype():
    x = _leaf(np.ones(3, np.float32))
    buf = x.grad
    with autograd.record():
        y = Mul()(x, _nd(np.full(3, 2.0)))  # a float64 gradient reaches a float32 leaf
    y.backward()
    assert x.grad is buf and buf.dtype == np.float32
    assert_almost_equal(buf, [2.0, 2.0, 2.0])


def test_write_fills_a_dense_buffer_in_place():
    x = nd.array(np.ones((3, 2), np.float32))
    x.attach_grad()
    held = np.asarray(x.grad)  # the caller's numpy view of the buffer
    with autograd.record():
        y = (x * 3).sum()
    y.backward()
    np.testing.assert_array_equal(held, np.full((3, 2), 3.0))  # the same memory, filled
    bias = nd.array(np.ones(2, np.float32))
    bias.attach_grad()
    held = np.asarray(bias.grad)
    with autograd.record():
        y = nd.broadcast_add(x, bias).sum()  # the bias gradient: a sum over the batch axis
    y.backward()
    np.testing.assert_array_equal(held, [3.0, 3.0])


def test_write_takes_a_row_sparse_gradient_only_when_the_engine_made_it(monkeypatch):
    from nets.autograd import engine
    made = []  # the merges the engine made (holding them here does not change ownership)
    real = engine._sum

    def spy(grads):
        out = real(grads)
        if len(grads) > 1:
            made.append(out)
        return out
    monkeypatch.setattr(engine, "_sum", spy)
    w = nd.array(np.ones((6, 2), np.float32))
    w.attach_grad(stype="row_sparse")
    lookup = dict(input_dim=6, output_dim=2, sparse_grad=True)
    with autograd.record():
        z = nd.Embedding(nd.array([4, 1, 4]), w, **lookup).sum()
    z.backward()  # one contribution: the vjp's array, copied
    expected = np.array([[0, 0], [1, 1], [0, 0], [0, 0], [2, 2], [0, 0]])
    assert_almost_equal(w.grad, expected)
    assert made == []
    with autograd.record():
        z = (nd.Embedding(nd.array([4, 1, 4]), w, **lookup).sum()
             + nd.Embedding(nd.array([1, 5]), w, **lookup).sum())
    z.backward()  # two contributions merged by the engine: their sum's rows are taken
    assert_almost_equal(w.grad, expected + [[0, 0], [1, 1], [0, 0], [0, 0], [0, 0], [1, 1]])
    assert len(made) == 1 and w.grad._data is made[0]._data


def test_write_never_shares_memory_with_arrays_others_hold():
    x = nd.array(np.ones(4, np.float32))
    x.attach_grad()
    view = x.grad[1:3]  # a view of the buffer must keep showing the gradient
    with autograd.record():
        y = (x * 2).sum()
    y.backward()
    assert_almost_equal(view, [2.0, 2.0])
    head = nd.array(np.arange(4, dtype=np.float32))
    with autograd.record():
        y = x * 1.0  # the gradient passed back is the caller's head gradient itself
    y.backward(head)
    assert not np.shares_memory(x.grad._np, head._np)
    a, b = (nd.array(np.ones(3, np.float32)) for _ in range(2))
    for v in (a, b):
        v.attach_grad()
    with autograd.record():
        y = a + b  # both leaves receive the same gradient object
    y.backward()
    assert not np.shares_memory(a.grad._np, b.grad._np)
    a.grad[:] = 5
    assert_almost_equal(b.grad, [1.0, 1.0, 1.0])


def test_row_sparse_contributions_merge_by_row_union():
    wv = np.arange(10.0).reshape(5, 2)
    w = _leaf(wv, stype="row_sparse")
    g1, g2 = np.ones((3, 2)), np.full((2, 2), 10.0)
    with autograd.record():
        a, b = Rows([0, 2, 2])(w), Rows([3, 2])(w)
    autograd.backward([a, b], [_nd(g1), _nd(g2)])
    assert w.grad.stype == "row_sparse"
    np.testing.assert_array_equal(w.grad.indices.asnumpy(), [0, 2, 3])  # sorted, coalesced
    assert_almost_equal(w.grad.data, [[1, 1], [12, 12], [10, 10]])


def test_dense_and_row_sparse_contributions_to_a_dense_leaf():
    wv = np.arange(6.0).reshape(3, 2)
    w = _leaf(wv)
    with autograd.record():
        a, b = Rows([1])(w), Mul()(w, _nd(np.full((3, 2), 2.0)))
    autograd.backward([a, b])
    assert w.grad.stype == "default"
    assert_almost_equal(w.grad, [[2, 2], [3, 3], [2, 2]])


def test_dense_contribution_is_cast_to_a_row_sparse_leaf():
    w = _leaf(np.ones((4, 2)), stype="row_sparse")
    mask = _nd(np.array([[0.0, 0.0], [1.0, 2.0], [0.0, 0.0], [3.0, 0.0]]))
    with autograd.record():
        y = Mul()(w, mask)
    y.backward()
    assert w.grad.stype == "row_sparse"
    np.testing.assert_array_equal(w.grad.indices.asnumpy(), [1, 3])
    assert_almost_equal(w.grad, mask.asnumpy())


def test_grad_req_add_row_sparse_accumulates_by_row_union():
    w = _leaf(np.zeros((6, 3)), stype="row_sparse", grad_req="add")
    for ids in ([1, 4], [4, 5], []):
        with autograd.record():
            y = Rows(ids)(w)
        y.backward()
    assert w.grad.stype == "row_sparse"
    np.testing.assert_array_equal(w.grad.indices.asnumpy(), [1, 4, 5])
    assert_almost_equal(w.grad.data, [[1, 1, 1], [2, 2, 2], [1, 1, 1]])


def test_write_zeros_a_reached_leaf_without_gradient_and_keeps_an_unreached_one():
    class NoGradFor2nd(Mul):
        def backward(self, g):
            return super().backward(g)[0], None

    x, c, other = _leaf([1.0, 2.0]), _leaf([5.0, 6.0]), _leaf([7.0])
    for leaf in (c, other):
        leaf.grad[:] = 9.0
    with autograd.record():
        y = NoGradFor2nd()(x, c)
    y.backward()
    assert_almost_equal(x.grad, [5.0, 6.0])
    assert_almost_equal(c.grad, [0.0, 0.0])  # in the graph, no gradient: written as zeros
    assert_almost_equal(other.grad, [9.0])  # not in the graph: left alone (stale, as MXNet)


def test_leaves_under_an_input_without_gradient_are_reached():
    class NoGradFor2nd(Mul):
        def backward(self, g):
            return super().backward(g)[0], None

    x, c, d = _leaf([1.0, 2.0]), _leaf([5.0, 6.0]), _leaf([3.0, 4.0], grad_req="add")
    for leaf in (c, d):
        leaf.grad[:] = 9.0
        autograd.grad_slot(leaf).fresh = False
    with autograd.record():
        h = Mul()(Exp()(c), d)  # reached only through an input that gets no gradient
        y = NoGradFor2nd()(x, h)
    y.backward()
    assert_almost_equal(x.grad, h.asnumpy())
    assert_almost_equal(c.grad, [0.0, 0.0])  # 'write': zeros
    assert_almost_equal(d.grad, [9.0, 9.0])  # 'add': nothing added
    assert autograd.grad_slot(c).fresh and autograd.grad_slot(d).fresh
    with pytest.raises(NetsError, match="retain_graph=True"):  # that part is freed too
        h.backward()


def test_diamond_runs_each_node_once_after_all_its_readers():
    calls = []

    class Log(Exp):
        def backward(self, g):
            calls.append(self.tag)
            return super().backward(g)

    def log(tag, x):
        f = Log()
        f.tag = tag
        return f(x)

    x = _leaf([0.5, 1.0])
    with autograd.record():
        a = log("a", x)
        b, c = log("b", a), log("c", a)
        d = Mul()(Mul()(b, c), log("e", b))
    d.backward()
    assert sorted(calls) == ["a", "b", "c", "e"] and calls[-1] == "a" and \
        calls.index("b") > calls.index("e")
    def f(v):  # d = b c e = b^2 exp(b) with b = exp(exp(x))
        b = np.exp(np.exp(v))
        return b * b * np.exp(b)
    v, h = x.asnumpy(), 1e-6
    assert_almost_equal(x.grad, (f(v + h) - f(v - h)) / (2 * h), rtol=1e-5)


def test_a_written_input_raises_only_where_a_gradient_must_cross_it():
    w, c = _leaf([3.0, 4.0]), _nd([1.0, 2.0])
    for req, raises in (("null", False), ("write", True)):
        frozen = _leaf([5.0, 6.0], grad_req=req)
        with autograd.record():
            z = Mul()(Mul()(frozen, c), w)
        c[:] = 7.0  # an input of the branch that leads only to ``frozen``
        if raises:
            with pytest.raises(NetsError, match="modified in place"):
                z.backward()
        else:
            z.backward()
            assert_almost_equal(w.grad, [5.0, 12.0])


def test_retain_graph_and_freed_graph():
    x = _leaf([1.0, 2.0])
    with autograd.record():
        y = Exp()(Mul()(x, x))
    y.backward(retain_graph=True)
    first = x.grad.asnumpy()
    y.backward()
    assert_almost_equal(x.grad, first)
    with pytest.raises(NetsError, match="freed by a previous backward.*retain_graph=True"):
        y.backward()


def test_shared_subgraph_freed_by_the_other_head():
    x = _leaf([1.0])
    with autograd.record():
        h = Exp()(x)
        a, b = Mul()(h, h), Exp()(h)
    a.backward()
    with pytest.raises(NetsError, match="retain_graph=True"):
        b.backward()


def test_backward_without_a_graph():
    x = _leaf([1.0, 2.0])
    y = Mul()(x, x)  # outside record(): nothing recorded
    assert y._node is None
    with pytest.raises(NetsError, match=r"not computed inside autograd.record\(\)"):
        y.backward()
    with autograd.record():
        c = Exp()(_nd([1.0]))  # constants only: nothing to record either
    assert c._node is None
    with pytest.raises(NetsError, match="heads\\[0\\] was not computed"):
        autograd.backward(c)


def test_head_grads_mismatch():
    x = _leaf(np.ones((2, 3)))
    with autograd.record():
        y = Exp()(x)
    with pytest.raises(ShapeError, match=r"head_grads\[0\] has shape \(3,\).*\(2, 3\)"):
        y.backward(_nd(np.ones(3)))
    with pytest.raises(NetsError, match="1 heads but 2 head_grads"):
        autograd.backward([y], [None, None])


def test_op_without_vjp_raises_only_when_a_gradient_must_cross_it():
    novjp = FakeOp("novjp")
    x, w, frozen = _leaf([1.0, 2.0]), _leaf([3.0, 4.0]), _leaf([5.0, 6.0], grad_req="null")
    with autograd.record():
        u = novjp((frozen,), {}, (_nd(frozen.asnumpy() + 1),))[0]
        z = Mul()(u, w)
    z.backward()  # frozen wants no gradient: novjp is never asked for one
    assert_almost_equal(w.grad, [6.0, 7.0])
    with autograd.record():
        v = novjp((x,), {}, (_nd(x.asnumpy() + 1),))[0]
        z = Mul()(v, w)
    assert_almost_equal(autograd.grad(z, [w], retain_graph=True)[0], [2.0, 3.0])
    with pytest.raises(NetsError, match="no gradient for op 'novjp'"):
        z.backward()


def test_vjp_contract():
    seen = {}

    def vjp(node, *out_grads):
        seen.update(inputs=node.inputs, attrs=node.attrs, outputs=node.outputs, grads=out_grads)
        return out_grads[0] * 2.0, None  # one entry per input, None: not differentiable

    op = FakeOp("twice", vjp)
    x, ids = _leaf([1.0, 2.0]), _nd(np.array([0, 1]))
    with autograd.record():
        y, extra = op((x, ids), {"axis": 0}, (_nd([2.0, 4.0]), _rsp([], np.zeros((0, 3)), (5, 3))))
    y.backward(_nd([1.0, 10.0]))
    assert seen["inputs"][0] is x and seen["inputs"][1] is ids and seen["attrs"] == {"axis": 0}
    out, out_extra = seen["outputs"]
    assert out is not y and out_extra.stype == "row_sparse"  # views of the outputs' values
    assert_almost_equal(out, [2.0, 4.0])
    g, g_extra = seen["grads"]
    assert_almost_equal(g, [1.0, 10.0])
    assert g_extra.stype == "row_sparse" and g_extra.shape == (5, 3) and g_extra.data.shape[0] == 0
    assert_almost_equal(x.grad, [2.0, 20.0])


@pytest.mark.parametrize("result, error, match", [
    (lambda: (None,), NetsError, "returned 1 gradients for its 2 inputs"),
    (lambda: (np.ones(2), None), TypeError, "must be an NDArray or None"),
    (lambda: (_nd(np.ones(3)), None), ShapeError, r"\(3,\), but the input has shape \(2,\)"),
])
def test_vjp_results_are_checked(result, error, match):
    op = FakeOp("bad", lambda node, g: result())
    x = _leaf([1.0, 2.0])
    with autograd.record():
        y = op((x, _nd([0.0, 0.0])), {}, (_nd([1.0, 1.0]),))[0]
    with pytest.raises(error, match=match):
        y.backward()


def test_grad_returns_gradients_without_touching_dot_grad():
    xv = np.array([0.5, 1.5])
    x, w = _leaf(xv), _leaf(np.zeros((4, 2)), stype="row_sparse")
    with autograd.record():
        h = Mul()(x, x)
        y = Exp()(h)
        r = Rows([2, 2])(w)
    gx = autograd.grad(y, x, retain_graph=True)
    gh, gx2 = autograd.grad(y, [h, x], _nd([2.0, 2.0]), retain_graph=True)
    gw, = autograd.grad([r, y], [w])
    assert_almost_equal(gx, np.exp(xv ** 2) * 2 * xv)
    assert_almost_equal(gx2, 2 * gx.asnumpy())
    assert_almost_equal(gh, 2 * np.exp(xv ** 2))
    assert gw.stype == "row_sparse" and gw.indices.asnumpy().tolist() == [2]
    assert_almost_equal(gw, [[0, 0], [0, 0], [2, 2], [0, 0]])
    assert_almost_equal(x.grad, [0.0, 0.0])
    assert w.grad.stype == "row_sparse" and w.grad.data.shape[0] == 0


def test_grad_unreached_leaf_is_zeros_in_its_grad_stype():
    x, w = _leaf([1.0]), _leaf(np.ones((3, 2)), stype="row_sparse")
    with autograd.record():
        y = Exp()(x)
    gw = autograd.grad(y, [w])[0]
    assert gw.stype == "row_sparse" and gw.shape == (3, 2) and gw.data.shape[0] == 0


def test_grad_of_a_non_differentiable_variable():
    x, c = _leaf([1.0]), _nd([2.0])
    with autograd.record():
        y = Mul()(x, c)
    with pytest.raises(NetsError, match=r"variables\[1\]: it is not differentiable"):
        autograd.grad(y, [x, c])


def test_grad_create_graph_gives_second_derivatives():
    xv = np.array([1.0, -2.0, 3.0])
    x = _leaf(xv)
    with autograd.record():
        y = Square()(Square()(x))  # x^4
        dy, = autograd.grad(y, [x], create_graph=True)  # 4 x^3, itself recorded
    assert_almost_equal(dy, 4 * xv ** 3)
    dy.backward()
    assert_almost_equal(x.grad, 12 * xv ** 2)


def test_backward_train_mode():
    x = _leaf([1.0])
    TrainFlag.seen.clear()
    for mode in (True, False):
        with autograd.record(train_mode=False):
            y = TrainFlag()(x)
        y.backward(train_mode=mode)
    assert TrainFlag.seen == [True, False]


def test_leaf_as_head():
    x = _leaf(np.ones((2, 2)))
    x.backward(_nd(np.full((2, 2), 3.0)))
    assert_almost_equal(x.grad, np.full((2, 2), 3.0))


def test_multi_output_function_with_one_output_used():
    x = _leaf(np.arange(6.0).reshape(2, 3))
    with autograd.record():
        a, b = Split()(x)
    b.backward()
    assert_almost_equal(x.grad, [[0, 1, 1], [0, 1, 1]])


def test_function_rules():
    class Identity(autograd.Function):
        def forward(self, x):
            return x

        def backward(self, g):
            return g

    f, x = Identity(), _leaf([1.0, 2.0])
    with autograd.record():
        y = f(x)
    assert y is not x and x._node is None and y._node is not None
    with pytest.raises(NetsError, match="called only once"):
        f(x)
    assert Exp()(x)._node is None  # outside record(): plain forward
    with pytest.raises(TypeError, match=r"inputs\[0\] must be an NDArray"):
        Exp()(np.ones(2))


def test_attach_grad_cuts_history_and_validates():
    x = _leaf([1.0, 2.0])
    with autograd.record():
        y = Mul()(x, _nd([3.0, 3.0]))
        y.attach_grad()
        z = Mul()(y, _nd([5.0, 5.0]))
    z.backward()
    assert_almost_equal(y.grad, [5.0, 5.0])
    assert_almost_equal(x.grad, [0.0, 0.0])
    with pytest.raises(NetsError, match="grad_req='sum' is not one of"):
        x.attach_grad(grad_req="sum")
    with pytest.raises(StorageTypeError, match="stype='dense'"):
        x.attach_grad(stype="dense")


def test_mark_variables():
    x, buf = _nd([1.0, 2.0]), _rsp([], np.zeros((0,)), (2,))
    autograd.mark_variables(x, buf, "write")
    assert x.grad is buf
    with autograd.record():
        y = Mul()(x, _nd([0.0, 4.0]))
    y.backward()
    assert x.grad.stype == "row_sparse" and x.grad.indices.asnumpy().tolist() == [1]
    with pytest.raises(ShapeError, match=r"gradients\[0\] must be an array of shape \(2,\)"):
        autograd.mark_variables([x], [_nd([1.0])])
    with pytest.raises(NetsError, match="2 variables, 1 gradients"):
        autograd.mark_variables([x, x], [buf])


def test_deep_chain_has_no_recursion_limit():
    x = _leaf([0.5])
    y = x
    with autograd.record():
        for _ in range(3000):
            y = Mul()(y, _nd([1.0]))
    y.backward()
    assert_almost_equal(x.grad, [1.0])


def test_backward_frees_the_graph_at_once():
    gc.disable()
    try:
        x = _leaf(np.ones(3))
        with autograd.record():
            h = Exp()(x)
            y = Exp()(h)
        alive = weakref.ref(h)
        del h
        assert alive() is not None  # the graph keeps it for backward
        y.backward()
        assert alive() is None  # freed by backward, without the cycle collector
    finally:
        gc.enable()


def test_backward_inside_record_records_nothing():
    x = _leaf([1.0, 2.0])
    with autograd.record():
        y = Square()(x)  # Square's backward calls Functions, which would record
        y.backward()
        assert autograd.is_recording()
    assert x.grad._node is None
    assert_almost_equal(x.grad, [2.0, 4.0])


def test_recording_is_per_thread():
    seen = []
    with autograd.record():
        t = threading.Thread(target=lambda: seen.append(autograd.is_recording()))
        t.start()
        t.join()
    assert seen == [False]


def test_registered_operators_are_recorded_through_the_hook():
    x = _leaf([1.0, 2.0])
    c = _nd([3.0, 4.0])
    assert nd.elemwise_add(x, c)._node is None
    with autograd.record():
        y = nd.elemwise_add(x, c)
        k = nd.elemwise_add(c, c)
    node, k_out = y._node
    assert node.op is nets.ops.OPS["elemwise_add"] and k_out == 0
    assert node.inputs[0] is x and node.inputs[1] is c and node.parents == (x, None)
    assert node.outputs[0] is not y and np.array_equal(node.outputs[0].asnumpy(), y.asnumpy())
    assert k._node is None  # constants only
