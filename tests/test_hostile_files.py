"""Hostile files only ever raise NetsError, through every public loader.

Each file is built by hand (zipfile and handcrafted .npy headers, raw JSON text), so the
tests do not depend on the writer: a ~300-byte member whose header claims 2**40 values
(refused before anything is allocated), negative shapes, string/object/complex dtypes,
configs nested 100,000 deep or of the wrong types at each level, missing, extra and
duplicate members, truncated and damaged archives, text or random bytes given as a model,
and symbol JSON nested 100,000 deep or of the wrong types. No message suggests
``allow_pickle``, and nothing is ever unpickled.
"""
import json
import os
import pickle
import shutil
import struct
import warnings
import zipfile

import numpy as np
import pytest

import nets
from nets import layers, nd, serialization, sym
from nets.base import NetsError

FORMAT = "nets-npz-1"
CONFIG = "__nets_config__.npy"


# -- building files by hand ------------------------------------------------------------------

def _npy(descr, shape, payload=b"", fortran=False, version=(1, 0)):
    """A .npy member: magic, version, header dict (as numpy writes it), then ``payload``."""
    text = repr({"descr": descr, "fortran_order": fortran, "shape": tuple(shape)}).encode()
    size_format = "<H" if version == (1, 0) else "<I"
    lead = 8 + struct.calcsize(size_format)
    text += b" " * (-(lead + len(text) + 1) % 64) + b"\n"
    return b"\x93NUMPY" + bytes(version) + struct.pack(size_format, len(text)) + text + payload


def _values(a):
    a = np.ascontiguousarray(a)
    return _npy(a.dtype.str, a.shape, a.tobytes())


def _archive(path, header, members, compression=zipfile.ZIP_STORED):
    """Write a zip whose config entry holds ``header`` (a JSON-able value, or raw bytes)
    and the members ``{name: bytes}`` (names as given, duplicates allowed)."""
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (zipfile warns of a duplicate name)
        with zipfile.ZipFile(path, "w", compression) as z:
            z.writestr(CONFIG, _npy("|u1", (len(text),), text))
            for name, data in members:
                z.writestr(name, data)
    return path


def _dense_meta(shape=(2, 2), dtype="float32"):
    return {"stype": "default", "shape": list(shape), "dtype": dtype}


W = np.array([[1.5, -2.0], [0.25, 4.0]], np.float32)


def _valid(path):
    """A well-formed file holding one dense float32 array 'a0' (nd.save's layout)."""
    return _archive(path, {"format": FORMAT, "arrays": {"a0": _dense_meta()},
                           "config": {"kind": "nd.save", "keys": None}},
                    [("a0.npy", _values(W))])


def _one(path, meta, member, config=None):
    return _archive(path, {"format": FORMAT, "arrays": {"a0": meta}, "config": config or {}},
                    [("a0.npy", member)])


def _patch_sizes(path, member, file_size=None, compress_size=None):
    """Rewrite the sizes the zip's local header and central directory state for
    ``member`` (the bytes stay as they are)."""
    data = bytearray(open(path, "rb").read())
    name = member.encode()
    for sig, at in ((b"PK\x03\x04", 18), (b"PK\x01\x02", 20)):
        pos = data.find(sig)
        while pos >= 0:
            name_at = pos + (30 if sig == b"PK\x03\x04" else 46)
            if data[name_at:name_at + len(name)] == name:
                if compress_size is not None:
                    struct.pack_into("<I", data, pos + at, compress_size)
                if file_size is not None:
                    struct.pack_into("<I", data, pos + at + 4, file_size)
            pos = data.find(sig, pos + 1)
    open(path, "wb").write(bytes(data))


# -- the files -----------------------------------------------------------------------------

def f_huge_header(p):  # a 2**40-value header in a ~300-byte member
    return _one(p, _dense_meta((2 ** 40,)), _npy("<f4", (2 ** 40,), b"\0" * 64))


def f_huge_header_small_config(p):
    return _one(p, _dense_meta((2, 2)), _npy("<f4", (2 ** 40,), b"\0" * 64))


def f_huge_deflated_claim(p):  # the directory claims 1 GiB from a few deflated bytes
    member = _npy("<f4", (2 ** 28,), b"\0" * 64)
    path = _archive(p, {"format": FORMAT, "arrays": {"a0": _dense_meta((2 ** 28,))},
                        "config": {}}, [("a0.npy", member)], zipfile.ZIP_DEFLATED)
    _patch_sizes(path, "a0.npy", file_size=len(member) - 64 + 2 ** 30)
    return path


