"""Module: MXNet's sparse-symbol linear-regression tutorial, fit/score/predict, lazy
row_sparse updates, checkpoints."""
import time

import numpy as np
import pytest

import nets
import nets.data
from nets import nd, sym
from nets.base import NetsError
from nets.test_utils import rand_ndarray


def _linear_regression(num_features):
    initializer = nets.init.Normal(sigma=0.01)
    x = sym.Variable("data", stype="csr")
    y = sym.Variable("label")
    weight = sym.Variable("weight", stype="row_sparse", shape=(num_features, 1),
                          init=initializer)
    bias = sym.Variable("bias", shape=(1,))
    pred = sym.broadcast_add(sym.sparse.dot(x, weight), bias)
    return sym.LinearRegressionOutput(data=pred, label=y, name="lro"), initializer


def test_sparse_symbol_linear_regression_tutorial():
    """MXNet's "Train a Linear Regression Model with Sparse Symbols", renamed."""
    feature_dimension, batch_size = 100, 1
    train_data = nets.test_utils.rand_ndarray((1000, feature_dimension), "csr", 0.01)
    target_weight = nd.arange(1, feature_dimension + 1).reshape((feature_dimension, 1))
    train_label = nd.dot(train_data, target_weight)
    train_iter = nets.data.NDArrayIter(train_data, train_label, batch_size,
                                       last_batch_handle="discard", label_name="label")
    lro, initializer = _linear_regression(feature_dimension)
    mod = nets.mod.Module(symbol=lro, data_names=["data"], label_names=["label"])
    mod.bind(data_shapes=train_iter.provide_data, label_shapes=train_iter.provide_label)
    mod.init_params(initializer=initializer)
    sgd = nets.optim.SGD(learning_rate=0.05, rescale_grad=1.0 / batch_size, momentum=0.9)
    mod.init_optimizer(optimizer=sgd)
    metric = nets.metric.create("MSE")
    tic = time.perf_counter()
    for _ in range(10):
        train_iter.reset()
        metric.reset()
        for batch in train_iter:
            mod.forward(batch, is_train=True)
            mod.update_metric(metric, batch.label)
            mod.backward()
            mod.update()
    seconds = time.perf_counter() - tic
    print(f"10 epochs of 1000 batches: {seconds:.2f} s, MSE {metric.get()[1]:.3f}")
    assert metric.get()[1] < 1, metric.get()
    exe = mod._exec
    assert exe.arg_dict["weight"].stype == "row_sparse"
    assert exe.grad_dict["weight"].stype == "row_sparse"
    assert "data" not in exe.grad_dict and "label" not in exe.grad_dict


def test_row_sparse_weight_is_updated_lazily():
    lro, _ = _linear_regression(6)
    mod = nets.mod.Module(lro, label_names=["label"])
    mod.bind(data_shapes=[("data", (2, 6))], label_shapes=[("label", (2, 1))])
    mod.init_params(arg_params={"weight": nd.ones((6, 1)), "bias": nd.zeros((1,))})
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1,
                                                          "momentum": 0.9})
    x = nd.sparse.csr_matrix((np.array([1.0, 2.0], np.float32), np.array([1, 4]),
                              np.array([0, 1, 2])), shape=(2, 6))
    batch = nets.data.DataBatch([x], [nd.zeros((2, 1))])
    for _ in range(2):
        mod.forward_backward(batch)
        mod.update()
    w = mod.get_params()[0]["weight"]
    assert mod._exec.grad_dict["weight"].indices.asnumpy().tolist() == [1, 4]
    values = w.asnumpy()[:, 0]
    assert np.all(values[[0, 2, 3, 5]] == 1) and np.all(values[[1, 4]] < 1)
    state = mod.optimizer.state[mod._param_names.index("weight")].state
    assert state.stype == "row_sparse" and np.all(state.asnumpy()[[0, 2, 3, 5]] == 0)
    # the reference: SGD with momentum (rescale 1 / batch size) on w's touched rows and b
    w_ref, b_ref, mom_w, mom_b = np.ones(6), 0.0, np.zeros(6), 0.0
    for _ in range(2):
        residual = np.array([w_ref[1] * 1.0, w_ref[4] * 2.0]) + b_ref  # labels are 0
        grad_w = np.zeros(6)
        grad_w[[1, 4]] = residual * np.array([1.0, 2.0]) / 2
        mom_w, mom_b = 0.9 * mom_w - 0.1 * grad_w, 0.9 * mom_b - 0.1 * residual.sum() / 2
        w_ref, b_ref = w_ref + mom_w, b_ref + mom_b
    np.testing.assert_allclose(values, w_ref, rtol=1e-5)
    np.testing.assert_allclose(mod.get_params()[0]["bias"].asnumpy(), [b_ref], rtol=1e-5)


