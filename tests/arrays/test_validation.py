"""Bad input raises a NetsError subclass whose message names the argument and the value."""
import numpy as np
import pytest

import nets
from nets import nd
from nets.base import (ContextError, DTypeError, NetsError, ShapeError, SparseFormatError,
                       StorageTypeError)

csr, rsp = nd.sparse.csr_matrix, nd.sparse.row_sparse_array
DATA, INDICES, INDPTR = [7, 8, 9], [0, 2, 1], [0, 2, 2, 3]


@pytest.mark.parametrize("call, error, message", [
    # lengths and shapes
    (lambda: csr(([7, 8], INDICES, INDPTR), shape=(3, 4)), ShapeError,
     r"len\(data\)=2 != len\(indices\)=3"),
    (lambda: csr(([[7, 8, 9]], INDICES, INDPTR), shape=(3, 4)), ShapeError, "must be 1-D"),
    (lambda: csr(np.eye(3), shape=(3, 4)), ShapeError,
     r"shape=\(3, 4\) does not match the source's shape \(3, 3\)"),
    (lambda: csr(([1., 2.], ([0, 1, 1], [0, 1, 2])), shape=(2, 3)), ShapeError,
     r"data \(2,\), row \(3,\), col \(3,\)"),
    # column indices out of range, negative too
    (lambda: csr((DATA, [0, 4, 1], INDPTR), shape=(3, 4)), SparseFormatError,
     r"indices\[1\]=4 is out of range for 4 columns"),
    (lambda: csr((DATA, [0, -1, 1], INDPTR), shape=(3, 4)), SparseFormatError,
     r"indices\[1\]=-1 is out of range"),
    (lambda: csr((DATA, ([0, 3, 1], [0, 1, 1])), shape=(3, 4)), SparseFormatError,
     r"row\[1\]=3 is out of range for shape=\(3, 4\)"),
    (lambda: csr((DATA, ([0, 1, 1], [-1, 1, 2])), shape=(3, 4)), SparseFormatError,
     r"col\[0\]=-1 is out of range"),
    # bad indptr
    (lambda: csr((DATA, INDICES, [0, 2, 3]), shape=(3, 4)), SparseFormatError,
     r"len\(indptr\)=3 must be shape\[0\] \+ 1 = 4"),
    (lambda: csr((DATA, INDICES, [1, 2, 2, 3]), shape=(3, 4)), SparseFormatError,
     r"start at 0.*indptr\[0\]=1"),
    (lambda: csr((DATA, INDICES, [0, 3, 2, 3]), shape=(3, 4)), SparseFormatError,
     r"non-decreasing; indptr\[2\]=2 < indptr\[1\]=3"),
    (lambda: csr((DATA, INDICES, [0, 2, 2, 2]), shape=(3, 4)), SparseFormatError,
     r"end at nnz=3.*indptr\[-1\]=2"),
    # a duplicate (row, column) in CSR parts is ambiguous
    (lambda: csr((DATA, [2, 2, 1], INDPTR), shape=(3, 4)), SparseFormatError,
     "duplicate entry at row 0, column 2"),
    # non-integer indices
    (lambda: csr((DATA, [0, 1.5, 1], INDPTR), shape=(3, 4)), SparseFormatError,
     r"indices must hold integers, got indices\[1\]=1.5"),
    (lambda: csr((DATA, INDICES, [0, 2, 2.5, 3]), shape=(3, 4)), SparseFormatError,
     r"indptr must hold integers, got indptr\[2\]=2.5"),
    (lambda: csr((DATA, ["a", "b", "c"], INDPTR), shape=(3, 4)), SparseFormatError,
     "indices must hold integers, got dtype <U1"),
    (lambda: csr((DATA, ([0, 0.5, 1], [0, 1, 2])), shape=(3, 4)), SparseFormatError,
     r"row must hold integers, got row\[1\]=0.5"),
    (lambda: csr((DATA, [0, np.nan, 1], INDPTR), shape=(3, 4)), SparseFormatError,
     r"indices\[1\]=nan"),
    # wrong ndim for CSR
    (lambda: csr(np.zeros((2, 2, 2))), ShapeError, r"2-D; the source has shape \(2, 2, 2\)"),
    (lambda: csr(([], [], [0, 0, 0]), shape=(2, 2, 2)), ShapeError, r"shape=\(2, 2, 2\)"),
    (lambda: nd.sparse.zeros("csr", (2, 2, 2)), ShapeError, r"shape=\(2, 2, 2\)"),
    (lambda: nd.zeros((4,), stype="csr"), ShapeError, r"shape=\(4,\) has 1 dimensions"),
    (lambda: nd.zeros((2, 3, 4)).tostype("csr"), ShapeError, r"\(2, 3, 4\)"),
    # row_sparse
    (lambda: rsp(([[1, 2], [3, 4]], [1, 7]), shape=(6, 2)), SparseFormatError,
     r"indices\[1\]=7 is out of range for 6 rows"),
    (lambda: rsp(([[1, 2], [3, 4]], [-1, 2]), shape=(6, 2)), SparseFormatError,
     r"indices\[0\]=-1 is out of range"),
    (lambda: rsp(([[1, 2], [3, 4]], [4, 1]), shape=(6, 2)), SparseFormatError,
     r"sorted and unique: unsorted at indices\[0\]=4, indices\[1\]=1"),
    (lambda: rsp(([[1, 2], [3, 4]], [2, 2]), shape=(6, 2)), SparseFormatError,
     r"duplicate at indices\[0\]=2"),
    (lambda: rsp(([[1, 2], [3, 4]], [0.5, 2]), shape=(6, 2)), SparseFormatError,
     r"indices must hold integers, got indices\[0\]=0.5"),
    (lambda: rsp(([[1, 2], [3, 4]], [1, 4]), shape=(6, 3)), ShapeError,
     r"data has shape \(2, 2\).*must be \(2, 3\)"),
    (lambda: rsp(([[1, 2], [3, 4]], [1, 4, 5]), shape=(6, 2)), ShapeError,
     r"data has shape \(2, 2\); with 3 indices"),
    (lambda: rsp(5.0), ShapeError, "at least one dimension"),
    (lambda: nd.sparse.zeros("row_sparse", ()), ShapeError, "at least one dimension"),
    (lambda: rsp(np.ones((3, 2)), shape=(4, 2)), ShapeError, r"shape=\(4, 2\)"),
    # unknown storage types
    (lambda: nd.zeros((2, 2), stype="coo"), StorageTypeError, "stype='coo' is not a storage"),
    (lambda: nd.sparse.zeros("dense", (2, 2)), StorageTypeError, "stype='dense'"),
    (lambda: nd.ones((2, 2)).tostype("csc"), StorageTypeError, "stype='csc'"),
    (lambda: nd.sparse.array(np.eye(2)), StorageTypeError, "got ndarray"),
    (lambda: nd.sparse.array(nd.ones((2, 2))), StorageTypeError, "got NDArray"),
    # dtypes, shapes, values
    (lambda: nd.array([1, 2], dtype="float99"), DTypeError, "dtype='float99'"),
    (lambda: nd.zeros((2, 2), dtype=object()), DTypeError, "dtype=<object"),
    (lambda: nd.zeros((-1, 2)), ShapeError, r"shape=\(-1, 2\)"),
    (lambda: nd.ones((2.5, 2)), ShapeError, r"shape=\(2.5, 2\)"),
    (lambda: nd.zeros("ab"), ShapeError, "shape='ab'"),
    (lambda: nd.full(None, 1), ShapeError, "shape=None"),
    (lambda: nd.array([[1, 2], [3]]), ShapeError, "source_array of type list"),
    (lambda: nd.arange(0, 5, 0), ShapeError, "step=0"),
    (lambda: nd.arange(0, 5, repeat=0), ShapeError, "repeat=0 must be a positive integer"),
    (lambda: nd.arange(0, 5, repeat=1.5), ShapeError, "repeat=1.5"),
    (lambda: nd.ones((2, 3)).asscalar(), ShapeError, r"shape \(2, 3\)"),
    # contexts
    (lambda: nd.zeros((2,), ctx="cpu"), ContextError, "ctx='cpu' is not a nets.Context"),
    (lambda: nets.Context("tpu"), ContextError, "device_type='tpu'"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_bad_input(call, error, message):
    assert issubclass(error, NetsError)
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_sparse_assignment_shape_mismatch(stype):
    x = nd.sparse.zeros(stype, (3, 4))
    with pytest.raises(ShapeError, match=r"value has shape \(2, 4\), expected \(3, 4\)"):
        x[:] = nd.ones((2, 4))
    with pytest.raises(ShapeError, match=r"value of shape \(3, 5\) cannot be broadcast"):
        x[:] = np.ones((3, 5))


def test_error_classes_are_also_builtin_errors():
    # code catching ValueError/TypeError (as for numpy) keeps working
    assert issubclass(ShapeError, ValueError) and issubclass(SparseFormatError, ValueError)
    assert issubclass(StorageTypeError, ValueError) and issubclass(DTypeError, TypeError)
    assert nets.NetsError is NetsError


@pytest.mark.parametrize("make", [
    lambda: nd.sparse.csr_matrix((2, 2), shape=(3, 2)),
    lambda: nd.sparse.row_sparse_array((2, 2), shape=(3, 2)),
    lambda: nd.sparse.row_sparse_array((np.int64(2), np.int32(2), 4), shape=(2, 2, 5)),
    lambda: nd.sparse.csr_matrix(nd.ones((2, 2)), shape=(3, 2)),
    lambda: nd.sparse.csr_matrix(nd.ones((2, 2)).tostype("csr"), shape=(2, 3)),
    lambda: nd.sparse.row_sparse_array(nd.ones((2, 2)).tostype("row_sparse"), shape=(3, 2)),
])
def test_a_shape_argument_disagreeing_with_the_source_raises(make):
    """MXNet's test_sparse_nd_exception: csr_matrix((2, 2), shape=(3, 2)) and the like."""
    with pytest.raises(ShapeError, match=r"does not match the source's shape"):
        make()


@pytest.mark.parametrize("make, error, match", [
    (lambda: nd.sparse.csr_matrix(([1.0, 2.0], [0, 1], [0, 1, 2]), shape=(3, 2)),
     SparseFormatError, r"len\(indptr\)=3 must be shape\[0\] \+ 1 = 4"),
    (lambda: nd.sparse.csr_matrix(([1.0, 2.0], [0, 3], [0, 1, 2]), shape=(2, 2)),
     SparseFormatError, r"indices\[1\]=3 is out of range for 2 columns"),
    (lambda: nd.sparse.csr_matrix(([1.0, 2.0, 3.0], [0, 1], [0, 1, 2]), shape=(2, 2)),
     ShapeError, r"len\(data\)=3 != len\(indices\)=2"),
    (lambda: nd.sparse.csr_matrix(([1.0, 2.0], ([0, 1], [0, 1])), shape=(1, 2)),
     SparseFormatError, r"row\[1\]=1 is out of range"),
    (lambda: nd.sparse.row_sparse_array((np.ones((2, 3)), [0, 1]), shape=(3, 2)),
     ShapeError, r"data has shape \(2, 3\).*must be \(2, 2\)"),
    (lambda: nd.sparse.row_sparse_array((np.ones((2, 3)), [0, 5]), shape=(3, 3)),
     SparseFormatError, r"indices\[1\]=5 is out of range for 3 rows"),
])
def test_tuples_that_disagree_with_shape_raise(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_matching_shape_arguments_are_accepted():
    assert nd.sparse.csr_matrix((2, 3), shape=(2, 3)).shape == (2, 3)
    x = nd.sparse.row_sparse_array((np.int64(4), np.int32(2)), shape=(4, 2))
    assert x.shape == (4, 2) and x.indices.shape == (0,)
