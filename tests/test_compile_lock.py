"""Processes sharing numba's kernel cache (issue 26, item 1): a kernel compiles once, in
whichever process reaches it first, under its lock file in the cache folder
(``kernels._numba_internals._KernelCache.lock``, the fast compile path's); the others wait
and load it. And the child process ``kernels.cache.compile_ahead`` starts at a cold
process's first compile never outlives its parent.

Every case runs new Python processes on a fresh cache folder. A process holds a kernel's
lock for as long as the test needs by a ``FIRST_COMPILE`` hook (it runs inside the first
compile, the lock held) that writes a marker file and sleeps: orderings come from marker
files, never from timings."""
import json
import os
import signal
import subprocess
import sys
import time

NOTICE = "nets: compiling kernels for first use"

# Calls dense.outer (checked against numpy) and prints how many compiles this process ran
# for it; argv: [marker file, seconds to hold the lock at the first compile] (optional).
OUTER = """
import sys, time
import numpy as np
from nets.kernels import _jit, dense
if len(sys.argv) > 1:
    def hold():
        open(sys.argv[1], "w").close()
        time.sleep(float(sys.argv[2]))
    _jit.FIRST_COMPILE.append(hold)
a = np.arange(4.0)
np.testing.assert_array_equal(dense.outer(a, a), np.outer(a, a))
print(sum(dense.outer.stats.cache_misses.values()))
"""


def _env(cache):
    # the lock files and the first-compile hook belong to the fast compile path
    return {**os.environ, "NUMBA_CACHE_DIR": str(cache), "TQDM_DISABLE": "1",
            "NETS_PLAIN_NUMBA": "0"}


def _start(code, cache, *args):
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], env=_env(cache),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc):
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return out, err


def _compiles(cache):
    """Run OUTER to the end: how many compiles it ran for dense.outer (0: loaded)."""
    out, _ = _finish(_start(OUTER, cache))
    return int(out)


def _wait_for(path, proc=None):
    """Wait until ``path`` exists (while ``proc``, if given, is still running)."""
    deadline = time.monotonic() + 600  # a hang guard, not a timing assertion
    while not os.path.exists(path):
        assert proc is None or proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def test_a_kernel_another_process_is_compiling_is_waited_for_and_loaded(tmp_path):
    cache, marker = tmp_path / "cache", tmp_path / "compiling"
    first = _start(OUTER, cache, marker, 2)
    _wait_for(marker, first)  # `first` now holds dense.outer's lock, compiling
    second = _start(OUTER, cache)
    out2, err2 = _finish(second)
    out1, _ = _finish(first)
    assert (int(out1), int(out2)) == (1, 0)  # compiled once, by the first; loaded by the other
    assert NOTICE not in err2
    assert _compiles(cache) == 0


def test_two_processes_starting_cold_together_compile_each_kernel_once(tmp_path):
    cache = tmp_path / "cache"
    procs = [_start(OUTER, cache) for _ in range(2)]
    assert sorted(int(_finish(p)[0]) for p in procs) == [0, 1]
    assert _compiles(cache) == 0


def test_a_process_killed_while_compiling_leaves_a_cache_the_next_one_uses(tmp_path):
    cache, marker = tmp_path / "cache", tmp_path / "compiling"
    killed = _start(OUTER, cache, marker, 600)
    _wait_for(marker, killed)
    killed.kill()
    killed.communicate()
    assert _compiles(cache) == 1  # the lock died with it; nothing half written is loaded
    assert _compiles(cache) == 0


def test_a_lock_file_that_cannot_be_opened_leaves_compiles_unlocked(tmp_path):
    """Where the lock file cannot be opened (a read-only cache folder; here a directory in
    its place, which even root cannot open for writing), kernels compile and cache as
    without locks."""
    cache = tmp_path / "cache"
    code = ("from nets.kernels import _numba_internals, dense; "
            "print(_numba_internals.lock_path(dense.outer))")
    out, _ = _finish(_start(code, cache))
    os.makedirs(out.strip())
    assert _compiles(cache) == 1
    assert _compiles(cache) == 0


