"""``nets warmup`` and the kernel cache state ``nets info`` reports (issue 26, item 1).

Each test runs ``nets`` in a new process with its own, empty ``NUMBA_CACHE_DIR``: what a
fresh install meets. The full warmup compiles every kernel twice over (float32 and float64),
too long for the suite; so one test checks, with numba off (kernels run as Python, fast),
that the warmup's steps call every kernel, and the others compile a small subset."""
import json
import os
import subprocess
import sys

from nets import cli

NOTICE = "nets: compiling kernels for first use (once; `nets warmup` does it ahead)"


def _python(code, cache, **env):
    """Run ``code`` in a new Python process whose numba cache is ``cache``."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "NUMBA_CACHE_DIR": str(cache),
                                            "TQDM_DISABLE": "1", **env})
    assert proc.returncode == 0, proc.stderr
    return proc


def _status(cache):
    """``kernels.cache.status()`` in a new process."""
    code = "import json; from nets.kernels import cache; print(json.dumps(cache.status()))"
    return json.loads(_python(code, cache).stdout)


def _cache_files(cache):
    return sorted(f for _, _, files in os.walk(cache) for f in files)


def _info_kernels_line(cache):
    proc = _python("from nets.cli import main; main(['info'])", cache)
    return next(x for x in proc.stdout.splitlines() if x.startswith("kernels ")).split(None, 1)[1]


def test_warmup_steps_call_every_kernel(tmp_path):
    """Run every warmup step with numba off and record which kernels ran: each kernel (each
    function compiled through ``kernels._jit.jit``, helpers included) must be among them or
    be called in the code of one that is (compiling a kernel compiles every kernel its code
    calls, taken branch or not), so a warmup leaves none to compile. A kernel added without
    a step that reaches it fails here."""
    code = f"""
import sys
from nets import cli
from nets.kernels import cache
kernels = {{k.__code__: k for k in cache.kernels()}}
called = set()
def trace(frame, event, arg):
    if event == "call" and frame.f_code in kernels:
        called.add(kernels[frame.f_code])
sys.setprofile(trace)
for label, step in cli._warm_steps({str(tmp_path)!r}):
    step()
sys.setprofile(None)
todo = list(called)
while todo:  # add the kernels the code of a compiled one calls
    f = todo.pop()
    for name in f.__code__.co_names:
        k = f.__globals__.get(name)
        if getattr(k, "__code__", None) in kernels and k not in called:
            called.add(k)
            todo.append(k)
print(sorted(cache.name(k) for k in set(kernels.values()) - called))
print(sorted({{cache.name(k).split(".")[0] for k in kernels.values()}}))
"""
    proc = _python(code, tmp_path / "cache", NUMBA_DISABLE_JIT="1")
    missed, modules = proc.stdout.splitlines()[-2:]
    assert missed == "[]", f"kernels no warmup step calls: {missed}"
    folder = os.path.join(os.path.dirname(cli.__file__), "kernels")  # every module was found
    assert modules == str(sorted(name[:-3] for name in os.listdir(folder) if name.endswith(
        ".py") and not name.startswith("_") and name != "cache.py"))


def test_info_on_an_empty_cache_says_cold_and_compiles_nothing(tmp_path):
    cache = tmp_path / "cache"
    status = _status(cache)
    assert status and set(status.values()) == {0}
    line = _info_kernels_line(cache)
    assert line == (f"cold: 0 of {len(status)} kernels cached (0 compiled variants); run "
                    f"`nets warmup` to compile the rest ahead")
    assert _cache_files(cache) == []  # nothing compiled, nothing written


def test_warmup_fills_the_cache_and_is_idempotent(tmp_path):
    """``nets warmup`` on a subset of its steps (float32, one optimizer): every kernel those
    steps use is then cached, ``nets info`` counts them, and a second warmup loads them
    (no compile: the cache files stay the same, the notice never shows)."""
    cache = tmp_path / "cache"
    code = ("from nets import cli; cli.WARM_DTYPES = ('float32',); "
            "cli.WARM_OPTIMIZERS = (('adagrad', {}),); import sys; sys.exit(cli.main(['warmup']))")
    first = _python(code, cache)
    status = _status(cache)
    cached = {k for k, n in status.items() if n}
    # the parser, the writer, the sparse first layer's products and AdaGrad among them
    for kernel in ("libsvm.parse_range", "libsvm.write_rows", "csr.csr_dense",
                   "csr.scatter_rows", "embedding.bitmap_slots", "optim.adagrad"):
        assert kernel in cached, kernel
    assert "optim.adam" not in cached  # a step left out compiles nothing
    counts = f"{len(cached)} of {len(status)} kernels cached ({sum(status.values())} compiled"
    assert first.stdout.startswith(f"cold: {counts} variants)")
    assert _info_kernels_line(cache).startswith(f"cold: {counts} variants)")
    files = _cache_files(cache)
    second = _python(code, cache)
    assert second.stdout.split(" in ")[0] == first.stdout.split(" in ")[0]
    assert _cache_files(cache) == files
    assert NOTICE not in first.stderr + second.stderr


def test_cache_state_line():
    assert cli._cache_state({"a.f": 2, "a.g": 1}) == ("warm: 2 of 2 kernels cached "
                                                      "(3 compiled variants)")
    assert cli._cache_state({"a.f": 2, "a.g": 0}).startswith(
        "cold: 1 of 2 kernels cached (2 compiled variants); run `nets warmup`")


def test_first_compile_prints_one_notice(tmp_path):
    """The first kernel compiled in a process prints the notice on stderr, once however many
    compile; a process that finds them cached prints nothing. (The fast compile path's
    notice: the plain path has no compile hook, tests/kernels/test_plain_numba.py.)"""
    cache = tmp_path / "cache"
    code = """
import numpy as np
from nets.kernels import dense, reduce
a = np.ones(3)
dense.outer(a, a)
reduce.row_sums(np.ones((2, 3)))
dense.outer(a.astype(np.float32), a.astype(np.float32))
"""
    first = _python(code, cache, NETS_PLAIN_NUMBA="0")
    assert first.stderr.count(NOTICE) == 1, first.stderr
    assert _python(code, cache, NETS_PLAIN_NUMBA="0").stderr == ""


def test_every_kernel_runs_in_a_process_that_only_loads_them():
    """A process whose kernels are all cached loads them without numba's compiler registries
    (``kernels._numba_internals._KernelCache``, on the fast compile path). Run the whole
    warmup once against this run's cache (it compiles only what is missing), then again in
    a new process: there every warmup step calls its kernels loaded from the cache, never
    compiling (no notice) — a kernel that needed a symbol only those registries install
    would fail here."""
    env = {k: v for k, v in os.environ.items()}
    env["TQDM_DISABLE"] = "1"
    code = "import sys; from nets import cli; sys.exit(cli.main(['warmup']))"
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=900, env=env)
        assert proc.returncode == 0, proc.stderr
    assert NOTICE not in proc.stderr, proc.stderr
    assert proc.stdout.startswith("warm: "), proc.stdout
