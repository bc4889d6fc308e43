"""One worker of ``bench_kv.py``'s CTR runs: W2's model (``FullyConnectedSparse(10^6, 64)``
-> ReLU -> ``Dense(1)``, sigmoid BCE, lazy Adam, batch 512 per worker) trained with
``Trainer(kvstore=STORE)`` on this worker's share of W2's batches (batch ``k`` goes to
worker ``k % num_workers``), or without a store (``none``: single-process nets).

    python benchmarks/kv_ctr_worker.py STORE STEPS DATA_DIR QUICK OUT_JSON

Times ``STEPS`` steps after 5 warm-up steps: each step's compute (forward and backward) and
its ``trainer.step`` (with a store: one call per server pushing the gradients and
answering the rows the update changed, waiting for the other workers under
``dist_sync``, and applying those rows to the worker's weights). The bytes a step moves
are the store's counters (``kv.stats()``, reset after the warm-up): the gradients sent
(values, and row ids of row_sparse ones) and the answers received. Rank 0 writes the
medians, the mean bytes per step and the run's samples/s (all workers' samples over
rank 0's wall time) to ``OUT_JSON``."""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]

import numpy as np

import nets
import workloads as wl
from nets import autograd, layers
from nets.arrays.csr import CSRNDArray
from nets.arrays.dense import NDArray

WARMUP = 5


def main():
    store, steps, data_dir, quick, out_json = sys.argv[1:6]
    steps, quick = int(steps), quick == "1"
    kv = None if store == "none" else nets.kv.create(store)
    rank, workers = (0, 1) if kv is None else (kv.rank, kv.num_workers)
    arrays = wl.w2_arrays(data_dir, quick)
    X = CSRNDArray(arrays["data"], arrays["indices"], arrays["indptr"],
                   (len(arrays["indptr"]) - 1, wl.W2["features"]))
    y = NDArray(arrays["label"])
    spans = wl.batches(arrays, wl.W2["batch"])[rank::workers]
    if len(spans) < WARMUP + steps:
        raise SystemExit(f"worker {rank}: {len(spans)} batches, fewer than {WARMUP + steps}")
    nets.random.seed(0)
    net = layers.HybridSequential()
    net.add(layers.FullyConnectedSparse(wl.W2["features"], wl.W2["units"],
                                        weight_grad_stype="row_sparse"),
            layers.Activation("relu"), layers.Dense(1, in_units=wl.W2["units"]))
    net.initialize()
    net.hybridize()
    trainer = nets.Trainer(net.collect_params(), "adam",
                           {"learning_rate": wl.W2["lr"], "lazy_update": True}, kvstore=kv)
    loss_fn = nets.loss.SigmoidBinaryCrossEntropyLoss()
    compute, update = [], []
    start = None
    for k, (s, e) in enumerate(spans[:WARMUP + steps]):
        if k == WARMUP:
            start = time.perf_counter()
            if kv is not None:
                kv.reset_stats()
        t0 = time.perf_counter()
        with autograd.record():
            loss = loss_fn(net(X[s:e]), y[s:e])
        loss.backward()
        t1 = time.perf_counter()
        trainer.step(e - s)
        t2 = time.perf_counter()
        if k >= WARMUP:
            compute.append(t1 - t0)
            update.append(t2 - t1)
    wall = time.perf_counter() - start
    if rank == 0:
        with open(out_json, "w") as f:
            json.dump({"samples_per_s": steps * wl.W2["batch"] * workers / wall,
                       "compute_ms": 1e3 * float(np.median(compute)),
                       "step_ms": 1e3 * float(np.median(update)),
                       "wall_s": wall, "workers": workers,
                       "bytes_per_step": 0.0 if kv is None else
                       (kv.stats()["bytes_sent"] + kv.stats()["bytes_received"]) / steps},
                      f)


if __name__ == "__main__":
    main()
