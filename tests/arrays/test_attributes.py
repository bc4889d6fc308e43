"""Attributes and methods of the three array types: shape/dtype/stype/size/ndim/context,
data/indices/indptr, asnumpy/asscalar/item/asscipy, tostype, astype, as_in_context,
wait_to_read, reshape, T, check_format, repr, and never densifying implicitly."""
import time

import numpy as np
import pytest
import scipy.sparse as sp

import nets
from nets import nd
from tests.arrays.conftest import DENSE, STYPES, make
from nets.base import ContextError, NetsError, ShapeError, SparseFormatError



@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("stype", STYPES)
def test_basic_attributes(stype, dtype):
    x = make(stype, dtype=dtype)
    assert x.stype == stype and x.shape == (5, 4) and x.dtype == dtype
    assert x.size == 20 and x.ndim == 2 and len(x) == 5
    assert x.context == nets.cpu() and x.ctx == nets.cpu()
    assert isinstance(x, nd.NDArray)
    assert type(x) is {"default": nd.NDArray, "csr": nd.CSRNDArray,
                       "row_sparse": nd.RowSparseNDArray}[stype]
    np.testing.assert_array_equal(x.asnumpy(), DENSE.astype(dtype))


@pytest.mark.parametrize("stype", STYPES)
def test_asnumpy_is_a_copy(stype):
    x = make(stype)
    a = x.asnumpy()
    assert type(a) is np.ndarray
    a[:] = -1
    np.testing.assert_array_equal(x.asnumpy(), DENSE)


def test_csr_parts():
    x = make("csr")
    assert all(type(p) is nd.NDArray for p in (x.data, x.indices, x.indptr))
    np.testing.assert_array_equal(x.data.asnumpy(), [1, 2, 3, 4, 5, 6])
    np.testing.assert_array_equal(x.indices.asnumpy(), [0, 3, 1, 3, 0, 1])
    np.testing.assert_array_equal(x.indptr.asnumpy(), [0, 2, 2, 4, 4, 6])
    assert x.data.dtype == np.float32 and x.indices.dtype == x.indptr.dtype == np.int64
    assert x.nnz == 6
    x.data[0] = 10  # the parts share memory with the array, as in MXNet
    assert x.asnumpy()[0, 0] == 10


def test_rsp_parts():
    x = make("row_sparse")
    np.testing.assert_array_equal(x.indices.asnumpy(), [0, 2, 4])
    np.testing.assert_array_equal(x.data.asnumpy(), DENSE[[0, 2, 4]])
    assert x.indices.dtype == np.int64 and x.data.shape == (3, 4)
    x.data[1] = 7
    np.testing.assert_array_equal(x.asnumpy()[2], [7, 7, 7, 7])


def test_nbytes():
    x = make("csr")
    assert x.nbytes == 6 * 4 + 6 * 8 + 6 * 8
    assert make("default").nbytes == 20 * 4
    assert make("row_sparse").nbytes == 12 * 4 + 3 * 8


@pytest.mark.parametrize("stype", STYPES)
def test_asscalar_and_item(stype):
    x = make(stype, [[2.5]])
    assert x.asscalar() == 2.5 and x.item() == 2.5 and type(x.asscalar()) is float
    assert float(x) == 2.5
    assert nd.array([3], dtype="int64").asscalar() == 3
    with pytest.raises(ShapeError, match=r"size 1.*\(5, 4\)"):
        make(stype).asscalar()


def test_asscipy_shares_values():
    x = make("csr")
    m = x.asscipy()
    assert isinstance(m, sp.csr_matrix) and m.shape == (5, 4)
    np.testing.assert_array_equal(m.toarray(), DENSE)
    m.data[0] = 42
    assert x.asnumpy()[0, 0] == 42


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dst", STYPES)
@pytest.mark.parametrize("src", STYPES)
def test_tostype(src, dst, dtype):
    x = make(src, dtype=dtype)
    y = x.tostype(dst)
    assert y.stype == dst and y.dtype == dtype and y.shape == x.shape and y is not x
    np.testing.assert_array_equal(y.asnumpy(), DENSE.astype(dtype))
    if dst != "default":
        y.check_format(full_check=True)
        expected = 6 if dst == "csr" else 3  # CSR stores non-zeros, row_sparse non-zero rows
        assert y.data.shape[0] == expected
    # the result owns its values
    (y.data if dst != "default" else y)[:] = 0
    np.testing.assert_array_equal(x.asnumpy(), DENSE.astype(dtype))


def test_tostype_row_sparse_nd():
    dense = np.zeros((4, 2, 3), np.float32)
    dense[2, 1, 0] = 5
    y = nd.array(dense).tostype("row_sparse")
    np.testing.assert_array_equal(y.indices.asnumpy(), [2])
    np.testing.assert_array_equal(y.tostype("default").asnumpy(), dense)


@pytest.mark.parametrize("stype", STYPES)
def test_astype(stype):
    x = make(stype)
    y = x.astype("float64")
    assert y.stype == stype and y.dtype == np.float64 and x.dtype == np.float32
    np.testing.assert_array_equal(y.asnumpy(), DENSE)
    z = x.astype(np.int32)
    assert z.dtype == np.int32 and z.stype == stype
    assert x.astype(np.float32, copy=False) is x
    assert x.astype(np.float32) is not x


def test_as_in_context():
    x = make("csr")
    assert x.as_in_context(nets.cpu()) is x
    y = x.as_in_context(nets.cpu(1))
    assert y.context == nets.cpu(1) and y.stype == "csr" and y is not x
    np.testing.assert_array_equal(y.asnumpy(), DENSE)
    with pytest.raises(ContextError, match="no GPU backend"):
        x.as_in_context(nets.gpu())