def _classification():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((90, 4)).astype(np.float32)
    y = (x @ rng.standard_normal((4, 3))).argmax(1).astype(np.float32)  # separable
    net = sym.FullyConnected(sym.var("data"), num_hidden=3, name="fc")
    return x, y, sym.SoftmaxOutput(net, name="softmax")


def test_fit_score_predict_and_checkpoints(tmp_path):
    x, y, net = _classification()
    train = nets.data.NDArrayIter(x, y, batch_size=16, shuffle=True)
    val = nets.data.NDArrayIter(x, y, batch_size=16)  # last batch padded (90 = 5*16 + 10)
    mod = nets.mod.Module(net)
    saved = []
    mod.fit(train, eval_data=val, eval_metric="acc", num_epoch=15, optimizer="sgd",
            optimizer_params={"learning_rate": 0.5},
            epoch_end_callback=lambda epoch, s, args, aux: saved.append(epoch),
            batch_end_callback=lambda p: None)
    assert saved == list(range(15))
    (name, acc), = mod.score(val, "acc")
    assert name == "accuracy" and acc > 0.85
    probs = mod.predict(val)
    assert probs.shape == (90, 3)  # padding removed
    assert np.mean(probs.asnumpy().argmax(1) == y) == pytest.approx(acc)
    mod.save_checkpoint(str(tmp_path / "clf"), 15)
    symbol, args, aux = nets.mod.load_checkpoint(str(tmp_path / "clf"), 15)
    assert sorted(args) == ["fc_bias", "fc_weight"] and aux == {}
    loaded = nets.mod.Module.load(str(tmp_path / "clf"), 15)
    loaded.bind(data_shapes=val.provide_data, for_training=False)
    assert np.array_equal(loaded.predict(val).asnumpy(), probs.asnumpy())


def test_batches_of_another_size_rebind_and_share_parameters():
    x, y, net = _classification()
    mod = nets.mod.Module(net)
    mod.bind(data_shapes=[("data", (16, 4))], label_shapes=[("softmax_label", (16,))])
    mod.init_params()
    weight = mod._exec.arg_dict["fc_weight"]
    mod.forward(nets.data.DataBatch([nd.array(x[:5])], [nd.array(y[:5])]), is_train=False)
    assert mod.get_outputs()[0].shape == (5, 3) and mod.data_shapes[0].shape == (5, 4)
    assert mod._exec.arg_dict["fc_weight"] is weight


def test_module_errors_name_the_problem():
    x, y, net = _classification()
    with pytest.raises(NetsError, match=r"data_names \['features'\]"):
        nets.mod.Module(net, data_names=["features"])
    with pytest.warns(UserWarning, match=r"label_names \['lbl'\] are not arguments"):
        nets.mod.Module(net, label_names=["lbl"])
    mod = nets.mod.Module(net)
    with pytest.raises(NetsError, match="bind\\(\\)"):
        mod.init_params()
    with pytest.raises(NetsError, match="label_names"):
        mod.bind(data_shapes=[("data", (4, 4))], label_shapes=[("label", (4,))])
    mod.bind(data_shapes=[("data", (4, 4))], label_shapes=[("softmax_label", (4,))])
    assert mod.output_shapes == [("softmax_output", (4, 3))]
    with pytest.raises(NetsError, match="no value for 'fc_bias'"):
        mod.init_params(arg_params={"fc_weight": nd.zeros((3, 4))})
    with pytest.raises(NetsError, match="init_params\\(\\)"):
        mod.init_optimizer()
    mod.init_params(arg_params={"fc_weight": nd.ones((3, 4))}, allow_missing=True)
    assert np.all(mod.get_params()[0]["fc_bias"].asnumpy() == 0)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"wd": 0.1})
    info = mod._optimizer.param_dict
    assert {p.name: p.wd_mult for p in info.values()} == {"fc_weight": 1.0, "fc_bias": 0.0}
    assert mod._optimizer.rescale_grad == 0.25


