"""NDArrayIter and LibSVMIter: batches (dense and CSR, never densified), last-batch
handling, shuffling, passes and reset, LibSVMIter's streaming (any chunk size gives the same
rows; every num_parts split partitions the file's rows) and its errors."""
import numpy as np
import pytest

import nets
from nets import data
from nets.base import NetsError, ShapeError, StorageTypeError
from nets.arrays.csr import CSRNDArray


def rows_of(x):
    """Dense numpy rows of a dense or CSR batch, without ``asnumpy`` on CSR."""
    return x.asscipy().toarray() if x.stype == "csr" else x.asnumpy()


def _write(tmp_path, text, name="data.svm"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# -- NDArrayIter ---------------------------------------------------------------------------

def _arrays(n=10, stype="default"):
    """Row i of the data holds i (so a batch's rows name their examples); label i is i."""
    dense = np.repeat(np.arange(n, dtype=np.float32)[:, None], 3, axis=1)
    dense[:, 1] = 0  # some zeros, so CSR rows are really sparse
    x = nets.nd.array(dense)
    return (x.tostype("csr") if stype == "csr" else x), np.arange(n, dtype=np.float32)


def _ids(batch):
    return rows_of(batch.data[0])[:, 0].astype(int).tolist()


@pytest.mark.parametrize("stype", ["default", "csr"])
@pytest.mark.parametrize("handle, passes", [
    ("pad", [[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1]]] * 2),
    ("discard", [[[0, 1, 2, 3], [4, 5, 6, 7]]] * 2),
    ("roll_over", [[[0, 1, 2, 3], [4, 5, 6, 7]], [[8, 9, 0, 1], [2, 3, 4, 5], [6, 7, 8, 9]],
                   [[0, 1, 2, 3], [4, 5, 6, 7]]]),
])
def test_ndarrayiter_last_batch(stype, handle, passes):
    x, y = _arrays(stype=stype)
    it = data.NDArrayIter(x, y, batch_size=4, last_batch_handle=handle)
    for k, expected in enumerate(passes):
        if k:
            it.reset()
        batches = list(it)
        assert [_ids(b) for b in batches] == expected
        for b, ids in zip(batches, expected):
            assert b.data[0].stype == stype and b.data[0].shape == (4, 3)
            np.testing.assert_array_equal(b.label[0].asnumpy(), ids)
            assert b.pad == (2 if handle == "pad" and ids == [8, 9, 0, 1] else 0)
        assert list(it) == []  # the pass is over until reset()


def test_ndarrayiter_csr_is_never_densified(monkeypatch):
    x, y = _arrays(stype="csr")
    monkeypatch.setattr(CSRNDArray, "asnumpy", lambda self: pytest.fail("densified"))
    for shuffle in (False, True):
        it = data.NDArrayIter(x, y, batch_size=3, shuffle=shuffle)
        assert all(b.data[0].stype == "csr" for b in it)


def test_ndarrayiter_shuffle():
    x, y = _arrays(n=12, stype="csr")
    it = data.NDArrayIter([x, x.tostype("default")], y, batch_size=4, shuffle=True)
    orders = []
    for _ in range(3):
        it.reset()
        ids = []
        for b in it:
            csr_ids, dense_ids = _ids(b), rows_of(b.data[1])[:, 0].astype(int).tolist()
            assert csr_ids == dense_ids == b.label[0].asnumpy().astype(int).tolist()
            ids += csr_ids
        assert sorted(ids) == list(range(12))
        orders.append(ids)
    assert orders[0] != orders[1] or orders[1] != orders[2]
    nets.random.seed(5)
    first = [_ids(b) for b in data.NDArrayIter(x, y, batch_size=4, shuffle=True)]
    nets.random.seed(5)
    assert first == [_ids(b) for b in data.NDArrayIter(x, y, batch_size=4, shuffle=True)]


def test_ndarrayiter_inputs_and_descriptions():
    x, y = _arrays(n=6)
    it = data.NDArrayIter({"a": x, "b": np.ones((6, 2, 2))}, {"lab": y}, batch_size=4)
    assert [(d.name, d.shape) for d in it.provide_data] == [("a", (4, 3)), ("b", (4, 2, 2))]
    assert [(d.name, d.shape) for d in it.provide_label] == [("lab", (4,))]
    assert it.provide_data[1].dtype == np.float32  # numpy float64 becomes float32 (MXNet 1.x)
    it = data.NDArrayIter([x, x], batch_size=2)
    assert [d.name for d in it.provide_data] == ["_0_data", "_1_data"] and it.provide_label == []
    it = data.NDArrayIter(x, y, batch_size=4, label_name="lbl")
    assert it.provide_label[0].name == "lbl"
    import scipy.sparse as sp
    it = data.NDArrayIter(sp.random(6, 4, density=0.5, format="csr"), batch_size=3)
    assert next(it).data[0].stype == "csr"


