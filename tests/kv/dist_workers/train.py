"""A small model trained with ``Trainer(kvstore=...)``: a worker script of the distributed
exactness tests, and the module those tests import to train the same model locally.

Worker use: ``python train.py STORE STEPS OUT_DIR [SAVE_STATES]`` trains for STEPS steps
on this worker's batches and each worker writes its copy of the parameters to
OUT_DIR/params{rank}.npz (and, with SAVE_STATES, the Trainer's states to
OUT_DIR/states{rank}.npz). With ``TRAIN_ASKS_ROWS=1`` in the environment the row_sparse
embedding asks for each batch's rows before its forward (``row_sparse_data``), so that it
holds, and its steps receive, only those rows."""
import os
import sys

import numpy as np

import nets
from nets import autograd, layers

BATCH, ROWS, DIM = 8, 40, 4


class Net(nets.layers.HybridBlock):
    """A row_sparse embedding (row_sparse weight), a dense-weight embedding with a
    row_sparse gradient and a dense output layer: every kind of weight a store updates."""

    def __init__(self):
        super().__init__()
        # (fixed prefixes: the same parameter names in every process, as a states file needs)
        self.sparse = layers.SparseEmbedding(ROWS, DIM, prefix="sparse_")
        self.embed = layers.Embedding(ROWS, DIM, sparse_grad=True, prefix="embed_")
        self.out = layers.Dense(1, in_units=DIM, prefix="out_")

    def hybrid_forward(self, F, ids):
        return self.out(self.sparse(ids) + self.embed(ids))


def build():
    """The model, initialized identically in every process."""
    nets.random.seed(7)
    net = Net()
    net.initialize(nets.init.Uniform(0.5))
    return net


def batch(rank, step):
    """Worker ``rank``'s batch of step ``step``: ids and targets."""
    rng = np.random.RandomState(1000 * rank + step)
    ids = rng.randint(0, ROWS // 2 + 10 * rank, size=BATCH)
    return nets.nd.array(ids, dtype="int64"), nets.nd.array(rng.rand(BATCH, 1))


def gradients(net, ids, y):
    """Backward of the L2 loss on one batch (the gradients land in the parameters)."""
    with autograd.record():
        loss = nets.loss.L2Loss()(net(ids), y)
    loss.backward()


def params(net):
    """The parameters as dense numpy arrays, in order (names carry a per-process count)."""
    return [p.data().asnumpy() for p in net.collect_params().values()]


def optimizer():
    return nets.optim.Adam(learning_rate=0.05)


if __name__ == "__main__":
    store, steps, out_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    kv = nets.kv.create(store)
    rank = kv.rank
    net = build()
    trainer = nets.Trainer(net.collect_params(), optimizer(), kvstore=kv)
    asks = os.environ.get("TRAIN_ASKS_ROWS") == "1"
    for step in range(steps):
        ids, y = batch(rank, step)
        if asks:
            net.sparse.weight.row_sparse_data(ids)
        gradients(net, ids, y)
        trainer.step(BATCH)
    if len(sys.argv) > 4:
        trainer.save_states(os.path.join(out_dir, f"states{rank}.npz"))
    # a row_sparse weight holds the rows last pulled: read every row from the store (a
    # dense weight, whichever its gradient, is the worker's own copy, every row)
    for p in net.collect_params().values():
        if p.stype == "row_sparse":
            p.row_sparse_data(nets.nd.arange(ROWS, dtype="int64"))
    np.savez(os.path.join(out_dir, f"params{rank}.npz"), *params(net))
    print(f"worker {rank}: trained {steps} steps")
