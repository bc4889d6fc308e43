"""Slicing, assignment and copying: ``dst[:] = src`` and ``copyto`` keep the destination's
storage type and dtype, ``copy`` is deep, CSR row slicing, dense basic/advanced indexing
with views sharing memory."""
import numpy as np
import pytest

import nets
from nets import nd
from tests.arrays.conftest import DENSE, STYPES, make
from nets.base import ContextError, NetsError, ShapeError

OTHER = np.array([[0, 0, 0, 0], [7, 0, 8, 0], [0, 0, 0, 0], [0, 0, 0, 9], [0, 0, 0, 0]],
                 np.float32)


# -- dst[:] = src and copyto: 9 stype pairs ---------------------------------------------

@pytest.mark.parametrize("how", ["setitem", "copyto"])
@pytest.mark.parametrize("dst_stype", STYPES)
@pytest.mark.parametrize("src_stype", STYPES)
def test_copy_into_keeps_destination_stype_and_dtype(src_stype, dst_stype, how):
    src = make(src_stype, OTHER)
    dst = make(dst_stype, dtype=np.float64)  # holds other values and another dtype
    if how == "setitem":
        dst[:] = src
    else:
        assert src.copyto(dst) is dst
    assert dst.stype == dst_stype and dst.dtype == np.float64 and dst.shape == OTHER.shape
    np.testing.assert_array_equal(dst.asnumpy(), OTHER)
    if dst_stype != "default":
        dst.check_format(full_check=True)
    (dst.data if dst_stype != "default" else dst)[:] = -1  # dst does not alias src
    np.testing.assert_array_equal(src.asnumpy(), OTHER)
    assert src.stype == src_stype


@pytest.mark.parametrize("stype", STYPES)
def test_assign_scalars_and_numpy(stype):
    x = make(stype)
    x[:] = 0
    assert x.stype == stype
    np.testing.assert_array_equal(x.asnumpy(), np.zeros_like(DENSE))
    if stype != "default":
        assert x.data.shape[0] == 0  # zero assignment stores nothing
    x[:] = 2.5
    np.testing.assert_array_equal(x.asnumpy(), np.full_like(DENSE, 2.5))
    x[:] = OTHER
    assert x.stype == stype
    np.testing.assert_array_equal(x.asnumpy(), OTHER)
    x[:] = OTHER[1]  # a row broadcasts
    np.testing.assert_array_equal(x.asnumpy(), np.broadcast_to(OTHER[1], DENSE.shape))


def test_zero_assignment_to_huge_sparse_is_cheap():
    n = 10 ** 6
    x = nd.sparse.csr_matrix(([1., 2.], ([0, n - 1], [3, n - 1])), shape=(n, n))
    x[:] = 0
    assert x.nnz == 0 and x.shape == (n, n)


@pytest.mark.parametrize("stype", STYPES)
def test_self_assignment(stype):
    x = make(stype)
    x[:] = x
    np.testing.assert_array_equal(x.asnumpy(), DENSE)


@pytest.mark.parametrize("dst_stype", STYPES)
@pytest.mark.parametrize("src_stype", ["default", "csr"])
def test_copy_into_shape_mismatch(src_stype, dst_stype):
    src = make(src_stype, DENSE[:3])
    dst = make(dst_stype)
    with pytest.raises(ShapeError, match=r"\(3, 4\)"):
        src.copyto(dst)
    if dst_stype != "default" or src_stype != "default":  # dense `x[:] = y` broadcasts
        with pytest.raises(ShapeError, match=r"\(3, 4\)"):
            dst[:] = src


@pytest.mark.parametrize("stype", STYPES)
def test_copy_is_deep(stype):
    x = make(stype)
    y = x.copy()
    assert y is not x and y.stype == stype and y.dtype == x.dtype
    (y.data if stype != "default" else y)[:] = -1
    np.testing.assert_array_equal(x.asnumpy(), DENSE)


@pytest.mark.parametrize("stype", STYPES)
def test_copyto_context(stype):
    x = make(stype)
    y = x.copyto(nets.cpu())
    assert y is not x and y.stype == stype and y.context == nets.cpu()
    np.testing.assert_array_equal(y.asnumpy(), DENSE)
    assert x.copyto(nets.cpu(3)).context == nets.cpu(3)
    with pytest.raises(ContextError, match="no GPU backend"):
        x.copyto(nets.gpu())


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_sparse_partial_assignment_is_refused(stype):
    x = make(stype)
    with pytest.raises(NetsError, match=r"x\[:\] = value"):
        x[0] = 1
    with pytest.raises(NetsError, match="whole assignment"):
        x[1:3] = 0


# -- CSR row slicing ---------------------------------------------------------------

@pytest.mark.parametrize("key", [slice(1, 3), slice(None), slice(0, 5), slice(-2, None),
                                 slice(None, -1), slice(3, 1), slice(5, 10), slice(2, 2),
                                 slice(None, None, 1), slice(-100, 100)],
                         ids=str)