def test_ndarrayiter_stepping_by_hand():
    x, y = _arrays(n=5)
    it = data.NDArrayIter(x, y, batch_size=2)
    with pytest.raises(NetsError, match="call next"):
        it.getdata()
    assert it.iter_next()
    assert _ids(data.DataBatch(it.getdata())) == [0, 1] and it.getpad() == 0
    np.testing.assert_array_equal(it.getlabel()[0].asnumpy(), [0, 1])
    assert it.getindex() is None
    assert _ids(it.next()) == [2, 3]
    assert [_ids(b) for b in it] == [[4, 0]]  # iterating continues the current pass
    with pytest.raises(StopIteration):
        it.next()
    batch = data.DataBatch([nets.nd.ones((2, 3))], [nets.nd.ones(2)], pad=0)
    assert repr(batch) == "DataBatch: data shapes: [(2, 3)] label shapes: [(2,)] pad: 0"


@pytest.mark.parametrize("kwargs, error, match", [
    ({"data": np.ones((4, 2)), "label": np.ones(3)}, ShapeError, "has 3 rows"),
    ({"data": np.ones((4, 2)), "last_batch_handle": "keep"}, NetsError, "last_batch_handle"),
    ({"data": np.ones((4, 2)), "batch_size": 0}, NetsError, "batch_size=0"),
    ({"data": None}, NetsError, "needs data"),
    ({"data": nets.nd.ones((4, 2)).tostype("row_sparse")}, StorageTypeError, "row_sparse"),
    ({"data": 3.0}, ShapeError, "scalar"),
])
def test_ndarrayiter_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        data.NDArrayIter(**kwargs)


# -- LibSVMIter ----------------------------------------------------------------------------

N_FEATURES = 12


@pytest.fixture
def libsvm_file(tmp_path):
    """A file of 23 rows with empty rows, comments, blank lines and CRLF endings, and the
    rows (X, y) load_libsvm reads from it."""
    X, y, _ = nets.test_utils.make_sparse_dataset(23, N_FEATURES, 3, seed=2)
    X = X.asscipy().tolil()
    X[[4, 5, 19]] = 0  # empty rows
    X = nets.nd.array(X.tocsr())
    path = str(tmp_path / "rows.svm")
    data.save_libsvm(path, X, y)
    lines = open(path).read().splitlines()
    lines[3] += "  # a comment"
    lines.insert(7, "# a comment line")
    lines.insert(12, "")
    with open(path, "w", newline="") as f:
        f.write("\r\n".join(lines) + "\r\n")
    X2, y2 = data.load_libsvm(path, n_features=N_FEATURES, zero_based=True)
    np.testing.assert_array_equal(rows_of(X2), rows_of(X))
    return path, rows_of(X), y.asnumpy()


def _read_all(it):
    """Every real (non-pad) row of one pass: (dense rows, labels, pads)."""
    xs, ys, pads = [], [], []
    for b in it:
        x, y = b.data[0], b.label[0]
        assert x.stype == "csr" and x.shape == (it.batch_size, N_FEATURES)
        assert y.shape == (it.batch_size,) and y.dtype == np.float32
        keep = it.batch_size - b.pad
        xs.append(rows_of(x)[:keep])
        ys.append(y.asnumpy()[:keep])
        pads.append(b.pad)
    if not xs:
        return np.zeros((0, N_FEATURES)), np.zeros(0), pads
    return np.concatenate(xs), np.concatenate(ys), pads


@pytest.mark.parametrize("chunk_bytes", [1, 40, 1 << 20])
@pytest.mark.parametrize("batch_size", [1, 5, 23])
def test_libsvmiter_rows_for_any_chunk_size(libsvm_file, chunk_bytes, batch_size):
    path, X, y = libsvm_file
    it = data.LibSVMIter(data_libsvm=path, data_shape=(N_FEATURES,), batch_size=batch_size,
                         round_batch=False, chunk_bytes=chunk_bytes)
    xs, ys, pads = _read_all(it)
    np.testing.assert_array_equal(xs, X)
    np.testing.assert_array_equal(ys, y)
    assert pads == [0] * (len(pads) - 1) + [-len(y) % batch_size]


@pytest.mark.parametrize("num_parts", [2, 3, 7, 40])
@pytest.mark.parametrize("chunk_bytes", [30, 1 << 20])
def test_libsvmiter_parts_partition_the_rows(libsvm_file, num_parts, chunk_bytes):
    path, X, y = libsvm_file

    def part(p):
        it = data.LibSVMIter(data_libsvm=path, data_shape=(N_FEATURES,), batch_size=1,
                             round_batch=False, num_parts=num_parts, part_index=p,
                             chunk_bytes=chunk_bytes)
        try:
            return _read_all(it)
        except NetsError as e:  # a part with no line start has no rows: it says so
            assert f"(part {p} of {num_parts}) has no rows" in str(e)
            return np.zeros((0, N_FEATURES)), np.zeros(0), []
    parts = [part(p) for p in range(num_parts)]
    np.testing.assert_array_equal(np.concatenate([p[0] for p in parts]), X)
    np.testing.assert_array_equal(np.concatenate([p[1] for p in parts]), y)
    if num_parts < 7:
        assert all(len(p[1]) for p in parts)  # byte ranges: every part gets rows here