def f_stored_claims_more(p):  # a stored member whose directory claims more than the file
    path = _valid(p)
    _patch_sizes(path, "a0.npy", file_size=10 ** 6, compress_size=10 ** 6)
    return path


def f_negative_shape(p):
    return _one(p, _dense_meta((-1, 4)), _npy("<f4", (-1, 4)))


def f_negative_header_shape(p):
    return _one(p, _dense_meta((0, 4)), _npy("<f4", (-1, 4)))


def f_unicode(p):
    return _one(p, _dense_meta((3,)), _values(np.array(["abc", "def", "ghi"])))


def f_unicode_declared(p):
    return _one(p, _dense_meta((3,), "<U3"), _values(np.array(["abc", "def", "ghi"])))


def f_object(p):
    payload = pickle.dumps(np.array([{"x": 1}], dtype=object))
    return _one(p, _dense_meta((1,)), _npy("|O", (1,), payload))


def f_object_declared(p):
    payload = pickle.dumps(np.array([{"x": 1}], dtype=object))
    return _one(p, _dense_meta((1,), "object"), _npy("|O", (1,), payload))


def f_complex(p):
    return _one(p, _dense_meta((2,), "complex64"), _values(np.array([1 + 2j, 3], np.complex64)))


def f_complex_member(p):
    return _one(p, _dense_meta((2,)), _values(np.array([1 + 2j, 3], np.complex64)))


def f_big_endian(p):
    return _one(p, _dense_meta((2, 2)), _values(W.astype(">f4")))


def f_datetime(p):
    return _one(p, _dense_meta((2,), "datetime64[s]"), _values(np.array([1, 2], "M8[s]")))


def f_size_mismatch(p):  # header says 4 values, 3 follow
    return _one(p, _dense_meta((4,)), _npy("<f4", (4,), b"\0" * 12))


def f_size_excess(p):  # header says 2 values, 4 follow
    return _one(p, _dense_meta((2,)), _npy("<f4", (2,), b"\0" * 16))


def f_bad_magic(p):
    return _one(p, _dense_meta((2,)), b"NOTNUMPY" + b"\0" * 60)


def f_npy_version_3(p):
    return _one(p, _dense_meta((2,)), _npy("<f4", (2,), b"\0" * 8, version=(3, 0)))


def f_npy_header_not_a_dict(p):
    text = b"[1, 2, 3]" + b" " * 54 + b"\n"
    return _one(p, _dense_meta((2,)), b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text)


def f_npy_header_huge(p):  # numpy's own message for this one suggests allow_pickle
    text = repr({"descr": "<f4", "fortran_order": False, "shape": (2,)}).encode()
    text += b" " * 20000 + b"\n"
    return _one(p, _dense_meta((2,)), b"\x93NUMPY\x02\x00" + struct.pack("<I", len(text))
                + text + b"\0" * 8)


def f_npy_header_deep(p):
    text = b"{'descr': '<f4', 'fortran_order': False, 'shape': (" + b"(" * 3000 + b")" * 3000 \
        + b",)}"
    text += b" " * (-(10 + len(text) + 1) % 64) + b"\n"
    return _one(p, _dense_meta((2,)), b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text)


def f_config_deep(p):
    return _archive(p, b"[" * 100_000 + b"]" * 100_000, [])


def f_config_deep_inside(p):
    text = (b'{"format": "nets-npz-1", "arrays": {}, "config": {"x": ' + b"[" * 100_000
            + b"]" * 100_000 + b"}}")
    return _archive(p, text, [])


def f_config_not_json(p):
    return _archive(p, b"\xff\xfe not json", [])


def f_config_not_utf8(p):
    return _archive(p, b'{"format": "\xff"}', [])


def f_config_dtype(p):  # the config entry itself stored as float64
    text = json.dumps({"format": FORMAT, "arrays": {}, "config": {}}).encode()
    with zipfile.ZipFile(p, "w") as z:
        z.writestr(CONFIG, _values(np.frombuffer(text, np.uint8).astype(np.float64)))
    return p


def f_no_config(p):
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("a0.npy", _values(W))
    return p


def _header_case(header):
    def build(p):
        return _archive(p, header, [("a0.npy", _values(W))])
    return build


