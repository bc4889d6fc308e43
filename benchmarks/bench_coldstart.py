"""Benchmark nets' start-up: a fresh install's first run (kernels compile) and a later one.

Every case runs in a new Python process, against a numba cache folder (``NUMBA_CACHE_DIR``)
that this script creates empty for each cold case. The workload is ``nets train`` on a
1,000-row LibSVM file (10,000 features, 30 non-zeros per row, power-law feature ids:
``nets.test_utils.make_sparse_dataset``) with AdaGrad for one epoch. Timed (wall clock of
the whole process, start-up included):

- ``import numpy, scipy``     the floor any numpy/scipy program pays
- ``import nets``
- ``nets train (cold)``       the first ``nets train`` of an install: every kernel the command
                              uses compiles (into an empty cache folder)
- ``nets train (warm)``       the same command again: the kernels load from the cache
- ``nets warmup (cold)``      compiling every kernel ahead, into an empty cache folder
- ``nets warmup (warm)``      the same again: everything loads
- ``load_libsvm first call``  in a process with a warm cache: the first ``load_libsvm`` of the
                              file (kernels load from the cache), and a second call (timed
                              inside the process: no CPU column)
- ``scikit-learn``            the reference: a fresh process doing the same job with
                              scikit-learn (``load_svmlight_file``, one epoch of
                              ``SGDClassifier(loss='log_loss')``, the model saved); skipped
                              when scikit-learn is not installed (``pip install -e ".[bench]"``)

The goal: the cold ``nets train`` within 2.5x scikit-learn's time, as a ratio of medians
measured in this run.

A fresh install is what ``pip install`` leaves: every module's bytecode present (numpy's,
numba's and the others' as installed; this checkout's nets compiled first, untimed, with
``python -m compileall``: ``startup.py``), numba's kernel cache empty. So no child compiles
Python source, even where ``PYTHONDONTWRITEBYTECODE`` is set (children inherit it); the
first rep checks it, running the warm ``nets train`` once more, untimed, under
``python -v``. (A private bytecode folder, ``PYTHONPYCACHEPREFIX``, would not do: Python
then reads every package's bytecode from that folder alone, so the first process to import
numpy, scipy or numba would compile them from source.) ``--reps`` repeats every case
(interleaved; each cold case with a new empty cache); ``nets warmup (cold)`` runs once unless
``--warmup-reps`` says more (0: none, e.g. to time a nets without ``nets warmup``). Prints a
table (median, min, max wall seconds; median CPU seconds of the process) and one JSON line.
"""
import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]  # nets from this checkout, not an installed one
import nets
import startup
from nets.test_utils import make_sparse_dataset

ROWS, FEATURES, NNZ = 1_000, 10_000, 30

SKLEARN = """
import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.linear_model import SGDClassifier
X, y = load_svmlight_file({path!r}, n_features={features})
X.indices, X.indptr = X.indices.astype(np.int32), X.indptr.astype(np.int32)  # (SGD's index type)
model = SGDClassifier(loss="log_loss", max_iter=1, tol=None).fit(X, y)
np.savez({out!r}, coef=model.coef_, intercept=model.intercept_)
"""
COLD_GOAL = 2.5  # the cold nets train within this many times scikit-learn's process

