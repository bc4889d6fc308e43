"""A worker of the prefetch tests: ``python prefetch.py MODE OUT_DIR``.

A sparse linear ``Module`` (a row_sparse weight and a dense bias updated on the store,
lazy Adam) trained on this worker's batches in MXNet's ``fit`` order - ``forward_backward``,
``update``, then ``prepare`` of the next batch. MODE ``prefetch`` leaves each prepare's
pull in flight until the next forward takes it; ``blocking`` takes it at once (what
``prepare`` did before it prefetched). Between the two, a ``prepare`` whose batch is never
used is dropped. Each worker writes the weight's every row and the bias to
``OUT_DIR/MODE{rank}.npz``; the test compares the modes bit for bit. ``prefetch`` first
checks, on plain store calls, that a prefetched row pull issued right after a
non-blocking push sees that push's round, and that a dropped prefetch never writes its
``out``. An error of a prefetched pull is checked by ``stops_early.py``.
"""
import os
import sys

import numpy as np

import nets
from csr_batches import batches, bound_module, rows_of

FEATURES, BATCH, STEPS = 50, 6, 6


def module(kv):
    data = nets.sym.Variable("data", stype="csr")
    weight = nets.sym.Variable("weight", shape=(FEATURES, 1), stype="row_sparse")
    bias = nets.sym.Variable("bias", shape=(1,))
    out = nets.sym.broadcast_add(nets.sym.sparse.dot(data, weight), bias)
    mod = bound_module(out, FEATURES, BATCH)
    nets.random.seed(3)
    mod.init_params(nets.init.Uniform(0.3))
    mod.init_optimizer(kvstore=kv, optimizer="adam",
                       optimizer_params=(("learning_rate", 0.1), ("lazy_update", True)))
    return mod


def train(kv, mode, out_dir):
    mod = module(kv)
    data = batches(100 + kv.rank, FEATURES, BATCH, STEPS)
    mod.prepare(data[0], rows_of)
    for k, batch in enumerate(data):
        if mode == "blocking":
            mod._take_rows()
        mod.forward_backward(batch)
        mod.update()
        if k == 2:  # a prepare whose batch is never used: replaced before any forward
            mod.prepare(data[(k + 3) % STEPS], rows_of)
        mod.prepare(data[(k + 1) % STEPS], rows_of)
    args, _ = mod.get_params()
    np.savez(os.path.join(out_dir, f"{mode}{kv.rank}.npz"), weight=args["weight"].asnumpy(),
             bias=args["bias"].asnumpy())


def store_order(kv):
    """A push (not waited for) then a prefetch of the same key: the rows are the round's
    sum (no optimizer on the store: the sum replaces the value); a dropped prefetch
    leaves its out as it was."""
    table = np.arange(20, dtype=np.float32).reshape(10, 2)
    kv.init(100, nets.nd.array(table))
    grad = np.full((10, 2), kv.rank + 1, np.float32)
    kv.push(100, nets.nd.array(grad))
    out = nets.nd.sparse.zeros("row_sparse", (10, 2))
    pending = kv.prefetch_rows(100, out, nets.nd.array([7, 2, 7], dtype="int64"))
    pending.wait()
    total = sum(np.full((10, 2), r + 1, np.float32) for r in range(kv.num_workers))
    assert out.indices.asnumpy().tolist() == [2, 7], out.indices.asnumpy()
    assert np.array_equal(out.data.asnumpy(), total[[2, 7]]), "prefetch after push"
    kept = nets.nd.sparse.zeros("row_sparse", (10, 2))
    kv.prefetch_rows(100, kept, nets.nd.array([1], dtype="int64"))  # dropped unwaited
    kv.barrier()
    assert kept.indices.asnumpy().size == 0, "a dropped prefetch wrote its out"


def main():
    mode, out_dir = sys.argv[1:3]
    kv = nets.kv.create("dist_sync")
    if mode == "prefetch":
        store_order(kv)  # (before train sets an optimizer on the store)
    train(kv, mode, out_dir)
    print(f"worker {kv.rank} ok")


if __name__ == "__main__":
    main()
