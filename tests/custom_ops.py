"""Custom operators shared by tests/test_operator.py and tests/symbol/test_custom.py.

They live in a module of their own so that both import the one registration (a test module
imported by another test module would be loaded twice and register its Props twice)."""
import numpy as np

from nets import nd
from nets.operator import CustomOp, CustomOpProp, register

SEEN = {}  # what the Props and operators received, for the tests to inspect


class WeightedSoftmaxCE(CustomOp):
    """linear_classification's loss: softmax forward; backward (p - onehot(y)) * (1 + y w) / w."""

    def __init__(self, w):
        super().__init__()
        self.w = w

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], nd.softmax(in_data[0], axis=1))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        label, prob = in_data[1], out_data[0]
        scale = ((1 + label * self.w) / self.w).reshape((prob.shape[0], 1))
        self.assign(in_grad[0], req[0], (prob - nd.one_hot(label, 2)) * scale)
        SEEN["label_req"] = req[1]
        SEEN["out_grad"] = out_grad


@register("test_weighted_softmax_ce")
class WeightedSoftmaxCEProp(CustomOpProp):
    def __init__(self, positive_cls_weight):
        super().__init__(need_top_grad=False)
        self.w = float(positive_cls_weight)

    def list_arguments(self):
        return ["data", "label"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return WeightedSoftmaxCE(self.w)


def weighted_ce_oracle(x, y, w):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    grad = (p - np.eye(2)[y.astype(int)]) * ((1 + y * w) / w)[:, None]
    return p, grad
