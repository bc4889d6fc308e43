"""Run each MXNet-style compat program (tests/compat) under MXNet 1.9.1 and, renamed,
under nets, in one run on the same data, and compare metric and time per epoch.

MXNet runs the programs as written with the MXNet venv's python (``--mxnet-python``,
default ``/work/mxnet-venv/bin/python``; create it with ``benchmarks/mxnet_venv.sh``);
the MXNet side is skipped, with a message, when that interpreter is absent. nets runs
the renamed programs with this checkout's ``nets``. A program that stops shows its
last error line instead of numbers. ``epoch_time_s`` is each program's median
training time per epoch (for ``wide_deep_inference``: one pass over the test data);
ratio = nets / MXNet (below 1: nets is faster). ``--repeat R`` runs R rounds, each
running every program under both frameworks (which one goes first alternates from round to
round), and reports the median time per epoch of each side and the median and range of the
R per-round ratios: on a shared machine one run's ratio moves with the load. Prints a table
and one JSON line. ``COMPAT_NETS_ROOT=DIR`` runs another checkout's nets.

``--mxnet-example DIR`` instead times MXNet 1.9.1's own factorization machine program: DIR
holds the files of its ``example/sparse/factorization_machine`` (``train.py``,
``model.py``, ``metric.py``; MXNet's, kept outside this project: ``for f in train.py
model.py metric.py; do git -C MXNET_REPO show
1.9.1:example/sparse/factorization_machine/$f > DIR/$f; done``). It writes Criteo-style
LibSVM files (``make_criteo``: label 0/1, 13 numeric and 26 categorical fields, ids below
the example's 10^6 features), copies the files into a work directory per framework (for
nets renamed by ``tests/compat/rename.py``) and runs ``train.py`` with its defaults under
each framework through a wrapper that times every pass over its training iterator (the
first ``LibSVMIter`` it makes): ``epoch_time_s`` is the median of those passes.
``--kvstore none`` (the default) runs it without a store, every step squaring the whole
factor table; the example offers only ``local`` and ``dist_async``, so its copies get one
edit: ``none`` is accepted and makes no store. ``--kvstore local`` runs the example
unedited. The metric is the example's own last eval log-loss. ``--phases`` also splits
each epoch into the steps of the example's loop (the iterator's ``next``,
``Module.prepare``, ``forward_backward``, ``update``, ``update_metric``; ``other``: the
rest, its ``Speedometer`` and loop; each the median over the passes), each step followed
by ``nd.waitall()`` so that MXNet's asynchronous engine work is counted in the step that
queued it; that wait also stops MXNet from overlapping steps, so its epochs are then
longer than without ``--phases``.

Usage: ``python benchmarks/bench_compat.py [--mxnet-python PY] [--programs a,b] [--repeat R]``
``python benchmarks/bench_compat.py --mxnet-example DIR [--kvstore none|local] [--rows N]
[--num-epoch E] [--phases] [--repeat R]``
"""
import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "compat"))

from compat_runner import NETS_ROOT, PROGRAMS, run_program
from make_data import make_all
from rename import rename

#: MXNet's factorization machine example: its files, and its --input-size default.
EXAMPLE_FILES = ("train.py", "model.py", "metric.py")
EXAMPLE_FEATURES = 1000000
#: The example's kvstore line and choices, and what its copies read instead (``none``: no
#: store).
KV_EDITS = [("    kv = mx.kvstore.create(kvstore)\n",
             "    kv = None if kvstore == 'none' else mx.kvstore.create(kvstore)\n"),
            ('choices=["dist_async", "local"]', 'choices=["dist_async", "local", "none"]')]
