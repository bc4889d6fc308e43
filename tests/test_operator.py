"""nets.operator: Python-defined operators (CustomOp / CustomOpProp / register) run
imperatively through nd.Custom, checked against numpy and numeric gradients."""
import weakref

import numpy as np
import pytest

import nets
from nets import autograd, nd
from nets.base import NetsError
from nets.operator import CustomOp, CustomOpProp, register
from nets.test_utils import assert_almost_equal, check_numeric_gradient, rand_ndarray
from tests.custom_ops import SEEN, weighted_ce_oracle  # (registers test_weighted_softmax_ce)



class Scaled(CustomOp):
    """y = scale * x * x, with the operator instance's state read back in backward."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, is_train, req, in_data, out_data, aux):
        SEEN["is_train"] = is_train
        self.forward_input = in_data[0].asnumpy()
        self.assign(out_data[0], req[0], in_data[0] * in_data[0] * self.scale)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        SEEN["backward_state"] = self.forward_input
        self.assign(in_grad[0], req[0], 2 * self.scale * in_data[0] * out_grad[0])


@register("test_scaled_square")
class ScaledProp(CustomOpProp):
    def __init__(self, scale="1"):
        super().__init__(need_top_grad=True)
        SEEN["scale_arg"] = scale
        self.scale = float(scale)

    def create_operator(self, ctx, in_shapes, in_dtypes):
        SEEN["create"] = (in_shapes, in_dtypes)
        return Scaled(self.scale)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_imperative_values_and_kwargs_as_strings(dtype):
    x = rand_ndarray((3, 4), dtype=dtype)
    y = nd.Custom(x, op_type="test_scaled_square", scale=2.5)
    assert SEEN["scale_arg"] == "2.5"  # MXNet hands the Prop its kwargs as strings
    assert SEEN["create"] == ([[3, 4]], [np.dtype(dtype)])
    assert y.dtype == dtype and y.stype == "default"
    assert_almost_equal(y, 2.5 * x.asnumpy() ** 2)


def test_numeric_gradient_and_state_kept_for_backward():
    x = nd.array(np.random.default_rng(0).normal(size=(3, 2)))
    check_numeric_gradient(lambda x: nd.Custom(x, op_type="test_scaled_square", scale=3), [x])
    assert SEEN["is_train"] is True  # forward ran inside record() (train mode)
    # backward ran on the instance whose forward saw the recorded input
    assert np.array_equal(SEEN["backward_state"], x.asnumpy())


def test_weighted_softmax_ce_matches_numpy():
    rng = np.random.default_rng(1)
    x = nd.array(rng.normal(size=(5, 2)), dtype=np.float64)
    label = nd.array([0, 1, 1, 0, 1], dtype=np.float64)
    x.attach_grad()
    with autograd.record():
        p = nd.Custom(x, label, op_type="test_weighted_softmax_ce", positive_cls_weight=2)
    p.backward()
    want_p, want_grad = weighted_ce_oracle(x.asnumpy(), label.asnumpy(), 2.0)
    assert_almost_equal(p, want_p)
    assert_almost_equal(x.grad, want_grad)
    assert SEEN["label_req"] == "null"  # the label wants no gradient
    assert SEEN["out_grad"] == [None]  # need_top_grad=False: no output gradient (MXNet: empty)
    # inputs by argument name, as MXNet allows
    q = nd.Custom(data=x, label=label, op_type="test_weighted_softmax_ce", positive_cls_weight=2)
    assert_almost_equal(q, want_p)


def test_assign_honours_req():
    op = CustomOp()
    dst = nd.array([1.0, 2.0])
    op.assign(dst, "write", nd.array([5.0, 6.0]))
    assert dst.asnumpy().tolist() == [5.0, 6.0]
    op.assign(dst, "add", nd.array([1.0, 1.0]))
    assert dst.asnumpy().tolist() == [6.0, 7.0]
    op.assign(dst, "null", nd.array([0.0, 0.0]))
    assert dst.asnumpy().tolist() == [6.0, 7.0]
    rsp = nd.zeros((3, 2), stype="row_sparse")
    op.assign(rsp, "write", nd.array([[0, 0], [1, 2], [0, 0]]))
    assert rsp.stype == "row_sparse" and rsp.indices.asnumpy().tolist() == [1]
    with pytest.raises(NetsError, match="req='bogus'"):
        op.assign(dst, "bogus", dst)


def test_unknown_op_type_names_the_registered_ones():
    with pytest.raises(NetsError, match="nope.*test_scaled_square"):
        nd.Custom(nd.ones((2,)), op_type="nope")
    assert "test_weighted_softmax_ce" in nets.operator.get_all_registered_operators()
    with pytest.raises(NetsError, match="op_type"):
        nd.Custom(nd.ones((2,)))


class Broken(CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        raise ValueError("bad input")


@register("test_broken")
class BrokenProp(CustomOpProp):
    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Broken()


def test_user_errors_name_the_op_type():
    with pytest.raises(NetsError, match="op_type='test_broken': forward raised ValueError: "
                                        "bad input"):
        nd.Custom(nd.ones((2,)), op_type="test_broken")
    with pytest.raises(NetsError, match="test_scaled_square.*unexpected"):
        nd.Custom(nd.ones((2,)), op_type="test_scaled_square", bogus=1)
    with pytest.raises(NetsError, match="takes 2 inputs"):
        nd.Custom(nd.ones((2, 2)), nd.ones((2,)), nd.ones((2,)),
                  op_type="test_weighted_softmax_ce", positive_cls_weight=1)
    with pytest.raises(NetsError, match="'label' is not given"):
        nd.Custom(nd.ones((2, 2)), op_type="test_weighted_softmax_ce", positive_cls_weight=1)
    with pytest.raises(NetsError, match="not a subclass"):
        register("test_not_a_prop")(object)


GARBAGE_SHAPES = {"a string": "abc", "negative": [-1], "fraction": [2.5], "None": None,
                  "nested": [[2]]}


@register("test_garbage_shape")
class GarbageShapeProp(CustomOpProp):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def infer_shape(self, in_shape):
        return in_shape, [GARBAGE_SHAPES[self.kind]], []

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Broken()


@pytest.mark.parametrize("kind", sorted(GARBAGE_SHAPES))
def test_garbage_from_infer_shape_is_one_error_naming_the_op(kind):
    with pytest.raises(NetsError, match=r"op_type='test_garbage_shape': infer_shape returned "
                                        r".* where a shape \(a list of non-negative integers"):
        nd.Custom(nd.ones((2,)), op_type="test_garbage_shape", kind=kind)


class Halve(CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] / 2)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        SEEN["halve_backward"] = (in_data, out_data)
        self.assign(in_grad[0], req[0], out_grad[0] / 2)


@register("test_halve")
class HalveProp(CustomOpProp):
    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return out_grad  # neither the input nor the output

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Halve()


def test_backward_gets_only_its_declared_dependencies():
    x = nd.array([[1.0, -2.0]], dtype=np.float64)
    check_numeric_gradient(lambda x: nd.Custom(x, op_type="test_halve"), [x])
    assert SEEN["halve_backward"] == ([None], [None])


class DoubleStored(CustomOp):
    """2 * x on the stored values of a sparse input: output and gradient keep its pattern."""

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * 2)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        SEEN["in_grad_stype"] = in_grad[0].stype
        self.assign(in_grad[0], req[0], out_grad[0] * 2)


@register("test_double_stored")
class DoubleStoredProp(CustomOpProp):
    def infer_storage_type_backward(self, ograd_stype, in_stype, out_stype, igrad_stype,
                                    aux_stype):
        return ograd_stype, in_stype, out_stype, list(in_stype), aux_stype

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return DoubleStored()


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_storage_declared_by_the_prop(stype):
    x = rand_ndarray((6, 3), stype, 0.5, np.float64)
    y = nd.Custom(x, op_type="test_double_stored")
    assert y.stype == stype  # the default infer_storage_type: the first input's stype
    assert_almost_equal(y, 2 * x.asnumpy())
    op = nets.ops.registry.get_op("Custom")
    assert op.infer_grad_stype(stype, op_type="test_double_stored") == (stype,)
    assert op.infer_grad_stype(stype, op_type="test_scaled_square") == ("default",)
    if stype == "row_sparse":
        x.attach_grad(stype="row_sparse")
        with autograd.record():
            y = nd.Custom(x, op_type="test_double_stored")
        y.backward(y.copy())
        assert SEEN["in_grad_stype"] == "row_sparse" and x.grad.stype == "row_sparse"
        assert_almost_equal(x.grad, 4 * x.asnumpy())


class Split(CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] + 1)
        self.assign(out_data[1], req[1], in_data[0] * 3)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] + 3 * out_grad[1])


@register("test_two_outputs")
class SplitProp(CustomOpProp):
    def list_outputs(self):
        return ["plus", "times"]

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Split()


def test_two_outputs():
    x = nd.array(np.random.default_rng(3).normal(size=(2, 3)))
    a, b = nd.Custom(x, op_type="test_two_outputs")
    assert_almost_equal(a, x.asnumpy() + 1)
    assert_almost_equal(b, x.asnumpy() * 3)
    check_numeric_gradient(lambda x: nd.Custom(x, op_type="test_two_outputs"), [x])


def test_initializer_alias():
    import nets.initializer
    assert nets.initializer is nets.init
    assert isinstance(nets.initializer.Normal(sigma=0.01), nets.init.Initializer)


class Count(CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], (in_data[0] > 0).sum(axis=1))


@register("test_count_positive")
class CountProp(CustomOpProp):
    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0][:1]]

    def infer_type(self, in_type):
        return in_type, [np.dtype(np.int64)]

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Count()


def test_shape_and_dtype_declared_by_the_prop():
    x = nd.array([[1.0, -1.0, 2.0], [0.0, 0.0, 3.0]])
    y = nd.Custom(x, op_type="test_count_positive")
    assert y.shape == (2,) and y.dtype == np.int64
    assert y.asnumpy().tolist() == [2, 1]
    s = nets.sym.Custom(nets.sym.var("x"), op_type="test_count_positive")
    _, out_shapes, _ = s.infer_shape(x=(2, 3))
    assert out_shapes == [(2,)] and s.infer_type(x=np.float32)[1] == [np.int64]
    # the default backward writes nothing: the in_grad zeros allocated for it (MXNet's too)
    x.attach_grad()
    with autograd.record():
        y = nd.Custom(x, op_type="test_count_positive")
    y.backward()
    assert x.grad.asnumpy().tolist() == [[0.0] * 3] * 2


class Tagged(CustomOp):
    """y = k * x with k = sum(x) fixed by the forward on the instance (treated as a constant
    by backward): state only the instance that ran the call's forward holds."""

    made = []  # a weak reference to every instance

    def __init__(self):
        super().__init__()
        Tagged.made.append(weakref.ref(self))

    def forward(self, is_train, req, in_data, out_data, aux):
        self.k = float(in_data[0].asnumpy().sum())
        self.assign(out_data[0], req[0], in_data[0] * self.k)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * self.k)


