"""Run one compat program under a given Python, as MXNet (the program as written)
or as nets (the program renamed by ``rename.py``), on data written by
``make_data.py``, and return its ``RESULT`` line.

The program files (the five programs and their helper ``census.py``) are copied —
renamed when running nets — into a work directory, and the program runs there (its
checkpoints land there too), so ``wide_deep_inference`` finds what ``wide_deep``
saved when both run with the same work directory, in that order.

Usage::

    python tests/compat/compat_runner.py PROGRAM --data DIR [--python PY] [--nets]
        [--workdir DIR] [--seed N] [-- extra program arguments]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
#: The checkout whose ``nets`` the renamed programs import: this one, unless
#: ``COMPAT_NETS_ROOT`` names another checkout.
NETS_ROOT = os.path.abspath(os.environ.get("COMPAT_NETS_ROOT", ROOT))
sys.path.insert(0, HERE)

from rename import rename

#: Program name -> its inputs in the data directory (``{d}``) and work directory
#: (``{w}``); ``seeded`` programs take ``--seed`` for their initialization.
PROGRAMS = {
    "linear_classification": {
        "args": ["--data-train", "{d}/linear.train", "--data-test", "{d}/linear.test"],
        "seeded": True},
    "factorization_machine": {
        "args": ["--data-train", "{d}/fm.train", "--data-test", "{d}/fm.test"],
        "seeded": True},
    "matrix_factorization": {
        "args": ["--data-train", "{d}/ratings.train", "--data-test", "{d}/ratings.test"],
        "seeded": True},
    "wide_deep": {
        "args": ["--data-train", "{d}/adult.data", "--data-test", "{d}/adult.test",
                 "--model-prefix", "{w}/checkpoint"],
        "seeded": True},
    "wide_deep_inference": {
        "args": ["--data-test", "{d}/adult.test", "--model-prefix", "{w}/checkpoint"],
        "seeded": False},
}
#: Files every program may import besides itself.
HELPERS = ["census.py"]
#: Wall-clock limit of one program run, in seconds.
TIMEOUT = 900


def prepare(workdir, nets):
    """Copy (``nets``: rename) every program and helper file into ``workdir``."""
    os.makedirs(workdir, exist_ok=True)
    for name in list(PROGRAMS) + [h[:-3] for h in HELPERS]:
        with open(os.path.join(HERE, name + ".py")) as f:
            text = f.read()
        with open(os.path.join(workdir, name + ".py"), "w") as f:
            f.write(rename(text) if nets else text)


def run_program(name, data_dir, python=sys.executable, nets=False, workdir=None, seed=None,
                extra=(), timeout=TIMEOUT):
    """Run program ``name``; return ``{"rc", "result" (dict or None), "output"}``.

    ``nets=True`` runs the renamed program with ``NETS_ROOT``'s ``nets`` first on the path;
    otherwise the program runs as written (give the MXNet venv's ``python``)."""
    spec = PROGRAMS[name]
    workdir = os.path.abspath(workdir or tempfile.mkdtemp(prefix="compat_"))
    prepare(workdir, nets)
    data_dir = os.path.abspath(data_dir)
    argv = [a.format(d=data_dir, w=workdir) for a in spec["args"]]
    if seed is not None and spec["seeded"]:
        argv += ["--seed", str(seed)]
    env = dict(os.environ)
    if nets:
        env["PYTHONPATH"] = os.pathsep.join([NETS_ROOT] + [p for p in [env.get("PYTHONPATH")]
                                                           if p])
        env.setdefault("NUMBA_CACHE_DIR", os.path.join(ROOT, ".numba_cache"))
    try:
        proc = subprocess.run([python, os.path.join(workdir, name + ".py")]
                              + argv + list(extra),
                              cwd=workdir, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=timeout)
        rc, output = proc.returncode, proc.stdout
    except subprocess.TimeoutExpired as e:
        rc, output = -1, (e.stdout or "") + "\nTIMEOUT after %d s" % timeout
        output = output.decode() if isinstance(output, bytes) else output
    result = None
    for line in output.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT "):])
    return {"rc": rc, "result": result, "output": output}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("program", choices=sorted(PROGRAMS))
    parser.add_argument("--data", required=True, help="directory written by make_data.py")
    parser.add_argument("--python", default=sys.executable, help="interpreter to run it")
    parser.add_argument("--nets", action="store_true", help="run the renamed program")
    parser.add_argument("--workdir", default=None, help="where to copy and run it")
    parser.add_argument("--seed", type=int, default=None, help="initialization seed")
    args, extra = parser.parse_known_args()
    extra = [a for a in extra if a != "--"]
    out = run_program(args.program, args.data, args.python, args.nets, args.workdir,
                      args.seed, extra)
    sys.stdout.write(out["output"])
    sys.exit(out["rc"])


if __name__ == "__main__":
    main()