def test_csr_row_slice(key):
    x = make("csr")
    y = x[key]
    assert y.stype == "csr" and y.dtype == x.dtype
    assert y.shape == DENSE[key].shape
    y.check_format(full_check=True)
    np.testing.assert_array_equal(y.asnumpy(), DENSE[key])


@pytest.mark.parametrize("i", [0, 2, 4, -1, -5, np.int64(3)])
def test_csr_row_index(i):
    y = make("csr")[i]
    assert y.stype == "csr" and y.shape == (1, 4)
    y.check_format(full_check=True)
    np.testing.assert_array_equal(y.asnumpy(), DENSE[i][None])


def test_csr_slice_of_slice_and_views():
    x = make("csr")
    y = x[2:5][1:3]
    np.testing.assert_array_equal(y.asnumpy(), DENSE[3:5])
    z = x[2:3]
    z.data[:] = 10  # like numpy slicing, the values are views
    np.testing.assert_array_equal(x.asnumpy()[2], [0, 10, 0, 10])
    w = x[4:5].copy()
    w.data[:] = -1
    np.testing.assert_array_equal(x.asnumpy()[4], DENSE[4])


@pytest.mark.parametrize("key, error, message", [
    (slice(None, None, 2), NetsError, "step 1, got 2"),
    (slice(None, None, -1), NetsError, "step 1, got -1"),
    (5, IndexError, "row index 5 is out of range for 5 rows"),
    (-6, IndexError, "row index -6"),
    ((0, 1), NetsError, r"x\[i\] and x\[a:b\]"),
    ([0, 2], NetsError, "row slicing"),
])
def test_csr_bad_keys(key, error, message):
    with pytest.raises(error, match=message):
        make("csr")[key]


def test_rsp_indexing():
    x = make("row_sparse")
    assert x[:] is x
    with pytest.raises(NetsError, match="retain"):
        x[1:3]
    with pytest.raises(NetsError, match="retain"):
        x[0]


# -- dense indexing ----------------------------------------------------------------

def test_dense_basic_indexing_returns_views():
    a = np.arange(24.0, dtype=np.float32).reshape(4, 6)
    x = nd.array(a)
    for key in (1, slice(1, 3), (slice(None), 2), (slice(1, None, 2), slice(None, None, -2)),
                (Ellipsis, 0), (None, 2)):
        v = x[key]
        assert type(v) is nd.NDArray and v.shape == a[key].shape
        np.testing.assert_array_equal(v.asnumpy(), a[key])
    v = x[1:3]
    v[:] = -1  # writing through the view changes x
    assert (x.asnumpy()[1:3] == -1).all() and x.asnumpy()[0, 0] == 0
    row = x[3]
    row[0] = 100
    assert x.asnumpy()[3, 0] == 100
    x[0, 1] = 50  # and writing x changes earlier views
    assert x[0].asnumpy()[1] == 50


def test_dense_scalar_and_advanced_indexing():
    a = np.arange(12.0).reshape(3, 4)
    x = nd.array(a)
    s = x[1, 2]
    assert s.shape == () and s.asscalar() == 6.0
    idx = nd.array([2, 0], dtype="int64")
    np.testing.assert_array_equal(x[idx].asnumpy(), a[[2, 0]])
    np.testing.assert_array_equal(x[idx, 1].asnumpy(), a[[2, 0], 1])
    mask = nd.array(a > 5, dtype=bool)
    np.testing.assert_array_equal(x[mask].asnumpy(), a[a > 5])
    c = x[idx]  # advanced indexing copies
    c[:] = -1
    np.testing.assert_array_equal(x.asnumpy(), a)


def test_dense_assignment_forms():
    a = np.zeros((4, 3), np.float32)
    x = nd.zeros((4, 3))
    x[0] = 1
    a[0] = 1
    x[:, 1] = nd.array([5, 6, 7, 8])
    a[:, 1] = [5, 6, 7, 8]
    x[2:4] = np.full((2, 3), 3)
    a[2:4] = 3
    x[nd.array([1, 3], dtype="int64")] = 9
    a[[1, 3]] = 9
    x[nd.array([[True, False, False]] * 4, dtype=bool)] = -2
    a[:, 0] = -2
    np.testing.assert_array_equal(x.asnumpy(), a)
    assert x.dtype == np.float32


def test_dense_partial_assignment_from_sparse():
    x = nd.zeros((5, 4), dtype="float64")
    x[1:4] = make("csr", DENSE[1:4])
    expected = np.zeros((5, 4))
    expected[1:4] = DENSE[1:4]
    np.testing.assert_array_equal(x.asnumpy(), expected)
    assert x.dtype == np.float64


def test_inplace_arithmetic_keeps_identity_and_stype():
    x = nd.array(DENSE)
    view = x[0:2]
    x += 1
    np.testing.assert_array_equal(x.asnumpy(), DENSE + 1)
    np.testing.assert_array_equal(view.asnumpy(), DENSE[0:2] + 1)  # updated in place
    y = make("csr")
    y *= 2
    assert y.stype == "csr"
    np.testing.assert_array_equal(y.asnumpy(), DENSE * 2)
