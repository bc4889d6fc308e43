"""A Gluon sparse program in MXNet 1.x users' style (the MXNet "Sparse NDArrays with
Gluon" tutorial's workflow): random CSR data from ``mx.test_utils``, written to LibSVM row
by row, read back with ``mx.io.LibSVMIter``, and a ``features -> 128 -> 8 -> 1`` network
trained three ways with ``mx.gluon``: ``gluon.nn.Dense`` layers, then ``HybridBlock``s
declaring their parameters with ``self.params.get(..., stype=, grad_stype=)`` inside
``name_scope()`` and calling ``F.FullyConnected`` / ``F.sparse.dot``, with a dense and a
row_sparse weight gradient. It is run renamed (``mx.`` -> ``nets.``, ``rename.py``) by
``test_gluon_sparse_program.py``, and prints one JSON line of what it measured.

Usage: python gluon_sparse.py WORKDIR [NUM_FEATURES]
"""
import json
import os
import sys

import mxnet as mx
import numpy as np


def nbytes(array):
    def size(a):
        return a.size * np.dtype(a.dtype).itemsize

    if isinstance(array, mx.ndarray.sparse.CSRNDArray):
        return size(array.data) + size(array.indices) + size(array.indptr)
    if isinstance(array, mx.ndarray.sparse.RowSparseNDArray):
        return size(array.data) + size(array.indices)
    return size(array)


def write_libsvm(path, data, label):
    with open(path, "w") as f:
        for i in range(data.shape[0]):
            row = data[i]
            pairs = ["{}:{}".format(c, v) for c, v in zip(row.indices.asnumpy().tolist(),
                                                          row.data.asnumpy().tolist())]
            f.write("{} {}\n".format(label[i].asscalar(), " ".join(pairs)))


class FullyConnected(mx.gluon.HybridBlock):
    def __init__(self, in_units, units):
        super(FullyConnected, self).__init__()
        with self.name_scope():
            self._units = units
            self.weight = self.params.get("weight", shape=(units, in_units), init=None,
                                          allow_deferred_init=True, dtype="float32",
                                          stype="default", grad_stype="default")
            self.bias = self.params.get("bias", shape=(units,), init="zeros",
                                        allow_deferred_init=True, dtype="float32",
                                        stype="default", grad_stype="default")

    def hybrid_forward(self, F, x, weight, bias):
        return F.FullyConnected(x, weight, bias, num_hidden=self._units)


class FullyConnectedSparse(mx.gluon.HybridBlock):
    def __init__(self, in_units, units, weight_grad_stype="default"):
        super(FullyConnectedSparse, self).__init__()
        with self.name_scope():
            self._units = units
            self.weight = self.params.get("weight", shape=(in_units, units), init=None,
                                          allow_deferred_init=True, dtype="float32",
                                          stype="default", grad_stype=weight_grad_stype)
            self.bias = self.params.get("bias", shape=(units,), init="zeros",
                                        allow_deferred_init=True, dtype="float32",
                                        stype="default", grad_stype="default")

    def hybrid_forward(self, F, x, weight, bias):
        return F.sparse.dot(x, weight) + bias


def train(net, data_iter, ctx, epochs):
    net.initialize(mx.init.Xavier(), ctx=ctx)
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
    loss_fn = mx.gluon.loss.SigmoidBinaryCrossEntropyLoss()
    losses = []
    for _ in range(epochs):
        data_iter.reset()
        total, count = 0.0, 0
        for batch in data_iter:
            data = batch.data[0].as_in_context(ctx)
            label = batch.label[0].as_in_context(ctx)
            with mx.autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(data.shape[0])
            loss.wait_to_read()
            total += loss.sum().asscalar()
            count += data.shape[0]
        losses.append(total / count)
    grad_bytes = nbytes(net[0].weight.grad())
    return {"losses": losses, "weight_bytes": nbytes(net[0].weight.data()),
            "grad_bytes": grad_bytes, "grad_stype": net[0].weight.grad().stype}


def main():
    workdir = sys.argv[1]
    num_features = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
    mx.random.seed(7)
    num_samples = 1000
    data = mx.test_utils.rand_ndarray((num_samples, num_features), stype="csr",
                                      density=10.0 / num_features)
    label = data.sum(axis=1) > data.sum(axis=1).mean()
    out = {"data_stype": data.stype, "dense_bytes": nbytes(data.tostype("default")),
           "csr_bytes": nbytes(data), "nnz": int(data.data.size)}
    path = os.path.join(workdir, "dataset.libsvm")
    write_libsvm(path, data, label)
    data_iter = mx.io.LibSVMIter(data_libsvm=path, data_shape=(num_features,),
                                 label_shape=(1,), batch_size=50)
    ctx = mx.gpu() if mx.test_utils.list_gpus() else mx.cpu()

    dense = mx.gluon.nn.Sequential()
    dense.add(mx.gluon.nn.Dense(in_units=num_features, units=128),
              mx.gluon.nn.Activation("sigmoid"),
              mx.gluon.nn.Dense(in_units=128, units=8),
              mx.gluon.nn.Activation("sigmoid"),
              mx.gluon.nn.Dense(in_units=8, units=1))
    out["dense"] = train(dense, data_iter, ctx, epochs=3)
    for grad_stype in ("default", "row_sparse"):
        net = mx.gluon.nn.Sequential()
        net.add(FullyConnectedSparse(num_features, 128, weight_grad_stype=grad_stype),
                mx.gluon.nn.Activation("sigmoid"),
                FullyConnected(128, 8),
                mx.gluon.nn.Activation("sigmoid"),
                FullyConnected(8, 1))
        net.hybridize()
        out[grad_stype] = train(net, data_iter, ctx, epochs=3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
