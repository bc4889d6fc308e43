"""The one file format nets writes: an ``.npz`` archive of named arrays plus a JSON
config entry. Loading uses ``allow_pickle=False``, so it never executes code; a
truncated, hostile or mismatched file raises ``NetsError`` naming what is wrong.

Sparse arrays are stored as their buffers (``NAME::data``, ``NAME::indices``,
``NAME::indptr``) with stype and shape in the config, never densified. Files are written
atomically: into a temporary file in the same directory, flushed and fsynced, then renamed
over the target, so an interrupted save leaves the previous file intact.

``save``/``load`` are MXNet's ``nd.save``/``nd.load`` over this format (a list or a dict of
arrays of any storage types).
"""
import errno
import json
import math
import os
import secrets
import stat
import zipfile
import zlib
from typing import NamedTuple

import numpy as np

from .base import INDEX_DTYPE, STYPES, DTypeError, NetsError, ShapeError
from .arrays.csr import CSRNDArray
from .arrays.dense import NDArray
from .arrays.row_sparse import RowSparseNDArray

__all__ = ["save_arrays", "load_arrays", "save", "load", "write_atomically", "check_stored",
           "Declared"]

_CONFIG = "__nets_config__"
_FORMAT = "nets-npz-1"
_ND_SAVE = "nd.save"  # config kind of a file written by `save`
_VALUE_KINDS = "biuf"  # bool, signed/unsigned integers, floats: the dtypes arrays hold
_PARTS = {"default": ("",), "csr": ("::data", "::indices", "::indptr"),
          "row_sparse": ("::data", "::indices")}  # member name suffixes, in reading order
_UINT8 = np.dtype(np.uint8)
_DEFLATE_MAX_RATIO = 1032  # deflate's most output per input byte (a 258-byte match in 2 bits)
_CHUNK = 1 << 24  # bytes read from a member at a time


def save_arrays(path, arrays, config=None):
    """Write ``{name: array}`` (any storage types) and a JSON-able ``config`` to ``path``,
    atomically (the previous file survives any error, and no temporary file is left)."""
    buffers, meta = {}, {}
    for name, arr in arrays.items():
        if not isinstance(name, str) or "::" in name or name == _CONFIG:
            raise NetsError(f"array name {name!r} is not allowed (names are strings without "
                            f"'::', other than {_CONFIG!r})")
        if not isinstance(arr, NDArray):
            raise NetsError(f"array {name!r} is a {type(arr).__name__}, not a nets array")
        meta[name] = {"stype": arr.stype, "shape": list(arr.shape), "dtype": str(arr.dtype)}
        if arr.stype == "default":
            buffers[name] = arr.values
        else:
            buffers[f"{name}::data"] = arr.values
            buffers[f"{name}::indices"] = arr.index_array
            if arr.stype == "csr":
                buffers[f"{name}::indptr"] = arr.indptr_array
    header = {"format": _FORMAT, "arrays": meta, "config": config or {}}
    buffers[_CONFIG] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    write_atomically(os.fspath(path), lambda f: np.savez(f, **buffers))


def write_atomically(path, write):
    """Run ``write(file)`` on a new temporary file beside ``path``, then flush, fsync and
    rename it to ``path``; on any error remove it and re-raise. ``path`` is never seen
    half-written: it is the previous file until the rename, the new one after. A process
    killed mid-write (SIGKILL, power loss) leaves the previous file whole but may leave its
    temporary file, ``.<name>.<pid>.<random>.tmp`` beside it (hidden: a folder's readers,
    which skip hidden files, never take it for data), which nothing removes. The new file is a
    new inode: it takes the default permissions (``0o666`` less the umask), and a symlink at
    ``path`` is replaced by it rather than written through.

    A ``path`` that is a directory, and a write the system refuses (a full disk, a file
    size limit, an I/O error), raise ``NetsError`` naming ``path`` and the reason; the
    previous file is kept."""
    if os.path.isdir(path):
        raise NetsError(f"{path}: is a directory; give a file name to write")
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # umask applies
    except OSError as e:
        raise NetsError(f"{path}: cannot write ({e.strerror})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.remove(tmp)
        except OSError:
            pass
        if isinstance(e, OSError) and e.errno in _WRITE_ERRNOS:
            raise NetsError(f"{path}: cannot write ({e.strerror}); the previous file, if "
                            f"any, is unchanged") from None
        raise


# the errors a write reports when the system refuses it (not a bug of the caller's)
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS,
                 errno.EACCES, errno.EPERM, errno.EISDIR}


