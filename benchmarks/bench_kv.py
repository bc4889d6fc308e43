"""``nets.kv``'s distributed store on Ray: MXNet's sparse click-through Module program
against single-process nets, and the transport next to a shared-memory floor.

CTR runs first, each a fresh launch (``python -m nets.kv.launch -n W -s S -- python
benchmarks/kv_ctr_worker.py ...``: a Ray cluster of its own) or, for ``none``, one
process without a store: the program of ``benchmarks/kv_ctr_worker.py`` (W2's data, csr
batches of 512 per worker, a 10^6 x 64 row_sparse weight, lazy Adam on the servers,
``prepare(next batch, sparse_row_id_fn)`` after each ``update``) single-process, and on
``dist_sync`` at (workers, servers) = (1, 1) and (2, 2) and ``dist_async`` at (2, 2).
Each row gives samples/s over all workers and its ratio to the single process; the
per-step breakdown (ms per step: wall, rank 0's process CPU, and medians of ``forward``
- which takes the rows the last ``prepare`` pulled, so it holds the wait for the step's
exchange -, ``backward``, ``update``, ``prepare``); the bytes one worker's step moves
(the store's counters); the seconds from the launcher's start to the last worker's first
step; ``init_params``' and ``init_optimizer``'s seconds (the latter initializes the
store: the servers make the drawn table from its spec).

Then, in a cluster started here (``nets.kv.cluster.start_local``) with one server,
joined as the store's only worker, after a warm-up (the store's data calls go through its
channel, ``nets.kv.channel``; barriers through Ray):

- Ray's own cost of a call: a no-op method of a bare actor, sync and asyncio (the
  store's actors are asyncio actors);
- an actor round trip (a barrier through the coordinator);
- a 7,400 x 64 float32 dense push + pull of one key (no optimizer: the sum replaces the
  value), fused (``kv.pushpull``: one call) and as ``kv.push`` then ``kv.pull``, next to
  copying the same bytes into and out of a ``multiprocessing`` shared-memory block (the
  floor any inter-process transport pays);
- a ``row_sparse_pull`` of 7,400 random rows of a 1,000,000 x 64 key.

Prints the tables and one JSON line.

    python benchmarks/bench_kv.py [--steps 180] [--reps 20] [--quick] [--data-dir DIR]
                                  [--transport-only | --ctr-only]
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time
from multiprocessing import shared_memory

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # loopback only: before Ray's import

import numpy as np
import ray

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]  # nets from this checkout, not an installed one
import nets
import workloads as wl
from kv_ctr_worker import PHASES
from nets.kv import cluster

ROWS, COLS, TABLE = 7_400, 64, 1_000_000
BURST = 10  # consecutive timed calls of one measure in each rep (see ``_medians_ms``)
WORKER = os.path.join(HERE, "kv_ctr_worker.py")
# (store, workers, servers) of the CTR runs; "none": single-process nets, no store
CTR_RUNS = [("none", 1, 0), ("dist_sync", 1, 1), ("dist_sync", 2, 2), ("dist_async", 2, 2)]


def _ctr(store, workers, servers, args):
    """One CTR run: its rank 0's JSON results. A store's run is a fresh launch (``python -m
    nets.kv.launch``: a cluster of its own), timed from the launcher's start."""
    out = os.path.join(args.data_dir, f"kv_ctr_{store}_{workers}_{servers}.json")
    cmd = [sys.executable, WORKER, store, str(args.steps), args.data_dir,
           "1" if args.quick else "0", out]
    if store != "none":
        cmd = [sys.executable, "-m", "nets.kv.launch", "-n", str(workers), "-s",
               str(servers), "--"] + cmd
    env = dict(os.environ, NETS_BENCH_LAUNCH=repr(time.time()))
    code = subprocess.run(cmd, env=env, cwd=os.path.dirname(HERE)).returncode
    if code:
        raise SystemExit(f"CTR run {store} ({workers}, {servers}) failed: {code}")
    with open(out) as f:
        result = json.load(f)
    for rank in range(1, workers):  # launch to first step: the last worker's
        with open(f"{out}.{rank}") as f:
            result["launch_to_first_step_s"] = max(result["launch_to_first_step_s"],
                                                   json.load(f)["launch_to_first_step_s"])
    return result


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


def _transport(args):
    """The transport measures (see the module's docstring), in a cluster started here."""
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
        group.close()
        ray.shutdown()
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
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--steps", type=int, default=180, help="timed steps per CTR worker")
    parser.add_argument("--quick", action="store_true", help="W2's 20,000-row data")
    wl.add_data_dir(parser)
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--transport-only", action="store_true",
                      help="only the round trip, push+pull and row pull timings")
    only.add_argument("--ctr-only", action="store_true", help="only the CTR runs")
    args = parser.parse_args()
    wl.w2_arrays(args.data_dir, args.quick)  # (made once, before any run is timed)

    ctr = {}
    for store, workers, servers in [] if args.transport_only else CTR_RUNS:
        ctr[f"{store}:{workers}x{servers}"] = _ctr(store, workers, servers, args)
    results = {} if args.ctr_only else _transport(args)
    if ctr:
        single = ctr["none:1x0"]["samples_per_s"]
        print(f"\nMXNet's sparse CTR Module program on W2, batch {wl.W2['batch']} per "
              f"worker, {args.steps} timed steps each; ms per step: medians of its phases")
        print(f"{'run':<18}{'samples/s':>11}{'/single':>9}{'step':>7}{'cpu':>6}"
              + "".join(f"{p:>10}" for p in PHASES)
              + f"{'MB/step':>9}{'launch s':>10}{'init_params s':>15}{'init_opt s':>12}")
        for name, r in ctr.items():
            r["over_single"] = r["samples_per_s"] / single
            launch = r.get("launch_to_first_step_s")
            print(f"{name:<18}{r['samples_per_s']:>11,.0f}{r['over_single']:>9.2f}"
                  f"{r['step_ms']:>7.2f}{r['cpu_ms']:>6.2f}"
                  + "".join(f"{r[p + '_ms']:>10.2f}" for p in PHASES)
                  + f"{r['bytes_per_step'] / 1e6:>9.2f}"
                  + (f"{launch:>10.2f}" if launch is not None else f"{'-':>10}")
                  + f"{r['init_params_s']:>15.2f}{r['init_optimizer_s']:>12.2f}")
    print(json.dumps({"bench": "kv", "rows": ROWS, "cols": COLS, "table_rows": TABLE,
                      "reps": args.reps, "steps": args.steps, "quick": args.quick,
                      **results, "ctr": ctr}))


if __name__ == "__main__":
    main()
