"""The plain compile path (``kernels._jit``): every kernel compiled through plain
``numba.njit(cache=True, nogil=True)``, forced by ``NETS_PLAIN_NUMBA=1`` or taken when
numba's internals are not the ones ``kernels._numba_internals`` is written against.

Kernels run in new processes with their own ``NUMBA_CACHE_DIR``: the path is chosen once
per process, when the first kernel module loads. Results are checked against numpy and
against the fast path's; the internals check is given stand-ins for numba with a name
missing, a parameter changed or another version."""
import json
import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

from nets.base import NetsError
from nets.kernels import _jit, _numba_internals

PLAIN = "nets: fast kernel start-up is off ("
FIRST = "nets: compiling kernels for first use"

# Runs one kernel of each kind through nets' public face where it has one (argv: output
# folder): csr . dense both ways, a lazy AdaGrad update, a LibSVM parse (8-byte reads,
# trailing zeros), embedding rows and their unique ids (a bitmap ranked by popcount), and
# the intrinsics at their edges in kernels of its own; writes the arrays to out.npz and
# prints a JSON report.
CHILD = '''
import json, os, sys
import numpy as np
import scipy.sparse
import nets
from nets import nd
from nets.kernels import _jit, _numba_internals, cache, embedding
from nets.kernels._jit import jit, load_word, popcount, prefetch_row, trailing_zeros


@jit
def intrinsics_at_edges(words, buf, table):
    tz = np.empty(len(words), np.int64)
    pc = np.empty(len(words), np.int64)
    for k in range(len(words)):
        tz[k] = trailing_zeros(words[k])
        pc[k] = popcount(words[k])
    lw = np.empty(len(buf) - 7, np.uint64)
    for i in range(len(buf) - 7):
        lw[i] = load_word(buf, i)
    for r in range(table.shape[0]):
        prefetch_row(table, r)
    return tz, pc, lw


out = sys.argv[1]
rng = np.random.default_rng(7)
S = scipy.sparse.random(12, 30, density=0.15, format="csr", dtype=np.float32, random_state=7)
W = rng.standard_normal((30, 5)).astype(np.float32)
G = rng.standard_normal((12, 5)).astype(np.float32)
X = nd.array(S)
res = {"X": S.toarray(), "W": W, "G": G, "dot": nd.dot(X, nd.array(W)).asnumpy(),
       "dot_t": nd.dot(X, nd.array(G), transpose_a=True).asnumpy()}

w = nd.array(rng.standard_normal((20, 4)).astype(np.float32))
rows = np.array([2, 5, 11, 17])
g = nd.sparse.row_sparse_array((rng.standard_normal((4, 4)).astype(np.float32), rows),
                               shape=(20, 4))
opt = nets.optim.AdaGrad(learning_rate=0.5, eps=1e-7, lazy_update=True)
res["w0"], res["g"], res["rows"] = w.asnumpy(), g.data.asnumpy(), rows
for _ in range(2):
    opt.step(0, w, g)
res["adagrad"] = w.asnumpy()

path = os.path.join(out, "data.svm")
with open(path, "w") as f:
    f.write("1 1:0.5 3:-12.25 7:123456789.125 9:3e-5\\n"
            "-1 2:1 4:0.000123456789012345 8:-7.5E+3\\n"
            "0 1:98765432109876543210 5:1.17549435e-38 6:.5 10:42\\n")
Xs, ys = nets.data.load_libsvm(path)
res["svm_indptr"], res["svm_indices"] = Xs.indptr.asnumpy(), Xs.indices.asnumpy()
res["svm_data"], res["svm_labels"] = Xs.data.asnumpy(), ys.asnumpy()

table = rng.standard_normal((50, 6))
ids = np.array([3, 49, 3, 0, 17, 17, 8, 3, 0], np.int64)
res["table"], res["ids"] = table, ids
res["gather"], res["bad"] = embedding.gather_rows(table, ids)
res["uniq"], res["slot"] = embedding.unique_slots(ids, 50)

words = np.array([0, 1, 2, 8, 2 ** 63, 2 ** 64 - 1, 0x80_0000, 12345678901234], np.uint64)
buf = rng.integers(0, 256, 40, dtype=np.uint8)
res["words"], res["buf"] = words, buf
res["tz"], res["pc"], res["lw"] = intrinsics_at_edges(words, buf, table)
np.savez(os.path.join(out, "out.npz"), **res)

kinds = {type(k).__module__ + "." + type(k).__name__ for k in cache.kernels()}
status = cache.status()
print(json.dumps({"fast": _jit.FAST, "kinds": sorted(kinds), "location": cache.location(),
                  "status": {k: status[k] for k in ("csr.csr_dense", "libsvm.parse_range",
                                                     "optim.adagrad", "dense.outer")}}))
'''


