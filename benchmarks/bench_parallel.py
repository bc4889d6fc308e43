"""What a second thread gives one kernel call through ``nets.parallel``, against what the
second core could give.

``nets.parallel``'s workers block between calls, so a worker joins a call only once the
operating system has woken it. This script measures, in one process:

- **wake-up**: how long after a call is posted a blocked worker starts its first chunk
  (the caller holds its own chunk meanwhile, with the GIL released);
- for W5's two memory-bound kernels on W2's batches (random rows of a 10^6 x 64 float32
  table): ``dot(csr, W)`` of a 512-row batch (30 nonzeros a row), and the lazy Adam update
  by its ``dot(csr.T, G)`` gradient (~7,300 rows),
  - one call on 1 thread (``set_num_threads(1)``),
  - one call on 2 threads (``set_num_threads(2)``: split if its work is worth a second
    thread, see ``nets.parallel.GRAIN``),
  - the reference: two Python threads each making whole calls on 1 thread, on tables of
    their own (the time per call when both cores are busy all along: what the second core
    is worth without any wake-up).

Before each call (but the reference's) the main thread runs ``--gap-us`` of Python, as a
training step does between its kernels, so the worker is asleep when a call comes. Prints a
table and one JSON line.

    python benchmarks/bench_parallel.py [--quick] [--calls 100] [--reps 5] [--gap-us 200]

The W2 data is run.py's, generated on first use into ``--data-dir``.
"""
import argparse
import json
import os
import platform
import threading
import time

import numpy as np

import nets
import workloads as wl
from nets import nd, parallel
from nets.optim import create

HOLD = 0.005  # seconds the caller holds its chunk in the wake-up probe


