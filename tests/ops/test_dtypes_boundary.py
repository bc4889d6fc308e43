"""Dtypes are checked where they enter nets, and float16 computes (issue 24, item 9).

Nets arrays hold bool, signed and unsigned integers, float16, float32 and float64
(``nets.base.SUPPORTED_DTYPES``); object, string, datetime, complex and void dtypes are
refused by every constructor with a ``DTypeError`` naming the argument, the dtype and the
supported ones. float16 arrays compute in float32 (numba has no float16 arithmetic) and
come back as float16; the optimizers update them through a float32 master copy
(``multi_precision=True``) and say so otherwise.
"""
import re

import numpy as np
import pytest
import scipy.sparse as sp

import nets
from nets import autograd, layers, nd
from nets.base import SUPPORTED_DTYPES, DTypeError, NetsError, SparseFormatError

BAD_DTYPES = ["object", "U3", "S3", "datetime64[s]", "timedelta64[s]", "complex64",
              "complex128", "V8", np.longdouble]
DENSE = np.array([[1, 0, 2], [0, 0, 3], [4, 0, 0]], np.float32)

CONSTRUCTORS = {
    "nd.array": lambda dt: nd.array([[1, 2]], dtype=dt),
    "nd.zeros": lambda dt: nd.zeros((2, 2), dtype=dt),
    "nd.ones": lambda dt: nd.ones((2, 2), dtype=dt),
    "nd.full": lambda dt: nd.full((2, 2), 3, dtype=dt),
    "nd.empty": lambda dt: nd.empty((2, 2), dtype=dt),
    "nd.arange": lambda dt: nd.arange(3, dtype=dt),
    "nd.zeros(stype=csr)": lambda dt: nd.zeros((2, 2), dtype=dt, stype="csr"),
    "nd.sparse.zeros": lambda dt: nd.sparse.zeros("row_sparse", (2, 2), dtype=dt),
    "csr_matrix(dense)": lambda dt: nd.sparse.csr_matrix(DENSE, dtype=dt),
    "csr_matrix(shape)": lambda dt: nd.sparse.csr_matrix((2, 3), dtype=dt),
    "csr_matrix(data, indices, indptr)": lambda dt: nd.sparse.csr_matrix(
        ([1.0, 2.0], [0, 2], [0, 1, 2]), shape=(2, 3), dtype=dt),
    "csr_matrix(data, (row, col))": lambda dt: nd.sparse.csr_matrix(
        ([1.0, 2.0], ([0, 1], [0, 2])), shape=(2, 3), dtype=dt),
    "csr_matrix(scipy)": lambda dt: nd.sparse.csr_matrix(sp.csr_matrix(DENSE), dtype=dt),
    "row_sparse_array(dense)": lambda dt: nd.sparse.row_sparse_array(DENSE, dtype=dt),
    "row_sparse_array(data, indices)": lambda dt: nd.sparse.row_sparse_array(
        (np.ones((1, 3)), [1]), shape=(3, 3), dtype=dt),
    "dense astype": lambda dt: nd.array(DENSE).astype(dt),
    "csr astype": lambda dt: nd.sparse.csr_matrix(DENSE).astype(dt),
    "row_sparse astype": lambda dt: nd.sparse.row_sparse_array(DENSE).astype(dt),
    "nd.random.uniform": lambda dt: nd.random.uniform(shape=(2,), dtype=dt),
    "Parameter": lambda dt: nets.layers.Parameter("w", shape=(2,), dtype=dt),
}


@pytest.mark.parametrize("dtype", BAD_DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(CONSTRUCTORS))
def test_constructors_refuse_unsupported_dtypes(name, dtype):
    with pytest.raises(DTypeError) as info:
        CONSTRUCTORS[name](dtype)
    message = str(info.value)
    assert "dtype=" in message  # the argument
    assert str(np.dtype(dtype)) in message  # the bad dtype
    assert "bool" in message and "uint64" in message and "float16, float32, float64" in message


def test_load_libsvm_refuses_unsupported_dtypes(tmp_path):
    path = tmp_path / "a.libsvm"
    path.write_text("1 0:1.5 2:2\n0 1:3\n")
    for dtype in ("U3", "object", "complex64"):
        with pytest.raises(DTypeError, match=r"dtype='?\w+'?.*not supported.*float32"):
            nets.data.load_libsvm(str(path), dtype=dtype)


