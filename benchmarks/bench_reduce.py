"""``square_sum(x, axis=1, keepdims=True)`` of a 10^6 x 16 table (a factorization
machine's factor table) against numpy and a memory copy, in one run.

Variants, each over the same C-contiguous array of ``--rows`` x ``--cols``:

- ``numpy``: ``np.add.reduce(np.square(a), axis=1, keepdims=True)``, the numpy reduction;
- ``nets dense`` / ``nets row_sparse``: ``nd.square_sum`` of the dense array and of the
  row_sparse array storing every row (its result row_sparse), on ``nets.get_num_threads()``
  threads, and ``nets dense, 1 thread``;
- ``copy``: ``np.copyto`` of the array into a preallocated one (reads the same bytes and
  writes as many): the memory-speed reference.

Every variant is warmed up (numba compiles, pages are touched), then the variants' reps are
interleaved (their order rotating) and each variant's median is reported, with GB/s of the
array read and its ratio to ``numpy`` and to ``copy`` (below 1: faster). Prints a table and
one JSON line.

    python benchmarks/bench_reduce.py [--rows 1000000] [--cols 16] [--reps 21]
"""
import argparse
import json
import os
import platform
import statistics
import time

import numpy as np

import nets
from nets import nd


def variants(a, dst):
    dense = nd.array(a, dtype=a.dtype)
    rsp = dense.tostype("row_sparse")
    assert len(rsp.indices) == a.shape[0], "every row stored"

    def nets_one_thread():
        before = nets.get_num_threads()
        nets.set_num_threads(1)
        try:
            return nd.square_sum(dense, axis=1, keepdims=True)
        finally:
            nets.set_num_threads(before)
    return {
        "numpy": lambda: np.add.reduce(np.square(a), axis=1, keepdims=True),
        "nets dense": lambda: nd.square_sum(dense, axis=1, keepdims=True),
        "nets row_sparse": lambda: nd.square_sum(rsp, axis=1, keepdims=True),
        "nets dense, 1 thread": nets_one_thread,
        "copy": lambda: np.copyto(dst, a),
    }


def check(a, fns):
    want = np.add.reduce(np.square(a.astype(np.float64)), axis=1, keepdims=True)
    for name in ("nets dense", "nets row_sparse", "nets dense, 1 thread"):
        got = fns[name]().asnumpy()
        np.testing.assert_allclose(got, want, rtol=1e-5 if a.dtype == np.float32 else 1e-12)


def measure(fns, reps):
    for fn in fns.values():
        fn()
        fn()
    times = {name: [] for name in fns}
    names = list(fns)
    for r in range(reps):
        for name in names[r % len(names):] + names[:r % len(names)]:
            t = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(ts) for name, ts in times.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--cols", type=int, default=16)
    parser.add_argument("--reps", type=int, default=21)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    print("square_sum(x, axis=1, keepdims=True), %d x %d; nets threads %d"
          % (args.rows, args.cols, nets.get_num_threads()))
    head = "%-8s %-22s %10s %8s %9s %9s" % ("dtype", "variant", "ms", "GB/s", "/ numpy",
                                            "/ copy")
    print(head)
    print("-" * len(head))
    for dtype in (np.float32, np.float64):
        a = rng.standard_normal((args.rows, args.cols)).astype(dtype)
        dst = np.empty_like(a)
        fns = variants(a, dst)
        check(a, fns)
        med = measure(fns, args.reps)
        for name, t in med.items():
            row = {"dtype": np.dtype(dtype).name, "variant": name, "ms": t * 1e3,
                   "gb_per_s": a.nbytes / t / 1e9, "ratio_numpy": t / med["numpy"],
                   "ratio_copy": t / med["copy"]}
            rows.append(row)
            print("%-8s %-22s %10.2f %8.2f %9.3f %9.3f" % (
                row["dtype"], name, row["ms"], row["gb_per_s"], row["ratio_numpy"],
                row["ratio_copy"]))
    print(json.dumps({"benchmark": "reduce", "op": "square_sum(axis=1, keepdims=True)",
                      "shape": [args.rows, args.cols], "reps": args.reps,
                      "threads": nets.get_num_threads(), "machine": platform.machine(),
                      "cpus": os.cpu_count(), "rows": rows}))


if __name__ == "__main__":
    main()
