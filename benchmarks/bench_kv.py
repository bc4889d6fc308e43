"""The Ray transport of ``nets.kv``'s distributed store next to a shared-memory floor.

Starts a Ray cluster on 127.0.0.1 (``nets.kv.cluster.start_local``, as the launcher does)
with one server, joins it as the store's only worker (``dist_sync``, 1 worker, 1 server)
and times, after a warm-up:

- Ray's own cost of a call: a no-op method of a bare actor, sync and asyncio (the
  store's actors are asyncio actors);
- an actor round trip (a barrier through the coordinator);
- a 7,400 x 64 float32 dense push + pull of one key (no optimizer: the sum replaces the
  value), fused (``kv.pushpull``: one call) and as ``kv.push`` then ``kv.pull``, next to
  copying the same bytes into and out of a ``multiprocessing`` shared-memory block (the
  floor any inter-process transport pays); the ratio the transport goal reads is the
  fused one;
- a ``row_sparse_pull`` of 7,400 random rows of a 1,000,000 x 64 key;

then W2's click-through model (``run.py``'s W2, lazy Adam, batch 512 per worker) trained
by ``benchmarks/kv_ctr_worker.py`` single-process without a store, and with
``Trainer(kvstore=...)`` on ``dist_sync`` at (workers, servers) = (1, 1) and (2, 2) and on
``dist_async`` at (2, 2): samples/s over all workers, and the median ms per step of the
compute (forward and backward) and of ``trainer.step`` (with a store: one call per
server pushing the gradients, the servers' update, the answer with the rows it changed,
waiting for the other workers, applying the rows), and the bytes one worker's step sends
and receives (counted by the worker at the store).

Prints a table and one JSON line.

    python benchmarks/bench_kv.py [--reps 20] [--steps 60] [--quick] [--data-dir DIR]
                                  [--transport-only]
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from multiprocessing import shared_memory

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # loopback only: before Ray's import

import numpy as np
import ray

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]  # nets from this checkout, not an installed one
import nets
import workloads as wl
from nets.kv import cluster

ROWS, COLS, TABLE = 7_400, 64, 1_000_000
BURST = 10  # consecutive timed calls of one measure in each rep (see ``_medians_ms``)
WORKER = os.path.join(HERE, "kv_ctr_worker.py")
# (store, workers, servers) of the CTR runs; "none": single-process nets, no store
CTR_RUNS = [("none", 1, 0), ("dist_sync", 1, 1), ("dist_sync", 2, 2), ("dist_async", 2, 2)]


def _ctr(address, store, workers, servers, args):
    """One CTR run: its rank 0's JSON results."""
    out = os.path.join(args.data_dir, f"kv_ctr_{store}_{workers}_{servers}.json")
    cmd = [sys.executable, WORKER, store, str(args.steps), args.data_dir,
           "1" if args.quick else "0", out]
    if store == "none":
        codes = [subprocess.run(cmd).returncode]
    else:
        group = cluster.Group(workers, servers)
        try:
            codes = cluster.run_workers(cmd, [group.environment(r, address)
                                              for r in range(workers)])
        finally:
            group.close()
    if any(codes):
        raise SystemExit(f"CTR run {store} ({workers}, {servers}) failed: {codes}")
    with open(out) as f:
        return json.load(f)


class _NoOp:
    """A bare actor: Ray's own cost of a call, without nets (sync and asyncio methods)."""

    def noop(self):
        return None

    async def async_noop(self):
        return None