HEADERS = {
    "header_list": [1, 2],
    "header_string": "nets",
    "header_null": None,
    "no_arrays": {"format": FORMAT, "config": {}},
    "unknown_format": {"format": "nets-npz-9", "arrays": {"a0": _dense_meta()}, "config": {}},
    "format_list": {"format": [FORMAT], "arrays": {"a0": _dense_meta()}, "config": {}},
    "arrays_list": {"format": FORMAT, "arrays": [_dense_meta()], "config": {}},
    "arrays_string": {"format": FORMAT, "arrays": "a0", "config": {}},
    "config_list": {"format": FORMAT, "arrays": {"a0": _dense_meta()}, "config": [1]},
    "extra_top_key": {"format": FORMAT, "arrays": {"a0": _dense_meta()}, "config": {},
                      "x": 1},
    "entry_string": {"format": FORMAT, "arrays": {"a0": "default"}, "config": {}},
    "entry_list": {"format": FORMAT, "arrays": {"a0": ["default", [2, 2], "float32"]},
                   "config": {}},
    "entry_missing_dtype": {"format": FORMAT, "arrays": {"a0": {"stype": "default",
                                                                "shape": [2, 2]}},
                            "config": {}},
    "shape_string": {"format": FORMAT, "arrays": {"a0": {**_dense_meta(), "shape": "2,2"}},
                     "config": {}},
    "shape_int": {"format": FORMAT, "arrays": {"a0": {**_dense_meta(), "shape": 4}},
                  "config": {}},
    "shape_floats": {"format": FORMAT, "arrays": {"a0": {**_dense_meta(), "shape": [2.0, 2.0]}},
                     "config": {}},
    "shape_bools": {"format": FORMAT, "arrays": {"a0": {**_dense_meta(), "shape": [True, 2]}},
                    "config": {}},
    "shape_nested": {"format": FORMAT, "arrays": {"a0": {**_dense_meta(), "shape": [[2], [2]]}},
                     "config": {}},
    "shape_huge": {"format": FORMAT, "arrays": {"a0": {**_dense_meta(), "shape": [2 ** 70]}},
                   "config": {}},
    "stype_unknown": {"format": FORMAT, "arrays": {"a0": {**_dense_meta(), "stype": "dense"}},
                      "config": {}},
    "stype_int": {"format": FORMAT, "arrays": {"a0": {**_dense_meta(), "stype": 0}},
                  "config": {}},
    "dtype_int": {"format": FORMAT, "arrays": {"a0": {**_dense_meta(), "dtype": 5}},
                  "config": {}},
    "dtype_nonsense": {"format": FORMAT, "arrays": {"a0": {**_dense_meta(), "dtype": "floaty"}},
                       "config": {}},
    "dtype_structured": {"format": FORMAT,
                         "arrays": {"a0": {**_dense_meta(), "dtype": "f4,f4"}}, "config": {}},
    "dtype_float128": {"format": FORMAT,
                       "arrays": {"a0": {**_dense_meta(), "dtype": "longdouble"}}, "config": {}},
    "name_with_separator": {"format": FORMAT, "arrays": {"a0::data": _dense_meta()},
                            "config": {}},
}


def f_missing_member(p):
    return _archive(p, {"format": FORMAT, "arrays": {"a0": _dense_meta(), "a1": _dense_meta()},
                        "config": {}}, [("a0.npy", _values(W))])


def f_missing_sparse_buffer(p):
    meta = {"stype": "csr", "shape": [2, 2], "dtype": "float32"}
    return _archive(p, {"format": FORMAT, "arrays": {"a0": meta}, "config": {}},
                    [("a0::data.npy", _values(np.ones(1, np.float32))),
                     ("a0::indices.npy", _values(np.zeros(1, np.int64)))])


def f_extra_member(p):
    return _archive(p, {"format": FORMAT, "arrays": {"a0": _dense_meta()}, "config": {}},
                    [("a0.npy", _values(W)), ("evil.npy", _values(W))])


def f_extra_non_npy_member(p):
    return _archive(p, {"format": FORMAT, "arrays": {"a0": _dense_meta()}, "config": {}},
                    [("a0.npy", _values(W)), ("readme.txt", b"hello")])


def f_duplicate_member(p):
    return _archive(p, {"format": FORMAT, "arrays": {"a0": _dense_meta()}, "config": {}},
                    [("a0.npy", _values(W)), ("a0.npy", _values(W * 2))])


def f_duplicate_config(p):
    path = _valid(p)
    text = json.dumps({"format": FORMAT, "arrays": {}, "config": {}}).encode()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with zipfile.ZipFile(path, "a") as z:
            z.writestr(CONFIG, _npy("|u1", (len(text),), text))
    return path


def _truncated(fraction):
    def build(p):
        data = open(_valid(p), "rb").read()
        open(p, "wb").write(data[:int(len(data) * fraction)])
        return p
    return build


def f_bad_crc(p):
    path = _valid(p)
    data = bytearray(open(path, "rb").read())
    at = data.find(W.tobytes())
    data[at + 1] ^= 0xFF
    open(path, "wb").write(bytes(data))
    return path


