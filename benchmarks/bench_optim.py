"""Lazy (row-wise) vs dense optimizer updates with a row_sparse gradient.

A 1,000,000 x 64 float32 dense weight gets a row_sparse gradient of 15,000 random rows per
step. For Adam, SGD with momentum and AdaGrad it times one ``update`` with
``lazy_update=True`` (only those rows of the weight and states) against
``lazy_update=False`` (the standard update of every row), and PyTorch's
``torch.optim.SparseAdam`` on the same data when torch is importable. Each variant is warmed
up (compilation, first touch of the memory), then timed over ``--reps`` steps, each with fresh
rows; prints a table and one JSON line.

    python benchmarks/bench_optim.py [--quick] [--reps 7]
"""
import argparse
import gc
import json
import os
import platform
import time

import numpy as np

import nets
from nets import nd
from nets.optim import create

OPTIMIZERS = [("adam", {}), ("sgd", {"momentum": 0.9}), ("adagrad", {})]


def _grads(rng, rows, cols, touched, count):
    """``count`` row_sparse gradients, each with ``touched`` random unique sorted rows."""
    out = []
    for _ in range(count):
        ids = np.sort(rng.choice(rows, touched, replace=False))
        data = rng.standard_normal((touched, cols), dtype=np.float32)
        out.append(nd.sparse.row_sparse_array((data, ids), shape=(rows, cols)))
    return out


def _time(step, grads, warmup):
    """Seconds per call of ``step(grad)``: the first ``warmup`` grads are not timed."""
    for g in grads[:warmup]:
        step(g)
    times = []
    for g in grads[warmup:]:
        t = time.perf_counter()
        step(g)
        times.append(time.perf_counter() - t)
    return times


def bench_nets(name, kwargs, lazy, w0, grads, warmup):
    opt = create(name, learning_rate=0.01, lazy_update=lazy, **kwargs)
    weight = nd.array(w0)
    state = opt.create_state(0, weight)
    return _time(lambda g: opt.update(0, weight, g, state), grads, warmup)


def bench_torch_sparse_adam(w0, grads, warmup):
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(os.cpu_count() or 1)
    weight = torch.nn.Parameter(torch.from_numpy(w0.copy()))
    opt = torch.optim.SparseAdam([weight], lr=0.01)
    tgrads = [torch.sparse_coo_tensor(torch.from_numpy(g._indices)[None], torch.from_numpy(
        g._data), w0.shape).coalesce() for g in grads]

    def step(g):
        weight.grad = g
        opt.step()
    return _time(step, tgrads, warmup)


def _stats(times):
    ms = np.array(times) * 1e3
    return {"median_ms": float(np.median(ms)), "min_ms": float(ms.min()),
            "max_ms": float(ms.max()), "reps": len(ms)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="100,000 rows, a smoke run")
    parser.add_argument("--reps", type=int, default=7, help="timed steps per variant (>= 7)")
    args = parser.parse_args()
    rows, cols, touched = (100_000, 64, 1_500) if args.quick else (1_000_000, 64, 15_000)
    reps, warmup = max(7, args.reps), 2
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((rows, cols), dtype=np.float32)
    grads = _grads(rng, rows, cols, touched, warmup + reps)
    results = {}
    for name, kwargs in OPTIMIZERS:
        label = name + ("(momentum)" if kwargs else "")
        for lazy in (True, False):
            results[f"{label} {'lazy' if lazy else 'dense'}"] = _stats(
                bench_nets(name, kwargs, lazy, w0, grads, warmup))
            gc.collect()
    torch_times = bench_torch_sparse_adam(w0, grads, warmup)
    if torch_times is not None:
        results["torch SparseAdam"] = _stats(torch_times)

    print(f"weight {rows} x {cols} float32, {touched} touched rows per step, "
          f"{reps} timed steps after {warmup} warm-up, {os.cpu_count()} CPUs")
    print(f"{'variant':<26}{'median ms':>11}{'min ms':>10}{'max ms':>10}")
    for key, r in results.items():
        print(f"{key:<26}{r['median_ms']:>11.2f}{r['min_ms']:>10.2f}{r['max_ms']:>10.2f}")
    speedups = {}
    for name, kwargs in OPTIMIZERS:
        label = name + ("(momentum)" if kwargs else "")
        speedups[label] = (results[f"{label} dense"]["median_ms"]
                           / results[f"{label} lazy"]["median_ms"])
        print(f"{label}: lazy is {speedups[label]:.1f}x faster than dense")
    if torch_times is None:
        print("torch SparseAdam: skipped (torch is not installed)")
    else:
        ratio = results["torch SparseAdam"]["median_ms"] / results["adam lazy"]["median_ms"]
        print(f"adam lazy vs torch SparseAdam: {ratio:.2f}x")
    print(json.dumps({"bench": "optim", "rows": rows, "cols": cols, "touched": touched,
                      "cpus": os.cpu_count(), "nets": nets.__version__,
                      "python": platform.python_version(), "results": results,
                      "lazy_speedup": speedups, "torch": torch_times is not None}))


if __name__ == "__main__":
    main()
