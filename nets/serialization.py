"""The one file format nets writes: an ``.npz`` archive of named arrays plus a JSON
config entry. Loading uses ``allow_pickle=False``, so it never executes code; a
truncated, hostile or mismatched file raises ``NetsError`` naming what is wrong.

Sparse arrays are stored as their buffers (``NAME::data``, ``NAME::indices``,
``NAME::indptr``) with stype and shape in the config, never densified.
"""
import json
import zipfile

import numpy as np

from .base import NetsError
from .ndarray.csr import CSRNDArray
from .ndarray.dense import NDArray
from .ndarray.row_sparse import RowSparseNDArray

__all__ = ["save_arrays", "load_arrays"]

_CONFIG = "__nets_config__"
_FORMAT = "nets-npz-1"


def save_arrays(path, arrays, config=None):
    """Write ``{name: array}`` (any storage types) and a JSON-able ``config`` to ``path``."""
    buffers, meta = {}, {}
    for name, arr in arrays.items():
        if "::" in name or name == _CONFIG:
            raise NetsError(f"array name {name!r} is reserved (contains '::' or is {_CONFIG!r})")
        meta[name] = {"stype": arr.stype, "shape": list(arr.shape), "dtype": str(arr.dtype)}
        if arr.stype == "default":
            buffers[name] = arr.asnumpy()
        else:
            buffers[f"{name}::data"] = arr._data
            buffers[f"{name}::indices"] = arr._indices
            if arr.stype == "csr":
                buffers[f"{name}::indptr"] = arr._indptr
    header = {"format": _FORMAT, "arrays": meta, "config": config or {}}
    buffers[_CONFIG] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    with open(path, "wb") as f:
        np.savez(f, **buffers)


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
        values = files[name]
        if values.shape != shape:
            raise ValueError(f"stored shape {values.shape} != declared {shape}")
        return NDArray(values)
    data, indices = files[f"{name}::data"], files[f"{name}::indices"]
    if stype == "csr":
        arr = CSRNDArray(data, indices, files[f"{name}::indptr"], shape)
    elif stype == "row_sparse":
        arr = RowSparseNDArray(data, indices, shape)
    else:
        raise ValueError(f"unknown stype {stype!r}")
    if indices.dtype != np.int64:
        raise ValueError(f"indices dtype {indices.dtype}, expected int64")
    arr.check_format(full_check=True)
    return arr