def test_libsvmiter_memory_is_bounded_by_the_chunk(tmp_path):
    """A pass over a ~2.5 MB file in 64 KB chunks never holds much more than a chunk."""
    import tracemalloc
    X, y, _ = nets.test_utils.make_sparse_dataset(20_000, 1000, 10, seed=0)
    path = str(tmp_path / "big.svm")
    data.save_libsvm(path, X, y)
    it = data.LibSVMIter(data_libsvm=path, data_shape=(1000,), batch_size=256,
                         chunk_bytes=64 << 10)
    next(it)  # compiled and warm
    tracemalloc.start()
    try:
        rows = 256 + sum(b.data[0].shape[0] - b.pad for b in it)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert rows == 20_000
    parsed = X.nbytes + y.nbytes  # what loading the whole file would hold
    assert peak < 1 << 20 < parsed, (peak, parsed)


def test_libsvmiter_round_batch_and_reset(libsvm_file):
    path, X, y = libsvm_file
    it = data.LibSVMIter(data_libsvm=path, data_shape=(N_FEATURES,), batch_size=10,
                         chunk_bytes=64)
    first = list(it)
    assert [b.pad for b in first] == [0, 0, 7]
    last = first[-1]
    np.testing.assert_array_equal(rows_of(last.data[0]), np.concatenate([X[20:], X[:7]]))
    np.testing.assert_array_equal(last.label[0].asnumpy(), np.concatenate([y[20:], y[:7]]))
    it.reset()
    again = list(it)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(rows_of(a.data[0]), rows_of(b.data[0]))


@pytest.mark.parametrize("round_batch", [True, False])
@pytest.mark.parametrize("batch_size", [24, 50, 10 ** 9])
def test_libsvmiter_refuses_a_batch_larger_than_the_rows(libsvm_file, round_batch,
                                                         batch_size):
    """Fewer rows than a batch: MXNet raises; a padded batch would repeat the file (or be
    mostly empty rows). The count is known at the end of the first pass, before a batch."""
    path, X, _ = libsvm_file
    it = data.LibSVMIter(data_libsvm=path, data_shape=(N_FEATURES,), batch_size=batch_size,
                         round_batch=round_batch, chunk_bytes=40)
    with pytest.raises(NetsError, match=rf"batch_size={batch_size} is larger than the "
                                        rf"{len(X)} rows of data_libsvm=.*rows.svm"):
        it.next()
    it.reset()
    with pytest.raises(NetsError, match="at most 23"):
        list(it)
    ok = data.LibSVMIter(data_libsvm=path, data_shape=(N_FEATURES,), batch_size=len(X))
    (only,) = list(ok)
    assert only.pad == 0


def test_libsvmiter_refuses_a_file_without_rows(tmp_path):
    path = tmp_path / "comments.svm"
    path.write_text("# a header\n\n   \n")
    it = data.LibSVMIter(data_libsvm=str(path), data_shape=(4,), batch_size=1)
    with pytest.raises(NetsError, match=r"comments.svm' has no rows"):
        it.next()


@pytest.mark.parametrize("shuffle", [False, True])
def test_libsvmiter_fills_last_batches_from_the_part_start_parsed_once(libsvm_file, monkeypatch,
                                                                       shuffle):
    from nets.data import reader
    path, X, y = libsvm_file
    parsed = []
    real = reader.read_blocks

    def counting(read, spec, ranges, name):
        parsed.append(tuple(ranges))
        return real(read, spec, ranges, name=name)
    monkeypatch.setattr(reader, "read_blocks", counting)
    it = data.LibSVMIter(data_libsvm=path, data_shape=(N_FEATURES,), batch_size=10,
                         chunk_bytes=64, shuffle=shuffle)
    blocks = len(it._blocks[0])
    counts = []
    for p in range(3):
        before = len(parsed)
        if p:
            it.reset()  # (the next pass's blocks may be parsed ahead from here on)
        last = list(it)[-1]
        assert last.pad == 7  # filled with the file's first 7 rows, whatever the order
        np.testing.assert_array_equal(rows_of(last.data[0])[3:], X[:7])
        np.testing.assert_array_equal(last.label[0].asnumpy()[3:], y[:7])
        counts.append(len(parsed) - before)
    # every pass parses each block once; the rows that fill up last batches were parsed
    # once, in the first pass, from the first blocks only
    head = counts[0] - blocks
    assert counts[1:] == [blocks, blocks] and 1 <= head < blocks, (counts, blocks)


def test_libsvmiter_without_round_batch_pads_with_empty_rows(libsvm_file):
    path, X, y = libsvm_file
    it = data.LibSVMIter(data_libsvm=path, data_shape=(N_FEATURES,), batch_size=10,
                         round_batch=False)
    last = list(it)[-1]
    assert last.pad == 7 and last.data[0].shape == (10, N_FEATURES)
    np.testing.assert_array_equal(rows_of(last.data[0])[3:], 0)
    np.testing.assert_array_equal(last.label[0].asnumpy()[3:], 0)


