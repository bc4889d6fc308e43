"""Where a key of a distributed store lives, and arrays cut into and joined from shards.

A key of ``bound`` elements or more (``NETS_KV_BIGARRAY_BOUND``, default 1,000,000:
MXNet's ``MXNET_KVSTORE_BIGARRAY_BOUND``) is split by contiguous row ranges over the
servers; a smaller key lives whole on one server that every process computes alike: an int
key on server ``key * 9973 % servers`` (MXNet's rule: consecutive keys, a model's
parameters, go to different servers), any other key by a hash of its text (``zlib.crc32``,
not Python's salted ``hash``). A shard is an array of the key's type holding rows ``[lo,
hi)`` with local row ids ``0 .. hi-lo-1``, so a server applies the same optimizer kernels
to it as a local store to a whole key.

A key initialized on the servers from a spec (``init(key, shape=..., init=...)``, or a
parameter ``Module.init_params`` drew by row blocks, ``nets.init.draw``) is made by
``generate``: each server makes its own rows by ``nets.random.fill_rows``, and the table is
the same whatever the number of servers (the local store makes the whole table the same
way).

Arrays cross process boundaries as ``pack``ed tuples of numpy arrays (Ray moves numpy
buffers without pickling their bytes); ``unpack`` makes them nets arrays again.
"""
import zlib

import numpy as np

from .. import random
from ..base import INDEX_DTYPE, env_number
from ..arrays import aligned
from ..arrays.dense import NDArray
from ..arrays.row_sparse import RowSparseNDArray, dense_to_rsp_parts

__all__ = ["Layout", "big_bound", "pack", "unpack", "cut", "join", "generate"]

DEFAULT_BOUND = 1_000_000


def big_bound():
    """``NETS_KV_BIGARRAY_BOUND``: the element count from which a key is sharded."""
    bound = env_number("NETS_KV_BIGARRAY_BOUND", int)
    return DEFAULT_BOUND if bound is None else bound


class Layout:
    """The shards of one key: ``parts`` is a list of ``(server, lo, hi)`` row ranges
    (one range for a small key, ``(server, 0, rows)``)."""

    def __init__(self, key, shape, num_servers, bound):
        self.shape = tuple(shape)
        rows = self.shape[0] if self.shape else 1
        size = int(np.prod(self.shape, dtype=np.int64))
        if size >= bound and num_servers > 1 and rows > 1:
            cuts = [rows * s // num_servers for s in range(num_servers + 1)]
            self.parts = [(s, cuts[s], cuts[s + 1]) for s in range(num_servers)
                          if cuts[s + 1] > cuts[s]]
        else:
            self.parts = [(_home(key, num_servers), 0, rows)]

    @property
    def whole(self):
        """Whether the key lives on one server, unsplit."""
        return len(self.parts) == 1

    def route(self, rows):
        """``[(server, lo, local ids)]``: sorted unique global ``rows`` split by shard."""
        out = []
        for server, lo, hi in self.parts:
            a, b = np.searchsorted(rows, [lo, hi])
            out.append((server, lo, rows[a:b] - lo))
        return out


def _home(key, num_servers):
    """The server of a key kept whole (see the module's docstring)."""
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        return int(key) * 9973 % num_servers
    return zlib.crc32(repr(key).encode()) % num_servers


def pack(array, copy=True):
    """A picklable description of a dense or row_sparse ``array`` (numpy buffers): copies,
    or with ``copy=False`` views of the array's buffers, for a caller that serializes the
    description before the array can change (a call's arguments, which Ray serializes
    when the call is made)."""
    data = array.values
    indices = array.index_array if array.stype == "row_sparse" else None
    if copy:
        data, indices = data.copy(), None if indices is None else indices.copy()
    if indices is not None:
        return ("row_sparse", data, indices, array.shape)
    return ("default", data)


def _own(a):
    """``a``, or an aligned copy when it is a read-only view of a received buffer."""
    return a if a.flags.writeable else aligned.copy(a)


def unpack(packed):
    """The nets array that ``pack`` described (writable buffers)."""
    if packed[0] == "row_sparse":
        _, data, indices, shape = packed
        return RowSparseNDArray(_own(data), _own(indices).astype(INDEX_DTYPE, copy=False),
                                shape)
    return NDArray(_own(packed[1]))


def cut(array, lo, hi):
    """Rows ``[lo, hi)`` of a dense or row_sparse ``array`` as an array of ``hi - lo``
    rows (local row ids), for a shard; the whole array when it is the only shard. Its
    values are views of ``array``'s (a row_sparse one's row ids are shifted copies)."""
    if lo == 0 and hi == (array.shape[0] if array.shape else 1):
        return array
    shape = (hi - lo,) + tuple(array.shape[1:])
    if array.stype == "row_sparse":
        indices = array.index_array
        a, b = np.searchsorted(indices, [lo, hi])
        return RowSparseNDArray(array.values[a:b], indices[a:b] - lo, shape, array.context)
    return NDArray(array.values[lo:hi], array.context)


def join(shards, shape, copy=False):
    """The array of ``shape`` made of ``[(lo, shard array)]`` (ascending ``lo``): dense
    when every shard is dense, else row_sparse with each shard's rows shifted by ``lo``.
    One shard of the whole array is returned as it is, or with ``copy`` copied (the
    result then never shares the shards' buffers)."""
    if len(shards) == 1 and shards[0][0] == 0 and tuple(shards[0][1].shape) == tuple(shape):
        return shards[0][1].copy() if copy else shards[0][1]
    if all(s.stype == "default" for _, s in shards):
        return NDArray(np.concatenate([s.values for _, s in shards]))
    parts = [s if s.stype == "row_sparse" else s.tostype("row_sparse") for _, s in shards]
    data = np.concatenate([p.values for p in parts])
    indices = np.concatenate([p.index_array + lo for (lo, _), p in zip(shards, parts)])
    return RowSparseNDArray(data, indices.astype(INDEX_DTYPE, copy=False), shape)



def generate(spec, lo, hi, stype="default"):
    """Rows ``[lo, hi)`` of the array that ``spec`` - ``(rule, shape, dtype, seed)``, as
    ``nets.init.draw`` returns it - describes, as a nets array of ``hi - lo`` rows and
    storage type ``stype`` ('default' or 'row_sparse'): equal, bit for bit, to those rows
    of the array ``draw`` filled."""
    rule, shape, dtype, seed = spec
    shape = tuple(shape)
    part = (hi - lo,) + shape[1:]
    values = aligned.empty(part, np.dtype(dtype))
    random.fill_rows(tuple(rule), values, shape, int(seed), lo)
    if stype == "default":
        return NDArray(values)
    # the rows not all zero, as ``nets.init.draw`` keeps them (every row: values adopted)
    if values.ndim and np.all(values.any(axis=tuple(range(1, values.ndim)))):
        return RowSparseNDArray(values, np.arange(len(values), dtype=INDEX_DTYPE), part)
    return RowSparseNDArray(*dense_to_rsp_parts(values), part)
