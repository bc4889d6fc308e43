"""What a process whose kernels load from numba's cache leaves undone on the fast path
(``kernels._numba_internals``): numba loads without executing PyYAML, importlib.metadata
or scipy (``_import_numba``); a kernel loads without compiling numba's runtime functions
(``_load_runtime``) and without importing the modules of numba's own functions it calls
(``_rebuild_env``); its array arguments are typed without importing ``numpy.ma``
(``Kernel.typeof_pyval``). Each is checked in new processes, with results against numpy,
and with a compile in the same process after the loads."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from numba.core.errors import NumbaTypeError
from numba.core.typing.typeof import typeof

from nets.kernels import _jit, embedding

pytestmark = pytest.mark.skipif(not _jit.FAST, reason="the fast path is off")


def _python(code, tmp_path, **env):
    """Run ``code`` in a new Python process (working folder ``tmp_path``); its last stdout
    line, as JSON."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path, env={**os.environ, **env})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_numba_loads_without_yaml_entry_points_or_scipy(tmp_path):
    """After ``import nets.kernels._jit`` in a new process none of PyYAML,
    importlib.metadata and scipy is imported; numba reads the installed packages' entry
    points all the same, and imports scipy where it needs it."""
    code = """
import json, sys
from nets.kernels import _jit
deferred = ("yaml", "importlib.metadata", "scipy")
before = sorted(m for m in deferred if m in sys.modules)
from numba.core import config, entrypoints
entrypoints.init_all()
import scipy
print(json.dumps([before, config._HAVE_YAML, entrypoints._already_initialized,
                  sorted(m for m in deferred if m in sys.modules)]))
"""
    before, have_yaml, read, after = _python(code, tmp_path)
    assert before == []
    assert have_yaml is True
    assert read is True
    assert after == ["importlib.metadata", "scipy"]


def test_a_numba_config_file_is_read(tmp_path):
    """A ``.numba_config.yaml`` in the working folder is read as numba loads, through
    PyYAML (imported then)."""
    (tmp_path / ".numba_config.yaml").write_text("boundscheck: 1\n")
    code = """
import json, sys
from nets.kernels import _jit
from numba.core import config
print(json.dumps([config.BOUNDSCHECK, "yaml" in sys.modules]))
"""
    assert _python(code, tmp_path) == [1, True]


def test_a_numba_that_imports_scipy_as_it_loads_is_imported_with_it(tmp_path):
    """A numba release whose import needs scipy (here a stand-in package that imports it)
    is imported again, with scipy, and then judged by the internals check."""
    (tmp_path / "numba").mkdir()
    (tmp_path / "numba" / "__init__.py").write_text(
        "import scipy\n__version__ = '0.1'\nscipy_version = scipy.__version__\n")
    code = """
import json, sys
from nets.kernels import _numba_internals as internals
print(json.dumps([internals.numba.__version__, internals.numba.scipy_version is not None,
                  internals.MISMATCH]))
"""
    path = os.pathsep.join([str(tmp_path)] + [p for p in os.environ.get("PYTHONPATH", "")
                                              .split(os.pathsep) if p])
    version, has_scipy, mismatch = _python(code, tmp_path, PYTHONPATH=path)
    assert version == "0.1" and has_scipy
    assert "is not a release nets is tested with" in mismatch


# A kernel that allocates (numba's np.empty and np.zeros: its runtime, and functions of
# numba.np.arrayobj) and one that calls it, from a module of the child's own, cached in
# the folder NUMBA_CACHE_DIR names: argv[1] says which to call.
KERNELS = '''
import numpy as np
from nets.kernels._jit import jit


@jit
def counts(ids, n):
    out = np.zeros(n, np.int64)
    for i in ids:
        out[i] += 1
    return out


@jit
def firsts(ids, n):
    seen = counts(ids, n)
    out = np.empty(int((seen > 0).sum()), np.int64)
    k = 0
    for i in range(n):
        if seen[i]:
            out[k] = i
            k += 1
    return out
'''