def test_wait_to_read():
    x = make("default")
    assert x.wait_to_read() is None
    assert nd.waitall() is None


def test_reshape():
    x = nd.array(np.arange(6.0), dtype=np.float64)
    expected = np.arange(6.0).reshape(2, 3)
    for y in (x.reshape(2, 3), x.reshape((2, 3)), x.reshape(shape=(2, 3)), x.reshape(-1, 3)):
        assert y.shape == (2, 3) and y.dtype == np.float64
        np.testing.assert_array_equal(y.asnumpy(), expected)
    z = nd.array(expected).reshape((0, -1))  # MXNet's code 0 copies the input's dim
    assert z.shape == (2, 3)
    assert nd.array(expected).reshape(-1).shape == (6,)


def test_transpose_property():
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(nd.array(a).T.asnumpy(), a.T)
    b = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(nd.array(b).T.asnumpy(), b.T)


# -- check_format (the public index views are read-only: these corrupt the private buffers,
# as a buggy internal writer would) ---------------------------------------------------

@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_check_format_accepts_valid(stype):
    make(stype).check_format(full_check=True)
    make(stype).check_format(full_check=False)
    nd.sparse.zeros(stype, (3, 4)).check_format()


@pytest.mark.parametrize("edit, message", [
    (lambda x: x._indices.__setitem__(1, 4), r"indices\[1\]=4 is out of range for 4 columns"),
    (lambda x: x._indices.__setitem__(0, -1), r"indices\[0\]=-1 is out of range"),
    (lambda x: x._indices.__setitem__(1, 0), r"row 0 are not sorted and unique"),
    (lambda x: x._indices.__setitem__(0, 3), r"row 0 are not sorted and unique"),
    (lambda x: x._indptr.__setitem__(2, 1), r"non-decreasing.*indptr\[2\]=1"),
])
def test_check_format_catches_in_place_corruption_csr(edit, message):
    x = make("csr")
    edit(x)
    x.check_format(full_check=False)  # the cheap check covers only lengths and ends
    with pytest.raises(SparseFormatError, match=message):
        x.check_format(full_check=True)


@pytest.mark.parametrize("edit, message", [
    (lambda x: x._indices.__setitem__(2, 5), r"indices\[2\]=5 is out of range for 5 rows"),
    (lambda x: x._indices.__setitem__(0, -2), r"indices\[0\]=-2 is out of range"),
    (lambda x: x._indices.__setitem__(1, 0), r"duplicate at indices\[0\]=0"),
    (lambda x: x._indices.__setitem__(0, 3), r"unsorted at indices\[0\]=3"),
])
def test_check_format_catches_in_place_corruption_rsp(edit, message):
    x = make("row_sparse")
    edit(x)
    x.check_format(full_check=False)
    with pytest.raises(SparseFormatError, match=message):
        x.check_format()


def test_check_format_cheap_check_catches_indptr_end():
    x = make("csr")
    x._indptr[-1] = 5
    with pytest.raises(SparseFormatError, match=r"indptr\[-1\]=5"):
        x.check_format(full_check=False)


# -- repr and never densifying implicitly --------------------------------------------

def test_repr_small():
    r = repr(nd.array([[1, 2, 3], [4, 5, 6]]))
    assert "<NDArray 2x3 @cpu(0)>" in r and "4" in r and "6" in r
    r = repr(make("csr"))
    assert "<CSRNDArray 5x4 @cpu(0)>" in r and "6." in r  # small sparse arrays show values
    r = repr(make("row_sparse").as_in_context(nets.cpu(2)))
    assert "<RowSparseNDArray 5x4 @cpu(2)>" in r and "5." in r


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_repr_large_sparse_never_densifies(stype, monkeypatch):
    n = 10 ** 6
    if stype == "csr":
        x = nd.sparse.csr_matrix(([1., 2., 3.], ([0, 5, n - 1], [1, 7, n - 1])), shape=(n, n))
    else:
        x = nd.sparse.row_sparse_array(([[1.] * 4] * 3, [0, 5, n - 1]), shape=(n, 4))
    assert x.size == n * (n if stype == "csr" else 4)

    def boom(*args):
        raise AssertionError("repr densified a large sparse array")
    monkeypatch.setattr(type(x), "asnumpy", boom)
    monkeypatch.setattr(type(x), "_scatter_into", boom)
    start = time.perf_counter()
    r = repr(x)
    assert time.perf_counter() - start < 0.5
    assert f"{type(x).__name__} {n}x" in r and "3" in r and "nnz" in r


def test_repr_large_dense_is_summarised():
    r = repr(nd.zeros((1000, 1000)))
    assert "..." in r and len(r) < 2000 and "<NDArray 1000x1000 @cpu(0)>" in r


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_sparse_never_converts_implicitly(stype):
    x = make(stype)
    with pytest.raises(NetsError, match="asnumpy"):
        np.asarray(x)
    with pytest.raises(NetsError, match="iterating"):
        list(x)


def test_dense_numpy_protocol():
    x = nd.array([[1, 2], [3, 4]])
    a = np.asarray(x)
    assert a.dtype == np.float32 and a.tolist() == [[1, 2], [3, 4]]
    assert np.asarray(x, dtype=np.float64).dtype == np.float64
    assert [row.asnumpy().tolist() for row in x] == [[1, 2], [3, 4]]