def _run(code, env, *args, tmp_path, name="child.py"):
    """Run ``code`` (written to a file, so its own kernels can be cached) in a new process
    with ``env`` added to this one's environment: ``(returncode, stdout, stderr)``."""
    script = tmp_path / name
    script.write_text(textwrap.dedent(code))
    proc = subprocess.run([sys.executable, str(script), *map(str, args)], capture_output=True,
                          text=True, timeout=900, env={**os.environ, "TQDM_DISABLE": "1", **env})
    return proc.returncode, proc.stdout, proc.stderr


def _child(tmp_path, tag, env):
    out = tmp_path / tag
    out.mkdir()
    rc, stdout, stderr = _run(CHILD, env, out, tmp_path=tmp_path, name=f"child_{tag}.py")
    assert rc == 0, stderr
    return json.loads(stdout.splitlines()[-1]), dict(np.load(out / "out.npz")), stderr


def _check_against_numpy(r):
    np.testing.assert_allclose(r["dot"], r["X"] @ r["W"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(r["dot_t"], r["X"].T @ r["G"], rtol=1e-5, atol=1e-6)
    assert np.count_nonzero(r["X"]) > 0 and np.count_nonzero(r["dot_t"].any(axis=1)) < 30
    # the updated weight: AdaGrad twice on the gradient's rows, every other row untouched
    w, rows = r["w0"].astype(np.float64), r["rows"]
    history = np.zeros_like(w[rows])
    for _ in range(2):
        history += r["g"].astype(np.float64) ** 2
        w[rows] -= 0.5 * r["g"] / np.sqrt(history + 1e-7)
    untouched = np.setdiff1d(np.arange(len(w)), rows)
    np.testing.assert_array_equal(r["adagrad"][untouched], r["w0"][untouched])
    np.testing.assert_allclose(r["adagrad"], w, rtol=1e-5, atol=1e-6)

    tokens = [["1:0.5", "3:-12.25", "7:123456789.125", "9:3e-5"],
              ["2:1", "4:0.000123456789012345", "8:-7.5E+3"],
              ["1:98765432109876543210", "5:1.17549435e-38", "6:.5", "10:42"]]
    np.testing.assert_array_equal(r["svm_indptr"], np.cumsum([0] + [len(t) for t in tokens]))
    np.testing.assert_array_equal(r["svm_indices"],
                                  [int(t.split(":")[0]) - 1 for row in tokens for t in row])
    np.testing.assert_array_equal(r["svm_data"], np.array(
        [float(t.split(":")[1]) for row in tokens for t in row]).astype(np.float32))
    np.testing.assert_array_equal(r["svm_labels"], [1, -1, 0])

    np.testing.assert_array_equal(r["gather"], r["table"][r["ids"]])
    assert r["bad"] == -1
    uniq, slot = np.unique(r["ids"], return_inverse=True)
    np.testing.assert_array_equal(r["uniq"], uniq)
    np.testing.assert_array_equal(r["slot"], slot)

    words = [int(x) for x in r["words"]]
    assert r["tz"].tolist() == [(x & -x).bit_length() - 1 if x else 64 for x in words]
    assert r["pc"].tolist() == [x.bit_count() for x in words]
    buf = r["buf"].tobytes()
    assert [int(x) for x in r["lw"]] == [int.from_bytes(buf[i:i + 8], "little")
                                         for i in range(len(buf) - 7)]


def test_plain_path_computes_what_numpy_and_the_fast_path_compute(tmp_path):
    """With ``NETS_PLAIN_NUMBA=1`` and an empty cache, every kernel is numba's own
    dispatcher, the kernels give numpy's results and the fast path's, the plain notice
    shows once (and the fast path's first-compile notice never), and the cache queries
    count what the plain path cached."""
    cache = tmp_path / "plain-cache"
    plain, got, err = _child(tmp_path, "plain", {"NETS_PLAIN_NUMBA": "1",
                                                 "NUMBA_CACHE_DIR": str(cache)})
    assert err.count(PLAIN) == 1 and "(NETS_PLAIN_NUMBA=1)" in err, err
    assert FIRST not in err
    assert plain["fast"] is False
    assert plain["kinds"] == ["numba.core.registry.CPUDispatcher"]
    folder, origin = plain["location"]
    assert origin == "NUMBA_CACHE_DIR" and folder.startswith(str(cache))
    status = plain["status"]
    assert status["csr.csr_dense"] >= 1 and status["libsvm.parse_range"] >= 1
    assert status["optim.adagrad"] >= 1 and status["dense.outer"] == 0
    _check_against_numpy(got)

    # the fast path, in this suite's own cache (warm, usually)
    fast, want, err = _child(tmp_path, "fast", {"NETS_PLAIN_NUMBA": "0"})
    assert PLAIN not in err, err
    assert fast["fast"] is True
    assert fast["kinds"] == ["nets.kernels._numba_internals.Kernel"]
    _check_against_numpy(want)
    for key in got:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-6, atol=0, err_msg=key)


OUTER = """
import json, sys
import numpy as np
from nets.kernels import _jit, dense
a = np.arange(4.0)
np.testing.assert_array_equal(dense.outer(a, a), np.outer(a, a))
print(json.dumps([_jit.FAST, sum(dense.outer.stats.cache_misses.values())]))
"""


def test_plain_and_fast_paths_keep_their_own_cache_entries(tmp_path):
    """In one cache folder, a kernel the plain path cached compiles again on the fast path
    (whose helpers and options differ), and each path then loads its own."""
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "cache")}

    def run(plain):
        rc, out, err = _run(OUTER, {**env, "NETS_PLAIN_NUMBA": plain}, tmp_path=tmp_path)
        assert rc == 0, err
        return json.loads(out.splitlines()[-1]), err

    assert run("1")[0] == [False, 1]
    (fast, compiles), err = run("0")
    assert (fast, compiles) == (True, 1) and err.count(FIRST) == 1, err
    assert run("1")[0] == [False, 0]
    assert run("0")[0] == [True, 0]