LOAD = """
import time
t0 = time.perf_counter()
from nets.data import load_libsvm
load_libsvm({path!r})
t1 = time.perf_counter()
load_libsvm({path!r})
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""


def cpu_children():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(argv, env, output=False):
    """``(wall, cpu)`` seconds of ``argv`` in a new process (and its stdout when
    ``output``). CPU seconds (user + system, every thread) move less than wall seconds when
    other processes share the machine."""
    start, cpu = time.perf_counter(), cpu_children()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True)
    elapsed = (time.perf_counter() - start, cpu_children() - cpu)
    if proc.returncode:
        sys.exit(f"{' '.join(argv)} failed:\n{proc.stderr}")
    return (elapsed, proc.stdout) if output else elapsed


def stats(times):
    wall = [t[0] for t in times]
    return {"median_s": float(np.median(wall)), "min_s": min(wall), "max_s": max(wall),
            "cpu_median_s": float(np.median([t[1] for t in times])), "reps": len(times)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--warmup-reps", type=int, default=1)
    args = parser.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="nets-coldstart-") as tmp:
        path = os.path.join(tmp, "small.svm")
        X, y, _ = make_sparse_dataset(ROWS, FEATURES, NNZ, seed=0)
        nets.data.save_libsvm(path, X, y)
        base = startup.child_env({k: v for k, v in os.environ.items()
                                  if k != "NUMBA_CACHE_DIR"}, TQDM_DISABLE="1")
        startup.compile_bytecode(py)
        caches = iter(range(1 << 30))

        def fresh():
            """The environment with a new, empty numba cache folder."""
            return {**base, "NUMBA_CACHE_DIR": os.path.join(tmp, f"cache{next(caches)}")}
        train = [py, "-m", "nets", "train", path, "--optimizer", "adagrad", "--epochs", "1"]
        times = {name: [] for name in ("import numpy, scipy", "import nets",
                                       "nets train (cold)", "nets train (warm)",
                                       "nets warmup (cold)", "nets warmup (warm)",
                                       "load_libsvm first call", "load_libsvm second call",
                                       "scikit-learn")}
        try:
            import sklearn  # noqa: F401  (only whether the reference can run)
            sklearn_argv = [py, "-c", SKLEARN.format(path=path, features=FEATURES,
                                                     out=os.path.join(tmp, "sk.npz"))]
        except ImportError:
            sklearn_argv = None
        for rep in range(max(args.reps, args.warmup_reps)):
            if rep < args.reps:
                env = fresh()
                times["import numpy, scipy"].append(
                    run([py, "-c", "import numpy, scipy"], env))
                times["import nets"].append(run([py, "-c", "import nets"], env))
                times["nets train (cold)"].append(run(train, env))
                times["nets train (warm)"].append(run(train, env))
                if rep == 0:
                    startup.check_bytecode(train, env)
                _, out = run([py, "-c", LOAD.format(path=path)], env, output=True)
                first, second = map(float, out.split())
                times["load_libsvm first call"].append((first, float("nan")))
                times["load_libsvm second call"].append((second, float("nan")))
                if sklearn_argv:
                    times["scikit-learn"].append(run(sklearn_argv, env))
            if rep < args.warmup_reps:
                env = fresh()
                times["nets warmup (cold)"].append(run([py, "-m", "nets", "warmup"], env))
                times["nets warmup (warm)"].append(run([py, "-m", "nets", "warmup"], env))
    results = {name: stats(t) for name, t in times.items() if t}
    print(f"{ROWS:,} rows x {FEATURES:,} features, {NNZ} non-zeros per row; "
          f"{os.cpu_count()} CPUs; nets {nets.__version__}, python {platform.python_version()}")
    print(f"{'case':<26}{'median s':>10}{'min s':>8}{'max s':>8}{'cpu s':>8}{'reps':>6}")
    for name, r in results.items():
        print(f"{name:<26}{r['median_s']:>10.2f}{r['min_s']:>8.2f}{r['max_s']:>8.2f}"
              f"{r['cpu_median_s']:>8.2f}{r['reps']:>6}")
    floor, warm = results["import numpy, scipy"], results["nets train (warm)"]
    print(f"warm nets train over import numpy, scipy: {warm['min_s'] - floor['min_s']:.2f} s "
          f"wall (fastest of each), {warm['cpu_median_s'] - floor['cpu_median_s']:.2f} s CPU "
          f"(medians)")
    goals = []
    if "scikit-learn" in results:
        ref = results["scikit-learn"]["median_s"]
        for case, goal in (("nets train (cold)", COLD_GOAL), ("nets train (warm)", None)):
            value = results[case]["median_s"] / ref
            goals.append({"what": f"{case} / scikit-learn", "value": value, "goal": goal,
                          "met": None if goal is None else value <= goal})
            print(f"{case} / scikit-learn: {value:.2f}x"
                  + ("" if goal is None else f"  (goal <= {goal}x: "
                     f"{'met' if value <= goal else 'not met'})"))
    else:
        print("scikit-learn not installed: no reference, no goal (pip install -e '.[bench]')")
    print(json.dumps({"bench": "coldstart", "rows": ROWS, "features": FEATURES,
                      "nnz_per_row": NNZ, "cpus": os.cpu_count(), "results": results,
                      "goals": goals}))


if __name__ == "__main__":
    main()