class Declared(NamedTuple):
    """What a file's config declares of one array, known before any of its values are
    read: ``load_arrays``' ``check`` gets one per array."""
    name: str
    stype: str
    shape: tuple
    dtype: np.dtype

    @property
    def nbytes(self):
        """The bytes of the array's values if it were dense (an upper bound for a sparse
        array's stored values)."""
        return math.prod(self.shape) * self.dtype.itemsize


def load_arrays(path, check=None, max_bytes=None):
    """Read a file written by ``save_arrays``: returns ``({name: array}, config)``.

    ``check(config, declared)``, when given, is called once the config entry is read and
    before any array's values are: ``declared`` is ``{name: Declared}`` (each array's
    storage type, shape and dtype as the file declares them). It raises to refuse the file,
    so a caller that knows what it expects (a model's parameter shapes) refuses a
    mismatched or oversized file before a byte of it is inflated. ``max_bytes`` bounds the
    bytes the arrays inflate to, all members together (their sizes in the zip directory,
    checked before anything is read): a caller that knows how large the arrays can honestly
    be refuses a file that claims more. Only regular files are
    read: a device, a pipe or a directory raises ``NetsError`` (an archive is read by
    seeking; an endless stream would be read whole).

    Everything is checked before memory is allocated for it, so a truncated, hostile or
    mismatched file raises ``NetsError`` naming the file and what is wrong, and no other
    exception. An array is allocated only once its ``.npy`` header, the zip directory and
    the file's size agree on its byte count: at most the member's stored bytes, or 1032
    times them for a deflated member (deflate's largest ratio), the stored bytes of all
    members summing to at most the file's size. In detail:

    - the JSON config entry describes every array: a storage type of ``STYPES``, a shape
      of non-negative integers and a bool, integer, unsigned or float dtype;
    - the archive holds exactly the members that config names (one per dense array;
      ``data``, ``indices`` and ``indptr`` for CSR; ``data`` and ``indices`` for
      row_sparse): a missing member, a member it does not name or a duplicate is refused,
      and so is a member compressed other than stored or deflated;
    - each member's ``.npy`` header is read first: its dtype must be the declared one
      (int64 for indices and indptr), its shape the declared one (for sparse buffers:
      consistent with the array's shape), and its byte count must equal the member's size
      in the zip directory, which the archive's size must be able to hold;
    - every sparse array is validated (``check_format(full_check=True)``) before it is
      returned, so no kernel ever sees an index out of range.
    """
    path = os.fspath(path)
    try:
        mode = os.stat(path).st_mode  # (before open: opening a FIFO would wait for a writer)
        if not stat.S_ISREG(mode):
            raise NetsError(f"{path}: not a regular file ({_file_kind(mode)}); nets reads "
                            f"arrays from .npz files only")
        with open(path, "rb") as f, zipfile.ZipFile(f) as z:
            return _read_archive(path, z, os.fstat(f.fileno()).st_size, check, max_bytes)
    except NetsError:
        raise
    except FileNotFoundError:
        raise NetsError(f"{path}: no such file") from None
    except MemoryError:
        raise NetsError(f"{path}: not enough memory for the arrays it declares") from None
    except (OSError, EOFError, ValueError, RuntimeError, NotImplementedError,
            zipfile.BadZipFile, zlib.error) as e:
        # (zipfile raises these on a damaged archive; NotImplementedError and
        # RuntimeError on an unsupported or encrypted member)
        raise NetsError(f"{path}: not a readable nets .npz file ({_first_line(e)})") from None


def _file_kind(mode):
    kinds = [(stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a pipe"),
             (stat.S_ISSOCK, "a socket")]
    return next((name for test, name in kinds if test(mode)), "not a plain file")


def _first_line(error):
    """The first line of ``error``'s message, at most 200 characters (numpy's header
    errors go on to suggest ``allow_pickle``, which nets never uses, and may quote a
    hostile header at length)."""
    text = str(error).strip()
    line = text.splitlines()[0] if text else type(error).__name__
    return line if len(line) <= 200 else line[:200] + "..."


def _shape_text(shape, unknown="nnz"):
    """``shape`` as text, a None dimension shown as ``unknown`` (by default ``nnz``: the
    number of stored values)."""
    dims = [unknown if d is None else str(d) for d in shape]
    return f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(dims)})"


