"""Datasets, samplers, the default batchify (CSR rows -> one CSR batch, never densified) and
DataLoader's batching rules."""
import numpy as np
import pytest

import nets
from nets import data
from nets.base import NetsError, StorageTypeError
from nets.arrays.csr import CSRNDArray


def _csr(n=7, width=5):
    rng = np.random.default_rng(0)
    dense = rng.random((n, width)) * (rng.random((n, width)) < 0.4)
    dense[2] = 0  # an empty row
    return nets.nd.array(dense.astype(np.float32)).tostype("csr"), dense.astype(np.float32)


def test_datasets():
    x, dense = _csr()
    y = nets.nd.array(np.arange(7, dtype=np.float32))
    ds = data.ArrayDataset(x, y, list("abcdefg"))
    assert len(ds) == 7
    row, label, letter = ds[3]
    assert row.stype == "csr" and row.shape == (1, 5) and letter == "d"
    np.testing.assert_array_equal(row.asscipy().toarray(), dense[3:4])
    assert isinstance(label, np.float32) and label == 3  # a 1-D array is held as numpy
    single = data.ArrayDataset(np.arange(4) * 2)
    assert single[2] == 4 and len(single) == 4
    with pytest.raises(NetsError, match="argument 1 has 3 samples"):
        data.ArrayDataset(x, [1, 2, 3])
    with pytest.raises(NetsError, match="at least one"):
        data.ArrayDataset()
    simple = data.SimpleDataset([10, 20, 30])
    assert len(simple) == 3 and simple[1] == 20


@pytest.mark.parametrize("lazy", [True, False])
def test_transforms(lazy):
    ds = data.ArrayDataset([1, 2, 3], [10, 20, 30])
    doubled = ds.transform(lambda a, b: (a * 2, b + 1), lazy=lazy)
    assert [doubled[i] for i in range(3)] == [(2, 11), (4, 21), (6, 31)]
    first = ds.transform_first(lambda a: -a, lazy=lazy)
    assert first[1] == (-2, 20) and len(first) == 3
    single = data.SimpleDataset([1, 2]).transform_first(lambda a: a + 1, lazy=lazy)
    assert single[0] == 2


def test_libsvm_dataset(tmp_path):
    path = tmp_path / "d.svm"
    path.write_text("1 1:0.5 3:2\n0\n-1 2:1\n")
    ds = data.LibSVMDataset(str(path))
    assert len(ds) == 3 and ds.data.shape == (3, 3)
    x, y = ds[0]
    assert x.stype == "csr" and x.shape == (1, 3) and y == 1
    np.testing.assert_array_equal(x.asscipy().toarray(), [[0.5, 0, 2]])
    batch_x, batch_y = next(iter(data.DataLoader(ds, batch_size=3)))
    assert batch_x.stype == "csr" and batch_x.shape == (3, 3)
    np.testing.assert_array_equal(batch_y.asnumpy(), [1, 0, -1])


def test_batchify_stacks_csr_rows_without_densifying(monkeypatch):
    x, dense = _csr()
    rows = [x[i] for i in (4, 2, 0, 6)]
    monkeypatch.setattr(CSRNDArray, "asnumpy", lambda self: pytest.fail("densified"))
    batch = data.default_batchify_fn(rows)
    assert isinstance(batch, CSRNDArray) and batch.shape == (4, 5)
    batch.check_format(full_check=True)
    np.testing.assert_array_equal(batch.asscipy().toarray(), dense[[4, 2, 0, 6]])
    two_row = data.default_batchify_fn([x[0:2], x[5]])  # multi-row samples concatenate too
    np.testing.assert_array_equal(two_row.asscipy().toarray(), dense[[0, 1, 5]])


def test_batchify_dense_numbers_and_tuples():
    out = data.default_batchify_fn([nets.nd.ones((2, 3)), nets.nd.zeros((2, 3))])
    assert out.shape == (2, 2, 3) and out.stype == "default"
    np.testing.assert_array_equal(out.asnumpy()[0], 1)
    out = data.default_batchify_fn([np.arange(3), np.arange(3) + 1])
    assert out.shape == (2, 3) and out.dtype == np.int64
    out = data.default_batchify_fn([1.5, 2.5])
    assert out.dtype == np.float64 and out.asnumpy().tolist() == [1.5, 2.5]
    out = data.default_batchify_fn([np.float32(1), np.float32(2)])
    assert out.dtype == np.float32
    x, dense = _csr()
    xs, ys = data.default_batchify_fn([(x[0], 1.0), (x[1], 0.0)])
    assert xs.stype == "csr" and ys.asnumpy().tolist() == [1.0, 0.0]
    with pytest.raises(StorageTypeError, match="mixed kinds"):
        data.default_batchify_fn([x[0], nets.nd.ones((1, 5))])
    with pytest.raises(StorageTypeError, match="row_sparse"):
        data.default_batchify_fn([nets.nd.ones((1, 5)).tostype("row_sparse")] * 2)


