"""Record MXNet 1.9.1's metrics and epoch times for the compat programs into
``mxnet_reference.json`` (beside this file).

Writes the data with ``make_data.py`` (``--data-seed``) into a temporary directory,
runs every program as written under ``--python`` (an MXNet 1.9.1 venv, made by
``benchmarks/mxnet_venv.sh``) once per initialization seed, and stores for each
program the metric of every seed, their mean and standard deviation (the noise that
``test_compat_programs.py`` allows for) and the median epoch time.

Usage: ``python tests/compat/reference.py --python /work/mxnet-venv/bin/python``
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from compat_runner import PROGRAMS, run_program
from make_data import SIZES, make_all

REFERENCE = os.path.join(HERE, "mxnet_reference.json")
SEEDS = (1, 2, 3)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", required=True, help="python of the MXNet 1.9.1 venv")
    parser.add_argument("--data-seed", type=int, default=0)
    parser.add_argument("--out", default=REFERENCE)
    args = parser.parse_args()
    version = subprocess.run([args.python, "-c", "import mxnet; print(mxnet.__version__)"],
                             stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
    data = tempfile.mkdtemp(prefix="compat_data_")
    make_all(data, args.data_seed)
    programs = {}
    for seed in SEEDS:
        workdir = tempfile.mkdtemp(prefix="compat_mxnet_")
        for name in PROGRAMS:
            out = run_program(name, data, python=args.python, workdir=workdir, seed=seed)
            if out["result"] is None:
                sys.exit("%s failed under MXNet (seed %d):\n%s"
                         % (name, seed, out["output"][-3000:]))
            entry = programs.setdefault(name, {"metric": out["result"]["metric"],
                                               "values": [], "epoch_times_s": []})
            entry["values"].append(out["result"]["value"])
            entry["epoch_times_s"].append(out["result"]["epoch_time_s"])
            print(name, seed, out["result"], flush=True)
    for entry in programs.values():
        entry["value"] = entry["values"][0]
        entry["mean"] = float(np.mean(entry["values"]))
        entry["std"] = float(np.std(entry["values"], ddof=1))
        entry["epoch_time_s"] = float(np.median(entry["epoch_times_s"]))
    record = {
        "mxnet_version": version,
        "command": "python tests/compat/reference.py --python %s" % args.python,
        "data_seed": args.data_seed,
        "init_seeds": list(SEEDS),
        "value_is": "the metric with the first init seed; mean/std over all init seeds",
        "sizes": SIZES,
        "machine": "%s, %d CPUs (shared with other jobs: times are indicative)"
                   % (platform.machine(), os.cpu_count()),
        "programs": programs,
    }
    with open(args.out, "w") as f:
        json.dump(record, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote", args.out)


if __name__ == "__main__":
    main()