def test_plain_forced_reads_one_and_zero_and_refuses_anything_else():
    assert _jit.plain_forced({"NETS_PLAIN_NUMBA": "1"}) is True
    assert _jit.plain_forced({"NETS_PLAIN_NUMBA": " 1 "}) is True
    for off in ({}, {"NETS_PLAIN_NUMBA": ""}, {"NETS_PLAIN_NUMBA": "0"}):
        assert _jit.plain_forced(off) is False
    for bad in ("maybe", "yes", "2", "true"):
        with pytest.raises(NetsError, match=f"NETS_PLAIN_NUMBA='{bad}'"):
            _jit.plain_forced({"NETS_PLAIN_NUMBA": bad})


def test_an_invalid_value_fails_the_first_kernel_use_not_the_import(tmp_path):
    code = """
import numpy as np
import nets
from nets import nd
print("imported", flush=True)
nd.dot(nd.sparse.csr_matrix(np.eye(2, dtype=np.float32)), nd.ones((2, 2)))
"""
    rc, out, err = _run(code, {"NETS_PLAIN_NUMBA": "maybe"}, tmp_path=tmp_path)
    assert rc != 0 and out == "imported\n"
    assert "NetsError: NETS_PLAIN_NUMBA='maybe'" in err, err


class _Numba:
    """``numba`` as ``_numba_internals.check`` sees it, but with the dotted names of
    ``changed`` (under the package) set to their values there, or missing where the value
    is ``_MISSING``. Every attribute is looked up through the stand-in (``__init__`` of a
    class too), so a name can be changed at any depth."""

    def __init__(self, changed, obj=numba, path=""):
        object.__setattr__(self, "_state", (changed, obj, path))

    def __getattribute__(self, name):
        if name == "__class__":  # not a module: a name it lacks is not imported instead
            return _Numba
        changed, obj, path = object.__getattribute__(self, "_state")
        dotted = f"{path}.{name}" if path else name
        if dotted in changed:
            if changed[dotted] is _MISSING:
                raise AttributeError(name)
            return changed[dotted]
        value = _numba_internals._resolve(obj, name)
        if any(k.startswith(dotted + ".") for k in changed):
            return _Numba(changed, value, dotted)
        return value


