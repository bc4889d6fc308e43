"""A worker of the seeded-init test: ``python drawn_init.py OUT_DIR``.

A sparse ``Module`` whose two parameters have ``nets.random.BLOCK_ROWS`` rows or more -
a row_sparse weight (Uniform) and a dense table read by ``dot(csr, table)`` (Xavier, whose
fans are the whole table's) - so that ``init_params`` draws them by row blocks from one
seed each, and a small bias drawn from the global stream. ``init_optimizer`` on
``dist_sync`` then sends the two specs, not the tables: each worker writes its store
counters after it, its parameters as the store holds them right after (``*_init``), and
after a few lazy-Adam steps on its batches, to ``OUT_DIR/drawn{rank}.npz`` and
``OUT_DIR/stats{rank}.json``. The test compares them with the same program run in one
process on the local store.
"""
import json
import os
import sys

import numpy as np

import nets
from csr_batches import batches, bound_module, rows_of
from nets.random import BLOCK_ROWS

FEATURES, BATCH, STEPS = BLOCK_ROWS + 4_464, 6, 4  # two row blocks


def train(kv, out_dir, rank):
    """Build, initialize and train the module on ``kv``; write what the test compares."""
    data = nets.sym.Variable("data", stype="csr")
    weight = nets.sym.Variable("weight", shape=(FEATURES, 1), stype="row_sparse")
    table = nets.sym.Variable("table", shape=(FEATURES, 1), init=nets.init.Xavier())
    bias = nets.sym.Variable("bias", shape=(1,))
    out = nets.sym.broadcast_add(nets.sym.sparse.dot(data, weight)
                                 + nets.sym.sparse.dot(data, table), bias)
    mod = bound_module(out, FEATURES, BATCH)
    nets.random.seed(5)
    mod.init_params(nets.init.Uniform(0.3))
    kv.reset_stats()
    mod.init_optimizer(kvstore=kv, optimizer="adam",
                       optimizer_params=(("learning_rate", 0.1), ("lazy_update", True)))
    stats = kv.stats()
    first, _ = mod.get_params()  # (the row_sparse weight's every row: from the store)
    held = nets.nd.zeros((FEATURES, 1))
    kv.pull(1, out=held)  # the table as the store holds it
    data = batches(200 + rank, FEATURES, BATCH, STEPS)
    mod.prepare(data[0], rows_of)
    for k, batch in enumerate(data):
        mod.forward_backward(batch)
        mod.update()
        mod.prepare(data[(k + 1) % STEPS], rows_of)
    last, _ = mod.get_params()
    np.savez(os.path.join(out_dir, f"drawn{rank}.npz"),
             **{f"{n}_init": a.asnumpy() for n, a in first.items()},
             **{n: a.asnumpy() for n, a in last.items()}, table_store=held.asnumpy())
    with open(os.path.join(out_dir, f"stats{rank}.json"), "w") as f:
        json.dump(stats, f)


def main():
    kv = nets.kv.create("dist_sync")
    train(kv, sys.argv[1], kv.rank)
    print(f"worker {kv.rank} ok")


if __name__ == "__main__":
    main()
