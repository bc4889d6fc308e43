"""One worker of ``bench_kv.py``'s CTR runs: MXNet's sparse click-through Module program
renamed to nets - csr batches of W2's data, a ``10^6 x 64`` row_sparse weight ``w``
(``dot(data, w)`` -> ReLU -> ``FullyConnected(1)`` -> ``LogisticRegressionOutput``),
lazy Adam, batch 512 per worker (batch ``k`` of W2 goes to worker ``k % num_workers``),
``prepare(next batch, sparse_row_id_fn)`` after each ``update`` (MXNet's ``fit`` order),
on the store ``STORE`` (``none``: single-process nets, no store).

    python benchmarks/kv_ctr_worker.py STORE STEPS DATA_DIR QUICK OUT_JSON

Times ``STEPS`` steps after 5 warm-up steps, each split into ``forward`` (with a store:
taking the rows ``prepare`` prefetched), ``backward``, ``update`` (with a store: the
push of the gradients, whose answer may be taken at the next use of the weights) and
``prepare`` (with a store: starting the pull of the next batch's rows). The bytes a step
moves are the store's counters (``kv.stats()``, reset after the warm-up). With
``NETS_BENCH_LAUNCH`` (a ``time.time()`` taken when the launch began) in the environment,
each worker writes the seconds from it to its first step (rank ``r > 0`` to
``OUT_JSON.r``). Rank 0 writes the medians, its process CPU time per step (Ray's threads
included), its ``init_params`` and ``init_optimizer`` seconds, the mean bytes per step and
the run's samples/s (all workers' samples over rank 0's wall time) to ``OUT_JSON``."""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]

import numpy as np

import nets
import workloads as wl
from nets.arrays.csr import CSRNDArray
from nets.arrays.dense import NDArray

WARMUP = 5
PHASES = ("forward", "backward", "update", "prepare")


def model(features, units):
    """The click-through symbol: sigmoid(relu(data . w) . fc_weight + fc_bias)."""
    data = nets.sym.Variable("data", stype="csr")
    w = nets.sym.Variable("w", shape=(features, units), stype="row_sparse",
                          init=nets.init.Uniform(0.01))
    hidden = nets.sym.Activation(nets.sym.dot(data, w), act_type="relu")
    out = nets.sym.FullyConnected(hidden, num_hidden=1, name="fc")
    return nets.sym.LogisticRegressionOutput(out, label=nets.sym.Variable("softmax_label"))


def main():
    store, steps, data_dir, quick, out_json = sys.argv[1:6]
    steps, quick = int(steps), quick == "1"
    launched = os.environ.get("NETS_BENCH_LAUNCH")
    kv = None if store == "none" else nets.kv.create(store)
    rank, workers = (0, 1) if kv is None else (kv.rank, kv.num_workers)
    arrays = wl.w2_arrays(data_dir, quick)
    X = CSRNDArray(arrays["data"], arrays["indices"], arrays["indptr"],
                   (len(arrays["indptr"]) - 1, wl.W2["features"]))
    y = NDArray(arrays["label"].reshape(-1, 1))
    spans = wl.batches(arrays, wl.W2["batch"])[rank::workers]
    if len(spans) < WARMUP + steps + 1:
        raise SystemExit(f"worker {rank}: {len(spans)} batches, fewer than {WARMUP + steps + 1}")
    batches = [nets.io.DataBatch(data=[X[s:e]], label=[y[s:e]])
               for s, e in spans[:WARMUP + steps + 1]]

    def row_ids(batch):
        return {"w": batch.data[0].indices}

    batch = wl.W2["batch"]
    nets.random.seed(0)
    mod = nets.mod.Module(model(wl.W2["features"], wl.W2["units"]))
    mod.bind(data_shapes=[("data", (batch, wl.W2["features"]))],
             label_shapes=[("softmax_label", (batch, 1))])
    t0 = time.perf_counter()
    mod.init_params()
    t1 = time.perf_counter()
    mod.init_optimizer(kvstore=kv if kv is not None else "local", optimizer="adam",
                       optimizer_params={"learning_rate": wl.W2["lr"], "lazy_update": True})
    t2 = time.perf_counter()
    mod.prepare(batches[0], row_ids)
    times = {p: [] for p in PHASES}
    first_step, start = time.time(), None
    for k in range(WARMUP + steps):
        if k == WARMUP:
            start, cpu = time.perf_counter(), time.process_time()
            if kv is not None:
                kv.reset_stats()
        marks = [time.perf_counter()]
        mod.forward(batches[k], is_train=True)
        marks.append(time.perf_counter())
        mod.backward()
        marks.append(time.perf_counter())
        mod.update()
        marks.append(time.perf_counter())
        mod.prepare(batches[k + 1], row_ids)
        marks.append(time.perf_counter())
        if k >= WARMUP:
            for p, a, b in zip(PHASES, marks, marks[1:]):
                times[p].append(b - a)
    mod.get_outputs()[0].asnumpy()  # (the last step's work done)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    mine = {} if launched is None else {"launch_to_first_step_s": first_step - float(launched)}
    if rank > 0:
        with open(f"{out_json}.{rank}", "w") as f:
            json.dump(mine, f)
    if rank == 0:
        result = {"samples_per_s": steps * batch * workers / wall,
                  "step_ms": 1e3 * wall / steps, "cpu_ms": 1e3 * cpu / steps,
                  "wall_s": wall, "workers": workers,
                  "init_params_s": t1 - t0, "init_optimizer_s": t2 - t1,
                  "bytes_per_step": 0.0 if kv is None else
                  (kv.stats()["bytes_sent"] + kv.stats()["bytes_received"]) / steps}
        result.update({f"{p}_ms": 1e3 * float(np.median(t)) for p, t in times.items()})
        result.update(mine)
        with open(out_json, "w") as f:
            json.dump(result, f)


if __name__ == "__main__":
    main()
