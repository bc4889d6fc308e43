"""Factorization machine in MXNet 1.x style (symbolic model over CSR input, row-sparse
parameters with per-variable lr/wd multipliers, Adam, custom registered metrics).

The same model and training step as MXNet 1.9.1's
``example/sparse/factorization_machine``, with its defaults: 10^6 features, 16 latent
factors, batches of 1000, Adam with ``learning_rate`` 1 and ``wd`` 1 scaled by each
variable's multipliers, its weight decays and initial standard deviations. Each step
computes ``_square_sum`` of the factor table ``v``, ``dot`` of the CSR batch with ``w``
and with ``v`` and of the squared batch with the row norms. One difference: the lr
multipliers of ``v`` and ``w`` are 0.01 (the example's: 0.0001 and 0.001), so that the
60 steps of three epochs on the compat data set move the model off its initial
prediction (with the example's, the test log-loss stays above the base rate's); the
work of a step does not depend on them. Uses MXNet's API the way the example does:
``mx.symbol.Variable`` with ``stype``/``init``/``lr_mult``/``wd_mult``,
``mx.symbol._internal._square_sum``, ``square``, ``Concat``,
``LogisticRegressionOutput``; ``mx.mod.Module`` with its default data/label names,
``init_optimizer('adam', kvstore=..., optimizer_params=((name, value), ...))``,
``prepare`` with a ``sparse_row_id_fn``; metrics defined as ``mx.metric.EvalMetric``
subclasses registered under an alias and created by it.

``--kvstore none`` (the default here; the example's is ``local``) trains without a
store: the module updates its own parameters and every step reads the whole factor
table. With ``local`` the store runs the optimizer and ``prepare`` pulls the batch's
rows of ``w`` and ``v`` before each step, so ``_square_sum`` reads those rows only.
The aliases ``log_loss`` and ``auc`` are registered by the program as MXNet's example
does (``auc`` replaces a built-in of the same name where one exists). A batch holding
one class only has no AUC and is skipped (MXNet's example raised and swallowed every
exception of the batch instead). Written for this project; runs unchanged under MXNet
1.9.1 and, renamed by ``rename.py``, under nets. Last line: ``RESULT {json}``.
"""
import argparse
import json
import logging
import time

import mxnet as mx
import numpy as np

