"""A worker of the bytes-per-step test: ``python bytes_per_step.py OUT_DIR``.

A small model - a row_sparse embedding of ``ROWS`` x ``DIM`` (its weight and gradient
row_sparse) read by a dense layer, lazy Adam - trained with ``Trainer(kvstore=...)`` in
MXNet's sparse order: each batch's rows are asked for (``row_sparse_data``) before its
forward, then ``trainer.step``. Every worker draws ``BATCH`` distinct ids of its own per
step, so the workers' rows barely overlap. After ``WARMUP`` steps (the store's
initialization among them) the store's counters are reset; after ``STEPS`` more steps the
worker writes ``kv.stats()`` and the distinct ids of its steps to
``OUT_DIR/stats{rank}.json``.
"""
import json
import os
import sys

import numpy as np

import nets
from nets import autograd, layers

ROWS, DIM, BATCH, WARMUP, STEPS = 20_000, 16, 64, 2, 3


class Net(nets.layers.HybridBlock):
    def __init__(self):
        super().__init__()
        self.embed = layers.SparseEmbedding(ROWS, DIM, prefix="embed_")
        self.out = layers.Dense(1, in_units=DIM, prefix="out_")

    def hybrid_forward(self, F, ids):
        return self.out(self.embed(ids))


def batch(rank, step):
    rng = np.random.default_rng([rank, step])
    ids = rng.choice(ROWS, BATCH, replace=False)
    return nets.nd.array(ids, dtype="int64"), nets.nd.array(rng.random((BATCH, 1)))


def main():
    out_dir = sys.argv[1]
    kv = nets.kv.create("dist_sync")
    nets.random.seed(0)
    net = Net()
    net.initialize(nets.init.Uniform(0.1))
    trainer = nets.Trainer(net.collect_params(), nets.optim.Adam(learning_rate=0.01),
                           kvstore=kv)
    for step in range(WARMUP + STEPS):
        if step == WARMUP:
            kv.reset_stats()
        ids, y = batch(kv.rank, step)
        net.embed.weight.row_sparse_data(ids)  # this batch's rows, and only those
        with autograd.record():
            loss = nets.loss.L2Loss()(net(ids), y)
        loss.backward()
        trainer.step(BATCH)
    stats = kv.stats()
    with open(os.path.join(out_dir, f"stats{kv.rank}.json"), "w") as f:
        json.dump({"stats": stats, "steps": STEPS, "rows": BATCH, "dim": DIM}, f)
    print(f"worker {kv.rank}: {json.dumps(stats)}")


if __name__ == "__main__":
    main()