def _busy(seconds):
    """Python work holding the GIL, as a step's code between two kernel calls."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def wake_up(calls, gap):
    """Seconds from posting a 2-chunk call to its worker starting the second chunk, per
    call; None where the worker came after the caller's chunk (``HOLD``) and the caller
    took the second chunk itself."""
    parallel.set_num_threads(2)
    caller, seen = threading.get_ident(), []

    def body(lo, hi):
        if threading.get_ident() == caller:
            time.sleep(HOLD)  # the caller keeps the first chunk, the GIL released
        else:
            seen.append(time.perf_counter() - posted)
    out = []
    for _ in range(calls):
        _busy(gap)
        seen.clear()
        posted = time.perf_counter()
        parallel.parallel_for(body, 2, chunk=1)
        out.append(seen[0] if seen else None)
    return out


class Kernels:
    """W5's kernels on W2's batches (``workloads.w2_arrays``), over a 10^6 x 64 weight and
    Adam state of their own; one call per batch."""

    def __init__(self, arrays, calls, seed):
        rng = np.random.default_rng(seed)
        rows, units = wl.W2["features"], wl.W2["units"]
        X = nd.sparse.csr_matrix((arrays["data"], arrays["indices"], arrays["indptr"]),
                                 shape=(len(arrays["indptr"]) - 1, rows))
        self.xs = [X[s:e] for s, e in wl.batches(arrays, wl.W2["batch"])[:calls]]
        self.w = nd.array(rng.standard_normal((rows, units), dtype=np.float32))
        g = nd.array(rng.standard_normal((wl.W2["batch"], units), dtype=np.float32))
        self.grads = [nd.sparse.dot(x, g, transpose_a=True) for x in self.xs]  # row_sparse
        self.opt = create("adam", learning_rate=0.01, lazy_update=True)
        self.state = self.opt.create_state(0, self.w)

    def calls(self, kernel):
        if kernel == "lazy Adam":
            return [lambda g=g: self.opt.update(0, self.w, g, self.state) for g in self.grads]
        return [lambda x=x: nd.sparse.dot(x, self.w) for x in self.xs]


def one_call(calls, threads, gap):
    """Seconds of each call, ``threads`` allowed, ``gap`` of Python before each."""
    parallel.set_num_threads(threads)
    out = []
    for call in calls:
        _busy(gap)
        start = time.perf_counter()
        call()
        out.append(time.perf_counter() - start)
    return out


def two_callers(calls_a, calls_b):
    """Seconds per call when two threads make their own calls, back to back, on 1 thread
    each at once (no Python between calls: the GIL would serialise it)."""
    parallel.set_num_threads(1)

    def run(calls):
        for call in calls:
            call()
    threads = [threading.Thread(target=run, args=(c,)) for c in (calls_a, calls_b)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return (time.perf_counter() - start) / (len(calls_a) + len(calls_b))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="W2's quick data (fewer rows to generate), a smoke run")
    parser.add_argument("--calls", type=int, default=100, help="calls per variant and rep")
    parser.add_argument("--reps", type=int, default=5, help="reps, the variants in turn")
    wl.add_data_dir(parser)
    parser.add_argument("--gap-us", type=float, default=200.0,
                        help="Python work before each call, in microseconds")
    args = parser.parse_args()
    if args.calls < 1 or args.reps < 1 or args.gap_us < 0:
        parser.error(f"--calls {args.calls}, --reps {args.reps}, --gap-us {args.gap_us}: "
                     f"expected >= 1, >= 1, >= 0")
    gap = args.gap_us * 1e-6
    arrays = wl.w2_arrays(args.data_dir, args.quick)
    tables = [Kernels(arrays, args.calls, seed) for seed in range(2)]
    for kernel in ("lazy Adam", "csr . dense"):  # compile, and touch the pages the calls do
        for table in tables:
            one_call(table.calls(kernel), 2, 0)
    wakes = wake_up(args.calls * args.reps, gap)
    wake = np.array([w for w in wakes if w is not None] or [np.nan]) * 1e6
    results = {"wake_up_us": {"median": float(np.median(wake)),
                              "p10": float(np.percentile(wake, 10)),
                              "p90": float(np.percentile(wake, 90)),
                              "later_than_hold": wakes.count(None)}}
    for kernel in ("lazy Adam", "csr . dense"):
        calls, other = tables[0].calls(kernel), tables[1].calls(kernel)
        one, two, both, used = [], [], [], []
        for _ in range(args.reps):  # the variants in turn, so drifts of the machine hit all
            with parallel.count_threads() as counts:
                two.append(np.median(one_call(calls, 2, gap)))
            used += counts
            one.append(np.median(one_call(calls, 1, gap)))
            both.append(two_callers(calls, other))
        one, two, both = np.median(one), np.median(two), np.median(both)
        results[kernel] = {"one_thread_ms": one * 1e3, "two_threads_ms": two * 1e3,
                           "threads_used": float(np.mean(used)), "two_callers_ms": both * 1e3,
                           "split_speedup": one / two, "core_speedup": one / both}

    w = results["wake_up_us"]
    print(f"W2 batches, a {wl.W2['features']} x {wl.W2['units']} float32 table; medians of "
          f"{args.reps} reps of {args.calls} calls, {args.gap_us:g} us of Python before each; "
          f"{os.cpu_count()} CPUs, nets {nets.__version__}")
    print(f"a blocked worker joins a posted call after {w['median']:.0f} us "
          f"(p10 {w['p10']:.0f}, p90 {w['p90']:.0f}; {w['later_than_hold']} of "
          f"{len(wakes)} after {HOLD * 1e3:g} ms)")
    print(f"{'kernel':<14}{'1 thread ms':>13}{'2 threads ms':>14}{'threads used':>14}"
          f"{'2 callers ms':>14}{'split x':>9}{'core x':>8}")
    for kernel in ("lazy Adam", "csr . dense"):
        r = results[kernel]
        print(f"{kernel:<14}{r['one_thread_ms']:>13.3f}{r['two_threads_ms']:>14.3f}"
              f"{r['threads_used']:>14.2f}{r['two_callers_ms']:>14.3f}"
              f"{r['split_speedup']:>9.2f}{r['core_speedup']:>8.2f}")
    print("split x: one call on 2 threads against 1; core x: 2 callers' time per call "
          "against 1 thread's (the second core's worth)")
    print(json.dumps({"bench": "parallel", "quick": args.quick, "calls": args.calls,
                      "reps": args.reps, "gap_us": args.gap_us, "cpus": os.cpu_count(),
                      "nets": nets.__version__, "python": platform.python_version(),
                      "results": results}))


if __name__ == "__main__":
    main()
