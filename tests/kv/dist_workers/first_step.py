"""Issue 42: a program that reads a dense parameter's ``data()`` and a row_sparse
parameter's ``row_sparse_data(ids)`` inside one ``autograd.record()`` block from its
first step, trained with ``Trainer(kvstore=STORE)``: a worker script of
tests/kv/test_first_step.py, and the module that test imports to run it locally.

Worker use: ``python first_step.py STORE STEPS OUT_DIR [DEFERRED]``. Each worker
initializes its parameters from its own seed (so only the store's first broadcast of rank
0's values makes the workers agree), trains STEPS steps on its batches and writes its
copies to OUT_DIR/params{rank}.npz. With DEFERRED, the dense parameter's shape is unknown
until the first step's forward (its initialization deferred), so its values reach the
store, and every worker, when its array is first made."""
import os
import sys

import numpy as np

import nets
from nets import autograd, nd
from nets.layers import Parameter

BATCH, ROWS, DIM = 6, 30, 3


def build(seed, deferred=False):
    """``(x, y)``: a dense (DIM, 1) ``x`` and a row_sparse (ROWS, DIM) ``y``, drawn from
    ``seed`` (``x`` deferred: shape unknown, set by ``forward`` on its first call)."""
    nets.random.seed(seed)
    x = Parameter("x", shape=None if deferred else (DIM, 1), allow_deferred_init=deferred)
    y = Parameter("y", shape=(ROWS, DIM), stype="row_sparse")
    for p in (x, y):
        p.initialize(nets.init.Uniform(0.5))
    return x, y


def batch(rank, step):
    rng = np.random.RandomState(100 * rank + step)
    ids = rng.randint(0, ROWS // 2 + 5 * rank, size=BATCH)
    return nd.array(ids, dtype="int64"), nd.array(rng.rand(BATCH, 1))


def forward(x, y, ids, target):
    """One step's loss, recorded: a product of ``x.data()`` first, then ``y``'s rows
    (``row_sparse_data``), both inside the record block (a deferred ``x`` gets its shape
    here, as a block's forward gives it)."""
    with autograd.record():
        if x.shape is None or 0 in x.shape:
            x.shape = (DIM, 1)
            x._finish_deferred_init()
        w = x.data() * 2.0
        rows = y.row_sparse_data(ids)
        emb = nd.Embedding(ids, rows, input_dim=ROWS, output_dim=DIM, sparse_grad=True)
        loss = ((nd.dot(emb, w) - target) ** 2).sum()
    loss.backward()
    return loss


def optimizer():
    return nets.optim.Adam(learning_rate=0.05)


if __name__ == "__main__":
    store, steps, out_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    deferred = len(sys.argv) > 4
    kv = nets.kv.create(store)
    rank = kv.rank
    x, y = build(seed=11 + rank, deferred=deferred)
    trainer = nets.Trainer([x, y], optimizer(), kvstore=kv)
    for step in range(steps):
        ids, target = batch(rank, step)
        forward(x, y, ids, target)
        trainer.step(BATCH)
    y.row_sparse_data(nd.arange(ROWS, dtype="int64"))  # every row, from the store
    np.savez(os.path.join(out_dir, f"params{rank}.npz"), x.data().asnumpy(),
             y.data().tostype("default").asnumpy())
    print(f"worker {rank}: trained {steps} steps")
