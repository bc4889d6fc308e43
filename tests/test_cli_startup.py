"""What a ``nets`` command pays to start (issue 26, item 2): the program's garbage
collection (``cli._PROGRAM``), the modules a warm ``nets train`` leaves unimported, and
kernels that load from numba's cache without reading the installed packages' entry points.

Each behaviour that belongs to the ``nets`` program (a process of its own) is checked in a
new Python process; in-process calls of ``cli.main([...])`` must leave the caller's collector
as it was."""
import gc
import json
import os
import subprocess
import sys

import numpy as np

from nets import cli
from nets.data import save_libsvm
from nets.nd import sparse


def _python(code, **env):
    """Run ``code`` in a new Python process; its stdout."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "TQDM_DISABLE": "1", **env})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _svm(tmp_path):
    """A small binary LibSVM file (labels -1/+1, 20 features)."""
    rng = np.random.default_rng(0)
    X = rng.random((60, 20)).astype(np.float32)
    X[X < 0.7] = 0
    y = np.where(rng.random(60) < 0.5, -1.0, 1.0)
    path = tmp_path / "small.svm"
    save_libsvm(str(path), sparse.csr_matrix(X), y)
    return str(path)


def test_main_with_arguments_leaves_the_callers_collector_alone(tmp_path, capsys):
    """``main([...])`` runs in the caller's process: its collector stays enabled, and
    nothing of the caller's is frozen."""
    frozen = gc.get_freeze_count()
    assert gc.isenabled()
    path = _svm(tmp_path)
    assert cli.main(["train", path, "--epochs", "1", "--save", str(tmp_path / "m.npz")]) == 0
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen
    assert cli._PROGRAM["gc_paused"] is False


def test_the_program_collects_from_where_its_work_begins(tmp_path):
    """``nets`` as a program (``main()``): the collector is paused through the set-up; where
    the work begins, what exists is frozen and collecting resumes; at the end everything
    left is frozen."""
    path = _svm(tmp_path)
    code = f"""
import gc, json, sys
from nets import cli
seen = {{}}
begins = cli._work_begins
def spy():
    seen["before"] = [gc.isenabled(), gc.get_freeze_count()]
    begins()
    seen["after"] = [gc.isenabled(), gc.get_freeze_count()]
cli._work_begins = spy
sys.argv = ["nets", "train", {path!r}, "--epochs", "2", "--save", {str(tmp_path / "p.npz")!r}]
code = cli.main()
seen["end"] = [gc.isenabled(), gc.get_freeze_count()]
print(json.dumps([code, seen]))
"""
    code, seen = json.loads(_python(code).splitlines()[-1])
    assert code == 0
    assert seen["before"] == [False, 0]
    assert seen["after"][0] is True and seen["after"][1] > 0
    assert seen["end"][0] is True and seen["end"][1] >= seen["after"][1]
    assert (tmp_path / "p.npz").exists()


def test_a_warm_train_imports_neither_the_kvstore_nor_multiprocessing(tmp_path):
    """With its kernels cached, ``nets train`` (no store: ``Trainer(kvstore=None)``; one
    process, its stderr a pipe, so no progress bar) imports no ``nets.kv``, no
    ``multiprocessing`` and no ``tqdm``, and loads its kernels without reading the installed
    packages' numba entry points."""
    path = _svm(tmp_path)
    code = f"""
import json, sys
from nets import cli
sys.argv = ["nets", "train", {path!r}, "--epochs", "1", "--save", {str(tmp_path / "m.npz")!r}]
code = cli.main()
from numba.core import entrypoints
from nets.kernels import _jit
print(json.dumps([code, _jit.COMPILED["any"], entrypoints._already_initialized,
                  sorted(m for m in sys.modules
                         if m.startswith(("nets.kv", "multiprocessing", "tqdm")))]))
"""
    _python(code)  # (fills the cache, if the suite's is cold)
    code, compiled, entry_points, modules = json.loads(_python(code).splitlines()[-1])
    assert code == 0
    assert compiled is False  # every kernel loaded from the cache
    assert entry_points is False
    assert modules == []


