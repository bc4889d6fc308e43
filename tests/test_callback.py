"""Callbacks: messages in MXNet's formats (read through caplog, timed by a fake clock),
checkpoints written by epoch number, and a Module.fit that uses them."""
import logging
import re
from types import SimpleNamespace

import numpy as np
import pytest

import nets
import nets.data
from nets import callback, metric, nd, sym
from nets.model import BatchEndParam


class _Clock:
    """A stand-in for the ``time`` module whose ``time()`` returns ``now``."""

    def __init__(self, now=100.0):
        self.now = now

    def time(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = _Clock()
    monkeypatch.setattr(callback, "time", fake)
    return fake


def _messages(caplog):
    msgs = [r.getMessage() for r in caplog.records if r.name == "nets.callback"]
    caplog.clear()
    return msgs


def _accuracy(correct, total):
    """An Accuracy that has seen ``correct`` right answers out of ``total``."""
    acc = metric.Accuracy()
    acc.update(nd.array([1.0] * correct + [0.0] * (total - correct)), nd.ones((total,)))
    return acc


def test_speedometer_logs_speed_and_metric_every_frequent_batches(clock, caplog):
    caplog.set_level(logging.INFO)
    acc = _accuracy(1, 2)
    speed = callback.Speedometer(batch_size=4, frequent=2)
    speed(BatchEndParam(0, 0, acc, {}))  # the first batch starts the timing
    clock.now = 101.0
    speed(BatchEndParam(0, 1, acc, {}))
    assert _messages(caplog) == []
    clock.now = 102.0
    speed(BatchEndParam(0, 2, acc, {}))
    # 2 batches of 4 samples in 2 seconds
    assert _messages(caplog) == ["Epoch[0] Batch [0-2]\tSpeed: 4.00 samples/sec\t"
                                 "accuracy=0.500000"]
    assert np.isnan(acc.get()[1]) and acc.get_global()[1] == 0.5  # auto_reset: local only
    acc.update(nd.array([1.0]), nd.array([1.0]))
    speed(BatchEndParam(0, 3, acc, {}))
    clock.now = 104.5
    speed(BatchEndParam(0, 4, acc, {}))
    assert _messages(caplog) == ["Epoch[0] Batch [2-4]\tSpeed: 3.20 samples/sec\t"
                                 "accuracy=1.000000"]
    # a lower batch number starts a new epoch: its first batch restarts the timing
    clock.now = 200.0
    speed(BatchEndParam(1, 0, acc, {}))
    clock.now = 201.0
    speed(BatchEndParam(1, 2, acc, {}))
    assert _messages(caplog) == ["Epoch[1] Batch [0-2]\tSpeed: 8.00 samples/sec\t"
                                 "accuracy=nan"]


def test_speedometer_without_auto_reset_composite_and_no_metric(clock, caplog):
    caplog.set_level(logging.INFO)
    both = metric.create(["acc", "mae"])
    both.update(nd.array([1.0, 0.0, 1.0, 1.0]), nd.array([1.0, 1.0, 1.0, 1.0]))
    speed = callback.Speedometer(batch_size=10, frequent=3, auto_reset=False)
    for nbatch in range(7):
        clock.now = 100.0 + nbatch
        speed(BatchEndParam(2, nbatch, both, {}))
    assert _messages(caplog) == [
        "Epoch[2] Batch [0-3]\tSpeed: 10.00 samples/sec\taccuracy=0.750000\tmae=0.250000",
        "Epoch[2] Batch [0-6]\tSpeed: 10.00 samples/sec\taccuracy=0.750000\tmae=0.250000"]
    assert both.get()[1] == [0.75, 0.25]  # not reset
    speed = callback.Speedometer(batch_size=10, frequent=1)
    speed(BatchEndParam(0, 0, None, {}))
    speed(BatchEndParam(0, 1, None, {}))  # no time passed on the fake clock
    assert _messages(caplog) == ["Iter[0] Batch [1]\tSpeed: inf samples/sec"]


def test_progress_bar(caplog):
    caplog.set_level(logging.INFO)
    bar = callback.ProgressBar(total=4, length=8)
    for nbatch in (1, 3, 4):
        bar(BatchEndParam(0, nbatch, None, {}))
    # filled = round(8 * n / 4), percent = ceil(100 * n / 4)
    assert _messages(caplog) == ["[==------] 25%\r", "[======--] 75%\r", "[========] 100%\r"]
    callback.ProgressBar(total=3, length=10)(BatchEndParam(0, 1, None, {}))
    assert _messages(caplog) == ["[===-------] 34%\r"]  # round(3.33) = 3, ceil(33.3) = 34


def test_log_train_metric_and_validation_metrics(caplog):
    caplog.set_level(logging.INFO)
    acc = _accuracy(3, 4)
    log = callback.log_train_metric(period=2, auto_reset=True)
    log(BatchEndParam(1, 1, acc, {}))
    assert _messages(caplog) == [] and acc.get()[1] == 0.75
    log(BatchEndParam(1, 2, acc, {}))
    assert _messages(caplog) == ["Iter[1] Batch[2] Train-accuracy=0.750000"]
    assert np.isnan(acc.get()[1]) and acc.get_global()[1] == 0.75
    log(BatchEndParam(1, 4, None, {}))  # no metric: nothing to log
    assert _messages(caplog) == []
    callback.LogValidationMetricsCallback()(BatchEndParam(3, 9, _accuracy(1, 4), {}))
    assert _messages(caplog) == ["Epoch[3] Validation-accuracy=0.250000"]


def _net():
    return sym.SoftmaxOutput(sym.FullyConnected(sym.var("data"), num_hidden=3, name="fc"),
                             name="softmax")


def test_do_checkpoint_saves_every_period_epochs_numbered_from_one(tmp_path):
    prefix = str(tmp_path / "net")
    weight = np.arange(12, dtype=np.float32).reshape(3, 4)
    args = {"fc_weight": nd.array(weight), "fc_bias": nd.array([1.0, 2.0, 3.0])}
    save = callback.do_checkpoint(prefix, period=2)
    for epoch in range(5):
        save(epoch, _net(), args, {})
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "net-0002.params.npz", "net-0004.params.npz", "net-symbol.json"]
    symbol, arg_params, aux_params = nets.model.load_checkpoint(prefix, 4)
    assert symbol.list_arguments() == _net().list_arguments() and aux_params == {}
    np.testing.assert_array_equal(arg_params["fc_weight"].asnumpy(), weight)
    np.testing.assert_array_equal(arg_params["fc_bias"].asnumpy(), [1.0, 2.0, 3.0])
    every = callback.do_checkpoint(str(tmp_path / "every"), period=0)  # counts as 1
    every(0, _net(), args, {})
    assert (tmp_path / "every-0001.params.npz").exists()