def test_libsvmiter_shuffle(libsvm_file):
    path, X, y = libsvm_file
    it = data.LibSVMIter(data_libsvm=path, data_shape=(N_FEATURES,), batch_size=4,
                         round_batch=False, shuffle=True, chunk_bytes=100)
    key = [tuple(r) + (v,) for r, v in zip(X, y)]
    orders = []
    for _ in range(2):
        xs, ys, _ = _read_all(it)
        got = [tuple(r) + (v,) for r, v in zip(xs, ys)]
        assert sorted(got) == sorted(key)  # a permutation of the rows, labels attached
        orders.append(got)
        it.reset()
    assert orders[0] != key or orders[1] != key


def _batches(it):
    """Every batch of one pass as (dense rows, labels, pad)."""
    return [(rows_of(b.data[0]), b.label[0].asnumpy(), b.pad) for b in it]


@pytest.mark.parametrize("shuffle", [False, True])
def test_libsvmiter_parses_ahead_in_a_thread_with_the_same_batches(libsvm_file, monkeypatch,
                                                                   shuffle):
    """On several threads the next block is parsed in a background thread; the batches, and
    the shuffled orders drawn from the seed, are those of a parse on one thread."""
    import threading
    from nets.data import reader
    path, X, y = libsvm_file
    real = reader.read_blocks

    def recording(read, spec, ranges, name):
        in_caller.append(threading.current_thread() is threading.main_thread())
        return real(read, spec, ranges, name=name)
    monkeypatch.setattr(reader, "read_blocks", recording)
    passes = {}
    for threads in (1, 2):
        monkeypatch.setattr(nets.parallel, "_setting", (threads, "set_num_threads"))
        nets.random.seed(7)
        in_caller = []
        it = data.LibSVMIter(data_libsvm=path, data_shape=(N_FEATURES,), batch_size=4,
                             chunk_bytes=100, shuffle=shuffle)
        passes[threads] = [_batches(it)]
        it.reset()
        passes[threads].append(_batches(it))
        # with 2 threads every block of the two passes is parsed outside the caller's
        # thread; the first rows that fill up the last batch are parsed in the caller's
        blocks = len(it._blocks[0])
        if threads == 1:
            assert in_caller and all(in_caller)
        else:
            assert in_caller.count(False) == 2 * blocks and 1 <= in_caller.count(True) < blocks
    for one, two in zip(passes[1], passes[2]):
        assert len(one) == len(two)
        for (x1, y1, p1), (x2, y2, p2) in zip(one, two):
            np.testing.assert_array_equal(x1, x2)
            np.testing.assert_array_equal(y1, y2)
            assert p1 == p2


def test_libsvmiter_reset_mid_pass_stops_the_parse_ahead(libsvm_file, monkeypatch):
    import threading
    monkeypatch.setattr(nets.parallel, "_setting", (2, "set_num_threads"))
    path, X, y = libsvm_file
    it = data.LibSVMIter(data_libsvm=path, data_shape=(N_FEATURES,), batch_size=2,
                         chunk_bytes=64)
    full = _batches(it)
    for _ in range(3):
        it.reset()
        next(it)  # a pass abandoned after its first batch
    it.reset()
    again = _batches(it)
    assert [p for *_, p in again] == [p for *_, p in full]
    for (x1, y1, _), (x2, y2, _) in zip(full, again):
        np.testing.assert_array_equal(x1, x2)
        np.testing.assert_array_equal(y1, y2)
    # the abandoned passes' parsers were stopped: only the finished pass's thread ran
    assert not [t for t in threading.enumerate() if t.name == "nets-LibSVMIter" and t.is_alive()]


def test_libsvmiter_label_file_and_multilabel(tmp_path):
    data_path = _write(tmp_path, "1 0:0.5 2:1.2\n-2\n-3 0:0.6 1:2.4 2:1.2\n4 2:-1.2\n")
    label_path = _write(tmp_path, "1\n-2 0:0.125\n-3 2:1.2\n4 1:1 2:-1.2\n", "label.t")
    it = data.LibSVMIter(data_libsvm=data_path, data_shape=(3,), label_libsvm=label_path,
                         label_shape=(3,), batch_size=3)
    first, second = list(it)
    assert first.label[0].stype == "csr" and first.label[0].shape == (3, 3)
    np.testing.assert_array_equal(rows_of(first.label[0]),
                                  np.float32([[0, 0, 0], [0.125, 0, 0], [0, 0, 1.2]]))
    np.testing.assert_array_equal(rows_of(second.label[0]),
                                  np.float32([[0, 1, -1.2], [0, 0, 0], [0.125, 0, 0]]))
    assert second.pad == 2 and it.provide_label[0].shape == (3, 3)
    short = _write(tmp_path, "1\n2\n", "short.t")
    it = data.LibSVMIter(data_libsvm=data_path, data_shape=(3,), label_libsvm=short,
                         label_shape=(3,), batch_size=3)
    with pytest.raises(NetsError, match="different number of lines"):
        list(it)
    multi = _write(tmp_path, "0,2 0:1\n1\n 2:3\n", "multi.t")
    it = data.LibSVMIter(data_libsvm=multi, data_shape=(3,), label_shape=(4,), batch_size=3)
    (batch,) = list(it)
    np.testing.assert_array_equal(rows_of(batch.label[0]), [[1, 0, 1, 0], [0, 1, 0, 0],
                                                             [0, 0, 0, 0]])


