"""``BaseModule``: the training, scoring and prediction loops of MXNet's Module API, written
once over the per-batch methods a module implements (``bind``, ``init_params``,
``init_optimizer``, ``forward``, ``backward``, ``update``, ``get_outputs``...)."""
import logging
import time
from collections import namedtuple

from .. import init as init_mod
from .. import metric as metric_mod
from ..base import NetsError
from ..ops import concat

__all__ = ["BaseModule", "BatchEndParam"]

BatchEndParam = namedtuple("BatchEndParam", ["epoch", "nbatch", "eval_metric", "locals"])
_log = logging.getLogger("nets.module")


def _unpadded(arrays, pad):
    """The arrays without their last ``pad`` rows (the examples that only fill a batch up)."""
    if not pad:
        return list(arrays)
    return [a[:a.shape[0] - pad] for a in arrays]


def _call(callbacks, *args):
    for cb in callbacks if isinstance(callbacks, (list, tuple)) else [callbacks]:
        if cb is not None:
            cb(*args)


class BaseModule:
    """The loops shared by modules: ``fit``, ``score``, ``predict``, ``iter_predict``,
    ``forward_backward``. Padded examples of a last batch (``batch.pad``) are left out of
    scores and predictions."""

    def __init__(self, logger=None):
        self.logger = logger or _log
        self.binded = self.for_training = self.inputs_need_grad = False
        self.params_initialized = self.optimizer_initialized = False

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Get the module ready for ``data_batch``: a module whose row_sparse weights live
        in a KVStore pulls the rows ``sparse_row_id_fn(data_batch)`` names (``Module``);
        a module holding every row has nothing to do."""

    def forward_backward(self, data_batch):
        """``forward(data_batch, is_train=True)`` then ``backward()``."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def iter_predict(self, eval_data, num_batch=None, reset=True, sparse_row_id_fn=None):
        """Yield ``(outputs, nbatch, batch)`` for each batch (padding removed)."""
        if reset:
            eval_data.reset()
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(batch, sparse_row_id_fn)
            self.forward(batch, is_train=False)
            yield _unpadded(self.get_outputs(), batch.pad), nbatch, batch

    def predict(self, eval_data, num_batch=None, merge_batches=True, reset=True,
                always_output_list=False, sparse_row_id_fn=None):
        """The outputs over ``eval_data``: one array per output, the batches concatenated
        (a list per batch with ``merge_batches=False``)."""
        batches = [[o.copy() for o in outs] for outs, _, _ in
                   self.iter_predict(eval_data, num_batch, reset, sparse_row_id_fn)]
        if not merge_batches:
            return batches
        if not batches:
            return []
        merged = [b[0] if len(b) == 1 else concat(*b, dim=0) for b in zip(*batches)]
        return merged if always_output_list or len(merged) > 1 else merged[0]

    def score(self, eval_data, eval_metric, num_batch=None, batch_end_callback=None,
              score_end_callback=None, reset=True, epoch=0, sparse_row_id_fn=None):
        """``eval_metric`` (a metric or its name) over ``eval_data``: its
        ``get_name_value()``."""
        if not (self.binded and self.params_initialized):
            raise NetsError("score() needs a bound module with initialized parameters")
        eval_metric = metric_mod.create(eval_metric)
        eval_metric.reset()
        nbatch = 0
        for outs, nbatch, batch in self.iter_predict(eval_data, num_batch, reset,
                                                     sparse_row_id_fn):
            eval_metric.update(_unpadded(batch.label, batch.pad), outs)
            _call(batch_end_callback, BatchEndParam(epoch, nbatch, eval_metric, locals()))
        _call(score_end_callback, BatchEndParam(epoch, nbatch, eval_metric, locals()))
        return eval_metric.get_name_value()

    def fit(self, train_data, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", optimizer="sgd",
            optimizer_params=(("learning_rate", 0.01),), eval_end_callback=None,
            eval_batch_end_callback=None, initializer=None, arg_params=None,
            aux_params=None, allow_missing=False, force_rebind=False, force_init=False,
            begin_epoch=0, num_epoch=None, validation_metric=None, monitor=None,
            sparse_row_id_fn=None, progress_bar=True):
        """Train for epochs ``begin_epoch .. num_epoch - 1``: bind to ``train_data``'s
        shapes, initialize parameters (``initializer``, default ``Uniform(0.01)``, or
        ``arg_params``) and the optimizer, then per batch ``prepare``, ``forward_backward``,
        ``update`` and ``update_metric`` (``kvstore`` as ``init_optimizer`` takes it; with
        a store, ``sparse_row_id_fn`` tells ``prepare`` each batch's rows). A tqdm bar shows
        each epoch's progress and metric
        (``progress_bar=False`` hides it); each epoch's training metric, time and
        validation score (on ``eval_data`` with ``validation_metric``) are logged to the
        ``nets.module`` logger. ``epoch_end_callback(epoch, symbol, arg_params,
        aux_params)`` and ``batch_end_callback(BatchEndParam)`` are called as in MXNet."""
        from tqdm import tqdm
        if num_epoch is None:
            raise NetsError("fit: num_epoch is required")
        if monitor is not None:
            raise NetsError("fit: monitors are not supported by nets")
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        self.init_params(initializer=initializer or init_mod.Uniform(0.01),
                         arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                            optimizer_params=optimizer_params)
        validation_metric = validation_metric or eval_metric
        eval_metric = metric_mod.create(eval_metric)
        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            train_data.reset()
            bar = tqdm(train_data, desc=f"Epoch {epoch}", unit="batch", leave=False,
                       disable=not progress_bar)
            for nbatch, batch in enumerate(bar):
                self.prepare(batch, sparse_row_id_fn)
                self.forward_backward(batch)
                self.update()
                self.update_metric(eval_metric, batch.label)
                if progress_bar and nbatch % 20 == 0:
                    bar.set_postfix(dict(eval_metric.get_name_value()), refresh=False)
                _call(batch_end_callback, BatchEndParam(epoch, nbatch, eval_metric, locals()))
            bar.close()
            for name, value in eval_metric.get_name_value():
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, value)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            if epoch_end_callback is not None:
                _call(epoch_end_callback, epoch, self.symbol, *self.get_params())
            if eval_data is not None:
                for name, value in self.score(eval_data, validation_metric,
                                              score_end_callback=eval_end_callback,
                                              batch_end_callback=eval_batch_end_callback,
                                              epoch=epoch, sparse_row_id_fn=sparse_row_id_fn):
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, value)
