"""Matrix factorization with sparse embeddings in MXNet 1.x style.

Uses MXNet's API the way MXNet's ``example/sparse/matrix_factorization`` does: the
MovieLens ``user::item::rating::timestamp`` file parsed into string lists turned into
NDArrays by ``mx.nd.array`` (``dtype='int32'`` for users, the float32 default for
items and scores), an ``mx.io.NDArrayIter`` over dicts (whose batches list the
inputs in sorted-name order) wrapped in ``mx.io.PrefetchingIter``; a symbolic model
of two ``Embedding``s with row-sparse weights and ``sparse_grad=True``, ``relu``,
``FullyConnected`` and ``LinearRegressionOutput``; ``mx.module.Module`` with a
context list, ``init_params(initializer=mx.init.Xavier(...))``, SGD with
``kvstore='device'``, ``prepare`` with row ids built by ``NDArray.astype(np.int64)``,
the ``MSE`` metric. Written for this project; runs unchanged under MXNet 1.9.1 and,
renamed by ``rename.py``, under nets. Last line: ``RESULT {json}``.
"""
import argparse
import json
import logging
import time

import mxnet as mx
import numpy as np

parser = argparse.ArgumentParser(description="matrix factorization with sparse embedding",
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
parser.add_argument('--data-train', type=str, required=True, help='ratings training file')
parser.add_argument('--data-test', type=str, required=True, help='ratings test file')
parser.add_argument('--max-user', type=int, default=500, help='user ids are below this')
parser.add_argument('--max-item', type=int, default=300, help='item ids are below this')
parser.add_argument('--num-epoch', type=int, default=3, help='number of epochs to train')
parser.add_argument('--seed', type=int, default=1, help='random seed')
parser.add_argument('--batch-size', type=int, default=128, help='examples per batch')
parser.add_argument('--lr', type=float, default=0.1, help='learning rate')
parser.add_argument('--log-interval', type=int, default=100, help='logging interval')
parser.add_argument('--factor-size', type=int, default=32, help='embedding size')
parser.add_argument('--dense', action='store_true', help='use dense embedding weights')


def ratings_iter(filename, batch_size):
    """NDArrayIter over a ``user::item::rating::timestamp`` file, prefetched."""
    user, item, score = [], [], []
    with open(filename) as f:
        for line in f:
            fields = line.strip().split('::')
            if len(fields) != 4:
                continue
            user.append(fields[0])
            item.append(fields[1])
            score.append(fields[2])
    user = mx.nd.array(user, dtype='int32')
    item = mx.nd.array(item)
    score = mx.nd.array(score)
    it = mx.io.NDArrayIter(data={'user': user, 'item': item}, label={'score': score},
                           batch_size=batch_size, shuffle=True)
    return mx.io.PrefetchingIter(it)


def mf_net(factor_size, num_hidden, max_user, max_item, dense):
    """Inner product of relu-FC transforms of a user and an item embedding."""
    stype = 'default' if dense else 'row_sparse'
    user_weight = mx.sym.Variable('user_weight', stype=stype)
    item_weight = mx.sym.Variable('item_weight', stype=stype)
    user = mx.sym.Embedding(data=mx.sym.Variable('user'), weight=user_weight,
                            sparse_grad=not dense, input_dim=max_user,
                            output_dim=factor_size)
    item = mx.sym.Embedding(data=mx.sym.Variable('item'), weight=item_weight,
                            sparse_grad=not dense, input_dim=max_item,
                            output_dim=factor_size)
    user = mx.sym.FullyConnected(data=mx.sym.Activation(data=user, act_type='relu'),
                                 num_hidden=num_hidden)
    item = mx.sym.FullyConnected(data=mx.sym.Activation(data=item, act_type='relu'),
                                 num_hidden=num_hidden)
    pred = mx.sym.Flatten(data=mx.sym.sum(data=user * item, axis=1))
    return mx.sym.LinearRegressionOutput(data=pred, label=mx.sym.Variable('score'))


def main():
    logging.basicConfig(level=logging.INFO, format='%(asctime)-15s %(message)s')
    args = parser.parse_args()
    logging.info(args)
    mx.random.seed(args.seed)
    np.random.seed(args.seed)
    batch_size = args.batch_size
    max_user, max_item = args.max_user, args.max_item

    def batch_row_ids(data_batch):
        # NDArrayIter orders dict inputs by name: 'item' comes before 'user'
        item, user = data_batch.data[0], data_batch.data[1]
        return {'user_weight': user.astype(np.int64), 'item_weight': item.astype(np.int64)}

    def all_row_ids(data_batch):
        return {'user_weight': mx.nd.arange(0, max_user, dtype='int64'),
                'item_weight': mx.nd.arange(0, max_item, dtype='int64')}

    train_iter = ratings_iter(args.data_train, batch_size)
    val_iter = ratings_iter(args.data_test, batch_size)
    net = mf_net(args.factor_size, args.factor_size, max_user, max_item, args.dense)
    mod = mx.module.Module(net, context=[mx.cpu()], data_names=['user', 'item'],
                           label_names=['score'])
    mod.bind(data_shapes=train_iter.provide_data, label_shapes=train_iter.provide_label)
    mod.init_params(initializer=mx.init.Xavier(factor_type="in", magnitude=2.34))
    optim = mx.optimizer.create('sgd', learning_rate=args.lr, rescale_grad=1.0 / batch_size)
    mod.init_optimizer(optimizer=optim, kvstore='device')
    metric = mx.metric.create(['MSE'])
    speedometer = mx.callback.Speedometer(batch_size, args.log_interval)

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
        mod.prepare(None, sparse_row_id_fn=all_row_ids)
        score = mod.score(val_iter, ['MSE'])
        logging.info('epoch %d, eval MSE = %s', epoch, score[0][1])
        train_iter.reset()
        val_iter.reset()
    print('RESULT ' + json.dumps({'program': 'matrix_factorization', 'metric': score[0][0],
                                  'value': float(score[0][1]),
                                  'epoch_time_s': float(np.median(epoch_times))}))


if __name__ == '__main__':
    main()
