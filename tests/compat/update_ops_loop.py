"""A hand-written training loop in MXNet 1.x users' style: no Trainer, the fused update
operators called directly (``mx.nd.sparse.sgd_mom_update``, ``mx.nd.sparse.adam_update``,
``mx.nd.sparse.adagrad_update``) with ``out=weight`` and ``lazy_update=True``, the states
kept by the program, on a linear model over CSR data whose weight gradient is row_sparse
(``F.sparse.dot``). It is run renamed (``mx.`` -> ``nets.``, ``rename.py``) by
``test_update_ops_program.py``, which trains the same model with ``gluon.Trainer`` and the
same optimizers and compares the final weights.

Writes WORKDIR/data.npz (the data and the initial weight) and WORKDIR/<optimizer>.npy (the
final weight of each loop), then prints one JSON line.

Usage: python update_ops_loop.py WORKDIR
"""
import json
import math
import os
import sys

import mxnet as mx
import numpy as np
from mxnet import autograd

NUM_SAMPLES, NUM_FEATURES, BATCH_SIZE, EPOCHS = 64, 40, 8, 3


def make_data():
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (NUM_SAMPLES, NUM_FEATURES)).astype("float32")
    x[rng.uniform(size=x.shape) > 0.1] = 0  # about 4 features a sample
    x[:, -10:] = 0  # features no sample has: their weight rows get no gradient row
    y = rng.uniform(-1, 1, (NUM_SAMPLES, 1)).astype("float32")
    w0 = rng.normal(0, 0.1, (NUM_FEATURES, 1)).astype("float32")
    return x, y, w0


def batches(x, y):
    for start in range(0, NUM_SAMPLES, BATCH_SIZE):
        data = mx.nd.array(x[start:start + BATCH_SIZE]).tostype("csr")
        yield data, mx.nd.array(y[start:start + BATCH_SIZE])


def train(name, x, y, w0):
    weight = mx.nd.array(w0)
    weight.attach_grad(stype="row_sparse")
    loss_fn = mx.gluon.loss.L2Loss()
    rescale = 1.0 / BATCH_SIZE
    if name == "sgd":
        mom = mx.nd.zeros(weight.shape)
    elif name == "adam":
        mean, var = mx.nd.zeros(weight.shape), mx.nd.zeros(weight.shape)
        beta1, beta2 = 0.9, 0.999
    else:
        history = mx.nd.zeros(weight.shape)
    t = 0
    for _ in range(EPOCHS):
        for data, label in batches(x, y):
            with autograd.record():
                loss = loss_fn(mx.nd.sparse.dot(data, weight), label)
            loss.backward()
            grad = weight.grad
            assert grad.stype == "row_sparse"
            t += 1
            if name == "sgd":
                mx.nd.sparse.sgd_mom_update(weight, grad, mom, out=weight, lr=0.1,
                                            momentum=0.9, wd=0.001, rescale_grad=rescale,
                                            clip_gradient=5.0, lazy_update=True)
            elif name == "adam":
                coef1, coef2 = 1. - beta1 ** t, 1. - beta2 ** t
                lr = 0.05 * (math.sqrt(coef2) / coef1)
                mx.nd.sparse.adam_update(weight, grad, mean, var, out=weight, lr=lr,
                                         beta1=beta1, beta2=beta2, epsilon=1e-8, wd=0.001,
                                         rescale_grad=rescale, lazy_update=True)
            else:
                mx.nd.sparse.adagrad_update(weight, grad, history, out=weight, lr=0.1,
                                            epsilon=1e-7, rescale_grad=rescale)
    return weight.asnumpy()


def main():
    workdir = sys.argv[1]
    x, y, w0 = make_data()
    np.savez(os.path.join(workdir, "data.npz"), x=x, y=y, w0=w0)
    untouched = {}
    for name in ("sgd", "adam", "adagrad"):
        final = train(name, x, y, w0)
        np.save(os.path.join(workdir, name + ".npy"), final)
        untouched[name] = int(np.sum(np.all(final == w0, axis=1)))
    idle = int(np.sum(np.all(x == 0, axis=0)))  # features no sample has
    print(json.dumps({"untouched_rows": untouched, "idle_features": idle}))


if __name__ == "__main__":
    main()
