"""Array creation: nd.array, zeros/ones/full/empty/arange, nd.random, and the sparse
constructors csr_matrix / row_sparse_array / sparse.zeros / sparse.array / sparse.empty.
Oracles are numpy and scipy."""
import numpy as np
import pytest
import scipy.sparse as sp

import nets
from nets import nd

# The MXNet CSR tutorial's matrix and its CSR parts.
DENSE = np.array([[7, 0, 8, 0], [0, 0, 0, 0], [0, 9, 0, 0]], dtype=np.float32)
DATA, INDICES, INDPTR = [7, 8, 9], [0, 2, 1], [0, 2, 2, 3]


def check_csr(x, expected, dtype=np.float32):
    """``x`` is a canonical CSR array equal to the numpy array ``expected``."""
    assert isinstance(x, nd.CSRNDArray) and x.stype == "csr"
    assert x.shape == expected.shape and x.dtype == dtype
    assert x.indices.dtype == np.int64 and x.indptr.dtype == np.int64
    x.check_format(full_check=True)
    np.testing.assert_array_equal(x.asnumpy(), expected.astype(dtype))
    ref = sp.csr_matrix(expected)  # canonical: sorted columns, no explicit zeros
    np.testing.assert_array_equal(x.indptr.asnumpy(), ref.indptr)
    np.testing.assert_array_equal(x.indices.asnumpy(), ref.indices)


def check_rsp(x, expected, dtype=np.float32):
    """``x`` is a row_sparse array equal to ``expected`` storing exactly its non-zero rows."""
    assert isinstance(x, nd.RowSparseNDArray) and x.stype == "row_sparse"
    assert x.shape == expected.shape and x.dtype == dtype and x.indices.dtype == np.int64
    x.check_format(full_check=True)
    np.testing.assert_array_equal(x.asnumpy(), expected.astype(dtype))
    rows = np.flatnonzero(expected.reshape(len(expected), -1).any(axis=1))
    np.testing.assert_array_equal(x.indices.asnumpy(), rows)
    np.testing.assert_array_equal(x.data.asnumpy(), expected[rows].astype(dtype))


# -- nd.array ---------------------------------------------------------------------

@pytest.mark.parametrize("source, dtype, expected_dtype", [
    ([[1, 2], [3, 4]], None, np.float32),              # a list gives float32 (MXNet)
    ([1.5, -2.5], None, np.float32),
    (3.0, None, np.float32),
    (np.arange(4, dtype=np.int64), None, np.float32),  # numpy of any dtype too (MXNet 1.x)
    (np.ones((2, 3), np.float64), None, np.float32),
    (np.ones(2, np.bool_), None, np.float32),
    (np.float64(2.5), None, np.float32),
    (np.arange(4, dtype=np.int64), np.int64, np.int64),  # dtype= keeps it
    (np.ones((2, 3), np.float64), "float64", np.float64),
    (np.ones(3, np.float64), "float16", np.float16),   # dtype= wins
    ([1, 2], np.int32, np.int32),
])
def test_array_from_values(source, dtype, expected_dtype):
    x = nd.array(source, dtype=dtype)
    assert type(x) is nd.NDArray and x.stype == "default" and x.dtype == expected_dtype
    np.testing.assert_array_equal(x.asnumpy(), np.asarray(source).astype(expected_dtype))


def test_array_copies_numpy_source():
    src = np.arange(3.0)
    x = nd.array(src)
    src[0] = 9
    assert x.asnumpy()[0] == 0


def test_array_from_ndarray_keeps_dtype_and_copies():
    a = nd.array(np.arange(4), dtype=np.float64)
    b = nd.array(a)
    assert b.dtype == np.float64 and b is not a
    b[0] = 7
    assert a.asnumpy()[0] == 0
    assert nd.array(a, dtype="float32").dtype == np.float32


@pytest.mark.parametrize("fmt", ["csr", "coo", "csc"])
def test_array_from_scipy(fmt):
    m = sp.random(5, 7, density=0.4, format=fmt, dtype=np.float64, random_state=0)
    check_csr(nd.array(m), m.toarray(), np.float64)         # scipy's dtype is kept
    check_csr(nd.array(m, dtype=np.float32), m.toarray(), np.float32)


def test_array_from_scipy_shares_values():
    m = sp.csr_matrix(np.eye(3, dtype=np.float32))
    x = nd.array(m)
    m.data[0] = 5
    assert x.asnumpy()[0, 0] == 5