def _medians_ms(fns, reps, warmup=3):
    """The median ms of each function of ``fns`` (a dict), their reps interleaved (so
    that a change of the machine's load falls on all of them alike): each rep times
    ``BURST`` consecutive calls of each function, so that most timed calls find the
    caches as a loop of that function leaves them (a single copy timed right after a Ray
    call is several times slower than in a loop, which would flatter the ratio)."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times = {name: [] for name in fns}
    for _ in range(reps):
        for name, fn in fns.items():
            for _ in range(BURST):
                t = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t)
    return {name: 1e3 * float(np.median(t)) for name, t in times.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--steps", type=int, default=60, help="timed steps per CTR worker")
    parser.add_argument("--quick", action="store_true", help="W2's 20,000-row data")
    parser.add_argument("--data-dir", default=os.path.join(tempfile.gettempdir(),
                                                           "nets-bench-data"))
    parser.add_argument("--transport-only", action="store_true",
                        help="only the round trip, push+pull and row pull timings")
    args = parser.parse_args()

    address = cluster.start_local(object_store_memory=512 * 2**20)
    group = cluster.Group(1, 1)
    os.environ.update(group.environment(0, address))
    kv = nets.kv.create("dist_sync")
    rng = np.random.default_rng(0)
    block = nets.nd.array(rng.standard_normal((ROWS, COLS), dtype=np.float32))
    out = nets.nd.zeros((ROWS, COLS))
    kv.init([0, 1], [block, nets.nd.zeros((TABLE, COLS)).tostype("row_sparse")])

    def push_then_pull():
        kv.push(0, block)
        kv.pull(0, out=out)

    def pushpull():
        kv.pushpull(0, block, out=out)

    ids = nets.nd.array(rng.integers(0, TABLE, ROWS), dtype="int64")
    rows_out = nets.nd.sparse.zeros("row_sparse", (TABLE, COLS))
    shm = shared_memory.SharedMemory(create=True, size=block.asnumpy().nbytes)
    try:
        view = np.ndarray((ROWS, COLS), np.float32, buffer=shm.buf)
        back = np.empty((ROWS, COLS), np.float32)

        def shm_copy():
            np.copyto(view, block.asnumpy())
            np.copyto(back, view)

        noop = ray.remote(_NoOp).options(num_cpus=0).remote()
        results = {f"{name}_ms": ms for name, ms in _medians_ms({
            "ray_noop": lambda: ray.get(noop.noop.remote()),
            "ray_async_noop": lambda: ray.get(noop.async_noop.remote()),
            "round_trip": kv.barrier, "pushpull": pushpull, "push_then_pull": push_then_pull,
            "shm_copy": shm_copy,
            "row_sparse_pull": lambda: kv.row_sparse_pull(1, out=rows_out, row_ids=ids),
        }, args.reps).items()}
    finally:
        shm.close()
        shm.unlink()
    floor = results["shm_copy_ms"]
    results["pushpull_over_shm"] = results["pushpull_ms"] / floor
    results["push_then_pull_over_shm"] = results["push_then_pull_ms"] / floor
    print(f"{ROWS} x {COLS} float32 ({ROWS * COLS * 4 / 2**20:.1f} MiB), Ray "
          f"{ray.__version__}, {platform.processor() or platform.machine()}")
    print(f"{'measure':<28}{'median ms':>11}")
    for key in ("ray_noop_ms", "ray_async_noop_ms", "round_trip_ms", "pushpull_ms",
                "push_then_pull_ms", "shm_copy_ms", "row_sparse_pull_ms"):
        print(f"{key[:-3]:<28}{results[key]:>11.3f}")
    print(f"fused pushpull is {results['pushpull_over_shm']:.1f}x the shared-memory copy "
          f"(push then pull: {results['push_then_pull_over_shm']:.1f}x)")

    ctr = {}
    for store, workers, servers in [] if args.transport_only else CTR_RUNS:
        ctr[f"{store}:{workers}x{servers}"] = _ctr(address, store, workers, servers, args)
    print(f"\nW2 CTR, batch {wl.W2['batch']} per worker, "
          f"{args.steps} timed steps each")
    print(f"{'run':<22}{'samples/s':>11}{'compute ms':>12}{'step ms':>10}"
          f"{'MB/worker-step':>16}")
    for name, r in ctr.items():
        print(f"{name:<22}{r['samples_per_s']:>11,.0f}{r['compute_ms']:>12.2f}"
              f"{r['step_ms']:>10.2f}{r['bytes_per_step'] / 1e6:>16.2f}")
    print(json.dumps({"bench": "kv", "rows": ROWS, "cols": COLS, "table_rows": TABLE,
                      "reps": args.reps, **results, "ctr": ctr}))


if __name__ == "__main__":
    main()