parser = argparse.ArgumentParser(description="factorization machine",
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
parser.add_argument('--data-train', type=str, required=True, help='LibSVM training file')
parser.add_argument('--data-test', type=str, required=True, help='LibSVM test file')
parser.add_argument('--num-epoch', type=int, default=3, help='number of epochs to train')
parser.add_argument('--batch-size', type=int, default=1000, help='examples per batch')
parser.add_argument('--input-size', type=int, default=1000000,
                    help='number of features (rows of w and v)')
parser.add_argument('--factor-size', type=int, default=16, help='number of latent factors')
parser.add_argument('--factor-lr', type=float, default=0.01, help='lr multiplier of v')
parser.add_argument('--linear-lr', type=float, default=0.01, help='lr multiplier of w')
parser.add_argument('--bias-lr', type=float, default=0.1, help='lr multiplier of w0')
parser.add_argument('--factor-wd', type=float, default=0.00001, help='wd multiplier of v')
parser.add_argument('--linear-wd', type=float, default=0.001, help='wd multiplier of w')
parser.add_argument('--bias-wd', type=float, default=0.01, help='wd multiplier of w0')
parser.add_argument('--factor-sigma', type=float, default=0.001, help='init std of v')
parser.add_argument('--linear-sigma', type=float, default=0.01, help='init std of w')
parser.add_argument('--bias-sigma', type=float, default=0.01, help='init std of w0')
parser.add_argument('--log-interval', type=int, default=100, help='batches between logs')
parser.add_argument('--kvstore', type=str, default='none',
                    help="what kvstore to use; 'none': no store, the module updates its "
                         "own parameters and every step reads the whole factor table",
                    choices=["dist_async", "local", "none"])
parser.add_argument('--seed', type=int, default=1, help='random seed for initialization')


@mx.metric.register
@mx.metric.alias('log_loss')
class BinaryLogLoss(mx.metric.EvalMetric):
    """Mean negative log-likelihood of 0/1 labels under predicted P(label = 1)."""

    def __init__(self, eps=1e-12, name='log-loss', output_names=None, label_names=None):
        super(BinaryLogLoss, self).__init__(name, eps=eps, output_names=output_names,
                                            label_names=label_names)
        self.eps = eps

    def update(self, labels, preds):
        mx.metric.check_label_shapes(labels, preds)
        for label, pred in zip(labels, preds):
            y = label.asnumpy().ravel()
            p = pred.asnumpy().ravel()
            prob = np.where(y > 0.5, p, 1.0 - p)
            self.sum_metric += float(-np.log(prob + self.eps).sum())
            self.num_inst += y.shape[0]


@mx.metric.register
@mx.metric.alias('auc')
class BatchAUC(mx.metric.EvalMetric):
    """Mean over batches of the ROC AUC (ties count one half); a batch holding one
    class only has no AUC and is left out."""

    def __init__(self, name='auc', output_names=None, label_names=None):
        super(BatchAUC, self).__init__(name, output_names=output_names,
                                       label_names=label_names)

    def update(self, labels, preds):
        mx.metric.check_label_shapes(labels, preds)
        y = labels[0].asnumpy().ravel() > 0.5
        p = preds[0].asnumpy().ravel()
        pos, neg = int(y.sum()), int((~y).sum())
        if pos == 0 or neg == 0:
            return
        # rank of each score among the batch's, tied scores sharing their mean rank
        _, group, counts = np.unique(p, return_inverse=True, return_counts=True)
        ranks = (np.cumsum(counts) - (counts - 1) / 2.0)[group.ravel()]
        self.sum_metric += (ranks[y].sum() - pos * (pos + 1) / 2.0) / (pos * neg)
        self.num_inst += 1


def fm_model(factor_size, num_features, lr_mult, wd_mult, init):
    """sigmoid(w0 + x.w + 0.5 * (sum_k (x.v)_k^2 - (x^2).(sum_k v_k^2)))."""
    x = mx.symbol.Variable("data", stype='csr')
    v = mx.symbol.Variable("v", shape=(num_features, factor_size), stype='row_sparse',
                           init=init['v'], lr_mult=lr_mult['v'], wd_mult=wd_mult['v'])
    w = mx.symbol.Variable('w', shape=(num_features, 1), stype='row_sparse',
                           init=init['w'], lr_mult=lr_mult['w'], wd_mult=wd_mult['w'])
    w0 = mx.symbol.Variable('w0', shape=(1,), init=init['w0'], lr_mult=lr_mult['w0'],
                            wd_mult=wd_mult['w0'])
    linear = mx.symbol.broadcast_add(mx.symbol.dot(x, w), w0)
    v_sq = mx.symbol._internal._square_sum(data=v, axis=1, keepdims=True)
    self_inter = mx.sym.dot(x.square(), v_sq)
    xv = mx.symbol.dot(x, v)
    pair = 0.5 * mx.symbol.square(data=xv)
    both = mx.symbol.Concat(linear, pair, dim=1)
    out = both.sum(axis=1, keepdims=True) + (-0.5) * self_inter
    label = mx.symbol.Variable("softmax_label")
    return mx.symbol.LogisticRegressionOutput(data=out, label=label)


def main():
    logging.basicConfig(level=logging.INFO, format='%(asctime)-15s %(message)s')
    args = parser.parse_args()
    logging.info(args)
    mx.random.seed(args.seed)
    np.random.seed(args.seed)
    num_features = args.input_size
    batch_size = args.batch_size

    def batch_row_ids(data_batch):
        idx = data_batch.data[0].indices
        return {'w': idx, 'v': idx}

    def all_row_ids(data_batch):
        rows = mx.nd.arange(0, num_features, dtype='int64')
        return {'w': rows, 'v': rows}

    kv = None if args.kvstore == 'none' else mx.kvstore.create(args.kvstore)
    train_data = mx.io.LibSVMIter(data_libsvm=args.data_train, data_shape=(num_features,),
                                  batch_size=batch_size)
    eval_data = mx.io.LibSVMIter(data_libsvm=args.data_test, data_shape=(num_features,),
                                 batch_size=batch_size)
    lr_mult = {'v': args.factor_lr, 'w': args.linear_lr, 'w0': args.bias_lr}
    wd_mult = {'v': args.factor_wd, 'w': args.linear_wd, 'w0': args.bias_wd}
    init = {'v': mx.initializer.Normal(args.factor_sigma),
            'w': mx.initializer.Normal(args.linear_sigma),
            'w0': mx.initializer.Normal(args.bias_sigma)}
    model = fm_model(args.factor_size, num_features, lr_mult, wd_mult, init)

    mod = mx.mod.Module(symbol=model)
    mod.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label)
    mod.init_params()
    optimizer_params = (('learning_rate', 1), ('wd', 1), ('beta1', 0.9),
                        ('beta2', 0.999), ('epsilon', 1e-8))
    mod.init_optimizer(optimizer='adam', kvstore=kv, optimizer_params=optimizer_params)
    metric = mx.metric.create(['log_loss', 'auc'])
    speedometer = mx.callback.Speedometer(batch_size, args.log_interval)

    train_iter = iter(train_data)
    eval_iter = iter(eval_data)
    epoch_times = []
    score = None
    for epoch in range(args.num_epoch):
        tic = time.time()
        nbatch = 0
        metric.reset()
        for batch in train_iter:
            nbatch += 1
            mod.prepare(batch, sparse_row_id_fn=batch_row_ids)
            mod.forward_backward(batch)
            mod.update()
            mod.update_metric(metric, batch.label)
            speedometer(mx.model.BatchEndParam(epoch=epoch, nbatch=nbatch,
                                               eval_metric=metric, locals=locals()))
        epoch_times.append(time.time() - tic)
        mod.prepare(None, all_row_ids)
        score = mod.score(eval_iter, ['log_loss'])
        logging.info("epoch %d, eval log loss = %s", epoch, score[0][1])
        train_iter.reset()
        eval_iter.reset()
    print('RESULT ' + json.dumps({'program': 'factorization_machine', 'metric': score[0][0],
                                  'value': float(score[0][1]),
                                  'epoch_time_s': float(np.median(epoch_times))}))


if __name__ == '__main__':
    main()