def test_array_from_noncanonical_scipy_leaves_the_source_alone():
    m = sp.csr_matrix((np.array([1., 2., 3.]), np.array([2, 0, 2]), np.array([0, 3, 3])),
                      shape=(2, 3))  # unsorted columns and a duplicate
    check_csr(nd.array(m), np.array([[2., 0., 4.], [0., 0., 0.]]), np.float64)
    np.testing.assert_array_equal(m.indices, [2, 0, 2])


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_array_from_sparse_keeps_stype(stype):
    dense = np.array([[0, 1.5], [0, 0], [2, 0]], np.float64)
    make = nd.sparse.csr_matrix if stype == "csr" else nd.sparse.row_sparse_array
    src = make(dense)
    x = nd.array(src, dtype=np.float16)
    assert x.stype == stype and x.dtype == np.float16 and src.dtype == np.float64
    np.testing.assert_array_equal(x.asnumpy(), dense.astype(np.float16))
    y = nd.array(src)
    assert y.stype == stype and y.dtype == np.float64 and y is not src


# -- zeros / ones / full / empty / arange ----------------------------------------------

@pytest.mark.parametrize("dtype", [None, "float64", np.int32])
def test_filled_dense(dtype):
    expected = np.dtype(dtype or np.float32)
    for x, fill in ((nd.zeros((2, 3), dtype=dtype), 0), (nd.ones((2, 3), dtype=dtype), 1),
                    (nd.full((2, 3), 7, dtype=dtype), 7), (nd.empty((2, 3), dtype=dtype), 0)):
        assert type(x) is nd.NDArray and x.shape == (2, 3) and x.dtype == expected
        np.testing.assert_array_equal(x.asnumpy(), np.full((2, 3), fill, expected))
    assert nd.zeros(4).shape == (4,) and nd.ones(()).shape == ()


@pytest.mark.parametrize("stype", ["default", "csr", "row_sparse"])
def test_zeros_of_every_stype(stype):
    makers = [lambda: nd.zeros((3, 4), stype=stype, dtype="float64"),
              lambda: nd.empty((3, 4), dtype="float64", stype=stype),
              lambda: nd.sparse.zeros(stype, (3, 4), dtype="float64"),
              lambda: nd.sparse.empty(stype, (3, 4), dtype="float64")]
    for make in makers:
        x = make()
        assert x.stype == stype and x.shape == (3, 4) and x.dtype == np.float64
        np.testing.assert_array_equal(x.asnumpy(), np.zeros((3, 4)))
        if stype != "default":
            assert x.data.size == 0 and x.indices.size == 0


def test_sparse_zeros_defaults():
    x = nd.sparse.zeros("row_sparse", (4, 2, 3))
    assert x.dtype == np.float32 and x.shape == (4, 2, 3) and x.data.shape == (0, 2, 3)
    c = nd.sparse.zeros("csr", (5, 6))
    assert c.indptr.shape == (6,) and c.nnz == 0
    c.check_format()


@pytest.mark.parametrize("args, kwargs, expected", [
    ((5,), {}, np.arange(5)),
    ((2, 8, 2), {}, np.arange(2, 8, 2)),
    ((0, 1, 0.25), {}, np.arange(0, 1, 0.25)),
    ((3, 0, -1), {}, [3, 2, 1]),
    ((0, 3), {"repeat": 2}, [0, 0, 1, 1, 2, 2]),
    ((1, 3), {"step": 1, "repeat": 3}, [1, 1, 1, 2, 2, 2]),
])
def test_arange(args, kwargs, expected):
    x = nd.arange(*args, **kwargs)
    assert x.dtype == np.float32
    np.testing.assert_array_equal(x.asnumpy(), np.asarray(expected, np.float32))
    assert nd.arange(*args, dtype="int64", **kwargs).dtype == np.int64


# -- nd.random -----------------------------------------------------------------------

@pytest.mark.parametrize("fn, kwargs, mean, std", [
    (nd.random.uniform, {"low": -2.0, "high": 3.0}, 0.5, 5 / 12 ** 0.5),
    (nd.random.normal, {"loc": 1.0, "scale": 2.0}, 1.0, 2.0),
])
def test_random_moments_and_reproducibility(fn, kwargs, mean, std):
    nets.random.seed(42)
    a = fn(shape=(50, 40), **kwargs)
    nets.random.seed(42)
    b = fn(shape=(50, 40), **kwargs).asnumpy()
    c = fn(shape=(50, 40), **kwargs).asnumpy()
    assert a.shape == (50, 40) and a.dtype == np.float32 and a.stype == "default"
    a = a.asnumpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    # 2000 samples: the sample mean's std is std/45, the sample std's about std/63
    assert abs(a.mean() - mean) < 0.15 * std and abs(a.std() - std) < 0.1 * std
    if fn is nd.random.uniform:
        assert a.min() >= -2.0 and a.max() < 3.0
    assert fn(shape=7, dtype="float64", **kwargs).dtype == np.float64


