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

Usage: ``python benchmarks/bench_compat.py [--mxnet-python PY] [--programs a,b] [--repeat R]``
"""
import argparse
import json
import os
import platform
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "compat"))

from compat_runner import PROGRAMS, run_program
from make_data import make_all


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mxnet-python", default="/work/mxnet-venv/bin/python")
    parser.add_argument("--programs", default=",".join(PROGRAMS),
                        help="comma-separated subset (wide_deep_inference needs wide_deep)")
    parser.add_argument("--data-seed", type=int, default=0)
    parser.add_argument("--seed", type=int, default=1, help="initialization seed")
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds of both frameworks, alternating which goes first")
    args = parser.parse_args()
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