def test_variable_init_lr_mult_and_row_sparse_initial_values():
    w = sym.var("w", shape=(5, 2), stype="row_sparse", init="ones", lr_mult=0.0)
    net = sym.MakeLoss(sym.sum(sym.sparse.dot(sym.var("data", stype="csr"), w)))
    mod = nets.mod.Module(net, label_names=None)
    mod.bind(data_shapes=[("data", (3, 5))])
    mod.init_params(nets.init.Zero())  # the variable's own init wins
    assert mod.get_params()[0]["w"].stype == "row_sparse"
    assert np.all(mod.get_params()[0]["w"].asnumpy() == 1)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 1.0})
    mod.forward_backward(nets.data.DataBatch([rand_ndarray((3, 5), "csr", 0.5)], None))
    mod.update()
    assert np.all(mod.get_params()[0]["w"].asnumpy() == 1)  # lr_mult 0 freezes it


def test_checkpoint_with_optimizer_states_resumes_exactly(tmp_path):
    """Module.save_checkpoint(save_optimizer_states=True) + Module.load(..., True): training
    continues exactly as if uninterrupted (momentum restored)."""
    data = nd.array(np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32))
    label = nd.array(np.arange(8, dtype=np.float32))
    x, y = nets.sym.Variable("data"), nets.sym.Variable("lin_label")
    net = nets.sym.LinearRegressionOutput(
        nets.sym.FullyConnected(x, num_hidden=1, name="fc"), y, name="lin")
    it = nets.data.NDArrayIter(data, label, batch_size=4, label_name="lin_label")

    def build():
        m = nets.mod.Module(net, data_names=["data"], label_names=["lin_label"])
        m.bind(it.provide_data, it.provide_label)
        return m

    def train(m, batches):
        for b in batches:
            m.forward(b, is_train=True)
            m.backward()
            m.update()

    it.reset()
    batches = list(it)
    ref = build()
    ref.init_params(nets.init.Constant(0.1))
    ref.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    train(ref, batches + batches)

    a = build()
    a.init_params(nets.init.Constant(0.1))
    a.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    train(a, batches)
    prefix = str(tmp_path / "ck")
    a.save_checkpoint(prefix, 1, save_optimizer_states=True)
    b = nets.mod.Module.load(prefix, 1, load_optimizer_states=True, data_names=["data"],
                             label_names=["lin_label"])
    b.bind(it.provide_data, it.provide_label)  # sets the checkpoint's parameters
    b.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    train(b, batches)
    for name, value in ref.get_params()[0].items():
        np.testing.assert_allclose(b.get_params()[0][name].asnumpy(), value.asnumpy(),
                                   rtol=1e-6, atol=1e-7)


def test_dense_weight_of_a_csr_product_is_updated_lazily_and_biases_are_not_decayed():
    """``dot(csr, w)`` gives a dense ``w`` a row_sparse gradient (as MXNet's executor): SGD
    with momentum and weight decay touches only the batch's feature rows of the weight and
    of its momentum; the bias gets no weight decay (MXNet: only ``*_weight``/``*_gamma``)."""
    x, label = sym.Variable("data", stype="csr"), sym.Variable("label")
    w, b = sym.Variable("lin_weight", shape=(6, 2)), sym.Variable("lin_bias", shape=(2,))
    net = sym.LinearRegressionOutput(sym.broadcast_add(sym.sparse.dot(x, w), b), label)
    mod = nets.mod.Module(net, label_names=["label"])
    mod.bind(data_shapes=[("data", (2, 6))], label_shapes=[("label", (2, 2))])
    w0 = np.arange(12, dtype=np.float32).reshape(6, 2) / 10
    mod.init_params(arg_params={"lin_weight": nd.array(w0), "lin_bias": nd.ones((2,))})
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1,
                                                          "momentum": 0.9, "wd": 0.1})
    xv = np.zeros((2, 6), np.float32)
    xv[0, 1], xv[1, 4], xv[1, 1] = 1.0, 2.0, -1.0
    yv = np.array([[1.0, 0.0], [0.0, 2.0]], np.float32)
    batch = nets.data.DataBatch([nd.array(xv).tostype("csr")], [nd.array(yv)])
    w_ref, b_ref = w0.astype(np.float64), np.ones(2)
    mom_w, mom_b = np.zeros((6, 2)), np.zeros(2)
    touched = [1, 4]
    for _ in range(2):
        mod.forward_backward(batch)
        grad = mod._exec.grad_dict["lin_weight"]
        assert grad.stype == "row_sparse" and grad.indices.asnumpy().tolist() == touched
        mod.update()
        # the reference: MXNet's lazy SGD on the touched rows (rescale_grad 1 / batch size)
        d_pred = (xv @ w_ref + b_ref - yv) / 2  # LinearRegressionOutput: / label.size per row
        g_w = (xv.T @ d_pred)[touched] / 2 + 0.1 * w_ref[touched]
        g_b = d_pred.sum(axis=0) / 2  # no weight decay
        mom_w[touched] = 0.9 * mom_w[touched] - 0.1 * g_w
        mom_b = 0.9 * mom_b - 0.1 * g_b
        w_ref[touched] += mom_w[touched]
        b_ref = b_ref + mom_b
    params = mod.get_params()[0]
    np.testing.assert_allclose(params["lin_weight"].asnumpy(), w_ref, rtol=1e-5)
    np.testing.assert_allclose(params["lin_bias"].asnumpy(), b_ref, rtol=1e-5)
    absent = [0, 2, 3, 5]
    assert np.array_equal(params["lin_weight"].asnumpy()[absent], w0[absent])
    momentum = mod.optimizer.state[mod._param_names.index("lin_weight")].state.asnumpy()
    assert np.all(momentum[absent] == 0) and np.all(momentum[touched] != 0)


