"""Unpickling runs the checks every constructor runs: a damaged pickle (e.g. a
multiprocessing payload) raises ``SparseFormatError`` instead of handing kernels indices
out of range. The crash cases run in a child process (a failed check would segfault)."""
import pickle

import numpy as np
import pytest

import nets
from nets import nd
from nets.base import SparseFormatError
from tests.limits import run_limited


def _csr():
    return nd.sparse.csr_matrix(([1.0, 2.0, 3.0], [0, 3, 1], [0, 2, 3]), shape=(2, 4))


def _rsp():
    return nd.sparse.row_sparse_array((np.ones((2, 3), np.float32), [1, 4]), shape=(6, 3))


@pytest.mark.parametrize("make", [_csr, _rsp, lambda: nd.array(np.arange(6.0).reshape(2, 3))])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_pickle_round_trip_keeps_values_stype_and_dtype(make, dtype):
    x = make().astype(dtype)
    y = pickle.loads(pickle.dumps(x))
    assert (y.stype, y.dtype, y.shape) == (x.stype, x.dtype, x.shape)
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy())


def _state(x, **changes):
    state = x.__getstate__()
    state.update(changes)
    return state


def _install(cls, state):
    obj = cls.__new__(cls)
    obj.__setstate__(state)
    return obj


BAD_CSR = {
    "index out of range": lambda s: dict(s, buffers=[s["buffers"][0], np.array([0, 99, 1]),
                                                     s["buffers"][2]]),
    "indptr past nnz": lambda s: dict(s, buffers=[s["buffers"][0], s["buffers"][1],
                                                  np.array([0, 2, 7])]),
    "indptr decreasing": lambda s: dict(s, buffers=[s["buffers"][0], s["buffers"][1],
                                                    np.array([0, 3, 2])]),
    "int32 indices": lambda s: dict(s, buffers=[s["buffers"][0],
                                                s["buffers"][1].astype(np.int32),
                                                s["buffers"][2]]),
    "a buffer missing": lambda s: dict(s, buffers=s["buffers"][:2]),
    "a list for a buffer": lambda s: dict(s, buffers=[[1.0, 2.0, 3.0]] + s["buffers"][1:]),
    "object values": lambda s: dict(s, buffers=[s["buffers"][0].astype(object)]
                                    + s["buffers"][1:]),
    "negative shape": lambda s: dict(s, shape=(-2, 4)),
    "3-D shape": lambda s: dict(s, shape=(2, 4, 1)),
    "ctx not a Context": lambda s: dict(s, ctx="cpu"),
    "not a dict": lambda s: [s["buffers"], s["shape"]],
}

BAD_RSP = {
    "row out of range": lambda s: dict(s, buffers=[s["buffers"][0], np.array([1, 6])]),
    "rows unsorted": lambda s: dict(s, buffers=[s["buffers"][0], np.array([4, 1])]),
    "rows duplicated": lambda s: dict(s, buffers=[s["buffers"][0], np.array([1, 1])]),
    "data rows mismatch": lambda s: dict(s, buffers=[np.ones((3, 3), np.float32),
                                                     s["buffers"][1]]),
    "row width mismatch": lambda s: dict(s, buffers=[np.ones((2, 2), np.float32),
                                                     s["buffers"][1]]),
}


@pytest.mark.parametrize("case", sorted(BAD_CSR))
def test_a_damaged_csr_state_is_refused(case):
    x = _csr()
    with pytest.raises(SparseFormatError):
        _install(type(x), BAD_CSR[case](_state(x)))


@pytest.mark.parametrize("case", sorted(BAD_RSP))
def test_a_damaged_row_sparse_state_is_refused(case):
    x = _rsp()
    with pytest.raises(SparseFormatError):
        _install(type(x), BAD_RSP[case](_state(x)))


@pytest.mark.parametrize("case", ["shape mismatch", "complex values", "two buffers"])
def test_a_damaged_dense_state_is_refused(case):
    x = nd.ones((2, 3))
    s = _state(x)
    bad = {"shape mismatch": dict(s, shape=(3, 2)),
           "complex values": dict(s, buffers=[np.ones((2, 3), np.complex64)]),
           "two buffers": dict(s, buffers=s["buffers"] * 2)}[case]
    with pytest.raises(SparseFormatError, match="unpickling a NDArray|unpickling an NDArray"):
        _install(type(x), bad)


def test_a_corrupted_pickle_payload_never_reaches_a_kernel():
    """The payload of a CSR array whose stored index lies far outside its columns, as a
    bit flip in transit would make it: loading it raises; had it loaded, the product
    below would read far outside the weight (a segfault)."""
    code = """
import pickle
import numpy as np
from nets import nd
x = nd.sparse.csr_matrix(([1.0, 2.0], [0, 3], [0, 1, 2]), shape=(2, 4))
payload = pickle.dumps(x).replace(np.array([0, 3]).tobytes(),
                                  np.array([0, 1 << 40]).tobytes())
assert payload != pickle.dumps(x)
try:
    y = pickle.loads(payload)
except nets.NetsError as e:
    print('refused:', type(e).__name__)
else:
    print('loaded', nd.dot(y, nd.ones((4, 8))).asnumpy().sum())
"""
    proc = run_limited(code, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "refused: SparseFormatError"


def test_nets_error_is_what_a_caller_catches():
    assert issubclass(SparseFormatError, nets.NetsError)