@pytest.mark.parametrize("last_batch, sizes", [
    ("keep", [[3, 3, 1]] * 2), ("discard", [[3, 3]] * 2),
    ("rollover", [[3, 3], [3, 3], [3, 3, 3]]),
])
def test_dataloader_last_batch(last_batch, sizes):
    x, dense = _csr()
    loader = data.DataLoader(data.ArrayDataset(x, np.arange(7)), batch_size=3,
                             last_batch=last_batch)
    seen = []
    for expected in sizes:
        assert len(loader) == len(expected)
        batches = list(loader)
        assert [b[0].shape[0] for b in batches] == expected
        for bx, by in batches:
            np.testing.assert_array_equal(bx.asscipy().toarray(), dense[by.asnumpy()])
            seen += by.asnumpy().tolist()
    if last_batch == "rollover":
        assert seen == list(range(7)) * 3  # nothing lost, nothing repeated


def test_dataloader_shuffle_and_samplers():
    ds = data.SimpleDataset(list(range(10)))
    nets.random.seed(3)
    a = [b.asnumpy().tolist() for b in data.DataLoader(ds, batch_size=4, shuffle=True)]
    nets.random.seed(3)
    b = [b.asnumpy().tolist() for b in data.DataLoader(ds, batch_size=4, shuffle=True)]
    assert a == b and sorted(sum(a, [])) == list(range(10)) and sum(a, []) != list(range(10))
    loader = data.DataLoader(ds, batch_size=4, sampler=data.SequentialSampler(5, start=3))
    assert [b.asnumpy().tolist() for b in loader] == [[3, 4, 5, 6], [7]]
    batches = data.BatchSampler(data.SequentialSampler(3), 2, "keep")
    loader = data.DataLoader(ds, batch_sampler=batches, batchify_fn=lambda s: sum(s))
    assert list(loader) == [1, 2] and len(loader) == 2
    assert sorted(data.RandomSampler(6)) == list(range(6)) and len(data.RandomSampler(6)) == 6


def test_dataloader_threads_give_the_same_batches():
    x, _ = _csr(n=23)
    ds = data.ArrayDataset(x, np.arange(23))
    plain = list(data.DataLoader(ds, batch_size=4))
    threaded = list(data.DataLoader(ds, batch_size=4, num_workers=2))
    assert len(plain) == len(threaded) == 6
    for (ax, ay), (bx, by) in zip(plain, threaded):
        np.testing.assert_array_equal(ax.asscipy().toarray(), bx.asscipy().toarray())
        np.testing.assert_array_equal(ay.asnumpy(), by.asnumpy())


@pytest.mark.parametrize("kwargs, match", [
    ({}, "needs batch_size"),
    ({"batch_size": 2, "shuffle": True, "sampler": data.SequentialSampler(3)}, "not both"),
    ({"batch_size": 2, "batch_sampler": [[0]]}, "must not be given with batch_sampler"),
    ({"batch_size": 2, "last_batch": "pad"}, "last_batch='pad'"),
    ({"batch_size": 0}, "batch_size=0"),
    ({"batch_size": 2, "num_workers": -1}, "num_workers=-1"),
])
def test_dataloader_errors(kwargs, match):
    with pytest.raises(NetsError, match=match):
        data.DataLoader(data.SimpleDataset([1, 2, 3]), **kwargs)


def test_default_batchify_keeps_numpy_dtypes_as_gluon():
    """Gluon's batchify passes dtype=data.dtype: int labels stay int64, float64 stays."""
    ds = data.ArrayDataset(np.arange(6.0).reshape(3, 2), np.arange(3, dtype=np.int64))
    x, y = next(iter(data.DataLoader(ds, batch_size=3)))
    assert x.dtype == np.float64 and y.dtype == np.int64
    np.testing.assert_array_equal(y.asnumpy(), [0, 1, 2])