# -- through a KVStore ------------------------------------------------------------------------

def _sparse_batches(n=5, features=30, batch=4, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        x = nets.test_utils.rand_ndarray((batch, features), "csr", density=0.15)
        y = nd.array(rng.standard_normal((batch, 1)))
        out.append(nets.data.DataBatch([x], [y]))
    return out


def _regression_module(kvstore, optimizer="adam", features=30, batch=4):
    lro, _ = _linear_regression(features)
    mod = nets.mod.Module(lro, label_names=["label"])
    mod.bind(data_shapes=[("data", (batch, features))], label_shapes=[("label", (batch, 1))])
    rng = np.random.default_rng(1)
    mod.init_params(arg_params={
        "weight": nd.array(rng.standard_normal((features, 1))).tostype("row_sparse"),
        "bias": nd.array([0.5])})
    mod.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                       optimizer_params={"learning_rate": 0.1, "wd": 0.01})
    return mod


def _batch_rows(batch):
    return {"weight": batch.data[0].indices}


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_module_on_a_store_with_prepare_trains_like_a_module_without(optimizer):
    plain = _regression_module(None, optimizer)
    stored = _regression_module(nets.kv.create("local"), optimizer)
    assert plain._kvstore is None and stored._update_on_kvstore
    for batch in _sparse_batches():
        stored.prepare(batch, sparse_row_id_fn=_batch_rows)
        held = stored._exec.arg_dict["weight"]  # MXNet's: only the batch's rows
        np.testing.assert_array_equal(held.indices.asnumpy(),
                                      np.unique(batch.data[0].indices.asnumpy()))
        for mod in (plain, stored):
            mod.forward_backward(batch)
            mod.update()
        np.testing.assert_array_equal(stored.get_outputs()[0].asnumpy(),
                                      plain.get_outputs()[0].asnumpy())
    want, got = plain.get_params()[0], stored.get_params()[0]  # every row, from the store
    for name in ("weight", "bias"):
        np.testing.assert_array_equal(got[name].asnumpy(), want[name].asnumpy())
    all_rows = nd.arange(0, 30, dtype="int64")
    stored.prepare(None, lambda batch: {"weight": all_rows})
    np.testing.assert_array_equal(stored._exec.arg_dict["weight"].asnumpy(),
                                  want["weight"].asnumpy())


