"""Benchmark nets.nd.sparse.dot on a sparse first layer: forward and weight gradient.

A CSR batch (512 x 1,000,000, 30 non-zeros per row, column frequencies Zipf-like over a
permuted id space) against a 1,000,000 x 64 float32 weight:

- ``csr . dense``       forward ``X @ W``              vs scipy ``X @ W``
- ``csr . dense.T``     forward, FullyConnected layout  vs scipy ``X @ Wfc.T``
- ``csr.T . dense``     weight gradient ``X.T @ G``     vs scipy ``X.T @ G``, which is the
  dense computation: it writes a dense 1,000,000 x 64 result (256 MB). nets returns a
  row_sparse array holding only the touched rows. (A dense-batch GEMM would need a 2 GB
  dense X and 32 GFLOP per call; it is not run.)

PyTorch ``torch.sparse.mm`` is timed too when torch is importable. Each callable is run
once to warm up (numba compiles), then ``--reps`` times: median/min/max in ms. Prints a
table and one JSON line. ``--quick`` shrinks the problem 10x for a smoke run.
"""
import argparse
import json
import os
import platform
import time

import numpy as np
import scipy.sparse as sp

from nets import nd


def make_batch(rows, cols, nnz_per_row, rng, exponent=1.0):
    """CSR rows of ``nnz_per_row`` distinct columns; column k's frequency ~ 1/rank^exponent."""
    cdf = np.cumsum(1.0 / np.arange(1, cols + 1) ** exponent)
    ids = rng.permutation(cols)  # the popular columns are spread over the id space
    draws = ids[np.searchsorted(cdf, rng.random((rows, 3 * nnz_per_row)) * cdf[-1])]
    picked = [np.sort(np.fromiter(dict.fromkeys(r.tolist()), np.int64)[:nnz_per_row])
              for r in draws]  # the first distinct draws of each row
    indptr = np.concatenate(([0], np.cumsum([len(p) for p in picked])))
    data = rng.uniform(0.5, 1.5, indptr[-1]).astype(np.float32)
    return sp.csr_matrix((data, np.concatenate(picked), indptr), shape=(rows, cols))


def timeit(fn, reps):
    fn()  # warm-up: compiles numba kernels, touches memory
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return {"median_ms": float(np.median(times)), "min_ms": min(times), "max_ms": max(times)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="100,000 features, 128 rows")
    args = parser.parse_args()
    rows, cols, nnz, units = (128, 100_000, 30, 64) if args.quick else (512, 1_000_000, 30, 64)
    rng = np.random.default_rng(0)
    xs = make_batch(rows, cols, nnz, rng)
    w = rng.normal(size=(cols, units)).astype(np.float32)
    w_fc = np.ascontiguousarray(w.T)  # (units, in_units): MXNet's FullyConnected layout
    g = rng.normal(size=(rows, units)).astype(np.float32)
    x, wn, wn_fc, gn = nd.array(xs), nd.array(w), nd.array(w_fc), nd.array(g)
    dot = nd.sparse.dot

    grad = dot(x, gn, transpose_a=True)  # check the results once before timing
    np.testing.assert_allclose(dot(x, wn).asnumpy(), xs @ w, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dot(x, wn_fc, transpose_b=True).asnumpy(), xs @ w, rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(grad.data.asnumpy(), (xs.T @ g)[grad.indices.asnumpy()],
                               rtol=1e-4, atol=1e-4)
    assert len(grad.indices.asnumpy()) == len(np.unique(xs.indices))

    cases = {
        "csr.dense": {"nets": lambda: dot(x, wn), "scipy": lambda: xs @ w},
        "csr.dense.T (FC layout)": {"nets": lambda: dot(x, wn_fc, transpose_b=True),
                                    "scipy": lambda: xs @ w_fc.T},
        "csr.T.dense -> row_sparse": {"nets": lambda: dot(x, gn, transpose_a=True),
                                      "scipy (dense 1M x 64 out)": lambda: xs.T @ g},
    }
    try:
        import torch
        xt = torch.sparse_csr_tensor(torch.from_numpy(xs.indptr.astype(np.int64)),
                                     torch.from_numpy(xs.indices.astype(np.int64)),
                                     torch.from_numpy(xs.data), size=xs.shape)
        xt_t = xt.to_sparse_coo().t().coalesce()
        wt, gt = torch.from_numpy(w), torch.from_numpy(g)
        cases["csr.dense"]["torch.sparse.mm"] = lambda: torch.sparse.mm(xt, wt)
        cases["csr.T.dense -> row_sparse"]["torch.sparse.mm (dense out)"] = (
            lambda: torch.sparse.mm(xt_t, gt))
        torch_note = f"torch {torch.__version__}, {torch.get_num_threads()} threads"
    except ImportError:
        torch_note = "torch not installed: skipped"

    results = {case: {name: timeit(fn, args.reps) for name, fn in impls.items()}
               for case, impls in cases.items()}
    touched = int(grad.indices.shape[0])
    print(f"X: {rows} x {cols:,} CSR, {xs.nnz:,} nnz ({touched:,} distinct columns); "
          f"weight {cols:,} x {units} float32; {args.reps} reps; "
          f"{os.cpu_count()} CPUs; {torch_note}")
    print(f"{'case':28s} {'implementation':28s} {'median ms':>10s} {'min':>9s} {'max':>9s}")
    for case, impls in results.items():
        for name, r in impls.items():
            print(f"{case:28s} {name:28s} {r['median_ms']:10.3f} {r['min_ms']:9.3f} "
                  f"{r['max_ms']:9.3f}")

    def ratio(case, ref):
        return results[case][ref]["median_ms"] / results[case]["nets"]["median_ms"]
    ratios = {"csr.dense: scipy/nets": ratio("csr.dense", "scipy"),
              "csr.dense.T: scipy/nets": ratio("csr.dense.T (FC layout)", "scipy"),
              "csr.T.dense: dense/nets": ratio("csr.T.dense -> row_sparse",
                                               "scipy (dense 1M x 64 out)")}
    for name, value in ratios.items():
        print(f"speed-up {name}: {value:.1f}x")
    print(f"weight gradient memory: row_sparse {grad.nbytes / 1e6:.2f} MB vs dense "
          f"{cols * units * 4 / 1e6:.0f} MB")
    print(json.dumps({"bench": "dot", "rows": rows, "cols": cols, "units": units, "nnz": xs.nnz,
                      "touched_cols": touched, "reps": args.reps, "cpus": os.cpu_count(),
                      "machine": platform.processor() or platform.machine(),
                      "torch": torch_note, "results": results, "speedups": ratios}))


if __name__ == "__main__":
    main()