def f_bzip2_member(p):
    return _archive(p, {"format": FORMAT, "arrays": {"a0": _dense_meta()}, "config": {}},
                    [("a0.npy", _values(W))], zipfile.ZIP_BZIP2)


def f_text(p):
    open(p, "w").write("weights = [1, 2, 3]\n")
    return p


def f_random_bytes(p):
    open(p, "wb").write(np.random.default_rng(0).bytes(4096))
    return p


def f_random_bytes_zip_magic(p):
    open(p, "wb").write(b"PK\x03\x04" + np.random.default_rng(1).bytes(4096))
    return p


def f_empty(p):
    open(p, "wb").close()
    return p


def f_directory(p):
    os.mkdir(p)
    return p


def f_missing_file(p):
    return p


def f_plain_npz(p):  # numpy's own .npz (no nets config)
    with open(p, "wb") as f:
        np.savez(f, a0=W)
    return p


def _sparse(meta_shape, data, indices, indptr=None, stype="csr"):
    def build(p):
        members = [("a0::data.npy", _values(np.asarray(data, np.float32))),
                   ("a0::indices.npy", _values(np.asarray(indices)))]
        if indptr is not None:
            members.append(("a0::indptr.npy", _values(np.asarray(indptr))))
        meta = {"stype": stype, "shape": list(meta_shape), "dtype": "float32"}
        return _archive(p, {"format": FORMAT, "arrays": {"a0": meta}, "config": {}}, members)
    return build


SPARSE = {
    "csr_negative_shape": _sparse((-1, 4), [], np.zeros(0, np.int64), np.zeros(0, np.int64)),
    "csr_1d": _sparse((4,), [1.0], [0], [0, 1]),
    "csr_indptr_length": _sparse((2, 4), [1.0], [0], [0, 1]),
    "csr_indptr_end": _sparse((2, 4), [1.0], [0], [0, 1, 5]),
    "csr_indptr_decreasing": _sparse((3, 4), [1.0, 2.0], [0, 1], [0, 2, 1, 2]),
    "csr_index_out_of_range": _sparse((2, 4), [1.0], [7], [0, 1, 1]),
    "csr_negative_index": _sparse((2, 4), [1.0], [-1], [0, 1, 1]),
    "csr_data_length": _sparse((2, 4), [1.0, 2.0], [0], [0, 1, 1]),
    "csr_float_indices": _sparse((2, 4), [1.0], np.zeros(1, np.float64), [0, 1, 1]),
    "csr_int32_indptr": _sparse((2, 4), [1.0], [0], np.array([0, 1, 1], np.int32)),
    "csr_2d_data": _sparse((2, 4), [[1.0]], [0], [0, 1, 1]),
    "rsp_rows_out_of_range": _sparse((2, 3), [[1, 2, 3]], [5], stype="row_sparse"),
    "rsp_unsorted": _sparse((4, 1), [[1], [2]], [3, 1], stype="row_sparse"),
    "rsp_data_shape": _sparse((4, 3), [[1, 2]], [1], stype="row_sparse"),
    "rsp_zero_dims": _sparse((), [1.0], [0], stype="row_sparse"),
    "rsp_index_count": _sparse((4, 1), [[1], [2]], [1], stype="row_sparse"),
}


FILES = {name[2:]: f for name, f in globals().items() if name.startswith("f_")}
FILES.update({name: _header_case(h) for name, h in HEADERS.items()})
FILES.update({f"truncated_{k}": _truncated(k / 10) for k in (0, 1, 5, 9)})
FILES.update(SPARSE)


# -- the loaders ---------------------------------------------------------------------------

def _net():
    net = layers.Dense(2, in_units=2)
    net.initialize()
    return net


def _trainer_load(path):
    net = _net()
    nets.Trainer(net.collect_params(), "sgd", {"momentum": 0.9}).load_states(path)


def _store_load(path):
    kv = nets.kv.create("local")
    kv.set_optimizer(nets.optim.Adam())
    kv.init(0, nd.ones((2, 2)))
    kv.load_optimizer_states(path)


def _bound_module():
    data = sym.var("data")
    out = sym.LinearRegressionOutput(sym.FullyConnected(data, num_hidden=2, name="fc"),
                                     name="lro")
    mod = nets.mod.Module(out, label_names=["lro_label"])
    mod.bind(data_shapes=[("data", (2, 2))], label_shapes=[("lro_label", (2, 2))])
    mod.init_params()
    return mod, out