_MISSING = object()


def test_check_accepts_the_installed_numba():
    assert _numba_internals.check(numba) is None
    assert _numba_internals.check(_Numba({})) is None  # the stand-in itself changes nothing
    assert _numba_internals.MISMATCH is None


@pytest.mark.parametrize("changed, reason", [
    ({"__version__": "0.99.0"}, "numba 0.99.0 is not a release nets is tested with"),
    ({"__version__": "0.61.2"}, "numba 0.61.2 is not a release nets is tested with"),
    ({"__version__": "1.0.0"}, "numba 1.0.0 is not a release nets is tested with"),
    ({"__version__": "unknown"}, "numba unknown is not a release nets is tested with"),
    ({"core.caching.FunctionCache._load_overload": _MISSING},
     "has no numba.core.caching.FunctionCache._load_overload"),
    ({"core.registry.CPUDispatcher._compilation_chain_init_hook": _MISSING},
     "has no numba.core.registry.CPUDispatcher._compilation_chain_init_hook"),
    ({"core.options.DefaultOptions._nrt": _MISSING},
     "has no numba.core.options.DefaultOptions._nrt"),
    ({"core.caching": _MISSING}, "has no numba.core.caching.FunctionCache.__init__"),
    ({"core.caching.FunctionCache._index_key": lambda self, sig: None},
     "numba.core.caching.FunctionCache._index_key takes (self, sig)"),
    ({"core.compiler_lock.global_compiler_lock": _MISSING},
     "has no numba.core.compiler_lock.global_compiler_lock"),
    ({"core.event.register": 42}, "numba.core.event.register is not a function"),
])
def test_check_names_what_differs_and_the_plain_path_is_taken(changed, reason):
    mismatch = _numba_internals.check(_Numba(changed))
    assert mismatch is not None and reason in mismatch
    fast, why = _jit.select(mismatch, {})
    assert (fast, why) == (False, mismatch)
    notice = _jit.PLAIN_NOTICE.format(reason=why)
    assert notice.startswith(PLAIN) and reason in notice and "\n" not in notice
    # forcing the plain path needs no mismatch; forcing is checked first
    assert _jit.select(None, {"NETS_PLAIN_NUMBA": "1"}) == (False, "NETS_PLAIN_NUMBA=1")
    assert _jit.select(None, {"NETS_PLAIN_NUMBA": "0"}) == (True, None)
    with pytest.raises(NetsError, match="NETS_PLAIN_NUMBA='x'"):
        _jit.select(mismatch, {"NETS_PLAIN_NUMBA": "x"})


def test_a_numba_release_nets_is_not_tested_with_takes_the_plain_path(tmp_path):
    """A numba whose version is outside the tested range (here the installed one, given
    another version number before nets loads a kernel): the plain path, announced once;
    the kernels compute; ``nets info`` and the cache queries answer without numba's
    internals (the cache folder from ``NUMBA_CACHE_DIR``, every count 0)."""
    code = """
import json, sys
import numba
numba.__version__ = "0.99.0"
import numpy as np
from nets import cli
from nets.kernels import _jit, cache, dense
a = np.arange(4.0)
np.testing.assert_array_equal(dense.outer(a, a), np.outer(a, a))
status = cache.status()
assert set(status.values()) == {0} and len(status) == len(cache.kernels()), status
assert cli.main(["info"]) == 0
print(json.dumps([_jit.FAST, cache.location()]))
"""
    cache = tmp_path / "cache"
    rc, out, err = _run(code, {"NUMBA_CACHE_DIR": str(cache), "NETS_PLAIN_NUMBA": "0"},
                        tmp_path=tmp_path)
    assert rc == 0, err
    assert err.count(PLAIN) == 1, err
    assert "(numba 0.99.0 is not a release nets is tested with" in err
    assert json.loads(out.splitlines()[-1]) == [False, [str(cache), "NUMBA_CACHE_DIR"]]
    assert f"{cache} (NUMBA_CACHE_DIR)" in out
