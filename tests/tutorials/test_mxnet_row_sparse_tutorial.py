"""MXNet's tutorial "RowSparseNDArray - NDArray for Sparse Gradient Updates"
(apache/mxnet docs/tutorials/sparse/row_sparse.md), every cell ported by renaming
``mx.`` to ``nets.``, asserting the results the tutorial shows. One test per section."""
import numpy as np
import pytest

import nets


def test_motivation():
    X = nets.nd.array([[1, 0]])
    W = nets.nd.array([[3, 4, 5], [6, 7, 8]])
    Y = nets.nd.dot(X, W)
    shown = {"X": X, "W": W, "Y": Y}
    np.testing.assert_array_equal(shown["Y"].asnumpy(), [[3, 4, 5]])
    assert repr(Y).endswith("<NDArray 1x3 @cpu(0)>") and repr(W).endswith("<NDArray 2x3 @cpu(0)>")

    grad_W = nets.nd.dot(X, nets.nd.ones_like(Y), transpose_a=True)
    assert grad_W.stype == "default" and grad_W.dtype == np.float32
    np.testing.assert_array_equal(grad_W.asnumpy(), [[1, 1, 1], [0, 0, 0]])


def test_row_sparse_format():
    # the 2-D example: data holds the non-zero rows, indices their row numbers
    dense = [[1, 2, 3], [0, 0, 0], [4, 0, 5], [0, 0, 0], [0, 0, 0]]
    rsp = nets.nd.array(dense).tostype("row_sparse")
    np.testing.assert_array_equal(rsp.data.asnumpy(), [[1, 2, 3], [4, 0, 5]])
    np.testing.assert_array_equal(rsp.indices.asnumpy(), [0, 2])
    # the 3-D example
    dense3 = [[[1, 0], [0, 2], [3, 4]], [[5, 0], [6, 0], [0, 0]], [[0, 0], [0, 0], [0, 0]]]
    rsp3 = nets.nd.array(dense3).tostype("row_sparse")
    np.testing.assert_array_equal(rsp3.data.asnumpy(), dense3[:2])
    np.testing.assert_array_equal(rsp3.indices.asnumpy(), [0, 1])
    # dense[rsp.indices[i], ...] = rsp.data[i, ...]
    rebuilt = np.zeros(rsp3.shape, np.float32)
    rebuilt[rsp3.indices.asnumpy()] = rsp3.data.asnumpy()
    np.testing.assert_array_equal(rebuilt, dense3)
    assert isinstance(rsp3, nets.nd.NDArray) and rsp3.stype == "row_sparse"


def tutorial_arrays():
    shape = (6, 2)
    data_list = [[1, 2], [3, 4]]
    indices_list = [1, 4]
    a = nets.nd.sparse.row_sparse_array((data_list, indices_list), shape=shape)
    data_np = np.array([[1, 2], [3, 4]])
    indices_np = np.array([1, 4])
    b = nets.nd.sparse.row_sparse_array((data_np, indices_np), shape=shape)
    return a, b


A_DENSE = [[0, 0], [1, 2], [0, 0], [0, 0], [3, 4], [0, 0]]


def test_array_creation():
    a, b = tutorial_arrays()
    shown = {"a": a, "b": b}
    assert repr(shown["a"]).endswith("<RowSparseNDArray 6x2 @cpu(0)>")
    assert repr(shown["b"]).endswith("<RowSparseNDArray 6x2 @cpu(0)>")
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


def test_setting_type():
    a, _ = tutorial_arrays()
    c = nets.nd.sparse.array(a)            # float32 is used by default
    d = nets.nd.array(a, dtype=np.float16)  # a 16-bit float array
    assert (c.dtype, d.dtype) == (np.float32, np.float16)
    assert c.stype == d.stype == "row_sparse"