CALLER = """
import json, sys
import numpy as np
from numba.core.runtime import nrt
import kernels
from nets.kernels import _jit
ids = np.array([3, 1, 3, 0, 7], np.int64)
results = {name: getattr(kernels, name)(ids, 9).tolist() for name in sys.argv[1].split(",")}
print(json.dumps([results, _jit.COMPILED["any"], nrt.rtsys._init,
                  "numba.np.arrayobj" in sys.modules, "numpy.ma" in sys.modules]))
"""


def test_allocating_kernels_load_without_the_runtime_compile_or_numbas_modules(tmp_path):
    """A kernel that allocates loads from the cache in a new process without compiling
    numba's runtime functions, importing ``numba.np.arrayobj`` or ``numpy.ma``, and
    computes what it computed when compiled; in that process a kernel calling it, not
    cached, compiles (initializing the runtime in full) and is cached, and a third process
    loads both."""
    (tmp_path / "kernels.py").write_text(KERNELS)
    (tmp_path / "caller.py").write_text(CALLER)
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": os.pathsep.join(
        [str(tmp_path)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}

    def run(names):
        proc = subprocess.run([sys.executable, "caller.py", names], capture_output=True,
                              text=True, timeout=600, cwd=tmp_path, env={**os.environ, **env})
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.splitlines()[-1])

    want = {"counts": np.bincount([3, 1, 3, 0, 7], minlength=9).tolist(),
            "firsts": [0, 1, 3, 7]}
    assert run("counts")[:3] == [{"counts": want["counts"]}, True, True]
    assert run("counts") == [{"counts": want["counts"]}, False, False, False, False]
    assert run("counts,firsts")[:3] == [want, True, True]
    assert run("counts,firsts") == [want, False, False, False, False]


def test_runtime_statistics_count_the_loaded_kernels_allocations(tmp_path):
    """Under ``NUMBA_NRT_STATS=1`` numba initializes its runtime as a kernel loads, and
    counts that kernel's allocations."""
    code = """
import json
import numpy as np
from numba.core.runtime import rtsys
from nets.kernels import _jit, embedding
ids = np.array([5, 1, 5, 3, 1], np.int64)
embedding.slots_in_order(ids, np.argsort(ids, kind="stable"))
before = rtsys.get_allocation_stats().alloc
uniq, slot = embedding.slots_in_order(ids, np.argsort(ids, kind="stable"))
print(json.dumps([_jit.COMPILED["any"], rtsys.get_allocation_stats().alloc - before,
                  uniq.tolist(), slot.tolist()]))
"""
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "cache"), "NUMBA_NRT_STATS": "1"}
    _python(code, tmp_path, **env)  # (compiles it into the cache)
    compiled, allocations, uniq, slot = _python(code, tmp_path, **env)
    assert compiled is False
    assert allocations > 0
    want_uniq, want_slot = np.unique([5, 1, 5, 3, 1], return_inverse=True)
    assert [uniq, slot] == [want_uniq.tolist(), want_slot.tolist()]


ARRAYS = [np.zeros(3, np.float32), np.zeros((2, 3), np.int64),
          np.zeros((3, 2), np.float64, order="F"), np.zeros((4, 6), np.uint8)[:, ::2],
          np.zeros((), np.int32), np.zeros((2, 0, 3), np.bool_), np.zeros(4, np.complex64),
          np.frombuffer(b"abcd", np.uint8), np.zeros(2, "datetime64[s]")]


@pytest.mark.parametrize("array", ARRAYS, ids=lambda a: f"{a.dtype}-{a.ndim}d")
def test_kernels_type_an_array_as_numba_does(array):
    """``Kernel.typeof_pyval`` gives an array numba's own type (dtype, dimensions, layout,
    read-only)."""
    assert embedding.slots_in_order.typeof_pyval(array) == typeof(array)


def test_kernels_refuse_a_masked_array_as_numba_does():
    """A masked array (a subclass of ``numpy.ndarray``) is typed by numba itself, which
    refuses it."""
    masked = np.ma.masked_array(np.arange(4), mask=[0, 1, 0, 0])
    with pytest.raises(NumbaTypeError, match="MaskedArray"):
        embedding.slots_in_order.typeof_pyval(masked)
