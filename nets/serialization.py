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
import json
import os
import secrets
import zipfile

import numpy as np

from .base import NetsError
from .arrays.csr import CSRNDArray
from .arrays.dense import NDArray
from .arrays.row_sparse import RowSparseNDArray

__all__ = ["save_arrays", "load_arrays", "save", "load", "write_atomically"]

_CONFIG = "__nets_config__"
_FORMAT = "nets-npz-1"
_ND_SAVE = "nd.save"  # config kind of a file written by `save`
_VALUE_KINDS = "biuf"  # bool, signed/unsigned integers, floats: the dtypes arrays hold


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
            buffers[name] = arr._np
        else:
            buffers[f"{name}::data"] = arr._data
            buffers[f"{name}::indices"] = arr._indices
            if arr.stype == "csr":
                buffers[f"{name}::indptr"] = arr._indptr
    header = {"format": _FORMAT, "arrays": meta, "config": config or {}}
    buffers[_CONFIG] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    write_atomically(os.fspath(path), lambda f: np.savez(f, **buffers))


def write_atomically(path, write):
    """Run ``write(file)`` on a new temporary file beside ``path``, then flush, fsync and
    rename it to ``path``; on any error remove it and re-raise. ``path`` is never seen
    half-written: it is the previous file until the rename, the new one after. A process
    killed mid-write (SIGKILL, power loss) leaves the previous file whole but may leave its
    temporary file, ``<path>.<pid>.<random>.tmp``, which nothing removes. The new file is a
    new inode: it takes the default permissions (``0o666`` less the umask), and a symlink at
    ``path`` is replaced by it rather than written through."""
    tmp = f"{path}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
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
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


def load_arrays(path):
    """Read a file written by ``save_arrays``: returns ``({name: array}, config)``.

    Every sparse array is validated (``check_format``) before it is returned.
    """
    try:
        with np.load(path, allow_pickle=False) as npz:
            files = {k: npz[k] for k in npz.files}
    except FileNotFoundError:
        raise NetsError(f"{path}: no such file") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise NetsError(f"{path}: not a readable nets .npz file ({e})") from None
    if _CONFIG not in files:
        raise NetsError(f"{path}: not written by nets (no {_CONFIG!r} entry)")
    try:
        header = json.loads(files.pop(_CONFIG).tobytes().decode())
        meta = header["arrays"]
        if header.get("format") != _FORMAT:
            raise ValueError(f"unknown format {header.get('format')!r}")
        if not isinstance(meta, dict):
            raise ValueError("'arrays' is not a mapping")
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
        raise NetsError(f"{path}: corrupt nets config entry ({e})") from None
    arrays = {}
    for name, m in meta.items():
        try:
            arrays[name] = _rebuild(name, m, files)
        except KeyError as e:
            raise NetsError(f"{path}: array {name!r} is missing its buffer {e}") from None
        except (ValueError, TypeError, NetsError) as e:
            raise NetsError(f"{path}: array {name!r} is malformed ({e})") from None
    return arrays, header.get("config", {})


def _rebuild(name, m, files):
    shape, stype = tuple(int(d) for d in m["shape"]), m["stype"]
    if stype == "default":
        values = _values(files[name], m)
        if values.shape != shape:
            raise ValueError(f"stored shape {values.shape} != declared {shape}")
        return NDArray(values)
    data, indices = _values(files[f"{name}::data"], m), files[f"{name}::indices"]
    if indices.dtype != np.int64:
        raise ValueError(f"indices dtype {indices.dtype}, expected int64")
    if stype == "csr":
        indptr = files[f"{name}::indptr"]
        if indptr.dtype != np.int64:
            raise ValueError(f"indptr dtype {indptr.dtype}, expected int64")
        arr = CSRNDArray(data, indices, indptr, shape)
    elif stype == "row_sparse":
        arr = RowSparseNDArray(data, indices, shape)
    else:
        raise ValueError(f"unknown stype {stype!r}")
    arr.check_format(full_check=True)
    return arr


def _values(values, m):
    """``values`` checked against the declared dtype (a numeric one)."""
    if values.dtype.kind not in _VALUE_KINDS or str(values.dtype) != m["dtype"]:
        raise ValueError(f"stored dtype {values.dtype} (declared {m['dtype']!r}); expected the "
                         f"declared numeric dtype")
    return values


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
    if any(v is None for v in values) or (keys is not None and (not isinstance(keys, list)
                                                or len(keys) != len(values))):
        raise NetsError(f"{fname}: corrupt nd.save entry list (arrays {sorted(arrays)}, "
                        f"keys {keys!r})")
    return values if keys is None else dict(zip(keys, values))