def test_libsvmiter_errors_name_file_line_and_token(tmp_path, libsvm_file):
    path, X, y = libsvm_file
    lines = open(path).read().splitlines()
    lines[20] = "1 3:1 12:0.5"  # index 12 >= n_features (zero-based)
    bad = _write(tmp_path, "\n".join(lines) + "\n", "bad.svm")
    for chunk_bytes, num_parts in ((1 << 20, 1), (16, 1), (16, 3)):
        with pytest.raises(NetsError, match="bad.svm, line 21: feature index out of range "
                                            "for n_features=12 .*'12:0.5'"):
            for part in range(num_parts):
                list(data.LibSVMIter(data_libsvm=bad, data_shape=(N_FEATURES,), batch_size=4,
                                     num_parts=num_parts, part_index=part,
                                     chunk_bytes=chunk_bytes))
    one_based = _write(tmp_path, "1 1:1 12:2\n", "one.svm")
    (b,) = list(data.LibSVMIter(data_libsvm=one_based, data_shape=(12,), batch_size=1,
                                zero_based=False))
    assert b.data[0]._indices.tolist() == [0, 11]


@pytest.mark.parametrize("kwargs, match", [
    ({}, "batch_size=None"),
    ({"batch_size": 2, "data_shape": (3, 4)}, "1-D shape"),
    ({"batch_size": 2, "zero_based": "auto"}, "cannot infer the base"),
    ({"batch_size": 2, "num_parts": 2, "part_index": 2}, "part_index=2"),
    ({"batch_size": 2, "label_libsvm": "x.t", "num_parts": 2}, "in step"),
    ({"batch_size": 2, "data_libsvm": "missing.svm"}, "missing.svm.*no such file"),
])
def test_libsvmiter_argument_errors(libsvm_file, kwargs, match):
    args = {"data_libsvm": libsvm_file[0], "data_shape": (N_FEATURES,), **kwargs}
    with pytest.raises(NetsError, match=match):
        data.LibSVMIter(**args)


def test_libsvmiter_descriptions(libsvm_file):
    it = data.LibSVMIter(data_libsvm=libsvm_file[0], data_shape=N_FEATURES, batch_size=8)
    assert [(d.name, d.shape) for d in it.provide_data] == [("data", (8, N_FEATURES))]
    assert [(d.name, d.shape) for d in it.provide_label] == [("softmax_label", (8,))]
    batch = next(it)
    assert it.getdata() is batch.data[0] and it.getlabel() is batch.label[0]
    assert it.getpad() == 0 and it.getlabel().shape == (8,)


# -- MXNet's NDArrayIter behaviour (io.py's documented examples) ----------------------------

def _doc_data():
    """MXNet's docstring example: 10 examples of shape (2, 2); example i holds 4i..4i+3."""
    return np.arange(40).reshape((10, 2, 2)), np.arange(10).reshape(10, 1)


