"""What a ``dist_async`` worker's copy of a weight holds: a worker script, and the module
the test imports to compute the expectation locally.

The model is one embedding with a dense weight and a row_sparse gradient, trained by lazy
SGD on an L2 loss, so a row's update depends on that row alone; worker ``r`` reads only
rows ``[OWN * r, OWN * (r + 1))``. Under ``dist_async`` each push is applied on arrival and
answers the rows this worker's update changed, so a worker's copy holds its own rows
exactly as the store has them (nobody else changes them here) and every other row as
it was when last received (here: the initial value, stale by design). A full ``pull``
then brings every row.

Worker use: ``python async_trainer.py STEPS OUT_DIR``: worker ``rank`` writes its copy
after training and after a full pull to OUT_DIR/async{rank}.npz."""
import os
import sys

import numpy as np

import nets
from nets import autograd, layers

BATCH, OWN, DIM = 6, 5, 3


def build(workers):
    nets.random.seed(3)
    net = layers.Embedding(OWN * workers, DIM, sparse_grad=True, prefix="embed_")
    net.initialize(nets.init.Uniform(0.5))
    return net


def batch(rank, step):
    rng = np.random.RandomState(100 * rank + step)
    ids = rng.randint(OWN * rank, OWN * (rank + 1), size=BATCH)
    return nets.nd.array(ids, dtype="int64"), nets.nd.array(rng.rand(BATCH, DIM))


def train(net, trainer, rank, steps):
    for step in range(steps):
        ids, y = batch(rank, step)
        with autograd.record():
            loss = nets.loss.L2Loss()(net(ids), y)
        loss.backward()
        trainer.step(BATCH)


def optimizer():
    return nets.optim.SGD(learning_rate=0.5)


if __name__ == "__main__":
    steps, out_dir = int(sys.argv[1]), sys.argv[2]
    kv = nets.kv.create("dist_async")
    rank = kv.rank
    net = build(kv.num_workers)
    trainer = nets.Trainer(net.collect_params(), optimizer(), kvstore=kv)
    train(net, trainer, rank, steps)
    weight = net.weight.data()
    mine = weight.asnumpy()
    kv.barrier()  # every worker's pushes were applied
    kv.pull(0, out=weight)
    np.savez(os.path.join(out_dir, f"async{rank}.npz"), copy=mine, pulled=weight.asnumpy())
    print(f"worker {rank}: trained {steps} steps")