def _read_archive(path, z, size, check, max_bytes):
    infos = z.infolist()
    members = {i.filename: i for i in infos}
    if len(members) != len(infos):
        names = [i.filename for i in infos]
        twice = sorted({n for n in names if names.count(n) > 1})
        raise NetsError(f"{path}: the archive holds {twice[:5]} more than once")
    if sum(i.compress_size for i in infos) > size:
        raise NetsError(f"{path}: its zip directory claims more bytes than the file holds")
    for info in infos:
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise NetsError(f"{path}: member {info.filename!r} uses zip compression method "
                            f"{info.compress_type}; nets reads stored or deflated members")
        stored = info.compress_type == zipfile.ZIP_STORED
        if info.file_size > (info.compress_size if stored
                             else _DEFLATE_MAX_RATIO * (info.compress_size + 1)):
            raise NetsError(f"{path}: member {info.filename!r} claims {info.file_size} bytes "
                            f"from {info.compress_size} stored bytes")
    inflated = sum(i.file_size for i in infos)
    if max_bytes is not None and inflated > max_bytes:
        raise NetsError(f"{path}: its arrays would take {inflated} bytes, more than the "
                        f"{max_bytes} its reader allows")
    if _CONFIG + ".npy" not in members:
        raise NetsError(f"{path}: not written by nets (no {_CONFIG!r} entry)")
    try:
        text = _read_npy(z, members.pop(_CONFIG + ".npy"), _CONFIG, _UINT8, (None,))
    except NetsError as e:
        raise NetsError(f"{path}: corrupt nets config entry ({e})") from None
    header = _parse_config(path, text)
    if check is not None:
        check(header["config"], {name: Declared(name, m["stype"], m["shape"], m["dtype"])
                                 for name, m in header["arrays"].items()})
    wanted = {}
    for name, m in header["arrays"].items():
        for part in _PARTS[m["stype"]]:
            wanted[name + part] = name
    missing = sorted(set(wanted) - {n[:-4] for n in members if n.endswith(".npy")})
    if missing:
        name = wanted[missing[0]]
        raise NetsError(f"{path}: array {name!r} is missing its buffer {missing[0]!r}")
    extra = sorted(set(members) - {n + ".npy" for n in wanted})
    if extra:
        raise NetsError(f"{path}: holds entries {extra[:5]} that its config does not name")
    arrays = {}
    for name, m in header["arrays"].items():
        parts = {}
        try:
            for part in _PARTS[m["stype"]]:
                dtype = m["dtype"] if part in ("", "::data") else INDEX_DTYPE
                parts[part] = _read_npy(z, members[name + part + ".npy"], name + part, dtype,
                                        _expected_shape(m, part, parts))
            arrays[name] = _rebuild(m, parts)
        except NetsError as e:  # (also ShapeError, SparseFormatError from the sparse checks)
            raise NetsError(f"{path}: array {name!r} is malformed ({e})") from None
    return arrays, header["config"]


def _expected_shape(m, part, parts):
    """The shape member ``part`` of an array must have, as far as it is known before
    reading it (a None entry: the number of stored values, which ``data`` gives; None: any,
    left to the sparse checks)."""
    shape = m["shape"]
    if part == "":
        return shape
    if part == "::indptr":
        return (shape[0] + 1,) if len(shape) == 2 else None  # (the CSR check names a bad rank)
    if part == "::indices":
        return parts["::data"].shape[:1]
    return (None,) if m["stype"] == "csr" else (None,) + shape[1:]