# what numba, numpy or nets would import for a warm command that it does not use: numba's
# array functions (a kernel's environment), numpy.ma (numba's typing of an array),
# PyYAML, importlib.metadata and scipy (numba's import), subprocess (the compile-ahead
# child, started on a compile only), the optimizers (in `nets predict`)
UNUSED = ("numba.np.arrayobj", "numpy.ma", "yaml", "importlib.metadata", "scipy",
          "subprocess")


def test_a_warm_train_and_predict_leave_unused_modules_unimported(tmp_path):
    """With its kernels cached, ``nets train`` imports none of ``UNUSED``, and ``nets
    predict`` none of them and no optimizer."""
    path = _svm(tmp_path)
    model = str(tmp_path / "m.npz")
    code = """
import json, sys
from nets import cli
sys.argv = ["nets"] + {argv!r}
code = cli.main()
print(json.dumps([code, sorted(m for m in sys.modules
                               if m == "nets.optim" or m.startswith("nets.optim.")
                               or any(m == u or m.startswith(u + ".") for u in {unused!r}))]))
"""
    train = code.format(argv=["train", path, "--epochs", "1", "--save", model], unused=UNUSED)
    predict = code.format(argv=["predict", model, path, "--output", str(tmp_path / "p.txt")],
                          unused=UNUSED)
    _python(train)  # (fills the cache, if the suite's is cold)
    code, modules = json.loads(_python(train).splitlines()[-1])
    assert code == 0
    assert [m for m in modules if not m.startswith("nets.")] == []
    code, modules = json.loads(_python(predict).splitlines()[-1])
    assert code == 0
    assert modules == []


def test_a_kernel_compiles_with_the_entry_points_and_loads_without(tmp_path):
    """A kernel missing from the cache compiles after numba has run the installed
    ``numba_extensions`` entry points (the CPU context's refresh, before typing); the same
    kernel loaded from the cache in a later process reads none, and computes the same."""
    code = """
import json
import numpy as np
from numba.core import entrypoints
from nets.kernels import _jit, embedding
ids = np.array([5, 1, 5, 3, 1], np.int64)
uniq, slot = embedding.slots_in_order(ids, np.argsort(ids, kind="stable"))
print(json.dumps([_jit.COMPILED["any"], entrypoints._already_initialized,
                  uniq.tolist(), slot.tolist()]))
"""
    cache = str(tmp_path / "cache")
    first = json.loads(_python(code, NUMBA_CACHE_DIR=cache).splitlines()[-1])
    again = json.loads(_python(code, NUMBA_CACHE_DIR=cache).splitlines()[-1])
    assert first[:2] == [True, True]
    assert again[:2] == [False, False]
    uniq, slot = np.unique([5, 1, 5, 3, 1], return_inverse=True)
    assert first[2:] == again[2:] == [uniq.tolist(), slot.tolist()]


def test_progress_bars_write_under_a_thread_lock_in_the_program_only(monkeypatch):
    """In the ``nets`` program ``cli._bar``'s tqdm takes a thread lock for its writes, not
    tqdm's default (which holds a multiprocessing lock too); a command run inside another
    process leaves tqdm's process-wide lock alone."""
    import threading

    from tqdm import tqdm
    before = tqdm.get_lock()
    theirs = threading.RLock()
    tqdm.set_lock(theirs)
    try:
        with cli._bar(range(3), disable=True) as bar:
            assert list(bar) == [0, 1, 2]
        assert tqdm.get_lock() is theirs
        monkeypatch.setitem(cli._PROGRAM, "own", True)
        with cli._bar(range(3), disable=True) as bar:
            assert list(bar) == [0, 1, 2]
        assert tqdm.get_lock() is not theirs
        assert isinstance(tqdm.get_lock(), type(threading.RLock()))
    finally:
        tqdm.set_lock(before)
