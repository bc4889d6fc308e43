"""``BaseModule``: the training, scoring and prediction loops of MXNet's Module API, written
once over the per-batch methods a module implements (``bind``, ``init_params``,
``init_optimizer``, ``forward``, ``backward``, ``update``, ``get_outputs``...)."""
from __future__ import annotations

import logging
import time
from collections import namedtuple
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from .. import init as init_mod
from .. import metric as metric_mod
from ..base import NetsError
from ..ops import concat

if TYPE_CHECKING:
    from ..arrays import NDArray
    from ..batch import DataBatch
    from ..init import Initializer
    from ..kv import KVStore
    from ..metric import EvalMetric
    from ..optim import Optimizer

    #: what the loops iterate: a ``nets.data.DataIter`` (``reset()``, ``provide_data``,
    #: ``provide_label`` and ``DataBatch``es)
    DataIter = Iterable[DataBatch]
    RowIdFn = Callable[[DataBatch], dict[str, NDArray]]

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
    scores and predictions.

    Parameters
    ----------
    logger : logging.Logger, optional
        Where ``fit`` logs each epoch's metrics; default the ``nets.module`` logger.
    """

    def __init__(self, logger: logging.Logger | None = None):
        self.logger = logger or _log
        self.binded = self.for_training = self.inputs_need_grad = False
        self.params_initialized = self.optimizer_initialized = False

    def prepare(self, data_batch: DataBatch,
                sparse_row_id_fn: RowIdFn | None = None) -> None:
        """Get the module ready for ``data_batch``: a module whose row_sparse weights live
        in a KVStore pulls the rows ``sparse_row_id_fn(data_batch)`` names (``Module``);
        a module holding every row has nothing to do.

        Parameters
        ----------
        data_batch : DataBatch
            The next batch.
        sparse_row_id_fn : callable, optional
            ``sparse_row_id_fn(batch)`` -> ``{parameter name: row ids}``: the rows of
            row_sparse weights each batch needs (pulled from a KVStore by ``prepare``).
        """

    def forward_backward(self, data_batch: DataBatch) -> None:
        """``forward(data_batch, is_train=True)`` then ``backward()``.

        Parameters
        ----------
        data_batch : DataBatch
            The batch.
        """
        self.forward(data_batch, is_train=True)
        self.backward()

    def iter_predict(self, eval_data: DataIter, num_batch: int | None = None,
                     reset: bool = True, sparse_row_id_fn: RowIdFn | None = None,
                     ) -> Iterator[tuple[list[NDArray], int, DataBatch]]:
        """Run the module on each batch of ``eval_data``.

        Parameters
        ----------
        eval_data : DataIter
            The batches.
        num_batch : int, optional
            Stop after this many batches; default all.
        reset : bool, default True
            ``eval_data.reset()`` first.
        sparse_row_id_fn : callable, optional
            ``sparse_row_id_fn(batch)`` -> ``{parameter name: row ids}``: the rows of
            row_sparse weights each batch needs (pulled from a KVStore by ``prepare``).

        Yields
        ------
        tuple
            ``(outputs, nbatch, batch)``: the outputs without the batch's padding, the
            batch's number and the batch.
        """
        if reset:
            eval_data.reset()
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(batch, sparse_row_id_fn)
            self.forward(batch, is_train=False)
            yield _unpadded(self.get_outputs(), batch.pad), nbatch, batch

    def predict(self, eval_data: DataIter, num_batch: int | None = None,
                merge_batches: bool = True, reset: bool = True,
                always_output_list: bool = False,
                sparse_row_id_fn: RowIdFn | None = None) -> NDArray | list:
        """The outputs over ``eval_data`` (padding removed).

        Parameters
        ----------
        eval_data : DataIter
            The batches.
        num_batch : int, optional
            Stop after this many batches; default all.
        merge_batches : bool, default True
            Concatenate the batches' outputs; False gives a list per batch.
        reset : bool, default True
            ``eval_data.reset()`` first.
        always_output_list : bool, default False
            Return a list even for a single output.
        sparse_row_id_fn : callable, optional
            ``sparse_row_id_fn(batch)`` -> ``{parameter name: row ids}``: the rows of
            row_sparse weights each batch needs (pulled from a KVStore by ``prepare``).

        Returns
        -------
        NDArray or list
            One array per output, the batches concatenated (a single array for a single
            output unless ``always_output_list``), or with ``merge_batches=False`` a list
            per batch of the outputs.
        """
        batches = [[o.copy() for o in outs] for outs, _, _ in
                   self.iter_predict(eval_data, num_batch, reset, sparse_row_id_fn)]
        if not merge_batches:
            return batches
        if not batches:
            return []
        merged = [b[0] if len(b) == 1 else concat(*b, dim=0) for b in zip(*batches)]
        return merged if always_output_list or len(merged) > 1 else merged[0]

    def score(self, eval_data: DataIter, eval_metric: EvalMetric | str,
              num_batch: int | None = None,
              batch_end_callback: Callable | list[Callable] | None = None,
              score_end_callback: Callable | list[Callable] | None = None,
              reset: bool = True, epoch: int = 0,
              sparse_row_id_fn: RowIdFn | None = None) -> list[tuple[str, float]]:
        """A metric over ``eval_data`` (padding left out).

        Parameters
        ----------
        eval_data : DataIter
            The batches.
        eval_metric : EvalMetric or str
            The metric or its name (``'acc'``, ``'mse'``, ...).
        num_batch : int, optional
            Stop after this many batches; default all.
        batch_end_callback : callable or list of callable, optional
            Called with a ``BatchEndParam`` after each batch.
        score_end_callback : callable or list of callable, optional
            Called with a ``BatchEndParam`` at the end.
        reset : bool, default True
            ``eval_data.reset()`` first.
        epoch : int, default 0
            The epoch number the callbacks are given.
        sparse_row_id_fn : callable, optional
            ``sparse_row_id_fn(batch)`` -> ``{parameter name: row ids}``: the rows of
            row_sparse weights each batch needs (pulled from a KVStore by ``prepare``).

        Returns
        -------
        list of (str, float)
            The metric's ``get_name_value()``.
        """
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

    def fit(self, train_data: DataIter, eval_data: DataIter | None = None,
            eval_metric: EvalMetric | str = "acc",
            epoch_end_callback: Callable | list[Callable] | None = None,
            batch_end_callback: Callable | list[Callable] | None = None,
            kvstore: str | KVStore | None = "local", optimizer: str | Optimizer = "sgd",
            optimizer_params: Any = (("learning_rate", 0.01),),
            eval_end_callback: Callable | list[Callable] | None = None,
            eval_batch_end_callback: Callable | list[Callable] | None = None,
            initializer: Initializer | str | None = None,
            arg_params: dict[str, NDArray] | None = None,
            aux_params: dict[str, NDArray] | None = None, allow_missing: bool = False,
            force_rebind: bool = False, force_init: bool = False, begin_epoch: int = 0,
            num_epoch: int | None = None, validation_metric: EvalMetric | str | None = None,
            monitor: Any = None, sparse_row_id_fn: RowIdFn | None = None,
            progress_bar: bool = True) -> None:
        """Train for epochs ``begin_epoch .. num_epoch - 1``: bind to ``train_data``'s
        shapes, initialize parameters (``initializer``, default ``Uniform(0.01)``, or
        ``arg_params``) and the optimizer, then per batch ``prepare``, ``forward_backward``,
        ``update`` and ``update_metric`` (``kvstore`` as ``init_optimizer`` takes it; with
        a store, ``sparse_row_id_fn`` tells ``prepare`` each batch's rows). A tqdm bar shows
        each epoch's progress and metric
        (``progress_bar=False`` hides it); each epoch's training metric, time and
        validation score (on ``eval_data`` with ``validation_metric``) are logged to the
        ``nets.module`` logger. ``epoch_end_callback(epoch, symbol, arg_params,
        aux_params)`` and ``batch_end_callback(BatchEndParam)`` are called as in MXNet.

        Parameters
        ----------
        train_data : DataIter
            The training batches (its ``provide_data``/``provide_label`` bind the module).
        eval_data : DataIter, optional
            Validation batches, scored after each epoch.
        eval_metric : EvalMetric or str, default 'acc'
            The training metric.
        epoch_end_callback : callable or list of callable, optional
            ``f(epoch, symbol, arg_params, aux_params)`` after each epoch (e.g.
            ``nets.callback.do_checkpoint``).
        batch_end_callback : callable or list of callable, optional
            ``f(BatchEndParam)`` after each batch (e.g. ``nets.callback.Speedometer``).
        kvstore : str or KVStore, default 'local'
            As ``init_optimizer`` takes it.
        optimizer : str or Optimizer, default 'sgd'
            The optimizer or its name.
        optimizer_params : dict or sequence of pairs, default (('learning_rate', 0.01),)
            The optimizer's arguments when ``optimizer`` is a name.
        eval_end_callback : callable or list of callable, optional
            ``f(BatchEndParam)`` after each validation.
        eval_batch_end_callback : callable or list of callable, optional
            ``f(BatchEndParam)`` after each validation batch.
        initializer : Initializer or str, optional
            The parameters' initializer; default ``Uniform(0.01)``.
        arg_params : dict of str to NDArray, optional
            Initial parameter values (instead of ``initializer``).
        aux_params : dict of str to NDArray, optional
            Initial auxiliary states.
        allow_missing : bool, default False
            Initialize parameters ``arg_params`` lacks with ``initializer``.
        force_rebind : bool, default False
            Rebind a bound module.
        force_init : bool, default False
            Re-initialize initialized parameters.
        begin_epoch : int, default 0
            The first epoch's number.
        num_epoch : int
            The end of the epochs (excluded); required.
        validation_metric : EvalMetric or str, optional
            The metric on ``eval_data``; default ``eval_metric``.
        monitor : None
            Not supported (a value raises ``NetsError``).
        sparse_row_id_fn : callable, optional
            ``sparse_row_id_fn(batch)`` -> ``{parameter name: row ids}``: the rows of
            row_sparse weights each batch needs (pulled from a KVStore by ``prepare``).
        progress_bar : bool, default True
            Show a tqdm bar per epoch.
        """
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
