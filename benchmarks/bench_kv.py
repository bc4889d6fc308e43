"""The Ray transport of ``nets.kv``'s distributed store next to a shared-memory floor.

Starts a Ray cluster on 127.0.0.1 (``nets.kv.cluster.start_local``, as the launcher does)
with one server, joins it as the store's only worker (``dist_sync``, 1 worker, 1 server)
and times, after a warm-up:

- an actor round trip (a barrier through the coordinator);
- a 7,400 x 64 float32 dense push + pull of one key (no optimizer: the sum replaces the
  value), next to copying the same bytes into and out of a ``multiprocessing``
  shared-memory block (the floor any inter-process transport pays);
- a ``row_sparse_pull`` of 7,400 random rows of a 1,000,000 x 64 key.

Prints a table and one JSON line.

    python benchmarks/bench_kv.py [--reps 20]

Not measured yet (issue 25): the CTR workload with ``Trainer(kvstore='dist_sync')`` at
(1, 1), (2, 2) and ``dist_async`` against single-process nets.
"""
import argparse
import json
import os
import platform
import time
from multiprocessing import shared_memory

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # loopback only: before Ray's import

import numpy as np

import nets
from nets.kv import cluster

ROWS, COLS, TABLE = 7_400, 64, 1_000_000


def _median_ms(fn, reps, warmup=3):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1e3 * float(np.median(times))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()

    address = cluster.start_local(object_store_memory=512 * 2**20)
    group = cluster.Group(1, 1)
    os.environ.update(group.environment(0, address))
    kv = nets.kv.create("dist_sync")
    rng = np.random.default_rng(0)
    block = nets.nd.array(rng.standard_normal((ROWS, COLS), dtype=np.float32))
    out = nets.nd.zeros((ROWS, COLS))
    kv.init([0, 1], [block, nets.nd.zeros((TABLE, COLS)).tostype("row_sparse")])

    def push_pull():
        kv.push(0, block)
        kv.pull(0, out=out)

    shm = shared_memory.SharedMemory(create=True, size=block.asnumpy().nbytes)
    try:
        view = np.ndarray((ROWS, COLS), np.float32, buffer=shm.buf)
        back = np.empty((ROWS, COLS), np.float32)

        def shm_copy():
            np.copyto(view, block.asnumpy())
            np.copyto(back, view)

        floor = _median_ms(shm_copy, args.reps)
    finally:
        shm.close()
        shm.unlink()
    ids = nets.nd.array(rng.integers(0, TABLE, ROWS), dtype="int64")
    rows_out = nets.nd.sparse.zeros("row_sparse", (TABLE, COLS))
    results = {
        "round_trip_ms": _median_ms(kv.barrier, args.reps),
        "push_pull_ms": _median_ms(push_pull, args.reps),
        "shm_copy_ms": floor,
        "row_sparse_pull_ms": _median_ms(
            lambda: kv.row_sparse_pull(1, out=rows_out, row_ids=ids), args.reps),
    }
    results["push_pull_over_shm"] = results["push_pull_ms"] / floor
    print(f"{ROWS} x {COLS} float32 ({ROWS * COLS * 4 / 2**20:.1f} MiB), Ray "
          f"{__import__('ray').__version__}, {platform.processor() or platform.machine()}")
    print(f"{'measure':<28}{'median ms':>11}")
    for key in ("round_trip_ms", "push_pull_ms", "shm_copy_ms", "row_sparse_pull_ms"):
        print(f"{key[:-3]:<28}{results[key]:>11.3f}")
    print(f"push+pull is {results['push_pull_over_shm']:.1f}x the shared-memory copy")
    print(json.dumps({"bench": "kv", "rows": ROWS, "cols": COLS, "table_rows": TABLE,
                      "reps": args.reps, **results}))


if __name__ == "__main__":
    main()
