"""End to end against Vowpal Wabbit: ``nets train`` against ``vw`` on one LibSVM workload.

The workload: logistic regression, one pass, over a train file of 400,000 rows x 1,000,000
features (30 distinct features a row, Zipf-distributed ids scattered over the id space,
values uniform in (0, 1) with 4 decimals: ``nets.data.make_sparse_dataset``) and a test file
of 100,000 rows drawn the same way. Labels are Bernoulli(sigmoid(x . w_true - 0.5)) for a
sparse ground-truth model: a random 10% of the features that occur at least 20 times in the
generated rows carry a N(0, 2^2) weight, the rest none (signal that one pass can learn).
Both files are written as LibSVM (for nets, ~167 MB for the train file) and in VW's own text
format (``-1 | 12:0.5 ...``, the same tokens: VW hashes a numeric feature name to the number
itself, so ``-b 20`` holds 1,000,000 features without collisions). Generation is not timed;
the files are cached under ``$TMPDIR/nets-bench-vw/<parameters>/`` (``--data-dir``).

Timed, for 1 CPU (``taskset -c 0``) and 2 CPUs (``taskset -c 0,1``; nets also gets
``NETS_NUM_THREADS`` to match), each as the wall time (and the CPU time) of a fresh process
running the whole command (start-up, parsing, training, saving the model):

- ``nets``: ``python -m nets train TRAIN.svm --features 1000000 --optimizer adagrad
  --epochs 1 --save M`` (the feature count as VW is told its ``-b``; the learning rate and
  batch size at AdaGrad's defaults);
- ``vw``: ``python -m vowpalwabbit -d TRAIN.vw --loss_function logistic --adaptive
  --invariant -l 0.1 -b 20 -f M --quiet``: the pip package's command line
  (``vowpalwabbit.Workspace`` over the arguments, which runs VW's own driver over ``-d``;
  the package ships no ``vw`` binary). ``-l`` is ``--vw-lr``: of 0.5 (VW's default), 0.2,
  0.1, 0.05 and 0.025, 0.1 gives the best test log-loss on this data;
- ``nets 1 row``, ``vw 1 row``: the same commands on the train file's first line alone,
  which times each command's fixed cost (start-up and what it loads).

The children run this checkout's nets (``PYTHONPATH``) as an installed nets starts: its
bytecode is compiled first (``python -m compileall``, untimed, as ``pip install`` does), so
no timed process compiles a nets module from source, even where ``PYTHONDONTWRITEBYTECODE``
is set (which children inherit); each tool's train command runs once untimed under
``python -v`` to check that it compiles no module from source (``startup.py``). Each
command then runs once untimed on each CPU count (numba's kernel cache and the page cache
warm up), and the tools' reps interleave, their order alternating. Test log-loss and AUC
come from each tool's predictions of the test file with the model of its last rep
(``nets predict``; ``vw -t -i M -p P``), computed here with numpy. Prints a table and one
JSON line.
"""
import argparse
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]  # nets from this checkout, not an installed one
import startup

SEED = 20261125


def data_files(args):
    """``{name: path}`` of the train/test files in both formats, generated once per set of
    parameters."""
    key = f"r{args.rows}-t{args.test_rows}-f{args.features}-n{args.nnz}-s{SEED}"
    folder = os.path.join(args.data_dir, key)
    paths = {name: os.path.join(folder, name)
             for name in ("train.svm", "test.svm", "train.vw", "test.vw")}
    if all(os.path.exists(p) for p in paths.values()):
        return _with_one_row(paths)
    os.makedirs(folder, exist_ok=True)
    from nets.data import make_sparse_dataset, save_libsvm
    from nets.nd import sparse
    from nets.serialization import write_atomically
    print(f"generating the data in {folder} ...", file=sys.stderr)
    n = args.rows + args.test_rows
    X, _, _ = make_sparse_dataset(n, args.features, args.nnz, seed=SEED)
    csr = X.asscipy()
    csr.data = np.clip(np.round(csr.data, 4), 1e-4, 0.9999).astype(np.float32)  # 4 decimals
    X = sparse.csr_matrix(csr)
    rng = np.random.default_rng(SEED + 1)
    seen = np.bincount(csr.indices, minlength=args.features)  # a model a pass can learn:
    support = (seen >= 20) & (rng.random(args.features) < 0.1)  # on recurring features
    w = np.where(support, rng.normal(0.0, 2.0, args.features), 0.0)
    logit = csr @ w - 0.5
    y = np.where(rng.random(n) < 1.0 / (1.0 + np.exp(-logit)), 1.0, -1.0)
    for name, rows in (("train", slice(0, args.rows)), ("test", slice(args.rows, n))):
        svm = paths[f"{name}.svm"]
        save_libsvm(svm, X[rows.start:rows.stop], y[rows])
        with open(svm, "rb") as f:  # VW's format: the same line, "label | features"
            text = f.read()
        vw_text = re.sub(rb"(?m)^(\S+)", rb"\1 |", text)  # "label i:v" -> "label | i:v"
        write_atomically(paths[f"{name}.vw"], lambda f, text=vw_text: f.write(text))
    return _with_one_row(paths)


