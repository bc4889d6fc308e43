"""Wide & deep classification on census CSV data in MXNet 1.x style (training).

Uses MXNet's API the way MXNet's ``example/sparse/wide_deep/train.py`` does:
``mx.io.NDArrayIter`` over dicts of a CSR matrix and numpy arrays with
``shuffle=True, last_batch_handle='discard'``; ``mx.mod.Module`` with a context and
data/label names; ``mx.optimizer.create(name, learning_rate=..., rescale_grad=...)``;
``init_optimizer(optimizer=...)`` (no kvstore argument); the ``acc`` metric;
``iter(train_data)`` reused across epochs with ``reset``; ``score``; and
``save_checkpoint(prefix, epoch, save_optimizer_states=True)`` every epoch, which
``wide_deep_inference.py`` loads. The model and features are in ``census.py``.
Written for this project; runs unchanged under MXNet 1.9.1 and, renamed by
``rename.py``, under nets. Last line: ``RESULT {json}``.
"""
import argparse
import json
import logging
import time

import mxnet as mx
import numpy as np

from census import ADULT, load_census, wide_deep_model

parser = argparse.ArgumentParser(description="sparse wide and deep classification",
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
parser.add_argument('--data-train', type=str, required=True, help='census training CSV')
parser.add_argument('--data-test', type=str, required=True, help='census test CSV')
parser.add_argument('--num-epoch', type=int, default=5, help='number of epochs to train')
parser.add_argument('--batch-size', type=int, default=100, help='examples per batch')
parser.add_argument('--lr', type=float, default=0.001, help='learning rate')
parser.add_argument('--gpu', action='store_true', default=False, help='train on GPU')
parser.add_argument('--optimizer', type=str, default='adam', help='what optimizer to use',
                    choices=["ftrl", "sgd", "adam"])
parser.add_argument('--log-interval', type=int, default=50, help='batches between logs')
parser.add_argument('--model-prefix', type=str, default='checkpoint',
                    help='checkpoint prefix')
parser.add_argument('--seed', type=int, default=1, help='random seed')


def main():
    logging.basicConfig(level=logging.INFO, format='%(asctime)-15s %(message)s')
    args = parser.parse_args()
    logging.info(args)
    mx.random.seed(args.seed)
    np.random.seed(args.seed)
    batch_size = args.batch_size
    ctx = mx.gpu(0) if args.gpu else mx.cpu()

    train_csr, train_dns, train_label = load_census(args.data_train)
    val_csr, val_dns, val_label = load_census(args.data_test)
    model = wide_deep_model(ADULT['num_linear_features'], ADULT['num_embed_features'],
                            ADULT['num_cont_features'], ADULT['embed_input_dims'],
                            ADULT['hidden_units'])
    train_data = mx.io.NDArrayIter({'csr_data': train_csr, 'dns_data': train_dns},
                                   {'softmax_label': train_label}, batch_size,
                                   shuffle=True, last_batch_handle='discard')
    eval_data = mx.io.NDArrayIter({'csr_data': val_csr, 'dns_data': val_dns},
                                  {'softmax_label': val_label}, batch_size,
                                  shuffle=True, last_batch_handle='discard')

    mod = mx.mod.Module(symbol=model, context=ctx, data_names=['csr_data', 'dns_data'],
                        label_names=['softmax_label'])
    mod.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label)
    mod.init_params()
    optim = mx.optimizer.create(args.optimizer, learning_rate=args.lr,
                                rescale_grad=1.0 / batch_size)
    mod.init_optimizer(optimizer=optim)
    metric = mx.metric.create(['acc'])
    speedometer = mx.callback.Speedometer(batch_size, args.log_interval)

    data_iter = iter(train_data)
    epoch_times = []
    score = None
    for epoch in range(args.num_epoch):
        tic = time.time()
        nbatch = 0
        metric.reset()
        for batch in data_iter:
            nbatch += 1
            mod.forward_backward(batch)
            mod.update()
            mod.update_metric(metric, batch.label)
            speedometer(mx.model.BatchEndParam(epoch=epoch, nbatch=nbatch,
                                               eval_metric=metric, locals=locals()))
        epoch_times.append(time.time() - tic)
        score = mod.score(eval_data, ['acc'])
        logging.info('epoch %d, accuracy = %s', epoch, score[0][1])
        mod.save_checkpoint(args.model_prefix, epoch, save_optimizer_states=True)
        data_iter.reset()
    print('RESULT ' + json.dumps({'program': 'wide_deep', 'metric': score[0][0],
                                  'value': float(score[0][1]),
                                  'epoch_time_s': float(np.median(epoch_times))}))


if __name__ == '__main__':
    main()