def test_module_checkpoint_calls_the_modules_save_checkpoint():
    calls = []
    mod = SimpleNamespace(save_checkpoint=lambda *a: calls.append(a))
    save = callback.module_checkpoint(mod, "p", period=3, save_optimizer_states=True)
    for epoch in range(6):
        save(epoch)
    assert calls == [("p", 3, True), ("p", 6, True)]


def test_fit_with_speedometer_and_do_checkpoint(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    y = (x @ rng.standard_normal((4, 3))).argmax(1).astype(np.float32)
    train = nets.data.NDArrayIter(x, y, batch_size=8)
    mod = nets.mod.Module(_net())
    mod.fit(train, eval_metric="acc", num_epoch=2, progress_bar=False,
            optimizer_params={"learning_rate": 0.1},
            batch_end_callback=[callback.Speedometer(8, frequent=3)],
            epoch_end_callback=callback.do_checkpoint(str(tmp_path / "fit")))
    pattern = (r"Epoch\[(\d)\] Batch \[(\d)-(\d)\]\tSpeed: (\d+\.\d\d|inf) samples/sec"
               r"\taccuracy=(\d\.\d{6})")
    found = [re.fullmatch(pattern, m) for m in _messages(caplog)]
    assert all(found) and len(found) == 4, found  # batches 3 and 6 of 8, in 2 epochs
    assert [(f[1], f[2], f[3]) for f in found] == [("0", "0", "3"), ("0", "3", "6"),
                                                   ("1", "0", "3"), ("1", "3", "6")]
    for epoch in (1, 2):
        _, args, _ = nets.model.load_checkpoint(str(tmp_path / "fit"), epoch)
        assert sorted(args) == ["fc_bias", "fc_weight"]
    np.testing.assert_array_equal(args["fc_weight"].asnumpy(),
                                  mod.get_params()[0]["fc_weight"].asnumpy())