def _with_one_row(paths):
    """``paths`` and ``one.svm``/``one.vw``: the train file's first line alone."""
    from nets.serialization import write_atomically
    for fmt in ("svm", "vw"):
        one = os.path.join(os.path.dirname(paths["train.svm"]), f"one.{fmt}")
        if not os.path.exists(one):
            with open(paths[f"train.{fmt}"], "rb") as f:
                line = f.readline()
            write_atomically(one, lambda f, line=line: f.write(line))
        paths[f"one.{fmt}"] = one
    return paths


def commands(paths, work, vw_lr, features):
    """``{tool: (train command, predict command or None, predictions file or None)}``: each
    tool on the train file, and on its first line alone (``... 1 row``: the command's fixed
    cost, start-up and whatever it loads, with next to no data)."""
    py = sys.executable
    nets_model, vw_model = os.path.join(work, "nets.npz"), os.path.join(work, "vw.model")
    nets_pred, vw_pred = os.path.join(work, "nets.pred"), os.path.join(work, "vw.pred")
    bits = max(1, (features - 1).bit_length())

    def nets(data, model):
        return [py, "-m", "nets", "train", data, "--features", str(features), "--optimizer",
                "adagrad", "--epochs", "1", "--save", model]

    def vw(data, model):
        return [py, "-m", "vowpalwabbit", "-d", data, "--loss_function", "logistic",
                "--adaptive", "--invariant", "-l", str(vw_lr), "-b", str(bits), "-f", model,
                "--quiet"]
    return {
        "nets": (nets(paths["train.svm"], nets_model),
                 [py, "-m", "nets", "predict", nets_model, paths["test.svm"], "--output",
                  nets_pred], nets_pred),
        "vw": (vw(paths["train.vw"], vw_model),
               [py, "-m", "vowpalwabbit", "-t", "-i", vw_model, "-d", paths["test.vw"],
                "-p", vw_pred, "--quiet"], vw_pred),
        "nets 1 row": (nets(paths["one.svm"], nets_model + ".one.npz"), None, None),
        "vw 1 row": (vw(paths["one.vw"], vw_model + ".one"), None, None),
    }