#: Runs the example's train.py as __main__ (argv: framework, "phases" or "whole", then the
#: example's arguments) and prints the time of every pass over the first LibSVMIter it makes
#: (its training data): from the pass's first batch request to its end. With "phases" it
#: also prints, for each pass, the time of each step of the training loop (the iterator's next,
#: Module.prepare, forward_backward, update, update_metric), each followed by a wait for
#: all pending work (``nd.waitall``) so that an engine's asynchronous work is counted in
#: the step that queued it.
TIMED_RUN = """import json, runpy, sys, time
framework = __import__(sys.argv.pop(1))
split = sys.argv.pop(1) == "phases"
times, made, phases, passes, training = [], [], {}, [], [False]
make = framework.io.LibSVMIter


def phase(name, fn, *args, **kwargs):
    if not (split and training[0]):
        return fn(*args, **kwargs)
    tic = time.perf_counter()
    try:
        return fn(*args, **kwargs)
    finally:
        framework.nd.waitall()
        phases[name] = phases.get(name, 0.0) + time.perf_counter() - tic


class Timed:
    def __init__(self, it):
        self._it, self._tic = it, None

    def __getattr__(self, name):
        return getattr(self._it, name)

    def __iter__(self):
        return self

    def __next__(self):
        if self._tic is None:
            self._tic, training[0] = time.perf_counter(), True
        try:
            return phase("next", next, self._it)
        except StopIteration:
            times.append(time.perf_counter() - self._tic)
            passes.append(dict(phases))
            phases.clear()
            self._tic, training[0] = None, False
            raise

    def reset(self):
        self._tic, training[0] = None, False
        phases.clear()
        self._it.reset()


def libsvm_iter(*args, **kwargs):
    made.append(make(*args, **kwargs))
    return Timed(made[0]) if len(made) == 1 else made[-1]


def timed_method(name):
    real = getattr(framework.mod.Module, name)

    def method(self, *args, **kwargs):
        return phase(name, real, self, *args, **kwargs)
    return method


framework.io.LibSVMIter = libsvm_iter
for name in ("prepare", "forward_backward", "update", "update_metric"):
    setattr(framework.mod.Module, name, timed_method(name))
sys.argv[0] = "train.py"
runpy.run_path("train.py", run_name="__main__")
print("EPOCH_TIMES " + json.dumps(times))
if split:
    print("PHASES " + json.dumps(passes))
"""
#: The training loop's steps that ``--phases`` times, in the loop's order.
PHASES = ("next", "prepare", "forward_backward", "update", "update_metric")


def last_error(output):
    lines = [ln for ln in output.strip().splitlines() if ln.strip()]
    return lines[-1][:120] if lines else "no output"


