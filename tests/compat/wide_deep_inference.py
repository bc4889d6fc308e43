"""Wide & deep inference from a checkpoint in MXNet 1.x style.

Uses MXNet's API the way MXNet's ``example/sparse/wide_deep/inference.py`` does:
``mx.model.load_checkpoint(prefix, epoch)`` returning ``(symbol, arg_params,
aux_params)``; a fresh ``mx.mod.Module`` bound for inference data shapes and given
the parameters by ``set_params``; ``forward(batch, is_train=False)``; in benchmark
mode ``data_iter.next()`` with ``StopIteration``, ``get_outputs()`` and
``wait_to_read()``; otherwise per-batch ``acc`` (``metric.get()[1][0]`` after
``create(['acc'])``) averaged over the batches. Run ``wide_deep.py`` first to write
the checkpoint. Written for this project; runs unchanged under MXNet 1.9.1 and,
renamed by ``rename.py``, under nets. Last line: ``RESULT {json}``; its
``epoch_time_s`` is the time of one pass over the test data.
"""
import argparse
import json
import logging
import time

import mxnet as mx

from census import load_census

parser = argparse.ArgumentParser(description="sparse wide and deep inference",
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
parser.add_argument('--data-test', type=str, required=True, help='census test CSV')
parser.add_argument('--num-infer-batch', type=int, default=100,
                    help='number of batches to run in benchmark mode')
parser.add_argument('--load-epoch', type=int, default=4,
                    help='the training epoch whose parameters to load')
parser.add_argument('--batch-size', type=int, default=100, help='examples per batch')
parser.add_argument('--benchmark', action='store_true', default=False,
                    help='measure throughput instead of accuracy')
parser.add_argument('--verbose', action='store_true', default=False,
                    help='log the accuracy of every batch')
parser.add_argument('--gpu', action='store_true', default=False, help='run on GPU')
parser.add_argument('--model-prefix', type=str, default='checkpoint',
                    help='checkpoint prefix')


def main():
    logging.basicConfig(level=logging.INFO, format='%(asctime)-15s %(message)s')
    args = parser.parse_args()
    logging.info(args)
    batch_size = args.batch_size
    ctx = mx.gpu(0) if args.gpu else mx.cpu()
    val_csr, val_dns, val_label = load_census(args.data_test)
    sym, arg_params, aux_params = mx.model.load_checkpoint(args.model_prefix,
                                                           args.load_epoch)
    eval_data = mx.io.NDArrayIter({'csr_data': val_csr, 'dns_data': val_dns},
                                  {'softmax_label': val_label}, batch_size,
                                  shuffle=True, last_batch_handle='discard')
    mod = mx.mod.Module(symbol=sym, context=ctx, data_names=['csr_data', 'dns_data'],
                        label_names=['softmax_label'])
    mod.bind(data_shapes=eval_data.provide_data, label_shapes=eval_data.provide_label)
    mod.set_params(arg_params=arg_params, aux_params=aux_params)

    data_iter = iter(eval_data)
    nbatch = 0
    tic = time.time()
    if args.benchmark:
        for _ in range(args.num_infer_batch):
            try:
                batch = data_iter.next()
            except StopIteration:
                data_iter.reset()
            else:
                mod.forward(batch, is_train=False)
                for output in mod.get_outputs():
                    output.wait_to_read()
                nbatch += 1
        elapsed = time.time() - tic
        logging.info('batch size %d, %s samples/s', batch_size,
                     nbatch * batch_size / elapsed)
        result = {'metric': 'samples/s', 'value': nbatch * batch_size / elapsed}
    else:
        metric = mx.metric.create(['acc'])
        accuracy_sum = 0.0
        for batch in data_iter:
            nbatch += 1
            metric.reset()
            mod.forward(batch, is_train=False)
            mod.update_metric(metric, batch.label)
            accuracy_sum += metric.get()[1][0]
            if args.verbose:
                logging.info('batch %d, accuracy = %s', nbatch, metric.get())
        elapsed = time.time() - tic
        logging.info('averaged accuracy on eval set is %.5f', accuracy_sum / nbatch)
        result = {'metric': 'accuracy', 'value': accuracy_sum / nbatch}
    result.update(program='wide_deep_inference', epoch_time_s=elapsed)
    print('RESULT ' + json.dumps(result))


if __name__ == '__main__':
    main()