def run(cmd, cpus):
    """``(wall seconds, CPU seconds)`` of ``cmd`` in a fresh process pinned to ``cpus``
    CPUs; CPU time (user + system, of the process and its threads) is what other jobs on a
    shared machine disturb least."""
    env = startup.child_env(NETS_NUM_THREADS=str(cpus))
    pinned = ["taskset", "-c", ",".join(str(c) for c in range(cpus))] + cmd
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(pinned, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n"
                         f"{done.stderr.decode()[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def held_out(tool, pred_file, labels):
    """``(log-loss, AUC)`` of a tool's test predictions: nets writes probabilities, VW raw
    scores (logits)."""
    from scipy.stats import rankdata
    pred = np.loadtxt(pred_file, dtype=np.float64, usecols=0, ndmin=1)
    if tool == "vw":
        pred = 1.0 / (1.0 + np.exp(-pred))
    p = np.clip(pred, 1e-15, 1 - 1e-15)
    pos = labels > 0
    log_loss = float(-np.mean(np.where(pos, np.log(p), np.log1p(-p))))
    ranks = rankdata(pred)
    n_pos, n_neg = pos.sum(), (~pos).sum()
    auc = float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))
    return log_loss, auc


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--cpus", default="1,2", help="CPU counts to run, e.g. 1,2")
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--test-rows", type=int, default=100_000)
    parser.add_argument("--features", type=int, default=1_000_000)
    parser.add_argument("--nnz", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="40,000 + 10,000 rows")
    parser.add_argument("--vw-lr", type=float, default=0.1,
                        help="VW's -l (its default, 0.5, overshoots on this data)")
    parser.add_argument("--data-dir", default=os.path.join(tempfile.gettempdir(),
                                                           "nets-bench-vw"))
    args = parser.parse_args()
    if args.quick:
        args.rows, args.test_rows = args.rows // 10, args.test_rows // 10
    if shutil.which("taskset") is None:
        raise SystemExit("bench_vw needs taskset (util-linux) to pin the CPUs")
    paths = data_files(args)
    labels = np.loadtxt(paths["test.svm"], dtype=np.float64, usecols=0, ndmin=1)
    results = []
    startup.compile_bytecode()
    with tempfile.TemporaryDirectory() as work:
        cmds = commands(paths, work, args.vw_lr, args.features)
        for tool in ("nets", "vw"):
            startup.check_bytecode(cmds[tool][0], startup.child_env())
        for cpus in (int(c) for c in args.cpus.split(",")):
            times = {tool: [] for tool in cmds}
            cpu = {tool: [] for tool in cmds}
            ends = {tool: [] for tool in cmds}  # train + predict of one rep, end to end
            for train, _, _ in cmds.values():
                run(train, cpus)  # warm-up: numba's kernel cache, the page cache
            for rep in range(args.reps):
                order = list(cmds) if rep % 2 == 0 else list(cmds)[::-1]
                for tool in order:
                    wall, used = run(cmds[tool][0], cpus)
                    times[tool].append(wall)
                    cpu[tool].append(used)
                    predict = cmds[tool][1]
                    if predict is not None:  # this rep's model on the test file
                        ends[tool].append(wall + run(predict, cpus)[0])
            for tool, (_, predict, pred_file) in cmds.items():
                log_loss = auc = None
                if predict is not None:  # (the models of the last reps on the train file)
                    log_loss, auc = held_out(tool, pred_file, labels)
                t = times[tool]
                results.append({"tool": tool, "cpus": cpus, "median_s": float(np.median(t)),
                                "min_s": min(t), "max_s": max(t),
                                "cpu_median_s": float(np.median(cpu[tool])),
                                "end_to_end_s": float(np.median(ends[tool]))
                                if ends[tool] else None,
                                "test_log_loss": log_loss,
                                "test_auc": auc})
    size = os.path.getsize(paths["train.svm"]) / 1e6
    print(f"train {args.rows:,} rows x {args.features:,} features, {args.nnz} nnz/row "
          f"({size:.0f} MB LibSVM), test {args.test_rows:,} rows; {args.reps} reps; "
          f"{platform.processor() or platform.machine()}")
    print(f"{'cpus':>4}  {'tool':<10} {'wall s (median)':>15} {'min-max':>13} {'cpu s':>6} "
          f"{'train+predict s':>15} {'test log-loss':>13} {'AUC':>7}  {'vw / nets wall':>14}")
    goals = []
    for r in results:
        vw = next(v for v in results if v["tool"] == "vw" and v["cpus"] == r["cpus"])
        ratio = f"{vw['median_s'] / r['median_s']:.2f}x" if r["tool"] == "nets" else ""
        quality = (f"{r['test_log_loss']:>13.4f} {r['test_auc']:>7.4f}"
                   if r["test_log_loss"] is not None else f"{'':>13} {'':>7}")
        end = f"{r['end_to_end_s']:>15.2f}" if r["end_to_end_s"] is not None else f"{'':>15}"
        print(f"{r['cpus']:>4}  {r['tool']:<10} {r['median_s']:>15.2f} "
              f"{r['min_s']:>6.2f}-{r['max_s']:<6.2f} {r['cpu_median_s']:>6.2f} "
              f"{end} {quality}  {ratio:>14}")
        if r["tool"] == "nets" and r["end_to_end_s"] and vw["end_to_end_s"]:
            # the goal: end to end no slower than VW, at a log-loss no worse than VW's + 0.005
            value = vw["end_to_end_s"] / r["end_to_end_s"]
            close = r["test_log_loss"] <= vw["test_log_loss"] + 0.005
            goals.append({"what": f"{r['cpus']} CPU: VW / nets train+predict wall",
                          "value": value, "goal": 1.0, "log_loss_ok": close,
                          "met": value >= 1.0 and close})
    for g in goals:
        print(f"goal {g['what']}: {g['value']:.2f}x (>= 1x at log-loss <= VW's + 0.005: "
              f"{'met' if g['met'] else 'not met'})")
    print(json.dumps({"bench": "vw", "vw_lr": args.vw_lr, "rows": args.rows,
                      "test_rows": args.test_rows,
                      "features": args.features, "nnz": args.nnz, "train_mb": size,
                      "reps": args.reps, "results": results, "goals": goals}))


if __name__ == "__main__":
    main()