KEEPING = {  # constructors that keep a numpy source's dtype (MXNet's rule)
    "from_numpy": lambda src: nd.from_numpy(src),
    "csr_matrix": lambda src: nd.sparse.csr_matrix(src),
    "row_sparse_array": lambda src: nd.sparse.row_sparse_array(src),
    "csr_matrix(data, indices, indptr)": lambda src: nd.sparse.csr_matrix(
        (src[0], [0, 1], [0, 1, 2]), shape=(2, 2)),
    "row_sparse_array(data, indices)": lambda src: nd.sparse.row_sparse_array(
        (src, [0, 1]), shape=(2, 2)),
}
CONVERTING = {  # constructors converting the values to a given (or the default) dtype
    "nd.array": lambda src: nd.array(src),
    "nd.array(dtype=int32)": lambda src: nd.array(src, dtype="int32"),
    "csr_matrix(dtype=float32)": lambda src: nd.sparse.csr_matrix(src, dtype="float32"),
    "row_sparse_array(dtype=float64)": lambda src: nd.sparse.row_sparse_array(
        src, dtype="float64"),
    "csr_matrix(data, (row, col), dtype=float32)": lambda src: nd.sparse.csr_matrix(
        (src[0], ([0, 1], [0, 1])), shape=(2, 2), dtype="float32"),
}
NOT_NUMBERS = [np.array([[1 + 2j, 0], [0, 3j]]),
               np.array([["2024-01-01", "2024-01-02"]] * 2, dtype="datetime64[D]"),
               np.array([[1, 2], [3, 4]], dtype="timedelta64[s]"), np.zeros((2, 2), "V8")]


@pytest.mark.parametrize("values", NOT_NUMBERS, ids=lambda v: str(v.dtype))
@pytest.mark.parametrize("name", sorted(KEEPING) + sorted(CONVERTING))
def test_sources_that_are_not_real_numbers_are_refused(name, values):
    """A complex source would lose its imaginary parts, a datetime one is not a number:
    refused, naming the argument and its dtype, instead of stored or silently cast."""
    make = KEEPING.get(name) or CONVERTING[name]
    with pytest.raises(DTypeError, match=re.escape(f"has dtype {values.dtype}") + ".*float32"):
        make(values)


@pytest.mark.parametrize("values", [np.array([["1", "0"], ["0", "2.5"]]),
                                    np.array([[1, 0], [0, 2.5]], dtype=object)],
                         ids=lambda v: str(v.dtype))
@pytest.mark.parametrize("name", sorted(KEEPING))
def test_string_and_object_sources_are_refused_where_their_dtype_would_be_kept(name, values):
    with pytest.raises(DTypeError, match=re.escape(f"has dtype {values.dtype}") + ".*float32"):
        KEEPING[name](values)


def test_string_and_object_sources_convert_to_a_given_dtype():
    """As in MXNet, numpy parses numeric strings and converts objects holding numbers."""
    strings = np.array([["1", "0"], ["0", "2.5"]])
    expected = np.array([[1, 0], [0, 2.5]])
    for x in (nd.array(strings), nd.sparse.csr_matrix(strings, dtype="float32"),
              nd.sparse.row_sparse_array(strings.astype(object), dtype="float64")):
        assert x.dtype in (np.float32, np.float64)
        np.testing.assert_array_equal(x.asnumpy(), expected)
    np.testing.assert_array_equal(nd.array(["3", "4"], dtype="int32").asnumpy(), [3, 4])
    with pytest.raises(NetsError, match="cannot be converted to an array of float32.*'a'"):
        nd.array(np.array(["a", "b"]))


def test_scipy_sources_of_unsupported_dtypes_are_refused():
    m = sp.csr_matrix(np.array([[1 + 1j, 0], [0, 2]]))
    for make in (nd.array, nd.sparse.csr_matrix, nd.sparse.array):
        with pytest.raises(DTypeError, match="complex128"):
            make(m)


@pytest.mark.parametrize("indices, match", [
    (np.array([0.5, 1.0]), r"indices must hold integers, got indices\[0\]=0.5"),
    (np.array(["0", "1"]), "indices must hold integers, got dtype <U1"),
    (np.array([0j, 1j]), "indices must hold integers, got dtype complex128"),
    (np.array([False, True]), "indices must hold integers, got dtype bool"),
])
def test_index_arrays_must_hold_integers(indices, match):
    with pytest.raises(SparseFormatError, match=match):
        nd.sparse.csr_matrix(([1.0, 2.0], indices, [0, 1, 2]), shape=(2, 2))
    with pytest.raises(SparseFormatError, match=match):
        nd.sparse.row_sparse_array((np.ones((2, 2)), indices), shape=(2, 2))


def test_every_supported_dtype_is_accepted():
    for dtype in SUPPORTED_DTYPES:
        x = nd.sparse.csr_matrix(DENSE.astype(dtype))
        assert x.dtype == dtype and nd.zeros((2,), dtype=dtype).dtype == dtype
        np.testing.assert_array_equal(x.asnumpy(), DENSE.astype(dtype))


