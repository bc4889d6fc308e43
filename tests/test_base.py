"""nets.base: Context (equality, hash, with-blocks, no GPU backend), errors, dtype/stype/shape
helpers."""
import numpy as np
import pytest

import nets
from nets import nd
from nets.base import (ContextError, DTypeError, NetsError, ShapeError, StorageTypeError,
                       as_dtype, check_stype, normalize_shape)


def test_context_equality_and_hash():
    assert nets.cpu() == nets.Context("cpu", 0) == nets.cpu(0)
    assert nets.cpu(1) != nets.cpu(0) and nets.gpu(0) != nets.cpu(0)
    assert nets.gpu(1) == nets.Context("gpu", 1) and nets.cpu() != "cpu(0)"
    assert len({nets.cpu(), nets.Context("cpu"), nets.cpu(1), nets.gpu()}) == 3
    assert {nets.cpu(): "a"}[nets.Context("cpu", 0)] == "a"
    assert nets.Context(nets.gpu(2)) == nets.gpu(2)  # copy constructor
    assert repr(nets.cpu()) == "cpu(0)" and repr(nets.gpu(3)) == "gpu(3)"
    c = nets.gpu(2)
    assert (c.device_type, c.device_id) == ("gpu", 2)


def test_context_with_block():
    assert nets.current_context() == nets.cpu()
    with nets.cpu(1) as c:
        assert c == nets.cpu(1) and nets.current_context() == nets.cpu(1)
        assert nd.zeros(2).context == nets.cpu(1)
        assert nd.sparse.zeros("csr", (2, 2)).context == nets.cpu(1)
        with nets.cpu(2):
            assert nd.array([1]).context == nets.cpu(2)
        assert nd.ones(2).context == nets.cpu(1)
        assert nd.zeros(2, ctx=nets.cpu(5)).context == nets.cpu(5)  # explicit ctx wins
    assert nets.current_context() == nets.cpu()
    assert nd.zeros(2).context == nets.cpu()


def test_with_block_restores_after_an_error():
    with pytest.raises(RuntimeError):
        with nets.cpu(4):
            raise RuntimeError
    assert nets.current_context() == nets.cpu()


@pytest.mark.parametrize("place", [
    lambda: nd.zeros((2, 3), ctx=nets.gpu()),
    lambda: nd.ones((2, 3), ctx=nets.gpu(1)),
    lambda: nd.array([1, 2], ctx=nets.gpu()),
    lambda: nd.arange(3, ctx=nets.gpu()),
    lambda: nd.random.uniform(shape=(2,), ctx=nets.gpu()),
    lambda: nd.sparse.zeros("row_sparse", (100, 100), ctx=nets.gpu()),
    lambda: nd.sparse.csr_matrix(np.eye(2), ctx=nets.gpu()),
    lambda: nd.sparse.row_sparse_array(np.eye(2), ctx=nets.gpu()),
    lambda: nd.ones((2, 2)).as_in_context(nets.gpu()),
    lambda: nd.ones((2, 2)).tostype("csr").copyto(nets.gpu()),
    lambda: nets.current_context(nets.gpu()),
])
def test_gpu_placement_raises(place):
    with pytest.raises(ContextError, match=r"gpu\(\d\): nets has no GPU backend"):
        place()


def test_gpu_with_block_raises_on_placement():
    with nets.gpu():
        with pytest.raises(ContextError, match="no GPU backend"):
            nd.zeros((2,))
    assert nets.num_gpus() == 0


def test_error_hierarchy():
    for cls in (ShapeError, StorageTypeError, DTypeError, ContextError,
                nets.base.SparseFormatError):
        assert issubclass(cls, NetsError)
    assert issubclass(nets.StorageFallbackWarning, UserWarning)
    assert isinstance(nets.__version__, str) and nets.__version__.count(".") == 2


def test_as_dtype():
    assert as_dtype(None) == np.float32
    assert as_dtype(None, default=np.int64) == np.int64
    assert as_dtype("float64") == np.float64 and as_dtype(np.int32) == np.int32
    assert as_dtype(np.dtype("float16")) == np.float16
    with pytest.raises(DTypeError, match="dtype='nope'"):
        as_dtype("nope")


def test_check_stype():
    for s in ("default", "csr", "row_sparse"):
        assert check_stype(s) == s
    with pytest.raises(StorageTypeError, match="grad_stype='dense'.*one of"):
        check_stype("dense", name="grad_stype")


@pytest.mark.parametrize("shape, expected", [
    (3, (3,)), (np.int64(4), (4,)), ((2, 3), (2, 3)), ([2, 0], (2, 0)), ((), ()),
    ((2.0, 3), (2, 3)), ((np.int32(5),), (5,)),
])
def test_normalize_shape(shape, expected):
    out = normalize_shape(shape)
    assert out == expected and all(type(d) is int for d in out)


@pytest.mark.parametrize("shape", [-1, (2, -3), (2.5,), "ab", None, (None, 2), 2.0])
def test_normalize_shape_rejects(shape):
    with pytest.raises(ShapeError, match="out_shape="):
        normalize_shape(shape, name="out_shape")


def test_env_number_reads_positive_numbers_and_names_bad_text():
    from nets.base import env_number
    env = {"A": " 3 ", "B": "", "C": "2.5", "D": "0", "E": "-1", "F": "many", "G": "nan"}
    assert env_number("A", int, env) == 3 and env_number("C", float, env) == 2.5
    assert env_number("B", int, env) is None and env_number("MISSING", int, env) is None
    for name, kind in [("C", int), ("D", int), ("E", float), ("F", int), ("G", float)]:
        with pytest.raises(NetsError, match=f"{name}=.*: expected"):
            env_number(name, kind, env)