def test_inspecting_arrays():
    a, _ = tutorial_arrays()
    out = a.asnumpy()
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, A_DENSE)
    data = a.data
    indices = a.indices
    shown = {"a.stype": a.stype, "data": data, "indices": indices}
    assert shown["a.stype"] == "row_sparse"
    np.testing.assert_array_equal(data.asnumpy(), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(indices.asnumpy(), [1, 4])
    assert repr(data).endswith("<NDArray 2x2 @cpu(0)>")
    assert repr(indices).endswith("<NDArray 2 @cpu(0)>")


@pytest.mark.parametrize("cast", ["tostype", "cast_storage"])
def test_storage_type_conversion(cast):
    ones = nets.nd.ones((2, 2))
    if cast == "tostype":
        rsp = ones.tostype("row_sparse")
        dense = rsp.tostype("default")
    else:
        rsp = nets.nd.sparse.cast_storage(ones, "row_sparse")
        dense = nets.nd.sparse.cast_storage(rsp, "default")
    assert repr(rsp).endswith("<RowSparseNDArray 2x2 @cpu(0)>") and rsp.stype == "row_sparse"
    assert repr(dense).endswith("<NDArray 2x2 @cpu(0)>") and dense.stype == "default"
    np.testing.assert_array_equal(dense.asnumpy(), np.ones((2, 2)))
    np.testing.assert_array_equal(rsp.asnumpy(), np.ones((2, 2)))


def test_copies():
    a = nets.nd.ones((2, 2)).tostype("row_sparse")
    b = a.copy()
    c = nets.nd.sparse.zeros("row_sparse", (2, 2))
    c[:] = a
    d = nets.nd.sparse.zeros("row_sparse", (2, 2))
    a.copyto(d)
    shown = {"b is a": b is a, "b.asnumpy()": b.asnumpy(), "c.asnumpy()": c.asnumpy(),
             "d.asnumpy()": d.asnumpy()}
    assert shown["b is a"] is False
    for key in ("b.asnumpy()", "c.asnumpy()", "d.asnumpy()"):
        assert shown[key].dtype == np.float32
        np.testing.assert_array_equal(shown[key], np.ones((2, 2)))

    # a destination keeps its storage type
    e = nets.nd.sparse.zeros("row_sparse", (2, 2))
    f = nets.nd.sparse.zeros("row_sparse", (2, 2))
    g = nets.nd.ones(e.shape)
    e[:] = g
    g.copyto(f)
    assert {"e.stype": e.stype, "f.stype": f.stype, "g.stype": g.stype} == {
        "e.stype": "row_sparse", "f.stype": "row_sparse", "g.stype": "default"}
    np.testing.assert_array_equal(e.asnumpy(), np.ones((2, 2)))
    np.testing.assert_array_equal(f.asnumpy(), np.ones((2, 2)))


def test_retain_row_slices():
    data = [[1, 2], [3, 4], [5, 6]]
    indices = [0, 2, 3]
    rsp = nets.nd.sparse.row_sparse_array((data, indices), shape=(5, 2))
    # retain row 0 and row 1
    rsp_retained = nets.nd.sparse.retain(rsp, nets.nd.array([0, 1]))
    np.testing.assert_array_equal(rsp.asnumpy(), [[1, 2], [0, 0], [3, 4], [5, 6], [0, 0]])
    assert repr(rsp_retained).endswith("<RowSparseNDArray 5x2 @cpu(0)>")
    assert rsp_retained.stype == "row_sparse" and rsp_retained.dtype == np.float32
    np.testing.assert_array_equal(rsp_retained.asnumpy(), [[1, 2], [0, 0], [0, 0], [0, 0],
                                                           [0, 0]])


def transpose_dot():
    shape = (3, 5)
    data = [7, 8, 9]
    indptr = [0, 2, 2, 3]
    indices = [0, 2, 1]
    lhs = nets.nd.sparse.csr_matrix((data, indices, indptr), shape=shape)  # a csr lhs
    rhs = nets.nd.ones((3, 2))                                             # a dense rhs
    # row_sparse, inferred from dot(csr.T, dense)
    return nets.nd.sparse.dot(lhs, rhs, transpose_a=True)


def test_sparse_operators_and_storage_type_inference():
    out = transpose_dot()
    assert repr(out).endswith("<RowSparseNDArray 5x2 @cpu(0)>") and out.stype == "row_sparse"
    np.testing.assert_array_equal(out.asnumpy(), [[7, 7], [9, 9], [8, 8], [0, 0], [0, 0]])
    assert out.asnumpy().dtype == np.float32

    a = out.copy()
    b = a * 2  # row_sparse: zero times 2 is still zero
    c = a + nets.nd.ones((5, 2))  # dense
    assert {"b.stype": b.stype, "c.stype": c.stype} == {"b.stype": "row_sparse",
                                                          "c.stype": "default"}
    np.testing.assert_array_equal(b.asnumpy(), a.asnumpy() * 2)
    np.testing.assert_array_equal(c.asnumpy(), a.asnumpy() + 1)


def test_dense_operator_fallback():
    a = transpose_dot().copy()
    e = nets.nd.sparse.zeros("row_sparse", a.shape)
    with pytest.warns(nets.StorageFallbackWarning, match="log"):
        d = nets.nd.log(a)  # dense operator with a sparse input
    with pytest.warns(nets.StorageFallbackWarning, match="log"):
        e = nets.nd.log(a, out=e)  # dense operator with a sparse output
    # the stypes of a and e are not changed
    assert {"a.stype": a.stype, "d.stype": d.stype, "e.stype": e.stype} == {
        "a.stype": "row_sparse", "d.stype": "default", "e.stype": "row_sparse"}
    with np.errstate(divide="ignore"):
        expected = np.log(a.asnumpy())
    np.testing.assert_array_equal(d.asnumpy(), expected)
    np.testing.assert_array_equal(e.asnumpy(), expected)


def test_sparse_optimizers():
    optim = nets.optim
    shape = (4, 2)
    weight = nets.nd.ones(shape).tostype("row_sparse")
    data = [[1, 2], [4, 5]]
    indices = [1, 2]
    grad = nets.nd.sparse.row_sparse_array((data, indices), shape=shape)
    sgd = optim.SGD(learning_rate=0.01, momentum=0.01)
    momentum = sgd.create_state(0, weight)
    # before the update
    np.testing.assert_array_equal(grad.asnumpy(), [[0, 0], [1, 2], [4, 5], [0, 0]])
    np.testing.assert_array_equal(weight.asnumpy(), np.ones(shape))
    np.testing.assert_array_equal(momentum.asnumpy(), np.zeros(shape))

    sgd.update(0, weight, grad, momentum)
    # only rows 1 and 2 (grad.indices) of weight and momentum are updated
    np.testing.assert_allclose(momentum.asnumpy(), [[0, 0], [-0.01, -0.02], [-0.04, -0.05],
                                                    [0, 0]], rtol=1e-6)
    np.testing.assert_allclose(weight.asnumpy(), [[1, 1], [0.99, 0.98], [0.96, 0.95], [1, 1]],
                               rtol=1e-6)
    assert weight.stype == "row_sparse"


def test_gpu_support(capsys):
    import sys
    gpu_device = nets.gpu()  # nets has no GPU backend: the error is reported
    try:
        a = nets.nd.sparse.zeros("row_sparse", (100, 100), ctx=gpu_device)
        a  # noqa: B018
    except nets.NetsError as err:
        sys.stderr.write(str(err))
    assert "gpu(0): nets has no GPU backend" in capsys.readouterr().err