def test_fit_through_a_store_without_row_ids_keeps_every_row_current():
    batches = _sparse_batches(4)
    data = nd.sparse.csr_matrix(np.concatenate([b.data[0].asnumpy() for b in batches]))
    label = nd.array(np.concatenate([b.label[0].asnumpy() for b in batches]))
    rng = np.random.default_rng(1)
    start = {"weight": nd.array(rng.standard_normal((30, 1))).tostype("row_sparse"),
             "bias": nd.array([0.5])}
    results = []
    for kvstore in (None, nets.kv.create()):
        it = nets.data.NDArrayIter(data, label, batch_size=4, label_name="label")
        mod = nets.mod.Module(_linear_regression(30)[0], label_names=["label"])
        mod.fit(it, num_epoch=2, kvstore=kvstore, optimizer="sgd", arg_params=start,
                optimizer_params={"learning_rate": 0.1}, eval_metric="mse",
                progress_bar=False)
        assert (mod._kvstore is None) == (kvstore is None)
        results.append(mod.get_params()[0])
    assert not np.array_equal(results[0]["weight"].asnumpy(), start["weight"].asnumpy())
    for name in ("weight", "bias"):
        np.testing.assert_array_equal(results[0][name].asnumpy(), results[1][name].asnumpy())


def test_module_optimizer_states_saved_through_the_store_continue_in_a_plain_module(tmp_path):
    batches = _sparse_batches(6)
    stored = _regression_module(nets.kv.create())
    for batch in batches[:3]:
        stored.prepare(batch, _batch_rows)
        stored.forward_backward(batch)
        stored.update()
    path = str(tmp_path / "states.npz")
    stored.save_optimizer_states(path)
    plain = _regression_module(None)
    plain.set_params(stored.get_params()[0])
    plain.load_optimizer_states(path)
    for batch in batches[3:]:
        stored.prepare(batch, _batch_rows)
        for mod in (plain, stored):
            mod.forward_backward(batch)
            mod.update()
    for name in ("weight", "bias"):
        np.testing.assert_array_equal(stored.get_params()[0][name].asnumpy(),
                                      plain.get_params()[0][name].asnumpy())


def test_module_store_choices_and_prepare_errors():
    assert _regression_module("local")._kvstore is None  # one device: nothing to reduce
    assert _regression_module("device")._kvstore is None
    with pytest.raises(NetsError, match=r"nets\[dist\]"):
        _regression_module("dist_sync")
    with pytest.raises(NetsError, match="unknown store type"):
        _regression_module("nccl")
    plain = _regression_module(None)
    plain.prepare(None, lambda b: 1 / 0)  # nothing to pull: the function is not called
    stored = _regression_module(nets.kv.create())
    with pytest.raises(NetsError, match="must return a dict"):
        stored.prepare(None, lambda b: [1])
    with pytest.raises(NetsError, match="names 'w', which is not a parameter"):
        stored.prepare(None, lambda b: {"w": nd.array([0])})
    stored.prepare(None, lambda b: {"bias": nd.array([0])})  # a dense weight: nothing to do
    with pytest.raises(NetsError, match="holds the parameters"):
        stored.set_params(plain.get_params()[0])


@pytest.mark.parametrize("compression, expected", [
    (None, [[1.0, 2.0]]),  # plain SGD: w - lr * grad, grad = -(label - 0) * x = [-1, -2]
    ({"type": "2bit", "threshold": 1.5}, [[0.0, 1.5]]),  # -1 -> 0 (kept as residual), -2 -> -1.5
])
def test_compression_params_compress_the_pushed_gradient(compression, expected):
    """MXNet's ``Module(compression_params=...)``: the store init_optimizer makes quantizes
    each pushed gradient to {-t, 0, t}; the optimizer then updates with that."""
    data = nets.sym.Variable("data")
    fc = nets.sym.FullyConnected(data, num_hidden=1, no_bias=True, name="fc")
    out = nets.sym.LinearRegressionOutput(fc, nets.sym.Variable("lin_label"), name="lin")
    mod = nets.mod.Module(out, label_names=("lin_label",), compression_params=compression)
    mod.bind(data_shapes=[("data", (1, 2))], label_shapes=[("lin_label", (1, 1))])
    mod.init_params(initializer=nets.init.Zero())
    mod.init_optimizer(kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 1.0), ("rescale_grad", 1.0)))
    batch = nets.data.DataBatch([nd.array([[1.0, 2.0]])], [nd.array([[1.0]])])
    mod.forward_backward(batch)
    mod.update()
    arg, _ = mod.get_params()
    np.testing.assert_allclose(arg["fc_weight"].asnumpy(), expected)


def test_bad_compression_params_are_refused_at_construction():
    with pytest.raises(nets.NetsError, match="threshold"):
        nets.mod.Module(nets.sym.Variable("data"), label_names=(),
                        compression_params={"type": "2bit", "threshold": -1})
