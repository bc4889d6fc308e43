"""Training callbacks (MXNet 1.9.1's ``mx.callback``) for ``Module.fit``.

Batch-end callbacks (``Speedometer``, ``ProgressBar``, ``log_train_metric``) take a
``nets.model.BatchEndParam``; epoch-end callbacks (``do_checkpoint``,
``module_checkpoint``) take ``(epoch, symbol, arg_params, aux_params)``. Messages go to the
``nets.callback`` logger at INFO level in MXNet's formats, so ``logging.basicConfig(level=
logging.INFO)`` shows them as it does MXNet's.
"""
import logging
import math
import time

from .model import save_checkpoint

__all__ = ["Speedometer", "ProgressBar", "LogValidationMetricsCallback", "do_checkpoint",
           "module_checkpoint", "log_train_metric"]

_log = logging.getLogger("nets.callback")


def _period(period):
    return int(max(1, period))


def do_checkpoint(prefix, period=1):
    """An epoch-end callback ``(iter_no, sym, arg, aux)`` calling
    ``save_checkpoint(prefix, iter_no + 1, sym, arg, aux)`` after every ``period``-th epoch
    (``period`` below 1 counts as 1): epoch ``iter_no`` (0-based) is saved as number
    ``iter_no + 1``, as MXNet numbers checkpoints."""
    period = _period(period)

    def _callback(iter_no, sym, arg, aux):
        if (iter_no + 1) % period == 0:
            save_checkpoint(prefix, iter_no + 1, sym, arg, aux)
    return _callback


def module_checkpoint(mod, prefix, period=1, save_optimizer_states=False):
    """An epoch-end callback calling ``mod.save_checkpoint(prefix, iter_no + 1,
    save_optimizer_states)`` after every ``period``-th epoch."""
    period = _period(period)

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            mod.save_checkpoint(prefix, iter_no + 1, save_optimizer_states)
    return _callback


def log_train_metric(period, auto_reset=False):
    """A batch-end callback logging ``Iter[epoch] Batch[nbatch] Train-<name>=<value>`` for
    each of the metric's values every ``period`` batches (when ``nbatch % period == 0``);
    with ``auto_reset`` it then clears the metric's local statistics."""
    def _callback(param):
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                _log.info("Iter[%d] Batch[%d] Train-%s=%f", param.epoch, param.nbatch, name,
                          value)
            if auto_reset:
                param.eval_metric.reset_local()
    return _callback


class Speedometer:
    """A batch-end callback logging the training speed and the metric every ``frequent``
    batches: ``Epoch[e] Batch [a-b]\\tSpeed: <s> samples/sec\\t<name>=<value>...``, where
    the speed is ``frequent * batch_size`` over the time since the previous log (or since
    the epoch's first batch). With ``auto_reset`` (default) the metric's local statistics
    are cleared after each log, so each log covers batches ``a`` to ``b``; without it the
    values cover the epoch so far (``Batch [0-b]``). Without a metric it logs
    ``Iter[e] Batch [b]\\tSpeed: <s> samples/sec``. A batch number lower than the previous
    one starts a new epoch's timing."""

    def __init__(self, batch_size, frequent=50, auto_reset=True):
        self.batch_size = batch_size
        self.frequent = frequent
        self.auto_reset = auto_reset
        self.init = False
        self.tic = 0.0
        self.last_count = 0

    def __call__(self, param):
        count = param.nbatch
        if self.last_count > count:
            self.init = False
        self.last_count = count
        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent:
            return
        elapsed = time.time() - self.tic
        speed = self.frequent * self.batch_size / elapsed if elapsed > 0 else float("inf")
        if param.eval_metric is None:
            _log.info("Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec", param.epoch, count,
                      speed)
        else:
            name_value = param.eval_metric.get_name_value()
            first = count - self.frequent if self.auto_reset else 0
            if self.auto_reset:
                param.eval_metric.reset_local()
            _log.info("Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec" +
                      "\t%s=%f" * len(name_value), param.epoch, first, count, speed,
                      *(x for pair in name_value for x in pair))
        self.tic = time.time()


class ProgressBar:
    """A batch-end callback logging ``[====----] <percent>%`` for ``nbatch`` out of
    ``total`` batches, the bar ``length`` characters long (MXNet's format: the filled part
    is rounded, the percentage rounded up)."""

    def __init__(self, total, length=80):
        self.total = total
        self.bar_len = length

    def __call__(self, param):
        count = param.nbatch
        filled = int(round(self.bar_len * count / float(self.total)))
        percents = math.ceil(100.0 * count / float(self.total))
        _log.info("[%s] %s%s\r", "=" * filled + "-" * (self.bar_len - filled), percents, "%")


class LogValidationMetricsCallback:
    """An eval-end callback logging ``Epoch[e] Validation-<name>=<value>`` for each of the
    metric's values."""

    def __call__(self, param):
        if not param.eval_metric:
            return
        for name, value in param.eval_metric.get_name_value():
            _log.info("Epoch[%d] Validation-%s=%f", param.epoch, name, value)
