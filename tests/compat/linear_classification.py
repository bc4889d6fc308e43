"""Sparse linear classification in MXNet 1.x style (Module + CustomOp + LibSVMIter).

Uses MXNet's API the way MXNet's ``example/sparse/linear_classification`` does: a
symbolic model over a CSR ``data`` variable and a row-sparse ``weight``, a Python
``CustomOp`` loss (softmax cross-entropy whose gradient up-weights positives) wrapped
in ``MakeLoss``, ``mx.mod.Module`` driven batch by batch with ``prepare`` /
``forward_backward`` / ``update`` / ``update_metric``, a ``Speedometer`` fed
``BatchEndParam``, the ``nll_loss`` metric, ``score`` on a held-out LibSVM file and
``save_checkpoint`` every epoch. Written for this project; runs unchanged under
MXNet 1.9.1 and, renamed by ``rename.py``, under nets.

The last line printed is ``RESULT {json}`` with the final eval metric and the median
training time per epoch.
"""
import argparse
import json
import logging
import os
import time

import mxnet as mx
import numpy as np

parser = argparse.ArgumentParser(description="sparse linear classification",
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
parser.add_argument('--data-train', type=str, required=True, help='LibSVM training file')
parser.add_argument('--data-test', type=str, required=True, help='LibSVM test file')
parser.add_argument('--num-features', type=int, default=5001,
                    help='feature dimension (largest 1-based id + 1)')
parser.add_argument('--num-epoch', type=int, default=5, help='number of epochs to train')
parser.add_argument('--batch-size', type=int, default=512, help='examples per batch')
parser.add_argument('--kvstore', type=str, default=None, help='what kvstore to use',
                    choices=["dist_sync", "dist_async", "local"])
parser.add_argument('--optimizer', type=str, default='sgd', help='what optimizer to use',
                    choices=["adagrad", "sgd", "adam"])
parser.add_argument('--lr', type=float, default=2.0, help='learning rate')
parser.add_argument('--seed', type=int, default=1, help='random seed for initialization')
parser.add_argument('--checkpoint', type=str, default='checkpoint/linear',
                    help='checkpoint prefix')


class WeightedSoftmaxCE(mx.operator.CustomOp):
    """Softmax forward; backward is (p - onehot(y)) scaled by (1 + y*w) / w per row."""

    def __init__(self, positive_cls_weight):
        super(WeightedSoftmaxCE, self).__init__()
        self.positive_cls_weight = float(positive_cls_weight)

    def forward(self, is_train, req, in_data, out_data, aux):
        prob = mx.nd.softmax(in_data[0], axis=1)
        self.assign(out_data[0], req[0], prob)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        label = in_data[1]
        prob = out_data[0]
        w = self.positive_cls_weight
        scale = ((1 + label * w) / w).reshape((prob.shape[0], 1))
        grad = (prob - mx.nd.one_hot(label, 2)) * scale
        self.assign(in_grad[0], req[0], grad)


@mx.operator.register("compat_weighted_softmax_ce")
class WeightedSoftmaxCEProp(mx.operator.CustomOpProp):
    """Declares the loss's arguments, shapes and operator for ``mx.sym.Custom``."""

    def __init__(self, positive_cls_weight):
        super(WeightedSoftmaxCEProp, self).__init__(need_top_grad=False)
        self.positive_cls_weight = positive_cls_weight

    def list_arguments(self):
        return ['data', 'label']

    def list_outputs(self):
        return ['output']

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return WeightedSoftmaxCE(self.positive_cls_weight)


def build_model(num_features, positive_cls_weight):
    """CSR data . row-sparse weight + bias, through the weighted loss."""
    data = mx.symbol.Variable("data", stype='csr')
    weight = mx.symbol.Variable("weight", shape=(num_features, 2), stype='row_sparse',
                                init=mx.initializer.Normal(sigma=0.01))
    bias = mx.symbol.Variable("bias", shape=(2,))
    logits = mx.symbol.broadcast_add(mx.symbol.sparse.dot(data, weight), bias)
    label = mx.symbol.Variable("softmax_label")
    out = mx.sym.Custom(logits, label, op_type='compat_weighted_softmax_ce',
                        positive_cls_weight=positive_cls_weight, name='out')
    return mx.sym.MakeLoss(out)


def main():
    logging.basicConfig(level=logging.INFO, format='%(asctime)-15s %(message)s')
    args = parser.parse_args()
    logging.info(args)
    mx.random.seed(args.seed)
    np.random.seed(args.seed)

    kv = mx.kvstore.create(args.kvstore) if args.kvstore else None
    rank = kv.rank if kv else 0
    num_worker = kv.num_workers if kv else 1
    num_features = args.num_features
    batch_size = args.batch_size

    train_data = mx.io.LibSVMIter(data_libsvm=args.data_train, data_shape=(num_features,),
                                  batch_size=batch_size, num_parts=num_worker,
                                  part_index=rank)
    eval_data = mx.io.LibSVMIter(data_libsvm=args.data_test, data_shape=(num_features,),
                                 batch_size=batch_size)

    def batch_row_ids(data_batch):
        return {'weight': data_batch.data[0].indices}

    def all_row_ids(data_batch):
        return {'weight': mx.nd.arange(0, num_features, dtype='int64')}

    model = build_model(num_features, positive_cls_weight=2)
    mod = mx.mod.Module(symbol=model, data_names=['data'], label_names=['softmax_label'])
    mod.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label)
    mod.init_params()
    optim = mx.optimizer.create(args.optimizer, learning_rate=args.lr,
                                rescale_grad=1.0 / batch_size / num_worker)
    mod.init_optimizer(optimizer=optim, kvstore=kv)
    metric = mx.metric.create(['nll_loss'])
    speedometer = mx.callback.Speedometer(batch_size, 20)

    os.makedirs(os.path.dirname(args.checkpoint) or '.', exist_ok=True)
    epoch_times = []
    score = None
    for epoch in range(args.num_epoch):
        tic = time.time()
        nbatch = 0
        metric.reset()
        for batch in train_data:
            nbatch += 1
            mod.prepare(batch, sparse_row_id_fn=batch_row_ids)
            mod.forward_backward(batch)
            mod.update()
            mod.update_metric(metric, batch.label)
            speedometer(mx.model.BatchEndParam(epoch=epoch, nbatch=nbatch,
                                               eval_metric=metric, locals=locals()))
        epoch_times.append(time.time() - tic)
        logging.info('epoch %d, train %s', epoch, metric.get())
        mod.prepare(None, all_row_ids)
        score = mod.score(eval_data, ['nll_loss'])
        logging.info('epoch %d, eval nll = %s', epoch, score[0][1])
        mod.prepare(None, all_row_ids)
        mod.save_checkpoint(args.checkpoint, epoch)
        train_data.reset()
        eval_data.reset()
    print('RESULT ' + json.dumps({'program': 'linear_classification', 'metric': score[0][0],
                                  'value': float(score[0][1]),
                                  'epoch_time_s': float(np.median(epoch_times))}))


if __name__ == '__main__':
    main()