def _module_states_load(path):
    mod, _ = _bound_module()
    mod.init_optimizer(optimizer="adam")
    mod.load_optimizer_states(path)


def _checkpoint_load(path):
    """The file as a checkpoint's parameters, beside a valid symbol file."""
    prefix = os.path.join(os.path.dirname(path) or ".", "ckpt")
    _bound_module()[1].save(f"{prefix}-symbol.json")
    if os.path.isdir(path):
        os.rename(path, f"{prefix}-0003.params.npz")
    elif os.path.exists(path):
        shutil.copy(path, f"{prefix}-0003.params.npz")
    nets.model.load_checkpoint(prefix, 3)


def _module_load(path):
    _checkpoint_load(path)  # (the same files)
    prefix = os.path.join(os.path.dirname(path) or ".", "ckpt")
    mod = nets.mod.Module.load(prefix, 3)
    mod.bind(data_shapes=[("data", (2, 2))], label_shapes=[("lro_label", (2, 2))])


LOADERS = {
    "load_arrays": serialization.load_arrays,
    "nd.load": nd.load,
    "Block.load_parameters": lambda p: _net().load_parameters(p),
    "Block.read_extra": layers.Block.read_extra,
    "Trainer.load_states": _trainer_load,
    "KVStore.load_optimizer_states": _store_load,
    "Module.load_optimizer_states": _module_states_load,
    "load_checkpoint": _checkpoint_load,
    "Module.load": _module_load,
}


def _refused(call):
    """``call()`` raises NetsError (anything else fails the test) whose message does not
    suggest allow_pickle; returns the message."""
    with pytest.raises(NetsError) as info:
        call()
    message = str(info.value)
    assert "allow_pickle" not in message and "pickle" not in message.lower()
    return message


@pytest.fixture(autouse=True)
def _never_unpickle(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a loader unpickled data")
    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "load", refuse)


def test_the_valid_file_loads_through_every_loader_that_reads_its_layout(tmp_path):
    """(The hostile files below differ from this one in one thing each.)"""
    out = nd.load(_valid(str(tmp_path / "ok")))
    assert len(out) == 1 and out[0].dtype == np.float32
    np.testing.assert_array_equal(out[0].asnumpy(), W)


@pytest.mark.parametrize("loader", sorted(LOADERS))
@pytest.mark.parametrize("case", sorted(FILES))
def test_a_hostile_file_raises_nets_error(tmp_path, case, loader):
    path = FILES[case](str(tmp_path / "model.npz"))
    _refused(lambda: LOADERS[loader](path))


def test_the_huge_header_is_refused_before_allocating(tmp_path, monkeypatch):
    path = f_huge_header(str(tmp_path / "f"))
    assert os.path.getsize(path) < 1000
    real_empty = np.empty

    def guarded_empty(shape, *args, **kwargs):
        assert np.prod(shape) < 2 ** 20, f"allocation of {shape} attempted"
        return real_empty(shape, *args, **kwargs)

    monkeypatch.setattr(np, "empty", guarded_empty)
    message = _refused(lambda: serialization.load_arrays(path))
    assert "entry 'a0'" in message and str(4 * 2 ** 40) in message


@pytest.mark.parametrize("case, match", [
    ("huge_header", "header declares 4398046511104 bytes"),
    ("negative_shape", "shape \\[-1, 4\\] is not a list of non-negative integers"),
    ("negative_header_shape", "stored a0 shape \\(-1, 4\\)"),
    ("unicode", "stored a0 dtype <U3; declared 'float32'"),
    ("unicode_declared", "dtype '<U3' is not a bool, integer or float dtype"),
    ("object", "stored a0 dtype object"),
    ("complex", "dtype 'complex64' is not a bool, integer or float dtype"),
    ("config_deep", "nested too deeply"),
    ("arrays_list", "'arrays' and 'config' must be objects"),
    ("shape_string", "shape '2,2' is not a list of non-negative integers"),
    ("stype_unknown", "stype 'dense' is not one of"),
    ("missing_member", "array 'a1' is missing its buffer 'a1'"),
    ("extra_member", "holds entries \\['evil.npy'\\] that its config does not name"),
    ("duplicate_member", "holds \\['a0.npy'\\] more than once"),
    ("bzip2_member", "compression method 12"),
    ("stored_claims_more", "claims more bytes than the file holds"),
    ("huge_deflated_claim", "claims 1073741"),
    ("bad_crc", "not a readable nets .npz file.*CRC"),
    ("npy_header_huge", "no valid .npy header"),
    ("csr_index_out_of_range", "array 'a0' is malformed.*out of range"),
    ("rsp_unsorted", "array 'a0' is malformed.*sorted"),
    ("text", "not a readable nets .npz file"),
    ("missing_file", "no such file"),
])
def test_messages_name_what_is_wrong(tmp_path, case, match):
    path = FILES[case](str(tmp_path / "f"))
    message = _refused(lambda: serialization.load_arrays(path))
    assert path in message
    assert __import__("re").search(match, message), message


