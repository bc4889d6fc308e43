"""Benchmark LibSVM parsing: nets.data.load_libsvm and a full LibSVMIter pass.

A 200,000-row file with 30 non-zeros per row over 1,000,000 features (power-law feature
frequencies, float32 values in (0, 1): ``nets.test_utils.make_sparse_dataset``) is written
once into a temporary folder with ``save_libsvm``. Timed, each as MB/s and rows/s:

- ``read bytes``              reading the file into memory (the I/O floor)
- ``load_libsvm``             the whole file -> CSR + labels, on ``nets.get_num_threads()``
                              threads (``NETS_NUM_THREADS`` sets it)
- ``load_libsvm 1 thread``    the same on one thread (does the parallel parse pay?)
- ``LibSVMIter pass``         every batch of 512 rows (CSR data, dense labels), 8 MB blocks
- ``sklearn``                 ``sklearn.datasets.load_svmlight_file``, when importable

Each case runs once to warm up (numba compiles; the file enters the page cache), then
``--reps`` times: median/min/max. Prints a table and one JSON line. ``--quick`` shrinks the
file 10x for a smoke run.
"""
import argparse
import json
import os
import platform
import tempfile
import time

import numpy as np

import nets
from nets import data
from nets.test_utils import make_sparse_dataset


def timeit(fn, reps):
    fn()  # warm-up
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return {"median_s": float(np.median(times)), "min_s": min(times), "max_s": max(times)}


def one_thread(fn):
    def run():
        threads = nets.get_num_threads()
        nets.set_num_threads(1)
        try:
            return fn()
        finally:
            nets.set_num_threads(threads)
    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="20,000 rows")
    args = parser.parse_args()
    rows, features, nnz, batch = (20_000 if args.quick else 200_000), 1_000_000, 30, 512
    X, y, _ = make_sparse_dataset(rows, features, nnz, seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.svm")
        start = time.perf_counter()
        data.save_libsvm(path, X, y)
        save_s = time.perf_counter() - start
        size = os.path.getsize(path)

        X2, y2 = data.load_libsvm(path, n_features=features, zero_based=True)  # check once
        assert np.array_equal(X2._indptr, X._indptr) and np.array_equal(X2._indices, X._indices)
        assert np.array_equal(X2._data, X._data) and np.array_equal(y2.asnumpy(), y.asnumpy())

        def read():
            with open(path, "rb") as f:
                return f.read()

        def load():
            return data.load_libsvm(path, n_features=features, zero_based=True)

        def iterate():
            it = data.LibSVMIter(data_libsvm=path, data_shape=(features,), batch_size=batch)
            return sum(1 for _ in it)

        cases = {"read bytes": read, "load_libsvm": load, "load_libsvm 1 thread": one_thread(load),
                 "LibSVMIter pass": iterate}
        try:
            from sklearn.datasets import load_svmlight_file
            cases["sklearn"] = lambda: load_svmlight_file(path, n_features=features,
                                                          zero_based=True, dtype=np.float32)
            sklearn_note = "sklearn.datasets.load_svmlight_file"
        except ImportError:
            sklearn_note = "scikit-learn not installed: skipped"
        results = {}
        for name, fn in cases.items():
            r = timeit(fn, args.reps)
            r["MB_per_s"] = size / 1e6 / r["median_s"]
            r["rows_per_s"] = rows / r["median_s"]
            results[name] = r

    print(f"file: {rows:,} rows x {features:,} features, {nnz} nnz/row, {size / 1e6:.1f} MB "
          f"(save_libsvm {save_s:.2f} s); {args.reps} reps; threads {nets.get_num_threads()}; "
          f"{sklearn_note}")
    print(f"{'case':24s} {'median s':>9s} {'min':>8s} {'max':>8s} {'MB/s':>8s} {'rows/s':>11s}")
    for name, r in results.items():
        print(f"{name:24s} {r['median_s']:9.3f} {r['min_s']:8.3f} {r['max_s']:8.3f} "
              f"{r['MB_per_s']:8.1f} {r['rows_per_s']:11,.0f}")
    ratios = {"parallel speed-up (1 thread / threads)":
              results["load_libsvm 1 thread"]["median_s"] / results["load_libsvm"]["median_s"]}
    if "sklearn" in results:
        ratios["sklearn / load_libsvm"] = (results["sklearn"]["median_s"]
                                           / results["load_libsvm"]["median_s"])
    for name, value in ratios.items():
        print(f"{name}: {value:.2f}x")
    print(json.dumps({"bench": "libsvm", "rows": rows, "features": features, "nnz_per_row": nnz,
                      "bytes": size, "save_s": save_s, "reps": args.reps,
                      "cpus": os.cpu_count(), "threads": nets.get_num_threads(),
                      "machine": platform.processor() or platform.machine(),
                      "sklearn": sklearn_note, "results": results, "ratios": ratios}))


if __name__ == "__main__":
    main()
