"""nets.serialization and nd.save/nd.load: round trips of every storage type (stype, shape,
dtype and values kept), atomic writes (an error keeps the old file and leaves no temporary),
files that never execute code and malformed files that raise NetsError naming the problem;
pickling arrays of every storage type (in memory only)."""
import io
import json
import os
import pickle
import zipfile

import numpy as np
import pytest

import nets
from nets import autograd, nd, serialization
from nets.base import NetsError

DENSE = np.array([[1.5, 0, 0, -2], [0, 0, 0, 0], [0, 3, 0, 4.25]])


def _arrays(dtype=np.float32):
    """One array of each storage type with hand-written values."""
    dense = nd.array(DENSE, dtype=dtype)
    csr = nd.sparse.csr_matrix(([1.5, -2, 3, 4.25], [0, 3, 1, 3], [0, 2, 2, 4]), shape=(3, 4),
                               dtype=dtype)
    rsp = nd.sparse.row_sparse_array(([[1.5, 0, 0, -2], [0, 3, 0, 4.25]], [0, 2]),
                                     shape=(3, 4), dtype=dtype)
    return [dense, csr, rsp]


def _same(a, b):
    assert type(a) is type(b) and a.stype == b.stype
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    if a.stype != "default":
        np.testing.assert_array_equal(a.indices.asnumpy(), b.indices.asnumpy())
        assert b.indices.dtype == np.int64
    if a.stype == "csr":
        np.testing.assert_array_equal(a.indptr.asnumpy(), b.indptr.asnumpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_nd_save_load_a_list_keeps_order_stype_shape_dtype_values(tmp_path, dtype):
    arrays = _arrays(dtype) + [nd.array(np.arange(5), dtype=np.int32), nd.zeros((0, 3)),
                               nd.sparse.zeros("csr", (2, 5)), nd.array(7.0)]
    path = str(tmp_path / "list.params")  # the name is used as given, no suffix added
    nd.save(path, arrays)
    assert os.listdir(tmp_path) == ["list.params"]
    back = nd.load(path)
    assert isinstance(back, list) and len(back) == len(arrays)
    for a, b in zip(arrays, back):
        _same(a, b)
    np.testing.assert_array_equal(back[0].asnumpy(), DENSE.astype(dtype))


def test_nd_save_load_a_dict_and_a_single_array(tmp_path):
    dense, csr, rsp = _arrays()
    data = {"arg:weight": dense, "b::odd name": csr, "": rsp}  # any string key is kept
    nd.save(str(tmp_path / "d"), data)
    back = nd.load(str(tmp_path / "d"))
    assert list(back) == list(data)
    for k in data:
        _same(data[k], back[k])
    nd.save(str(tmp_path / "one"), csr)  # a single array is saved as a list of one (MXNet)
    (only,) = nd.load(str(tmp_path / "one"))
    _same(csr, only)


def test_nd_load_reads_other_nets_files_as_a_dict(tmp_path):
    dense, csr, _ = _arrays()
    serialization.save_arrays(str(tmp_path / "p.npz"), {"w": dense, "x": csr}, {"kind": "x"})
    back = nd.load(str(tmp_path / "p.npz"))
    assert sorted(back) == ["w", "x"]
    _same(csr, back["x"])


@pytest.mark.parametrize("data, match", [
    ({1: nd.ones(2)}, "keys must be strings"),
    ([nd.ones(2), np.ones(2)], "entry 1 is a ndarray"),
    ({"a": [1, 2]}, "entry 'a' is a list"),
    ("text", "must be an array, a list"),
])
def test_nd_save_rejects_what_it_cannot_store(tmp_path, data, match):
    with pytest.raises(NetsError, match=match):
        nd.save(str(tmp_path / "bad"), data)
    assert os.listdir(tmp_path) == []


def test_an_error_while_writing_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    path = str(tmp_path / "model.params")
    nd.save(path, [nd.ones(3)])
    before = open(path, "rb").read()

    def broken(f, **buffers):
        f.write(b"half a file")
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", broken)
    with pytest.raises(OSError, match="disk full"):
        nd.save(path, [nd.zeros(3)])
    assert os.listdir(tmp_path) == ["model.params"]
    assert open(path, "rb").read() == before
    monkeypatch.undo()
    np.testing.assert_array_equal(nd.load(path)[0].asnumpy(), np.ones(3, np.float32))


def test_save_replaces_by_rename(tmp_path, monkeypatch):
    """The new content reaches the target only by os.replace of a fsynced temporary file
    in the same folder."""
    path = str(tmp_path / "f")
    calls = []
    real_replace, real_fsync = os.replace, os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: calls.append("fsync") or real_fsync(fd))
    monkeypatch.setattr(os, "replace",
                        lambda a, b: calls.append(("replace", os.path.dirname(a), b))
                        or real_replace(a, b))
    nd.save(path, [nd.ones(2)])
    assert calls == ["fsync", ("replace", str(tmp_path), path)]