def test_a_deflated_file_and_a_fortran_ordered_member_load(tmp_path):
    """Compression (np.savez_compressed's deflate) and column-major .npy members are
    legitimate; values come back as written."""
    big = np.arange(6000, dtype=np.float32).reshape(60, 100) % 7
    path = _archive(str(tmp_path / "z"), {"format": FORMAT, "arrays": {
        "a0": _dense_meta(big.shape), "a1": _dense_meta((2, 2))}, "config": {}},
        [("a0.npy", _values(big)), ("a1.npy", _npy("<f4", (2, 2), np.asfortranarray(W)
                                                     .tobytes(order="F"), fortran=True))],
        zipfile.ZIP_DEFLATED)
    with zipfile.ZipFile(path) as z:
        assert z.getinfo("a0.npy").compress_size < z.getinfo("a0.npy").file_size // 10
    arrays, _ = serialization.load_arrays(path)
    np.testing.assert_array_equal(arrays["a0"].asnumpy(), big)
    np.testing.assert_array_equal(arrays["a1"].asnumpy(), W)


# -- loader-specific configs ---------------------------------------------------------------

@pytest.mark.parametrize("keys", ["abc", [1], [["a"]], ["a", "b"], {"a": 0}])
def test_nd_load_refuses_a_wrong_key_list(tmp_path, keys):
    path = _archive(str(tmp_path / "f"), {"format": FORMAT, "arrays": {"a0": _dense_meta()},
                                          "config": {"kind": "nd.save", "keys": keys}},
                    [("a0.npy", _values(W))])
    _refused(lambda: nd.load(path))


def _states_file(path, names, record, arrays, num_update=1):
    """A Trainer states file (SGD with momentum) for the parameters ``names``, with the
    records ``record(i)`` and the numpy ``arrays`` ``{key: values}``."""
    meta = {k: _dense_meta(a.shape, str(a.dtype)) for k, a in arrays.items()}
    config = {"kind": "optimizer_states", "optimizer": "SGD", "params": names,
              "records": {n: record(i) for i, n in enumerate(names)},
              "num_update": num_update}
    return _archive(path, {"format": FORMAT, "arrays": meta, "config": config},
                    [(k + ".npy", _values(a)) for k, a in arrays.items()])


def _deep(levels):
    layout = "array"
    for _ in range(levels):
        layout = [layout]
    return layout


STATES = {"0/0": np.zeros((2, 2), np.float32), "1/0": np.zeros((2,), np.float32)}


def _plain(i):
    return {"state": "array"}


def _counted(i):
    return {"state": "array", "step": 1, "log_decay": 0.0}


@pytest.mark.parametrize("record, arrays", [
    (_plain, STATES),
    (_counted, STATES),
    (_plain, {"0/0": np.arange(4).reshape(2, 2), "1/0": np.ones(2)}),  # int64, float64: cast
])
def test_trainer_load_states_reads_a_valid_handmade_file(tmp_path, record, arrays):
    net = _net()
    params = list(net.collect_params().values())
    path = _states_file(str(tmp_path / "s"), [p.name for p in params], record, arrays)
    trainer = nets.Trainer(net.collect_params(), "sgd", {"momentum": 0.9})
    trainer.load_states(path)
    states = [trainer.optimizer.state[i].state for i in (0, 1)]
    for p, state, key in zip(params, states, ("0/0", "1/0")):
        assert state.shape == p.shape and state.dtype == np.float32
        np.testing.assert_array_equal(state.asnumpy(), arrays[key].astype(np.float32))