def run_side(names, data, python, nets, seed):
    """{program: result dict or {'error': last line}} for one framework."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="bench_compat_") as workdir:
        for name in names:
            res = run_program(name, data, python=python, nets=nets, workdir=workdir,
                              seed=seed)
            out[name] = res["result"] if res["result"] is not None else {
                "error": last_error(res["output"])}
            print("  %-6s %-22s %s" % ("nets" if nets else "mxnet", name, out[name]),
                  file=sys.stderr, flush=True)
    return out


def make_criteo(path, rows, seed):
    """Criteo-style LibSVM file: label 0/1 (about a fifth 1), then fields 1-13 numeric
    (``log1p`` of exponential counts, 4 decimals) and one feature of value 1 from each of 26
    categorical fields, each field a range of ids with Zipf-like popularity (a few frequent
    values, a long tail); ids 1-based, below ``EXAMPLE_FEATURES``. The label is drawn from a
    logistic model of the features."""
    rng = np.random.default_rng(seed)
    bounds = np.linspace(14, EXAMPLE_FEATURES, 27).astype(np.int64)
    weight = rng.normal(0.0, 1.0, EXAMPLE_FEATURES)
    with open(path, "w") as f:
        for start in range(0, rows, 10000):
            n = min(10000, rows - start)
            num = np.round(np.log1p(rng.exponential(5.0, (n, 13))), 4)
            cat = np.stack([lo + np.minimum(rng.zipf(1.3, n) - 1, hi - lo - 1)
                            for lo, hi in zip(bounds[:-1], bounds[1:])], axis=1)
            logit = 0.1 * num @ weight[1:14] + 0.3 * weight[cat].sum(1) - 1.2
            label = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(int)
            head = ["%d " % y + " ".join("%d:%g" % (j + 1, v) for j, v in enumerate(r))
                    for y, r in zip(label, num)]
            f.writelines(h + "".join(" %d:1" % c for c in row) + "\n"
                         for h, row in zip(head, cat))


def example_workdir(src, dst, nets, kvstore):
    """Copy MXNet's example files from ``src`` into ``dst`` (renamed for nets), with the
    ``none`` store edit when ``kvstore`` is ``none``, plus the timing wrapper."""
    os.makedirs(dst)
    for name in EXAMPLE_FILES:
        with open(os.path.join(src, name)) as f:
            text = f.read()
        if name == "train.py" and kvstore == "none":
            for old, new in KV_EDITS:
                if old not in text:
                    sys.exit("--mxnet-example: %s/train.py lacks %r: not MXNet 1.9.1's "
                             "example?" % (src, old.strip()))
                text = text.replace(old, new)
        with open(os.path.join(dst, name), "w") as f:
            f.write(rename(text) if nets else text)
    with open(os.path.join(dst, "timed_run.py"), "w") as f:
        f.write(TIMED_RUN)


def run_example(workdir, python, nets, data, args):
    """One run of the example: ``{"value": eval log-loss, "epoch_time_s", "epoch_times_s"}``,
    or ``{"error": last line}``."""
    env = dict(os.environ)
    if nets:
        env["PYTHONPATH"] = os.pathsep.join([NETS_ROOT] + [p for p in [env.get("PYTHONPATH")]
                                                           if p])
        env.setdefault("NUMBA_CACHE_DIR", os.path.join(NETS_ROOT, ".numba_cache"))
    argv = [python, "timed_run.py", "nets" if nets else "mxnet",
            "phases" if args.phases else "whole", "--data-train", os.path.join(data, "train.svm"),
            "--data-test", os.path.join(data, "test.svm"),
            "--num-epoch", str(args.num_epoch), "--kvstore", args.kvstore]
    proc = subprocess.run(argv, cwd=workdir, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    times = [json.loads(ln.split(" ", 1)[1]) for ln in proc.stdout.splitlines()
             if ln.startswith("EPOCH_TIMES ")]
    losses = re.findall(r"eval log loss = ([0-9.eE+-]+)", proc.stdout)
    if proc.returncode or not times or not losses:
        return {"error": last_error(proc.stdout)}
    out = {"value": float(losses[-1]), "epoch_time_s": statistics.median(times[0]),
           "epoch_times_s": times[0]}
    for ln in proc.stdout.splitlines():
        if ln.startswith("PHASES "):  # each step's median time over the passes
            passes = json.loads(ln.split(" ", 1)[1])
            out["phases_s"] = {name: statistics.median(p.get(name, 0.0) for p in passes)
                               for name in PHASES}
            out["phases_s"]["other"] = statistics.median(
                t - sum(p.values()) for t, p in zip(times[0], passes))
    return out


def bench_example(args):
    """Time MXNet's factorization machine example under both frameworks (module docstring)."""
    missing = [n for n in EXAMPLE_FILES if not os.path.exists(os.path.join(args.mxnet_example,
                                                                           n))]
    if missing:
        sys.exit("--mxnet-example %s: missing %s" % (args.mxnet_example, ", ".join(missing)))
    if not os.path.exists(args.mxnet_python):
        sys.exit("--mxnet-python %s not found (create it with benchmarks/mxnet_venv.sh)"
                 % args.mxnet_python)
    work = tempfile.mkdtemp(prefix="bench_compat_example_")
    try:
        data = os.path.join(work, "data")
        os.makedirs(data)
        make_criteo(os.path.join(data, "train.svm"), args.rows, args.data_seed)
        make_criteo(os.path.join(data, "test.svm"), max(1000, args.rows // 10),
                    args.data_seed + 1)
        dirs = {}
        for side in ("mxnet", "nets"):
            dirs[side] = os.path.join(work, side)
            example_workdir(args.mxnet_example, dirs[side], side == "nets", args.kvstore)
        rounds = []
        for r in range(max(1, args.repeat)):
            res = {}
            for side in (("mxnet", "nets") if r % 2 == 0 else ("nets", "mxnet")):
                python = sys.executable if side == "nets" else args.mxnet_python
                res[side] = run_example(dirs[side], python, side == "nets", data, args)
                print("  %-6s round %d %s" % (side, r, res[side]), file=sys.stderr,
                      flush=True)
            rounds.append(res)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ok = [rd for rd in rounds if "epoch_time_s" in rd["mxnet"] and "epoch_time_s" in rd["nets"]]
    ratios = [rd["nets"]["epoch_time_s"] / rd["mxnet"]["epoch_time_s"] for rd in ok]
    head = "%-26s %-9s %9s %9s %11s %11s %7s %11s" % (
        "program", "metric", "MXNet", "nets", "MXNet s/ep", "nets s/ep", "ratio", "range")
    print(head)
    print("-" * len(head))
    last = rounds[-1]

    def cell(side, key, fmt):
        return fmt % last[side][key] if key in last[side] else "-"

    def median(side):
        times = [rd[side]["epoch_time_s"] for rd in ok]
        return "%.3f" % statistics.median(times) if times else "-"
    print("%-26s %-9s %9s %9s %11s %11s %7s %11s" % (
        "mxnet example fm (kv %s)" % args.kvstore, "log-loss", cell("mxnet", "value", "%.5f"),
        cell("nets", "value", "%.5f"), median("mxnet"), median("nets"),
        "%.2f" % statistics.median(ratios) if ratios else "-",
        "%.2f-%.2f" % (min(ratios), max(ratios)) if len(ratios) > 1 else "-"))
    for side in ("mxnet", "nets"):
        if "error" in last[side]:
            print("    %s stopped: %s" % (side, last[side]["error"]))
    if args.phases and ok:
        print("\nper epoch, each step followed by a wait for all pending work:")
        head = "%-18s %11s %11s %7s" % ("step", "MXNet s/ep", "nets s/ep", "ratio")
        print(head)
        print("-" * len(head))
        for name in PHASES + ("other",):
            t = {side: statistics.median(rd[side]["phases_s"][name] for rd in ok)
                 for side in ("mxnet", "nets")}
            print("%-18s %11.3f %11.3f %7s" % (name, t["mxnet"], t["nets"], "%.2f" % (
                t["nets"] / t["mxnet"]) if t["mxnet"] > 0 else "-"))
    print(json.dumps({"benchmark": "compat_mxnet_example", "program": "factorization_machine",
                      "kvstore": args.kvstore, "phases": args.phases, "rows": args.rows,
                      "num_epoch": args.num_epoch,
                      "data_seed": args.data_seed, "machine": platform.machine(),
                      "cpus": os.cpu_count(), "repeat": len(rounds), "rounds": rounds,
                      "ratios": ratios,
                      "ratio": statistics.median(ratios) if ratios else None}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mxnet-python", default="/work/mxnet-venv/bin/python")
    parser.add_argument("--programs", default=",".join(PROGRAMS),
                        help="comma-separated subset (wide_deep_inference needs wide_deep)")
    parser.add_argument("--data-seed", type=int, default=0)
    parser.add_argument("--seed", type=int, default=1, help="initialization seed")
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds of both frameworks, alternating which goes first")
    parser.add_argument("--mxnet-example", metavar="DIR",
                        help="time MXNet's factorization machine example from DIR instead")
    parser.add_argument("--kvstore", choices=["none", "local"], default="none",
                        help="--mxnet-example: the example's --kvstore")
    parser.add_argument("--rows", type=int, default=100000,
                        help="--mxnet-example: training rows (test: a tenth)")
    parser.add_argument("--num-epoch", type=int, default=3,
                        help="--mxnet-example: the example's --num-epoch")
    parser.add_argument("--phases", action="store_true",
                        help="--mxnet-example: also time each step of the training loop "
                             "(each followed by a wait for all pending work)")
    args = parser.parse_args()
    if args.mxnet_example:
        bench_example(args)
        return
    names = [n for n in args.programs.split(",") if n]
    with tempfile.TemporaryDirectory(prefix="bench_compat_data_") as data:
        make_all(data, args.data_seed)

        have_mxnet = os.path.exists(args.mxnet_python)
        if not have_mxnet:
            print("MXNet side skipped: %s not found (create it with benchmarks/mxnet_venv.sh)"
                  % args.mxnet_python)
        rounds = []  # [(mxnet results, nets results)] per round
        for r in range(max(1, args.repeat)):
            sides = {}
            for side in (("mxnet", "nets") if r % 2 == 0 else ("nets", "mxnet")):
                if side == "nets":
                    sides[side] = run_side(names, data, sys.executable, True, args.seed)
                elif have_mxnet:
                    sides[side] = run_side(names, data, args.mxnet_python, False, args.seed)
                else:
                    sides[side] = {n: {"error": "skipped"} for n in names}
            rounds.append((sides["mxnet"], sides["nets"]))

    head = "%-22s %-14s %12s %12s %12s %12s %7s %11s" % (
        "program", "metric", "MXNet", "nets", "MXNet s/ep", "nets s/ep", "ratio", "range")
    print(head)
    print("-" * len(head))
    rows = []
    for name in names:
        m, n = rounds[-1][0][name], rounds[-1][1][name]
        metric = m.get("metric") or n.get("metric") or "-"
        times = {side: [rd[k][name]["epoch_time_s"] for rd in rounds
                        if "epoch_time_s" in rd[k][name]]
                 for k, side in ((0, "mxnet"), (1, "nets"))}
        ratios = [rd[1][name]["epoch_time_s"] / rd[0][name]["epoch_time_s"] for rd in rounds
                  if "epoch_time_s" in rd[0][name] and "epoch_time_s" in rd[1][name]]
        ratio = statistics.median(ratios) if ratios else None
        rows.append({"program": name, "metric": metric, "mxnet": m, "nets": n,
                     "mxnet_epoch_times_s": times["mxnet"], "nets_epoch_times_s": times["nets"],
                     "ratios": ratios, "ratio": ratio})

        def num(d, key, fmt):
            return fmt % d[key] if key in d else "-"

        def median(side, times=times):
            return "%.3f" % statistics.median(times[side]) if times[side] else "-"
        print("%-22s %-14s %12s %12s %12s %12s %7s %11s" % (
            name, metric[:14], num(m, "value", "%.5f"), num(n, "value", "%.5f"),
            median("mxnet"), median("nets"), "%.2f" % ratio if ratio is not None else "-",
            "%.2f-%.2f" % (min(ratios), max(ratios)) if len(ratios) > 1 else "-"))
        for side, d in (("MXNet", m), ("nets", n)):
            if "error" in d and d["error"] != "skipped":
                print("    %s stopped: %s" % (side, d["error"]))
    print(json.dumps({"benchmark": "compat", "machine": platform.machine(),
                      "cpus": os.cpu_count(), "data_seed": args.data_seed,
                      "init_seed": args.seed, "repeat": len(rounds), "rows": rows}))


if __name__ == "__main__":
    main()