def _rewrite(path, change):
    """Rewrite the .npz at ``path`` with ``change(entries)`` applied to its raw entries."""
    with np.load(path, allow_pickle=False) as npz:
        entries = {k: npz[k] for k in npz.files}
    change(entries)
    with open(path, "wb") as f:
        np.savez(f, **entries)


def _header(entries):
    return json.loads(entries["__nets_config__"].tobytes().decode())


def _set_header(entries, header):
    entries["__nets_config__"] = np.frombuffer(json.dumps(header).encode(), np.uint8)


def _object_array(entries):
    entries["a0"] = np.array([{"x": 1}], dtype=object)


def _declare_dtype(entries):
    h = _header(entries)
    h["arrays"]["a0"]["dtype"] = "float64"
    _set_header(entries, h)


def _bad_index(entries):
    entries["a1::indices"] = np.array([0, 9, 1, 3])  # column 9 of 4


def _int32_indptr(entries):
    entries["a1::indptr"] = entries["a1::indptr"].astype(np.int32)


def _drop(entries):
    del entries["a2::indices"]


def _unsorted_rows(entries):
    entries["a2::indices"] = np.array([2, 0])


def _missing_array(entries):
    h = _header(entries)
    h["config"]["keys"] = None
    del h["arrays"]["a1"]
    for part in ("data", "indices", "indptr"):
        del entries[f"a1::{part}"]
    _set_header(entries, h)


@pytest.mark.parametrize("change, match", [
    (_object_array, "array 'a0' is malformed.*dtype object"),
    (_declare_dtype, "array 'a0' is malformed.*float32.*declared 'float64'"),
    (_bad_index, "array 'a1' is malformed.*out of range"),
    (_int32_indptr, "array 'a1' is malformed.*indptr dtype int32"),
    (_drop, "array 'a2' is missing its buffer 'a2::indices'"),
    (_unsorted_rows, "array 'a2' is malformed.*sorted"),
    (_missing_array, "corrupt nd.save entry list"),
])
def test_malformed_files_raise_naming_the_problem(tmp_path, change, match):
    path = str(tmp_path / "f")
    nd.save(path, _arrays())
    _rewrite(path, change)
    with pytest.raises(NetsError, match=match):
        nd.load(path)


def test_unreadable_files_raise(tmp_path):
    with pytest.raises(NetsError, match="no such file"):
        nd.load(str(tmp_path / "missing"))
    (tmp_path / "text").write_text("not a zip")
    with pytest.raises(NetsError, match="not a readable nets .npz file"):
        nd.load(str(tmp_path / "text"))
    with open(tmp_path / "plain.npz", "wb") as f:
        np.savez(f, x=np.ones(2))
    with pytest.raises(NetsError, match="not written by nets"):
        nd.load(str(tmp_path / "plain.npz"))
    path = str(tmp_path / "cut")
    nd.save(path, _arrays())
    data = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(data[: len(data) // 2])
    with pytest.raises(NetsError, match="not a readable"):
        nd.load(path)


def test_loading_never_unpickles(tmp_path, monkeypatch):
    path = str(tmp_path / "f")
    nd.save(path, _arrays())
    monkeypatch.setattr(pickle, "loads", lambda *a, **k: pytest.fail("pickle used"))
    monkeypatch.setattr(pickle, "load", lambda *a, **k: pytest.fail("pickle used"))
    assert len(nd.load(path)) == 3
    with zipfile.ZipFile(path) as z:  # plain .npy entries, readable without nets
        assert sorted(z.namelist())[0] == "__nets_config__.npy"


# -- pickling (in memory) ------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pickle_round_trips_every_stype(dtype):
    for arr in _arrays(dtype):
        back = pickle.loads(pickle.dumps(arr))
        _same(arr, back)
        assert back.context == arr.context
        back[:] = 0  # an independent copy
        assert np.count_nonzero(arr.asnumpy()) == 4


def test_pickle_of_views_and_of_an_array_with_a_gradient():
    x = nd.array(np.arange(12.0).reshape(3, 4))
    view = x[1:]
    back = pickle.loads(pickle.dumps(view))
    np.testing.assert_array_equal(back.asnumpy(), np.arange(4.0, 12.0).reshape(2, 4))
    csr_rows = x.tostype("csr")[1:3]  # a CSR row slice shares x's buffers
    _same(csr_rows, pickle.loads(pickle.dumps(csr_rows)))
    w = nd.ones((2, 2))
    w.attach_grad()
    with autograd.record():
        (w * 2).sum().backward()
    back = pickle.loads(pickle.dumps(w))  # the values travel, the gradient does not
    assert back.grad is None
    np.testing.assert_array_equal(back.asnumpy(), np.ones((2, 2), np.float32))
    buf = io.BytesIO()
    pickle.dump([nd.ones(2), nets.nd.sparse.zeros("row_sparse", (3, 2))], buf)
    buf.seek(0)
    a, b = pickle.load(buf)
    assert a.shape == (2,) and b.stype == "row_sparse" and b.indices.shape == (0,)