@pytest.mark.parametrize("record, arrays, num_update", [
    (lambda i: ["array"], STATES, 1),
    (lambda i: "array", STATES, 1),
    (lambda i: {"state": "array", "step": "many", "log_decay": 0.0}, STATES, 1),
    (lambda i: {"state": "array", "step": -1, "log_decay": 0.0}, STATES, 1),
    (lambda i: {"state": "array", "step": True, "log_decay": 0.0}, STATES, 1),
    (lambda i: {"state": "array", "step": 1, "log_decay": "x"}, STATES, 1),
    (lambda i: {"state": "array", "step": 1, "log_decay": float("nan")}, STATES, 1),
    (lambda i: {"state": "array", "step": 1}, STATES, 1),
    (lambda i: {"state": "array", "extra": 1}, STATES, 1),
    (lambda i: {"state": _deep(900)}, STATES, 1),
    (lambda i: {"state": ["array", "array"]}, STATES, 1),
    (lambda i: {"state": "arrays"}, STATES, 1),
    (_plain, STATES, 1e400),
    (_plain, STATES, "3"),
    (_plain, STATES, -1),
    (_plain, {"0/0": np.zeros(4, np.float32), "1/0": np.zeros(2, np.float32)}, 1),
    (_plain, {"0/0": np.zeros((2, 2, 1), np.float32), "1/0": np.zeros(2, np.float32)}, 1),
    (_plain, {**STATES, "1/1": np.zeros(2, np.float32)}, 1),
    (_plain, {"0/0": STATES["0/0"]}, 1),
    (_counted, {**STATES, "0/stamps": np.zeros(7)}, 1),
    (_plain, {**STATES, "0/stamps": np.zeros(2)}, 1),
])
def test_trainer_load_states_refuses_a_wrong_states_config(tmp_path, record, arrays,
                                                          num_update):
    net = _net()
    names = [p.name for p in net.collect_params().values()]
    path = _states_file(str(tmp_path / "s"), names, record, arrays, num_update)
    trainer = nets.Trainer(net.collect_params(), "sgd", {"momentum": 0.9})
    _refused(lambda: trainer.load_states(path))


def test_load_checkpoint_refuses_entries_it_does_not_know(tmp_path):
    prefix = str(tmp_path / "c")
    _bound_module()[1].save(f"{prefix}-symbol.json")
    _archive(f"{prefix}-0001.params.npz", {"format": FORMAT, "arrays": {"fc_weight": _dense_meta()},
                                           "config": {"kind": "checkpoint", "epoch": 1}},
             [("fc_weight.npy", _values(W))])
    _refused(lambda: nets.model.load_checkpoint(prefix, 1))
    _archive(f"{prefix}-0001.params.npz", {"format": FORMAT, "arrays": {"arg:fc_weight":
                                                                        _dense_meta()},
                                           "config": {"kind": "other"}},
             [("arg:fc_weight.npy", _values(W))])
    _refused(lambda: nets.model.load_checkpoint(prefix, 1))


# -- symbol JSON -------------------------------------------------------------------------------

def _graph():
    return json.loads(sym.FullyConnected(sym.var("data"), num_hidden=2, name="fc").tojson())


def _node(k, **change):
    def edit(g):
        g["nodes"][k].update(change)
    return edit


def _attr(k, key, value):
    def edit(g):
        g["nodes"][k]["attrs"][key] = value
    return edit


def _top(key, value):
    def edit(g):
        g[key] = value
    return edit


DEEP_JSON = "[" * 100_000 + "]" * 100_000

SYMBOL_TEXTS = {
    "deep": DEEP_JSON,
    "deep_nodes": '{"format": "nets-symbol-1", "nodes": ' + DEEP_JSON + ', "heads": [[0, 0]]}',
    "deep_attr_900": None,  # (built below: deep, yet within what json parses)
    "not_json": "symbol = FullyConnected(...)",
    "a_list": "[1, 2]",
    "empty": "",
}

SYMBOL_EDITS = {
    "nodes_dict": _top("nodes", {}),
    "nodes_string": _top("nodes", "data"),
    "heads_empty": _top("heads", []),
    "heads_bools": _top("heads", [[True, False]]),
    "heads_out_of_range": _top("heads", [[9, 0]]),
    "format_wrong": _top("format", "mxnet"),
    "node_list": lambda g: g["nodes"].__setitem__(0, ["null", "data"]),
    "node_name_int": _node(0, name=3),
    "op_unknown": _node(3, op="Evil"),
    "op_list": _node(3, op=["FullyConnected"]),
    "attrs_list": _node(3, attrs=[["num_hidden", 2]]),
    "inputs_dict": _node(3, inputs={"data": 0}),
    "inputs_triples": _node(3, inputs=[[0, 0, 0], [1, 0, 0], [2, 0, 0]]),
    "inputs_strings": _node(3, inputs=[["0", 0], [1, 0], [2, 0]]),
    "inputs_bools": _node(3, inputs=[[True, 0], [False, 0], [2, 0]]),
    "input_forward_reference": lambda g: g["nodes"][0].update(op="relu", attrs={},
                                                              inputs=[[3, 0]]),
    "input_self_reference": _node(3, inputs=[[3, 0], [1, 0], [2, 0]]),
    "input_output_index": _node(3, inputs=[[0, 5], [1, 0], [2, 0]]),
    "input_count": _node(3, inputs=[[0, 0]]),
    "unknown_attribute": _attr(3, "evil", 1),
    "variable_inputs": _node(0, inputs=[[1, 0]]),
    "variable_shape_string": _attr(0, "shape", "abc"),
    "variable_shape_negative": _attr(0, "shape", [-1]),
    "variable_dtype_nonsense": _attr(0, "dtype", "floaty"),
    "variable_dtype_string": _attr(0, "dtype", "<U3"),
    "variable_dtype_complex": _attr(0, "dtype", "complex64"),
    "variable_stype": _attr(0, "stype", "dense"),
    "variable_init_unknown": _attr(0, "init", ["evil", {}]),
    "variable_init_not_pair": _attr(0, "init", "uniform"),
    "variable_lr_mult": _attr(0, "lr_mult", [1]),
    "variable_attr_list": _attr(0, "attr", [1, 2]),
    "variable_unknown_key": _attr(0, "evil", 1),
}


