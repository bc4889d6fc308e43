"""Sparse index buffers are validated once, at construction, and trusted by the kernels
after that; nothing a user can reach may break that trust (issue 24, item 4).

The hostile sequences (edit an index buffer, then run a kernel) used to crash the
interpreter; each runs in a subprocess, so that a segfault fails its test instead of
killing pytest."""
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import nets
from nets import nd

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(nets.__file__)))
READ_ONLY = "assignment destination is read-only"


def run_python(code):
    """Run ``code`` in a fresh interpreter importing this checkout's nets; returns the
    completed process. A negative return code means a signal (e.g. -11: SIGSEGV)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)


def make(stype):
    dense = np.array([[1, 0, 2, 0], [0, 0, 3, 0], [0, 0, 0, 0], [4, 5, 0, 6]], np.float32)
    return nd.sparse.csr_matrix(dense) if stype == "csr" else nd.sparse.row_sparse_array(dense)


# -- the public index views are read-only --------------------------------------------

@pytest.mark.parametrize("stype, part", [("csr", "indices"), ("csr", "indptr"),
                                         ("row_sparse", "indices")])
def test_index_views_are_read_only(stype, part):
    x = make(stype)
    before = getattr(x, part).asnumpy()
    view = getattr(x, part)
    with pytest.raises(ValueError, match=READ_ONLY):
        view[0] = 3
    with pytest.raises(ValueError, match=READ_ONLY):
        view[:] = 0
    with pytest.raises(ValueError, match=READ_ONLY):
        np.asarray(view)[0] = 3  # the numpy array behind the NDArray, too
    with pytest.raises(ValueError, match=READ_ONLY):
        view += 1
    with pytest.raises(ValueError, match="cannot set WRITEABLE flag"):
        np.asarray(view).flags.writeable = True
    np.testing.assert_array_equal(getattr(x, part).asnumpy(), before)
    x.check_format(full_check=True)


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_values_stay_writable(stype):
    x = make(stype)
    x.data[:] = 7  # a value cannot break a kernel: .data shares memory, writable
    stored = make(stype).asnumpy() != 0  # csr: the non-zeros; row_sparse: whole rows
    if stype == "row_sparse":
        stored = np.broadcast_to(stored.any(axis=1, keepdims=True), stored.shape)
    expected = np.where(stored, 7, 0)
    np.testing.assert_array_equal(x.asnumpy(), expected)


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_copies_of_the_indices_are_writable_and_detached(stype):
    x = make(stype)
    ids = x.indices.asnumpy()
    ids[0] = 99
    assert x.indices.asnumpy()[0] != 99
    y = x.copy()  # a copy's own views are read-only as well
    with pytest.raises(ValueError, match=READ_ONLY):
        y.indices[0] = 3


def test_row_slices_hand_out_read_only_views():
    x = make("csr")[1:3]
    with pytest.raises(ValueError, match=READ_ONLY):
        x.indices[0] = 3
    with pytest.raises(ValueError, match=READ_ONLY):
        x.indptr[0] = 1


def test_asscipy_cannot_write_into_the_array():
    x = make("csr")
    m = x.asscipy()
    for name in ("indices", "indptr"):
        part = getattr(m, name)
        try:
            part[0] = 3  # a copy (scipy narrowed it to int32) or refused
        except ValueError as e:
            assert READ_ONLY in str(e)
    np.testing.assert_array_equal(x.indices.asnumpy(), [0, 2, 2, 0, 1, 3])
    np.testing.assert_array_equal(x.indptr.asnumpy(), [0, 2, 3, 3, 6])
    x.check_format(full_check=True)


def test_a_scipy_source_with_int64_indices_is_not_shared():
    m = sp.csr_matrix(np.eye(3, dtype=np.float32))
    m.indices, m.indptr = m.indices.astype(np.int64), m.indptr.astype(np.int64)
    x = nd.array(m)
    m.indices[0] = 2  # the caller edits its own matrix afterwards
    m.indptr[1] = 3
    np.testing.assert_array_equal(x.asnumpy(), np.eye(3))
    x.check_format(full_check=True)


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_a_tuple_source_is_copied(stype):
    data, indices = np.ones(2, np.float32), np.array([0, 2], np.int64)
    if stype == "csr":
        indptr = np.array([0, 1, 2], np.int64)
        x = nd.sparse.csr_matrix((data, indices, indptr), shape=(2, 3))
        indptr[1] = 2
    else:
        x = nd.sparse.row_sparse_array((data.reshape(2, 1), indices), shape=(3, 1))
    indices[0] = 10**9  # the caller's arrays are not the array's buffers
    data[:] = 5
    x.check_format(full_check=True)
    assert x.asnumpy().sum() == 2


# -- the sequences that used to crash now raise ------------------------------------------

PRELUDE = """
import numpy as np, nets
from nets import nd
csr = nd.sparse.csr_matrix(np.eye(4, dtype=np.float32))
rsp = nd.sparse.row_sparse_array((np.ones((2, 3), np.float32), [0, 1]), shape=(4, 3))
"""

HOSTILE = {
    "csr column out of range, then dot": """
csr.indices[0] = 10**9
print(nd.dot(csr, nd.ones((4, 3))).asnumpy())
""",
    "csr column out of range through numpy, then dot": """
np.asarray(csr.indices)[0] = 10**9
print(nd.dot(csr, nd.ones((4, 3))).asnumpy())
""",
    "csr indptr decreasing, then dot": """
csr.indptr[1] = 10**9  # indptr[1] > indptr[2]: decreasing, and past nnz
print(nd.dot(csr, nd.ones((4, 3))).asnumpy())
""",
    "row_sparse index out of range, then a lazy update": """
rsp.indices[1] = 10**12
w = nd.ones((4, 3)); opt = nets.optim.create('sgd'); state = opt.create_state(0, w)
opt.update(0, w, rsp, state)
print(w.asnumpy())
""",
    "row_sparse indices made duplicates, then a lazy update": """
rsp.indices[1] = 0
w = nd.ones((4, 3)); opt = nets.optim.create('adam'); state = opt.create_state(0, w)
opt.update(0, w, rsp, state)
print(w.asnumpy())
""",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_editing_indices_then_running_a_kernel_raises_instead_of_crashing(name):
    proc = run_python(PRELUDE + HOSTILE[name])
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}:\n{proc.stderr}"
    assert proc.returncode == 1 and READ_ONLY in proc.stderr, proc.stdout + proc.stderr


def test_editing_a_shared_scipy_source_cannot_crash_a_kernel():
    proc = run_python(PRELUDE + """
import scipy.sparse as sp
m = sp.csr_matrix(np.eye(4, dtype=np.float32))
m.indices, m.indptr = m.indices.astype(np.int64), m.indptr.astype(np.int64)
x = nd.array(m)
m.indices[0] = 10**9
print(nd.dot(x, nd.ones((4, 3))).asnumpy().sum())
""")
    assert proc.returncode == 0, f"return code {proc.returncode}:\n{proc.stderr}"
    assert float(proc.stdout.split()[-1]) == 12.0  # eye(4) . ones((4, 3)): the old values
