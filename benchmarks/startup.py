"""What the benchmarks that time whole ``nets`` commands (``bench_vw``, ``bench_coldstart``)
share: their child processes run nets from this checkout, started as an installed nets
starts, with the bytecode of every module present.

``pip install`` compiles a package's bytecode (``__pycache__/*.pyc`` beside each module) at
install, so an installed nets never compiles its Python source when it starts. A checkout
may hold no bytecode, and where ``PYTHONDONTWRITEBYTECODE`` is set (some machines set it
for every process, and children inherit it) a process writes none either: every timed
command would then compile each nets module it imports from source, each time. So
``compile_bytecode`` compiles the package first (``python -m compileall``, as pip does),
once, untimed, and ``check_bytecode`` runs a command under ``python -v`` to show that no
module it imports (nets' or any other package's) is compiled from source.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "nets")

# what ``python -v`` prints for a module it compiles from source (no up-to-date .pyc): the
# source path, unquoted; a module loaded from bytecode prints the .pyc path, quoted
_FROM_SOURCE = re.compile(r"^# code object from (\S+\.py)$", re.MULTILINE)


def child_env(env=None, **extra):
    """``env`` (default ``os.environ``) with this checkout first on ``PYTHONPATH`` (so that
    ``python -m nets`` runs this checkout's nets from any working folder) and ``extra``."""
    env = dict(os.environ if env is None else env, **extra)
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in
                                                  env.get("PYTHONPATH", "").split(os.pathsep)
                                                  if p])
    return env


def compile_bytecode(py=sys.executable):
    """Compile every module of this checkout's nets into ``__pycache__`` beside its source,
    as ``pip install`` does (idempotent: an up-to-date .pyc is kept)."""
    subprocess.run([py, "-m", "compileall", "-q", PACKAGE], check=True,
                   stdout=subprocess.DEVNULL)


def check_bytecode(argv, env):
    """Run ``argv`` (``[python, ...]``) under ``python -v`` and raise ``SystemExit`` naming
    the modules it compiled from source, if any: a timed run of it would pay what an
    installed package never does."""
    done = subprocess.run([argv[0], "-v"] + list(argv[1:]), env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n"
                         f"{done.stderr[-2000:]}")
    compiled = _FROM_SOURCE.findall(done.stderr)
    if compiled:
        raise SystemExit(f"{' '.join(argv)} compiled {len(compiled)} modules from source "
                         f"(no bytecode), e.g. {compiled[:5]}: run `python -m compileall` "
                         f"on their packages first")