@pytest.mark.parametrize("order", [">f4", "<f4", ">f8", ">i4"])
def test_other_byte_orders_are_stored_in_the_machines(order):
    src = DENSE.astype(order)
    for x in (nd.sparse.csr_matrix(src), nd.sparse.row_sparse_array(src),
              nd.array(src, dtype=order), nd.from_numpy(src)):
        assert x.dtype.isnative and x.dtype == np.dtype(order).newbyteorder("=")
        np.testing.assert_array_equal(x.asnumpy(), DENSE)
    csr = nd.sparse.csr_matrix(src)
    w = np.arange(6).reshape(3, 2).astype(csr.dtype)
    np.testing.assert_array_equal(nd.dot(csr, nd.array(w, dtype=w.dtype)).asnumpy(), DENSE @ w)


# -- float16 ---------------------------------------------------------------------------

RTOL, ATOL = 1e-2, 1e-2  # float16 keeps 11 significant bits


def rand(shape, density=1.0, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, shape) * (rng.random(shape) < density)).astype(np.float16)


def check_half(out, ref):
    assert out.dtype == np.float16
    np.testing.assert_allclose(out.asnumpy().astype(np.float32), ref, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("ta, tb", [(False, False), (False, True), (True, False), (True, True)])
def test_float16_dot_csr_dense(ta, tb):
    a = rand((6, 5), 0.4)
    k = 6 if ta else 5  # the contracted size
    b = rand((4, k) if tb else (k, 4), seed=1)
    out = nd.dot(nd.sparse.csr_matrix(a), nd.array(b, dtype=b.dtype), transpose_a=ta,
                 transpose_b=tb)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    ref = (a32.T if ta else a32) @ (b32.T if tb else b32)
    assert out.stype == ("row_sparse" if ta else "default")
    check_half(out, ref)


def test_float16_dot_dense_csr_and_csr_csr():
    a, b = rand((4, 6)), rand((6, 3), 0.5, seed=2)
    check_half(nd.dot(nd.array(a, dtype=a.dtype), nd.sparse.csr_matrix(b)),
               a.astype(np.float32) @ b.astype(np.float32))
    check_half(nd.dot(nd.sparse.csr_matrix(a), nd.sparse.csr_matrix(b)),
               a.astype(np.float32) @ b.astype(np.float32))


@pytest.mark.parametrize("stype", ["default", "csr", "row_sparse"])
def test_float16_elementwise_and_reductions(stype):
    a = rand((5, 4), 0.5)
    x, a32 = nd.array(a, dtype=a.dtype).tostype(stype), a.astype(np.float32)
    check_half(x * 3, a32 * 3)
    check_half(x + x, a32 + a32)
    check_half(nd.square(x), a32 ** 2)
    check_half(nd.sum(x, axis=0), a32.sum(axis=0))
    check_half(nd.sum(x, axis=1), a32.sum(axis=1))
    check_half(nd.sparse.add_n(x, x, x), 3 * a32)
    check_half(nd.exp(nd.array(a, dtype=a.dtype)), np.exp(a32))


def test_float16_mixed_with_float32_refuses_where_mxnet_does():
    """Mixing float16 with float32 is not silently widened: ``dot`` refuses, as MXNet does,
    naming both dtypes; numpy-computed ops promote as numpy does."""
    a = nd.sparse.csr_matrix(rand((3, 4), 0.5))
    with pytest.raises(DTypeError, match="float16.*float32"):
        nd.dot(a, nd.ones((4, 2)))
    x = nd.array(rand((3, 4)), dtype="float16") + nd.ones((3, 4))
    assert x.dtype == np.float32


@pytest.mark.parametrize("stype", ["default", "csr"])
def test_float16_dense_layer_forward_and_backward(stype):
    x = rand((6, 5), 0.5)
    net = layers.Dense(3, in_units=5, dtype="float16")
    net.initialize(nets.init.Uniform(0.5))
    w, b = (p.data().asnumpy().astype(np.float32) for p in (net.weight, net.bias))
    xin = nd.array(x, dtype=x.dtype).tostype(stype)
    with autograd.record():
        y = net(xin)
        loss = (y * y).sum()
    loss.backward()
    x32 = x.astype(np.float32)
    ref = x32 @ w.T + b
    check_half(y, ref)
    check_half(net.weight.grad(), 2 * ref.T @ x32)
    check_half(net.bias.grad(), 2 * ref.sum(axis=0))


def test_float16_fully_connected_sparse_and_embedding():
    x = rand((6, 5), 0.5)
    fc = layers.FullyConnectedSparse(5, 3, weight_grad_stype="row_sparse", dtype="float16")
    fc.initialize(nets.init.Uniform(0.5))
    w = fc.weight.data().asnumpy().astype(np.float32)  # (in_units, units)
    with autograd.record():
        y = fc(nd.sparse.csr_matrix(x))
        loss = y.sum()
    loss.backward()
    x32 = x.astype(np.float32)
    check_half(y, x32 @ w + fc.bias.data().asnumpy().astype(np.float32))
    g = fc.weight.grad()
    assert g.stype == "row_sparse"
    check_half(g, x32.T @ np.ones((6, 3), np.float32))

    emb = layers.Embedding(5, 3, dtype="float16", sparse_grad=True)
    emb.initialize(nets.init.Uniform(0.5))
    table = emb.weight.data().asnumpy().astype(np.float32)
    ids = nd.array([[0, 3], [3, 1]])
    with autograd.record():
        out = emb(ids)
        loss = (out * 2).sum()
    loss.backward()
    check_half(out, table[[[0, 3], [3, 1]]])
    expected = np.zeros((5, 3), np.float32)
    np.add.at(expected, [0, 3, 3, 1], 2.0)
    assert emb.weight.grad().stype == "row_sparse"
    check_half(emb.weight.grad(), expected)


@pytest.mark.parametrize("opt", ["sgd", "adam", "adagrad", "ftrl", "rmsprop"])
def test_float16_optimizers_need_multi_precision(opt):
    w = nd.ones((4, 3), dtype="float16")
    g = nd.sparse.row_sparse_array((np.ones((1, 3), np.float16), [2]), shape=(4, 3))
    o = nets.optim.create(opt)
    with pytest.raises(DTypeError, match="float16.*multi_precision=True"):
        o.update(0, w, g, o.create_state(0, w))
    o = nets.optim.create(opt, multi_precision=True, learning_rate=0.1)
    ref = nets.optim.create(opt, learning_rate=0.1)
    w32 = nd.ones((4, 3))
    o.update_multi_precision(0, w, g, o.create_state_multi_precision(0, w))
    ref.update(0, w32, g.astype("float32"), ref.create_state(0, w32))
    check_half(w, w32.asnumpy())


def test_float16_training_with_a_trainer(tmp_path):
    """load_libsvm(dtype='float16') -> Dense -> Trainer(multi_precision) runs end to end."""
    path = tmp_path / "a.libsvm"
    path.write_text("1 0:0.5 3:1\n0 1:0.25\n1 2:1 3:0.5\n")
    X, y = nets.data.load_libsvm(str(path), dtype="float16")
    assert X.dtype == np.float16
    net = layers.Dense(1, in_units=4, dtype="float16")
    net.initialize(nets.init.Zero())
    trainer = nets.Trainer(net.collect_params(), "sgd",
                           {"learning_rate": 0.5, "multi_precision": True})
    with autograd.record():
        loss = ((net(X).reshape((-1,)) - y) ** 2).sum()
    loss.backward()
    trainer.step(1)
    x32, y32 = X.asnumpy().astype(np.float32), y.asnumpy().astype(np.float32)
    grad = 2 * (0 - y32) @ x32  # at zero weights and bias the prediction is 0
    check_half(net.weight.data(), -0.5 * grad[None, :])
    check_half(net.bias.data(), [-0.5 * 2 * (0 - y32).sum()])


def test_float16_outputs_follow_each_outputs_dtype_rule():
    """Computed in float32, each output comes back in the dtype its rule gives for float16
    inputs: topk's values float16, its indices float32 (the ``dtype`` attribute)."""
    a = np.array([[3, 1, 2], [0.5, 4, 3]], np.float16)
    values, indices = nd.topk(nd.array(a, dtype=a.dtype), k=2, ret_typ="both")
    assert values.dtype == np.float16 and indices.dtype == np.float32
    np.testing.assert_array_equal(values.asnumpy(), [[3, 2], [4, 3]])
    np.testing.assert_array_equal(indices.asnumpy(), [[0, 2], [1, 2]])
    assert nd.argmax(nd.array(a, dtype=a.dtype), axis=1).dtype == np.float32


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_fallback_warnings_name_the_callers_line_for_float16_too(dtype):
    x = nd.sparse.csr_matrix(rand((4, 3), 0.5)).astype(dtype)
    with pytest.warns(nets.StorageFallbackWarning, match="argmax") as caught:
        y = nd.argmax(x, axis=1)
    assert caught[0].filename == __file__
    np.testing.assert_array_equal(y.asnumpy(), np.argmax(x.asnumpy(), axis=1))