@register("test_tagged")
class TaggedProp(CustomOpProp):
    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Tagged()


def test_interleaved_calls_of_one_operator_keep_their_own_state():
    rng = np.random.default_rng(3)
    x1, x2 = nd.array(rng.normal(size=(2, 3))), nd.array(rng.normal(size=(2, 3)))
    for x in (x1, x2):
        x.attach_grad()
    with autograd.record():
        y1 = nd.Custom(x1, op_type="test_tagged")
        y2 = nd.Custom(x2, op_type="test_tagged")
    y2.backward()  # the second call first: each backward reads its own call's k
    y1.backward()
    for x, y in ((x1, y1), (x2, y2)):
        k = x.asnumpy().sum()
        assert_almost_equal(y, k * x.asnumpy())
        assert_almost_equal(x.grad, np.full(x.shape, k))


def _module_tables():
    return {name: len(v) for name, v in vars(nets.operator).items()
            if isinstance(v, (dict, list, set))}


def test_per_call_state_lives_on_the_node_and_goes_with_it():
    x = nd.ones((2, 2))
    x.attach_grad()
    tables = _module_tables()
    Tagged.made.clear()
    nd.Custom(x, op_type="test_tagged")  # not recorded: nothing keeps the instance
    assert Tagged.made[0]() is None
    Tagged.made.clear()
    with autograd.record():
        ys = [nd.Custom(x, op_type="test_tagged") for _ in range(200)]
    assert all(r() is not None for r in Tagged.made) and len(Tagged.made) == 200
    assert _module_tables() == tables  # no module-level table grows with the calls
    ys[0].backward()  # a backward without retain_graph frees its node and the instance
    assert Tagged.made[0]() is None and Tagged.made[1]() is not None
    del ys  # the graphs go with their outputs, and the instances with them (no cycle)
    assert all(r() is None for r in Tagged.made)
