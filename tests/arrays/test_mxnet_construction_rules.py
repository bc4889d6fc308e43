"""MXNet's construction rules that its own unit tests read: ``_num_aux`` and the shapes that
cannot be inferred from empty indices (MXNet's ``sparse.py`` raises ``ValueError`` there)."""
import numpy as np
import pytest

from nets import nd
from nets.base import ShapeError
from tests.arrays.conftest import make


def test_num_aux_counts_the_index_buffers():
    # MXNet: csr has indptr and indices (2 aux arrays), row_sparse has indices (1)
    assert make("csr")._num_aux == 2
    assert make("row_sparse")._num_aux == 1
    with pytest.raises(AttributeError):
        make("csr")._num_aux = 3  # read-only


@pytest.mark.parametrize("build", [
    lambda: nd.sparse.csr_matrix((np.zeros(0), np.zeros(0, np.int64), [0, 0, 0])),
    lambda: nd.sparse.row_sparse_array((np.zeros((0, 3)), np.zeros(0, np.int64)))])
def test_empty_indices_without_shape_cannot_infer_it(build):
    with pytest.raises(ValueError, match="cannot be inferred") as info:
        build()
    assert isinstance(info.value, ShapeError)


def test_empty_indices_with_a_shape_and_inference_from_stored_entries():
    empty = nd.sparse.csr_matrix((np.zeros(0), np.zeros(0, np.int64), [0, 0, 0]), shape=(2, 5))
    assert empty.shape == (2, 5) and empty.nnz == 0
    rsp = nd.sparse.row_sparse_array((np.zeros((0, 3)), np.zeros(0, np.int64)), shape=(4, 3))
    assert rsp.shape == (4, 3)
    # widths inferred from the largest stored column / row, as MXNet
    csr = nd.sparse.csr_matrix(([1.0, 2.0], [0, 3], [0, 1, 2]))
    assert csr.shape == (2, 4)
    np.testing.assert_array_equal(csr.asnumpy(), [[1, 0, 0, 0], [0, 0, 0, 2]])
    rsp = nd.sparse.row_sparse_array(([[1.0, 2.0]], [2]))
    assert rsp.shape == (3, 2)