def _examples(batch):
    return (batch.data[0].asnumpy()[:, 0, 0] // 4).astype(int).tolist()


@pytest.mark.parametrize("handle, passes, pads", [
    ("pad", [[[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 0, 1]]] * 2, [[0, 0, 0, 2]] * 2),
    ("discard", [[[0, 1, 2], [3, 4, 5], [6, 7, 8]]] * 2, [[0, 0, 0]] * 2),
    # the leftover example 9 opens pass 2 (MXNet's doc: [36..39], [0..3], [4..7]); pass 2
    # then leaves 8 and 9, which open pass 3, whose 12 examples make 4 full batches
    ("roll_over", [[[0, 1, 2], [3, 4, 5], [6, 7, 8]],
                   [[9, 0, 1], [2, 3, 4], [5, 6, 7]],
                   [[8, 9, 0], [1, 2, 3], [4, 5, 6], [7, 8, 9]]],
     [[0, 0, 0], [0, 0, 0], [0, 0, 0, 0]]),
])
def test_ndarrayiter_mxnet_doc_example(handle, passes, pads):
    x, y = _doc_data()
    it = data.NDArrayIter(x, y, 3, False, last_batch_handle=handle)
    for k, (expected, expected_pads) in enumerate(zip(passes, pads)):
        if k:
            it.reset()
        batches = list(it)
        assert [_examples(b) for b in batches] == expected
        assert [b.pad for b in batches] == expected_pads
        for b, ids in zip(batches, expected):
            assert b.data[0].shape == (3, 2, 2) and b.label[0].shape == (3, 1)
            np.testing.assert_array_equal(b.label[0].asnumpy()[:, 0], ids)


def test_ndarrayiter_mxnet_unit_test_counts():
    """MXNet's test_io: 1000 examples (label i // 100), batch 128 -> 8, 7 and 7 batches; label
    0 seen 124, 100, 100 times and label 8 100, 96, 96 times; after the roll_over pass a
    reset gives the padded last batch of 'pad' (examples 896..999 then 0..23)."""
    x = np.repeat((np.arange(1000) // 100)[:, None], 4, axis=1).astype(np.float64)
    y = np.arange(1000) // 100
    last = {}
    for handle, n_batches, count0, count8 in (("pad", 8, 124, 100), ("discard", 7, 100, 96),
                                              ("roll_over", 7, 100, 96)):
        it = data.NDArrayIter(x, y, 128, False, last_batch_handle=handle)
        batches = list(it)
        labels = np.concatenate([b.label[0].asnumpy() for b in batches])
        assert len(batches) == n_batches
        assert (labels == 0).sum() == count0 and (labels == 8).sum() == count8
        last[handle] = batches[-1]
    it.reset()
    np.testing.assert_array_equal(it.next().data[0].asnumpy(), last["pad"].data[0].asnumpy())
    np.testing.assert_array_equal(last["pad"].data[0].asnumpy()[:, 0],
                                  np.r_[np.arange(896, 1000), np.arange(24)] // 100)


@pytest.mark.parametrize("handle", ["pad", "roll_over"])
@pytest.mark.parametrize("batch_size", [11, 205, 10 ** 9])
def test_ndarrayiter_refuses_a_batch_that_would_repeat_the_data(handle, batch_size):
    """A batch larger than the data would repeat it (10**9 rows of padding over 10
    examples): refused at construction, naming the sizes, as MXNet does."""
    with pytest.raises(NetsError, match=rf"batch_size={batch_size} is larger than the 10 "
                                        rf"examples of 'data'.*'{handle}'.*at most 10"):
        data.NDArrayIter(np.arange(10), batch_size=batch_size, last_batch_handle=handle)
    it = data.NDArrayIter(np.arange(10), batch_size=10, last_batch_handle=handle)
    assert [b.pad for b in it] == [0]
    it = data.NDArrayIter(np.arange(10), batch_size=10 ** 9, last_batch_handle="discard")
    assert list(it) == []  # nothing repeated: no batch


def test_ndarrayiter_roll_over_second_reset_and_hard_reset_drop_the_leftover():
    x, y = _doc_data()
    for restart in ("reset_twice", "hard_reset"):
        it = data.NDArrayIter(x, y, 3, last_batch_handle="roll_over")
        list(it)
        if restart == "reset_twice":
            it.reset()
            it.reset()
        else:
            it.hard_reset()
        assert [_examples(b) for b in it] == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]


def test_ndarrayiter_dict_inputs_are_sorted_by_name_and_numpy_becomes_float32():
    n = 4
    it = data.NDArrayIter({"zeta": np.full((n, 1), 2.0), "alpha": np.arange(n * 2).reshape(n, 2)},
                          {"lab_b": np.ones(n, np.int64), "lab_a": np.zeros(n)}, batch_size=2)
    assert [d.name for d in it.provide_data] == ["alpha", "zeta"]
    assert [d.name for d in it.provide_label] == ["lab_a", "lab_b"]
    assert all(d.dtype == np.float32 for d in it.provide_data + it.provide_label)
    batch = it.next()
    assert [a.dtype for a in batch.data + batch.label] == [np.float32] * 4
    np.testing.assert_array_equal(batch.data[0].asnumpy(), [[0, 1], [2, 3]])
    np.testing.assert_array_equal(batch.data[1].asnumpy(), [[2], [2]])
    np.testing.assert_array_equal(batch.label[0].asnumpy(), [0, 0])
    np.testing.assert_array_equal(batch.label[1].asnumpy(), [1, 1])
    # a nets array keeps its dtype, as nd.array(NDArray) does
    kept = data.NDArrayIter(nets.nd.array(np.ones((4, 2)), dtype="float64"), batch_size=2)
    assert kept.provide_data[0].dtype == np.float64 and kept.next().data[0].dtype == np.float64


def test_ndarrayiter_shuffle_idx_names_each_example():
    x, y = _doc_data()
    nets.random.seed(3)
    it = data.NDArrayIter(x, y, 1, shuffle=True)
    for k in range(2):
        if k:
            it.reset()
        order = it.idx.copy()
        assert sorted(order.tolist()) == list(range(10))
        assert [_examples(b)[0] for b in it] == order.tolist()


# -- ResizeIter ------------------------------------------------------------------------------

def test_resizeiter_cuts_and_stretches_passes():
    x, y = _doc_data()
    inner = data.NDArrayIter(x, y, 4, last_batch_handle="discard")  # 2 batches a pass
    it = data.ResizeIter(inner, 5)
    assert it.provide_data == inner.provide_data and it.batch_size == 4
    assert [_examples(b) for b in it] == [[0, 1, 2, 3], [4, 5, 6, 7]] * 2 + [[0, 1, 2, 3]]
    assert list(it) == []
    it.reset()  # resets the inner iterator too
    assert [_examples(b) for b in it][:2] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    short = data.ResizeIter(data.NDArrayIter(x, y, 4, last_batch_handle="discard"), 1,
                            reset_internal=False)
    firsts = []
    for _ in range(3):
        firsts += [_examples(b) for b in short]
        short.reset()
    assert firsts == [[0, 1, 2, 3], [4, 5, 6, 7], [0, 1, 2, 3]]  # continues across passes
    with pytest.raises(NetsError, match="size=0"):
        data.ResizeIter(inner, 0)


# -- PrefetchingIter -------------------------------------------------------------------------

def _prefetch_threads():
    import threading
    return [t for t in threading.enumerate() if t.name == "nets-PrefetchingIter"]


def test_prefetchingiter_yields_the_wrapped_batches_over_passes():
    x, y = _doc_data()
    plain = data.NDArrayIter(x, y, 3, last_batch_handle="roll_over")
    expected = []
    for k in range(3):
        if k:
            plain.reset()
        expected.append([(_examples(b), b.pad) for b in plain])
    it = data.PrefetchingIter(data.NDArrayIter(x, y, 3, last_batch_handle="roll_over"))
    assert it.batch_size == 3 and [d.name for d in it.provide_data] == ["data"]
    for k in range(3):
        if k:
            it.reset()
        got = [(_examples(b), b.pad) for b in it]
        assert got == expected[k]
        assert list(it) == [] and not it.iter_next()
        assert _prefetch_threads() == []  # the thread ends with the pass


def test_prefetchingiter_joins_several_iterators_and_renames():
    x, y = _doc_data()
    it1 = data.NDArrayIter({"data": x}, {"label": y}, 5)
    it2 = data.NDArrayIter({"data": x * 10}, {"label": y * 10}, 5)
    it = data.PrefetchingIter([it1, it2], rename_data=[{"data": "d1"}, {"data": "d2"}],
                              rename_label=[{"label": "l1"}, {"label": "l2"}])
    assert [(d.name, d.shape) for d in it.provide_data] == [("d1", (5, 2, 2)), ("d2", (5, 2, 2))]
    assert [d.name for d in it.provide_label] == ["l1", "l2"]
    batches = list(it)
    assert len(batches) == 2
    for k, b in enumerate(batches):
        rows = np.arange(5 * k, 5 * k + 5)
        np.testing.assert_array_equal(b.data[0].asnumpy(), x[rows])
        np.testing.assert_array_equal(b.data[1].asnumpy(), x[rows] * 10)
        np.testing.assert_array_equal(b.label[1].asnumpy(), y[rows] * 10)
        assert [d.name for d in b.provide_data] == ["d1", "d2"]
    with pytest.raises(NetsError, match="no entry"):
        data.PrefetchingIter([it1], rename_data=[{"other": "x"}])
    with pytest.raises(NetsError, match="one dict per iterator"):
        data.PrefetchingIter([it1, it2], rename_data=[{"data": "x"}])


class _Streamed(data.NDArrayIter):
    """An ``NDArrayIter`` that says it is not ``in_memory`` (as a file reader would)."""
    in_memory = False


def test_prefetchingiter_close_stops_the_thread_mid_pass():
    x, y = _doc_data()
    with data.PrefetchingIter(_Streamed(x, y, 1)) as it:
        assert _examples(it.next()) == [0]
        assert len(_prefetch_threads()) == 1  # reading example 1 ahead
    assert _prefetch_threads() == [] and list(it) == []
    it.reset()  # a closed iterator starts again from reset()
    assert [_examples(b)[0] for b in it] == list(range(10))
    abandoned = data.PrefetchingIter(_Streamed(x, y, 1))
    abandoned.next()
    del abandoned  # garbage collection stops its thread
    import gc
    gc.collect()
    assert _prefetch_threads() == []


def test_prefetchingiter_makes_in_memory_batches_without_a_thread():
    """Over ``in_memory`` iterators (NDArrayIter, ResizeIter of one) the batches are made in
    the caller's thread: no thread starts, and the batches, passes, close and errors are
    those of the threaded reader (a stream iterator, compared batch by batch)."""
    x, y = _doc_data()
    for make in (lambda c: c(x, y, 3, shuffle=False, last_batch_handle="roll_over"),
                 lambda c: data.ResizeIter(c(x, y, 4), 5)):
        passes = {}
        for cls in (data.NDArrayIter, _Streamed):
            it = data.PrefetchingIter(make(cls))
            assert it.in_memory == (cls is data.NDArrayIter)
            passes[cls] = []
            for k in range(3):
                if k:
                    it.reset()
                passes[cls].append([(_examples(b), b.pad) for b in it])
                if it.in_memory:
                    assert _prefetch_threads() == []
        assert passes[data.NDArrayIter] == passes[_Streamed] and passes[_Streamed][0]
    with data.PrefetchingIter(data.NDArrayIter(x, y, 1)) as it:
        assert _examples(it.next()) == [0] and _prefetch_threads() == []
    assert list(it) == []  # closed mid-pass: nothing more until reset()
    it.reset()
    assert [_examples(b)[0] for b in it] == list(range(10))
    mixed = data.PrefetchingIter([data.NDArrayIter(x, y, 5), _Streamed(x, y, 5)])
    assert not mixed.in_memory  # one reader that may wait: the thread
    mixed.close()
    uneven = data.PrefetchingIter([data.NDArrayIter(x, y, 5), data.NDArrayIter(x, y, 2)])
    list(zip(range(2), uneven))
    with pytest.raises(NetsError, match="ended before the others"):
        uneven.next()


class _Failing(data.DataIter):
    def __init__(self):
        super().__init__(2)
        self.provide_data, self.provide_label = [data.DataDesc("data", (2, 1))], []

    def reset(self):
        pass

    def _next_batch(self):
        raise ValueError("broken source")


def test_prefetchingiter_raises_the_wrapped_errors():
    with pytest.raises(ValueError, match="broken source"):
        data.PrefetchingIter(_Failing()).next()
    x, y = _doc_data()
    uneven = data.PrefetchingIter([data.NDArrayIter(x, y, 5), data.NDArrayIter(x, y, 2)])
    list(zip(range(2), uneven))
    with pytest.raises(NetsError, match="ended before the others"):
        uneven.next()
    assert _prefetch_threads() == []


# -- LibSVMIter over several files -----------------------------------------------------------

def _split_file(path, folder, cuts):
    """The lines of ``path`` written into files ``part-0``, ``part-1``, ... of ``folder``,
    cut before the given line numbers."""
    lines = open(path, newline="").read().splitlines(keepends=True)
    folder.mkdir()
    bounds = [0] + list(cuts) + [len(lines)]
    paths = []
    for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        p = folder / f"part-{k}"
        p.write_text("".join(lines[a:b]), newline="")
        paths.append(str(p))
    return paths


@pytest.mark.parametrize("chunk_bytes", [25, 1 << 20])
def test_libsvmiter_reads_a_directory_a_list_or_a_semicolon_string(tmp_path, libsvm_file,
                                                                   chunk_bytes):
    path, X, y = libsvm_file
    paths = _split_file(path, tmp_path / "parts", [5, 6, 17])
    (tmp_path / "parts" / "part-9-empty").write_text("")  # skipped, as MXNet's reader does
    (tmp_path / "parts" / ".hidden").write_text("garbage that would not parse\n")
    for source in (str(tmp_path / "parts"), paths, ";".join(paths)):
        it = data.LibSVMIter(data_libsvm=source, data_shape=(N_FEATURES,), batch_size=4,
                             round_batch=False, chunk_bytes=chunk_bytes)
        xs, ys, _ = _read_all(it)
        np.testing.assert_array_equal(xs, X)
        np.testing.assert_array_equal(ys, y)


@pytest.mark.parametrize("num_parts", [2, 3, 5])
def test_libsvmiter_parts_partition_the_rows_of_several_files(tmp_path, libsvm_file, num_parts):
    path, X, y = libsvm_file
    folder = tmp_path / "parts"
    _split_file(path, folder, [2, 11, 12])
    parts = [_read_all(data.LibSVMIter(data_libsvm=str(folder), data_shape=(N_FEATURES,),
                                       batch_size=3, round_batch=False, num_parts=num_parts,
                                       part_index=p, chunk_bytes=30))
             for p in range(num_parts)]
    np.testing.assert_array_equal(np.concatenate([p[0] for p in parts]), X)
    np.testing.assert_array_equal(np.concatenate([p[1] for p in parts]), y)


def test_libsvmiter_several_files_errors(tmp_path):
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(NetsError, match="no non-empty file"):
        data.LibSVMIter(data_libsvm=str(tmp_path / "empty_dir"), data_shape=(3,), batch_size=1)
    with pytest.raises(NetsError, match="nope.svm.*no such file"):
        data.LibSVMIter(data_libsvm=[str(tmp_path / "nope.svm")], data_shape=(3,), batch_size=1)


def test_a_module_is_fed_in_the_iterators_name_order():
    """A dict iterator sorts its inputs by name; a Module whose data_names list them in
    another order still gets each array under its own name (MXNet feeds by provide_data)."""
    net = nets.sym.Variable("b") - nets.sym.Variable("a")
    it = data.NDArrayIter({"b": np.full((4, 2), 10.0), "a": np.arange(8).reshape(4, 2)},
                          batch_size=2)
    mod = nets.mod.Module(net, data_names=("b", "a"), label_names=None)
    mod.bind(it.provide_data, for_training=False)
    mod.init_params()
    mod.forward(it.next(), is_train=False)
    np.testing.assert_array_equal(mod.get_outputs()[0].asnumpy(), [[10, 9], [8, 7]])