def _read_npy(z, info, member, dtype, shape):
    """The array in zip member ``info``: its .npy header is read and checked against
    ``dtype`` and ``shape`` (None: any shape; a None entry: any length) and against the
    member's size before the values are allocated and read."""
    with z.open(info) as f:
        try:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                stored_shape, fortran, stored_dtype = np.lib.format.read_array_header_1_0(f)
            elif version == (2, 0):
                stored_shape, fortran, stored_dtype = np.lib.format.read_array_header_2_0(f)
            else:
                raise ValueError(f".npy version {version} (nets writes 1.0 or 2.0)")
        except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError) as e:
            raise NetsError(f"entry {member!r} has no valid .npy header "
                            f"({_first_line(e)})") from None
        offset = f.tell()
        if stored_dtype != dtype:
            raise NetsError(f"stored {member} dtype {stored_dtype}; declared {str(dtype)!r}")
        if any(d < 0 for d in stored_shape) or (shape is not None and (
                len(stored_shape) != len(shape) or any(
                    e is not None and d != e for d, e in zip(stored_shape, shape)))):
            raise NetsError(f"stored {member} shape {stored_shape}; expected "
                            f"{'any' if shape is None else _shape_text(shape)}")
        count = math.prod(stored_shape)
        if offset + count * dtype.itemsize != info.file_size:
            raise NetsError(f"entry {member!r}: its header declares {count * dtype.itemsize} "
                            f"bytes of values but the entry holds {info.file_size - offset}")
        out = np.empty(count, dtype)
        raw, done = out.view(np.uint8), 0
        while done < raw.size:
            chunk = f.read(min(_CHUNK, raw.size - done))
            if not chunk:
                raise NetsError(f"entry {member!r} is truncated")
            raw[done:done + len(chunk)] = np.frombuffer(chunk, np.uint8)
            done += len(chunk)
        f.read()  # (reaching the end checks the entry's CRC)
    return out.reshape(stored_shape, order="F" if fortran else "C")


def _parse_config(path, values):
    """The config entry's JSON, validated: ``{"format", "arrays": {name: {"stype",
    "shape", "dtype"}}, "config": {...}}`` with shapes as tuples and dtypes as numpy
    dtypes."""
    where = f"{path}: corrupt nets config entry"
    try:
        header = json.loads(values.tobytes().decode())
    except (ValueError, UnicodeDecodeError) as e:
        raise NetsError(f"{where} (not JSON: {e})") from None
    except RecursionError:
        raise NetsError(f"{where} (JSON nested too deeply)") from None
    if not isinstance(header, dict) or set(header) != {"format", "arrays", "config"}:
        raise NetsError(f"{where} (expected an object with keys 'format', 'arrays' and "
                        f"'config', got {_describe(header)})")
    if header["format"] != _FORMAT:
        raise NetsError(f"{where} (unknown format {header['format']!r:.80})")
    if not isinstance(header["arrays"], dict) or not isinstance(header["config"], dict):
        raise NetsError(f"{where} ('arrays' and 'config' must be objects)")
    meta = {}
    for name, m in header["arrays"].items():
        if "::" in name or name == _CONFIG:
            raise NetsError(f"{where} (array name {name!r:.80} is not allowed)")
        if not isinstance(m, dict) or set(m) != {"stype", "shape", "dtype"}:
            raise NetsError(f"{where} (array {name!r:.80}: expected an object with keys "
                            f"'stype', 'shape' and 'dtype', got {_describe(m)})")
        stype, shape, dtype = m["stype"], m["shape"], m["dtype"]
        if not isinstance(stype, str) or stype not in STYPES:
            raise NetsError(f"{where} (array {name!r:.80}: stype {stype!r:.80} is not one of "
                            f"{STYPES})")
        if not (isinstance(shape, list) and all(
                type(d) is int and 0 <= d < 2 ** 63 for d in shape)):
            raise NetsError(f"{where} (array {name!r:.80}: shape {shape!r:.80} is not a list of "
                            f"non-negative integers)")
        meta[name] = {"stype": stype, "shape": tuple(shape), "dtype": _value_dtype(dtype)}
        if meta[name]["dtype"] is None:
            raise NetsError(f"{where} (array {name!r:.80}: dtype {dtype!r:.80} is not a bool, "
                            f"integer or float dtype)")
    return {"arrays": meta, "config": header["config"]}


def _describe(value):
    return (f"keys {sorted(value)[:6]}" if isinstance(value, dict)
            else f"a {type(value).__name__}")


def _value_dtype(name):
    """``np.dtype(name)`` when it names a dtype arrays hold (bool, integers, floats of at
    most 8 bytes, native byte order), else None."""
    if not isinstance(name, str):
        return None
    try:
        dtype = np.dtype(name)
    except (TypeError, ValueError, SyntaxError):
        return None
    return dtype if dtype.kind in _VALUE_KINDS and dtype.isnative and dtype.itemsize <= 8 \
        else None


