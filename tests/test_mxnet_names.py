"""MXNet names: metric 'pcc', name.NameManager, Executor.outputs at bind, base aliases."""
import numpy as np

import nets
from nets import nd, sym


def _mcc(cm):
    n, x, y = cm.sum(), cm.sum(axis=1), cm.sum(axis=0)
    return (np.sum(np.diag(cm) * n - x * y)
            / np.sqrt(np.sum(x * (n - x)) * np.sum(y * (n - y))))


def test_pcc_is_multiclass_mcc():
    m = nets.metric.create("pcc")
    assert isinstance(m, nets.metric.PCC)
    labels = np.array([0, 1, 2, 2, 1, 0, 2])
    preds = np.eye(3)[[0, 2, 2, 1, 1, 0, 2]]  # one-hot scores, arg-maxed
    m.update([nd.array(labels)], [nd.array(preds)])
    cm = np.zeros((3, 3))
    for p, t in zip([0, 2, 2, 1, 1, 0, 2], labels):
        cm[p, t] += 1
    assert m.get()[0] == "pcc"
    assert abs(m.get()[1] - _mcc(cm)) < 1e-12
    # two classes: equals the binary MCC
    b = nets.metric.create("pcc")
    lab, pr = np.array([0, 1, 1, 0, 1]), np.array([0, 1, 0, 0, 1])
    b.update([nd.array(lab)], [nd.array(pr)])
    tp, tn, fp, fn = 2, 2, 0, 1
    want = (tp * tn - fp * fn) / np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    assert abs(b.get()[1] - want) < 1e-12
    b.reset()
    assert np.isnan(b.get()[1])


def test_name_manager_counts_afresh():
    with nets.name.NameManager():
        a = sym.FullyConnected(sym.var("x"), num_hidden=2)
        b = sym.FullyConnected(sym.var("x"), num_hidden=2)
    with nets.name.NameManager():
        c = sym.FullyConnected(sym.var("x"), num_hidden=2)
    assert (a.name, b.name, c.name) == ("fullyconnected0", "fullyconnected1", "fullyconnected0")
    with nets.name.Prefix("net_"):
        assert sym.relu(sym.var("x")).name == "net_relu0"
    assert sym.relu(sym.var("x"), name="mine").name == "mine"


def test_executor_outputs_allocated_at_bind():
    x = sym.var("x", stype="csr")
    w = sym.var("w", stype="row_sparse")
    exe = sym.dot(x, w).simple_bind(nets.cpu(), x=(3, 4), w=(4, 2))
    assert [(o.shape, o.stype, o.dtype) for o in exe.outputs] == [((3, 2), "default",
                                                                     np.float32)]
    exe = (sym.var("a") * 2).bind(nets.cpu(), args={"a": nd.ones((2, 5))})
    assert exe.outputs[0].shape == (2, 5)
    exe.forward()
    assert (exe.outputs[0].asnumpy() == 2).all()


def test_mxnet_base_aliases():
    assert nets.base.MXNetError is nets.NetsError
    assert nets.base.py_str(b"ab") == "ab" and nets.base.mx_real_t == np.float32
    assert nets.Context.default_ctx == nets.cpu()
    assert nets.context.current_context() == nets.cpu()
    import nets.lr_scheduler as lrs
    assert lrs.FactorScheduler is nets.optim.lr_scheduler.FactorScheduler
    assert nets.test_utils.Context is nets.Context