# A parent that has compile_ahead start CHILD (which writes its pid to argv[1] and sleeps
# under watch_parent) at its first compile; argv: [pid file, "exit" | "wait"].
PARENT = """
import os, sys, time
import numpy as np
from nets.kernels import _jit, cache, dense
child = '''
import os, sys, time
from nets.kernels import cache
cache.watch_parent()
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(600)
'''
cache.compile_ahead([sys.executable, "-c", child, sys.argv[1]])
dense.outer(np.ones(2), np.ones(2))
print("started" if not _jit.FIRST_COMPILE else "not started", flush=True)
if not _jit.FIRST_COMPILE:
    while not os.path.exists(sys.argv[1]):
        time.sleep(0.05)
if sys.argv[2] == "wait":
    print("ready", flush=True)
    time.sleep(600)
"""


def _gone(pid):
    """Whether process ``pid`` has ended (a zombie not yet reaped counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _wait_gone(pid):
    deadline = time.monotonic() + 600  # a hang guard, not a timing assertion
    while not _gone(pid):
        assert time.monotonic() < deadline, f"process {pid} outlived its parent"
        time.sleep(0.05)


def test_compile_ahead_child_ends_with_its_parent(tmp_path):
    cache, pidfile = tmp_path / "cache", tmp_path / "child.pid"
    out, _ = _finish(_start(PARENT, cache, pidfile, "exit"))
    assert out.splitlines() == ["started"]
    _wait_gone(int(pidfile.read_text()))  # killed at the parent's exit


def test_compile_ahead_child_ends_when_its_parent_is_killed(tmp_path):
    cache, pidfile = tmp_path / "cache", tmp_path / "child.pid"
    parent = _start(PARENT, cache, pidfile, "wait")
    assert parent.stdout.readline() == "started\n"
    assert parent.stdout.readline() == "ready\n"
    pid = int(pidfile.read_text())
    assert not _gone(pid)
    parent.send_signal(signal.SIGKILL)
    parent.communicate()
    _wait_gone(pid)  # its stdin pipe closed: watch_parent ended it


def test_compile_ahead_starts_nothing_when_the_cache_is_warm(tmp_path):
    cache, pidfile = tmp_path / "cache", tmp_path / "child.pid"
    _finish(_start(PARENT, cache, pidfile, "exit"))
    pidfile.unlink()
    out, _ = _finish(_start(PARENT, cache, pidfile, "exit"))
    assert out.splitlines() == ["not started"]
    assert not pidfile.exists()


def test_cold_nets_train_compiles_its_training_kernels_ahead_and_trains(tmp_path):
    """A cold ``nets train``: the training kernels end up cached (compiled by the second
    process or by the command itself, whichever reached each first), the training runs,
    and a second run compiles nothing."""
    from nets.data import make_sparse_dataset, save_libsvm
    X, y, _ = make_sparse_dataset(200, 500, 5, task="binary", seed=0)
    path = tmp_path / "train.svm"
    save_libsvm(str(path), X, y)
    cache = tmp_path / "cache"
    code = ("import sys; from nets.cli import main; sys.exit(main(['train', sys.argv[1], "
            "'--optimizer', 'adagrad', '--epochs', '1']))")
    out, err = _finish(_start(code, cache, path))
    assert out.startswith("epoch 1") and NOTICE in err
    status = ("import json; from nets.kernels import cache; "
              "print(json.dumps(cache.status()))")
    cached = {k for k, n in json.loads(_finish(_start(status, cache))[0]).items() if n}
    for kernel in ("libsvm.parse_range", "csr.csr_dense", "csr.scatter_rows",
                   "embedding.bitmap_slots", "optim.adagrad"):
        assert kernel in cached, kernel
    out, err = _finish(_start(code, cache, path))
    assert out.startswith("epoch 1") and NOTICE not in err