def _rebuild(m, parts):
    shape, stype = m["shape"], m["stype"]
    if stype == "default":
        return NDArray(parts[""])
    if stype == "csr":
        arr = CSRNDArray(parts["::data"], parts["::indices"], parts["::indptr"], shape)
    else:
        arr = RowSparseNDArray(parts["::data"], parts["::indices"], shape)
    arr.check_format(full_check=True)
    return arr


def check_stored(what, value, shape, dtype):
    """Check that the stored array ``value`` may be written into ``what`` (a parameter, an
    optimizer state), whose shape is ``shape`` and dtype ``dtype``; raise ``ShapeError`` or
    ``DTypeError`` naming ``what``, the stored shape and dtype and the expected ones.

    Every loader that fills existing arrays from a file calls this before writing:

    - shapes must be equal: nothing broadcasts (a stored ``(4,)`` never fills a ``(3, 4)``
      weight). A None entry of ``shape`` is a dimension not known yet (a deferred
      parameter's), a ``shape`` of None an unknown rank;
    - the dtype must convert without loss of meaning: into a float target any bool,
      integer or float dtype (float64 into float32 rounds each value); into a bool or
      integer target only what numpy casts safely (no float, no narrowing). Complex,
      string, object and datetime arrays are refused everywhere.
    """
    stored_shape, stored_dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if stored_shape is None or stored_dtype is None:
        raise DTypeError(f"{what}: the stored value is a {type(value).__name__}, not an array")
    stored_dtype, dtype = np.dtype(stored_dtype), np.dtype(dtype)
    expected = "" if shape is None else f" shape {_shape_text(shape, '?')}"
    found = f"the stored value has shape {tuple(stored_shape)} dtype {stored_dtype}"
    if shape is not None and (len(stored_shape) != len(shape) or any(
            d is not None and d != s for d, s in zip(shape, stored_shape))):
        raise ShapeError(f"{what}: {found}; expected{expected} dtype {dtype}")
    if not (stored_dtype.kind in _VALUE_KINDS and dtype.kind in _VALUE_KINDS and (
            dtype.kind == "f" or np.can_cast(stored_dtype, dtype, "safe"))):
        raise DTypeError(f"{what}: {found}; expected{expected} dtype {dtype} (a stored dtype "
                         f"that converts to it without loss of meaning)")


def save(fname, data):
    """Save an array, a list of arrays or a dict ``{str: array}`` (any storage types) to
    ``fname`` (MXNet's ``nd.save``), in nets' ``.npz`` format, atomically. The file is named
    exactly ``fname`` (no suffix is added); ``load`` reads it back."""
    if isinstance(data, NDArray):
        data = [data]
    if isinstance(data, dict):
        keys = list(data)
        if any(not isinstance(k, str) for k in keys):
            raise NetsError(f"nd.save: dict keys must be strings, got "
                            f"{[k for k in keys if not isinstance(k, str)][:3]!r}")
        values = list(data.values())
    elif isinstance(data, (list, tuple)):
        keys, values = None, list(data)
    else:
        raise NetsError(f"nd.save: data must be an array, a list of arrays or a dict of "
                        f"str -> array, got {type(data).__name__}")
    bad = [i for i, v in enumerate(values) if not isinstance(v, NDArray)]
    if bad:
        raise NetsError(f"nd.save: entry {keys[bad[0]] if keys else bad[0]!r} is a "
                        f"{type(values[bad[0]]).__name__}, not a nets array")
    save_arrays(fname, {f"a{i}": v for i, v in enumerate(values)},
                {"kind": _ND_SAVE, "keys": keys})


def load(fname):
    """Load a file written by ``save``: a list of arrays, or a dict when a dict was saved
    (MXNet's ``nd.load``). Another nets file (e.g. ``save_parameters``'s) loads as a dict of
    its arrays. Never executes code; a malformed file raises ``NetsError``."""
    arrays, config = load_arrays(fname)
    if config.get("kind") != _ND_SAVE:
        return arrays
    keys = config.get("keys")
    values = [arrays.get(f"a{i}") for i in range(len(arrays))]
    if any(v is None for v in values) or (keys is not None and (
            not isinstance(keys, list) or len(keys) != len(values)
            or not all(isinstance(k, str) for k in keys))):
        raise NetsError(f"{fname}: corrupt nd.save entry list (arrays {sorted(arrays)}, "
                        f"keys {keys!r})")
    return values if keys is None else dict(zip(keys, values))