def _symbol_text(case):
    if case in SYMBOL_EDITS:
        g = _graph()
        SYMBOL_EDITS[case](g)
        return json.dumps(g)
    if case == "deep_attr_900":
        g = _graph()
        g["nodes"][3]["attrs"]["num_hidden"] = _deep(900)
        return json.dumps(g)
    return SYMBOL_TEXTS[case]


SYMBOL_CASES = sorted(set(SYMBOL_TEXTS) | set(SYMBOL_EDITS))


def test_the_unedited_graph_loads():
    assert sym.load_json(json.dumps(_graph())).list_arguments() == ["data", "fc_weight",
                                                                   "fc_bias"]


@pytest.mark.parametrize("case", SYMBOL_CASES)
def test_a_hostile_symbol_raises_nets_error(tmp_path, case):
    text = _symbol_text(case)
    _refused(lambda: sym.load_json(text))
    path = str(tmp_path / "s-symbol.json")
    open(path, "w").write(text)
    _refused(lambda: sym.load(path))
    params = str(tmp_path / "s-0000.params.npz")
    serialization.save_arrays(params, {}, {"kind": "checkpoint", "epoch": 0})
    _refused(lambda: nets.model.load_checkpoint(str(tmp_path / "s"), 0))
    _refused(lambda: nets.mod.Module.load(str(tmp_path / "s"), 0))


def test_a_symbol_file_of_random_bytes_raises_nets_error(tmp_path):
    path = str(tmp_path / "s")
    open(path, "wb").write(np.random.default_rng(2).bytes(512))
    _refused(lambda: sym.load(path))
    _refused(lambda: sym.load(str(tmp_path)))  # a directory
    _refused(lambda: sym.load(str(tmp_path / "missing")))


@pytest.mark.parametrize("attrs", [{"num_hidden": "abc"}, {"num_hidden": -3},
                                   {"num_hidden": [1]}, {"num_hidden": None},
                                   {"num_hidden": 1e300}])
def test_wrong_attribute_values_raise_nets_error_when_the_graph_is_used(attrs):
    """Attribute values are the operator's to judge: a loaded graph holding ones its shape
    rule cannot use raises NetsError at shape inference (and so at bind)."""
    g = _graph()
    g["nodes"][3]["attrs"].update(attrs)
    s = sym.load_json(json.dumps(g))
    _refused(lambda: s.infer_shape(data=(2, 3)))
    _refused(lambda: s.simple_bind(None, data=(2, 3)))


@pytest.mark.parametrize("build, attr, value", [
    (lambda x: sym.slice_axis(x, axis=1, begin=0, end=2), "begin", "abc"),
    (lambda x: sym.one_hot(x, depth=4), "depth", "abc"),
    (lambda x: sym.transpose(x, axes=(1, 0)), "axes", -5),
    (lambda x: sym.clip(x, a_min=0, a_max=1), "a_min", "abc"),
    (lambda x: sym.LeakyReLU(x, act_type="leaky", slope=0.1), "slope", "abc"),
    (lambda x: sym.LeakyReLU(x, act_type="leaky", slope=0.1), "act_type", {"a": 1}),
])
def test_attributes_an_operator_cannot_use_raise_nets_error_at_bind_or_forward(build, attr,
                                                                               value):
    g = json.loads(build(sym.var("data")).tojson())
    g["nodes"][-1]["attrs"][attr] = value

    def use():
        s = sym.load_json(json.dumps(g))
        s.infer_shape(data=(2, 3))
        s.simple_bind(None, data=(2, 3)).forward()

    _refused(use)