def test_random_randint():
    x = nd.random.randint(-3, 4, shape=(1000,)).asnumpy()
    assert x.dtype == np.int64 and x.min() == -3 and x.max() == 3


# -- csr_matrix ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("make", [
    lambda dt: nd.sparse.csr_matrix((DATA, INDICES, INDPTR), shape=(3, 4), dtype=dt),
    lambda dt: nd.sparse.csr_matrix((np.array(DATA, dt), np.array(INDICES), np.array(INDPTR)),
                                    (3, 4)),
    # float NDArray indices, as MXNet code often passes them, are accepted when whole
    lambda dt: nd.sparse.csr_matrix((nd.array(DATA, dtype=dt), nd.array(INDICES),
                                     nd.array(INDPTR)), shape=(3, 4)),
    # columns unsorted within a row are sorted
    lambda dt: nd.sparse.csr_matrix(([8, 7, 9], [2, 0, 1], INDPTR), shape=(3, 4), dtype=dt),
    lambda dt: nd.sparse.csr_matrix(([7, 8, 9], ([0, 0, 2], [0, 2, 1])), shape=(3, 4), dtype=dt),
    # COO duplicates are summed, as in scipy
    lambda dt: nd.sparse.csr_matrix(([3, 9, 4, 8], ([0, 2, 0, 0], [0, 1, 0, 2])), (3, 4), dtype=dt),
    lambda dt: nd.sparse.csr_matrix(sp.csr_matrix(DENSE.astype(dt))),
    lambda dt: nd.sparse.csr_matrix(sp.coo_matrix(DENSE), dtype=dt),
    lambda dt: nd.sparse.csr_matrix(DENSE.astype(dt)),
    lambda dt: nd.sparse.csr_matrix(DENSE.tolist(), dtype=dt),
    lambda dt: nd.sparse.csr_matrix(nd.array(DENSE, dtype=dt)),
    lambda dt: nd.sparse.csr_matrix(nd.sparse.csr_matrix(DENSE, dtype=dt)),
    lambda dt: nd.sparse.csr_matrix(nd.sparse.row_sparse_array(DENSE), dtype=dt),
    lambda dt: nd.array(sp.csr_matrix(DENSE), dtype=dt),
], ids=["tuple-lists", "tuple-numpy", "tuple-ndarrays", "unsorted-cols", "coo", "coo-dups",
        "scipy-csr", "scipy-coo", "dense-numpy", "dense-list", "dense-ndarray", "csr", "rsp",
        "nd.array-scipy"])
def test_csr_matrix_sources(make, dtype):
    check_csr(make(dtype), DENSE, dtype)


def test_csr_matrix_infers_shape():
    x = nd.sparse.csr_matrix((DATA, INDICES, INDPTR))
    check_csr(x, DENSE[:, :3])
    y = nd.sparse.csr_matrix((DATA, ([0, 0, 2], [0, 2, 1])))
    check_csr(y, DENSE[:, :3])


def test_csr_matrix_dtype_rule():
    # numpy data keeps its dtype; list data gives float32 (MXNet's rule)
    assert nd.sparse.csr_matrix((np.array(DATA), INDICES, INDPTR), (3, 4)).dtype == np.int64
    assert nd.sparse.csr_matrix((DATA, INDICES, INDPTR), (3, 4)).dtype == np.float32


def test_csr_matrix_empty_shape():
    x = nd.sparse.csr_matrix((3, 4), dtype="float64")
    check_csr(x, np.zeros((3, 4)), np.float64)
    check_csr(nd.sparse.csr_matrix(([], [], [0, 0, 0]), shape=(2, 5)), np.zeros((2, 5)))


def test_csr_matrix_never_keeps_user_buffers():
    data, indices, indptr = np.array(DATA, np.float32), np.array(INDICES), np.array(INDPTR)
    x = nd.sparse.csr_matrix((data, indices, indptr), shape=(3, 4))
    data[:], indices[:] = 0, 3
    src = nd.sparse.csr_matrix(DENSE)
    y = nd.sparse.csr_matrix(src)
    src.data[:] = 0
    check_csr(x, DENSE)
    check_csr(y, DENSE)


# -- row_sparse_array ----------------------------------------------------------------

