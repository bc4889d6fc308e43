"""The dense buffers nets allocates start on a cache-line boundary (nets.arrays.aligned):
creation functions, parameters, optimizer states, row_sparse data. malloc alone gives 16
bytes, so each check fails without the aligned allocator. Values against numpy."""
import numpy as np
import pytest

import nets
from nets import nd
from nets.arrays import aligned
from nets.optim import create

LINE = 64


def start(a):
    """Offset of a numpy array's first element within its cache line."""
    return a.ctypes.data % LINE


def _ramp(shape, dtype):
    return (np.arange(int(np.prod(shape))) % 251).reshape(shape).astype(dtype)


SHAPES = [((1000, 64), np.float32), ((3000, 32), np.float64), ((5000,), np.int32),
          ((64, 3, 7), np.float64), ((2048, 1), np.float16)]
CREATORS = {
    "zeros": (lambda s, d: nd.zeros(s, dtype=d), lambda s, d: np.zeros(s, d)),
    "ones": (lambda s, d: nd.ones(s, dtype=d), lambda s, d: np.ones(s, d)),
    "full": (lambda s, d: nd.full(s, 3, dtype=d), lambda s, d: np.full(s, 3, d)),
    "empty": (lambda s, d: nd.empty(s, dtype=d), lambda s, d: np.zeros(s, d)),
    "sparse.zeros default": (lambda s, d: nd.sparse.zeros("default", s, dtype=d),
                             lambda s, d: np.zeros(s, d)),
    "array(numpy)": (lambda s, d: nd.array(_ramp(s, d), dtype=d), _ramp),
    "array(cast)": (lambda s, d: nd.array(_ramp(s, np.float64), dtype=d), _ramp),
    "array(strided)": (lambda s, d: nd.array(_ramp((2,) + s, d)[1], dtype=d),
                       lambda s, d: _ramp((2,) + s, d)[1]),
    "array(list)": (lambda s, d: nd.array(_ramp(s, d).tolist(), dtype=d), _ramp),
}


@pytest.mark.parametrize("shape,dtype", SHAPES)
@pytest.mark.parametrize("name", CREATORS)
def test_created_arrays_start_on_a_line(name, shape, dtype):
    make, expected = CREATORS[name]
    a = make(shape, dtype)
    assert start(a._np) == 0
    assert a.shape == shape and a.dtype == dtype and a._np.flags.c_contiguous
    np.testing.assert_array_equal(a.asnumpy(), expected(shape, dtype))


@pytest.mark.parametrize("alloc", [aligned.zeros, aligned.empty])
@pytest.mark.parametrize("shape", [(0,), (3, 0, 5), (), (7,), (1024,), (1025,), (33, 65)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.uint8, np.bool_])
def test_small_and_empty_shapes(alloc, shape, dtype):
    a = alloc(shape, dtype)
    assert a.shape == shape and a.dtype == dtype and a.flags.c_contiguous
    assert a.flags.writeable
    if a.nbytes >= 4096:
        assert start(a) == 0
    if alloc is aligned.zeros:
        assert not a.any()
    a[...] = 1  # the buffer is the array's own, writable to its last byte
    assert a.all()


def test_object_dtype_is_left_to_numpy():
    a = aligned.zeros((1000,), object)
    assert a.dtype == object and all(v == 0 for v in a)


def test_parameter_data_and_gradient():
    p = nets.layers.Embedding(5000, 32, sparse_grad=False).weight
    p.initialize()
    assert start(p.data()._np) == 0 and start(p.grad()._np) == 0


@pytest.mark.parametrize("name", ["adam", "ftrl", "adagrad", "rmsprop", "sgd"])
def test_optimizer_states(name):
    opt = create(name, momentum=0.9) if name == "sgd" else create(name)
    w = nd.array(np.ones((3000, 32), np.float32))
    state = opt.create_state(0, w)
    for s in state if isinstance(state, tuple) else (state,):
        assert start(s._np) == 0 and not s.asnumpy().any()


def test_row_sparse_data():
    rng = np.random.default_rng(0)
    dense = rng.standard_normal((3000, 32)).astype(np.float32)
    dense[rng.random(3000) < 0.5] = 0
    rsp = nd.array(dense).tostype("row_sparse")
    assert start(rsp._data) == 0
    np.testing.assert_array_equal(rsp.asnumpy(), dense)


def test_row_sparse_states_grow_aligned():
    """A row_sparse weight's Adam states start empty and gain the rows a gradient names."""
    rng = np.random.default_rng(1)
    w = nd.array(rng.standard_normal((3000, 32)).astype(np.float32)).tostype("row_sparse")
    opt = create("adam", lazy_update=True)
    mean, var = opt.create_state(0, w)
    rows = np.sort(rng.choice(3000, 400, replace=False))
    grad = nd.sparse.row_sparse_array((rng.standard_normal((400, 32)).astype(np.float32),
                                       rows), shape=(3000, 32))
    opt.update(0, w, grad, (mean, var))
    for s in (mean, var):
        assert start(s._data) == 0
        assert np.isin(rows, s.indices.asnumpy()).all()