RSP_DENSE = np.array([[0, 0], [1, 2], [0, 0], [0, 0], [3, 4], [0, 0]], np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("make", [
    lambda dt: nd.sparse.row_sparse_array(([[1, 2], [3, 4]], [1, 4]), shape=(6, 2), dtype=dt),
    lambda dt: nd.sparse.row_sparse_array((np.array([[1, 2], [3, 4]], dt), np.array([1, 4])),
                                          shape=(6, 2)),
    lambda dt: nd.sparse.row_sparse_array((nd.array([[1, 2], [3, 4]], dtype=dt),
                                           nd.array([1, 4])), shape=(6, 2)),
    lambda dt: nd.sparse.row_sparse_array(RSP_DENSE.astype(dt)),
    lambda dt: nd.sparse.row_sparse_array(RSP_DENSE.tolist(), dtype=dt),
    lambda dt: nd.sparse.row_sparse_array(nd.array(RSP_DENSE, dtype=dt)),
    lambda dt: nd.sparse.row_sparse_array(nd.sparse.row_sparse_array(RSP_DENSE, dtype=dt)),
    lambda dt: nd.sparse.row_sparse_array(nd.sparse.csr_matrix(RSP_DENSE), dtype=dt),
    lambda dt: nd.sparse.array(nd.sparse.row_sparse_array(RSP_DENSE), dtype=dt),
], ids=["tuple-lists", "tuple-numpy", "tuple-ndarrays", "dense-numpy", "dense-list",
        "dense-ndarray", "rsp", "csr", "sparse.array"])
def test_row_sparse_array_sources(make, dtype):
    check_rsp(make(dtype), RSP_DENSE, dtype)


def test_row_sparse_array_nd():
    data = np.arange(1, 13, dtype=np.float64).reshape(2, 3, 2)
    x = nd.sparse.row_sparse_array((data, [0, 3]), shape=(5, 3, 2))
    expected = np.zeros((5, 3, 2))
    expected[[0, 3]] = data
    check_rsp(x, expected, np.float64)
    check_rsp(nd.sparse.row_sparse_array(expected), expected, np.float64)
    check_rsp(nd.sparse.row_sparse_array((data, [0, 3])), expected[:4], np.float64)  # inferred
    z = nd.sparse.row_sparse_array((5, 3, 2))
    check_rsp(z, np.zeros((5, 3, 2)))
    check_rsp(nd.sparse.row_sparse_array(([], []), shape=(4, 3)), np.zeros((4, 3)))


def test_row_sparse_array_stored_zero_row_is_kept():
    # (data, indices) is taken as given: an explicitly stored zero row stays stored
    x = nd.sparse.row_sparse_array(([[0, 0], [1, 2]], [0, 2]), shape=(3, 2))
    np.testing.assert_array_equal(x.indices.asnumpy(), [0, 2])
    np.testing.assert_array_equal(x.asnumpy(), [[0, 0], [0, 0], [1, 2]])


def test_row_sparse_array_never_keeps_user_buffers():
    data, idx = np.array([[1., 2.], [3., 4.]], np.float32), np.array([1, 4])
    x = nd.sparse.row_sparse_array((data, idx), shape=(6, 2))
    data[:], idx[:] = 0, 5
    check_rsp(x, RSP_DENSE)


# -- nd.sparse.array -----------------------------------------------------------------

def test_sparse_array():
    m = sp.csr_matrix(DENSE.astype(np.float64))
    check_csr(nd.sparse.array(m), DENSE, np.float64)
    src = nd.sparse.csr_matrix(DENSE)
    out = nd.sparse.array(src, dtype=np.float16)
    check_csr(out, DENSE, np.float16)
    assert out is not src


def test_array_dtype_rule_of_mxnet_1x():
    """nd.array: float32 unless dtype= says otherwise, for numpy sources of any dtype, lists
    and Python numbers; a nets array or a scipy matrix keeps its dtype."""
    assert nd.array(np.float64(1.5)).dtype == np.float32
    assert nd.array(2).dtype == np.float32
    assert nd.array([True, False]).dtype == np.float32
    assert nd.array(np.arange(3, dtype=np.uint8), dtype="int32").dtype == np.int32
    x = nd.array(np.array([0.1, 1e-40, 3e38]))  # values as float32 rounds them
    np.testing.assert_array_equal(x.asnumpy(), np.float32([0.1, 1e-40, 3e38]))
    m = sp.csr_matrix(np.eye(2))
    assert nd.array(m).dtype == np.float64 and nd.array(m).stype == "csr"
    assert nd.array(m, dtype="float32").dtype == np.float32
    assert nd.array(nd.array([1], dtype="int64")).dtype == np.int64
    # the sparse constructors keep a numpy source's dtype (MXNet's sparse rule)
    assert nd.sparse.csr_matrix(np.eye(2)).dtype == np.float64
    assert nd.sparse.row_sparse_array((np.ones((1, 2)), [0]), shape=(2, 2)).dtype == np.float64
