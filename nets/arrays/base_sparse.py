"""``BaseSparseNDArray``: what CSR and row-sparse arrays share.

A sparse array never densifies behind the user's back: ``asnumpy()`` is the
explicit way, ``np.asarray(sparse)`` raises, and operators without a sparse
implementation densify only through the registry's fallback, which warns.
"""
import numpy as np

from ..base import INDEX_DTYPE, RECORDER, NetsError, ShapeError, SparseFormatError, as_dtype
from .dense import NDArray, unpickled_state


def as_index(values, name):
    """``values`` (array-like or ``NDArray``) as an int64 numpy array.

    Whole-number floats are accepted (MXNet code often passes indices as float32
    ``NDArray``s); a fraction, NaN or a non-numeric dtype raises ``SparseFormatError``
    naming ``name`` and the bad value.
    """
    a = np.asarray(values.asnumpy() if isinstance(values, NDArray) else values)
    if a.dtype.kind == "f" and a.size:
        bad = np.flatnonzero(np.mod(a, 1).reshape(-1) != 0)
        if bad.size:
            raise SparseFormatError(f"{name} must hold integers, got {name}[{bad[0]}]="
                                    f"{a.reshape(-1)[bad[0]]}")
    elif a.dtype.kind not in "iu" and a.size:
        raise SparseFormatError(f"{name} must hold integers, got dtype {a.dtype}")
    return a.astype(INDEX_DTYPE, copy=False)


def read_only(a):
    """A read-only view of the numpy array ``a`` (``a`` itself stays writable).

    The index buffers of a sparse array are validated once, when the array is built, and
    trusted by every kernel after that (scipy.sparse's model); the views handed to users
    are read-only so that an edit cannot break that trust (an out-of-range index would
    make a kernel read or write outside its arrays). The view is built over a read-only
    buffer, so numpy also refuses ``view.flags.writeable = True``. Values stay writable: no
    value can make a kernel misbehave."""
    return np.asarray(memoryview(a).toreadonly())


class BaseSparseNDArray(NDArray):
    """Base class of ``CSRNDArray`` and ``RowSparseNDArray`` (not instantiated).

    Their class constructors are internal: they trust their buffers (nets' own results)
    and keep them, and the kernels trust them too (an invalid index is out-of-bounds memory
    access). Buffers of unknown origin go through the validating builders
    (``nets.nd.sparse.csr_matrix``, ``row_sparse_array``), or ``check_format()`` right
    after; the public index views are read-only, so the trust stays sound.

    Operators and kernels read the buffers themselves through ``values``, ``index_array``
    and (CSR) ``indptr_array``: the arrays' own numpy buffers, not copies nor read-only
    views (numba compiles a kernel again for a read-only argument), handed out under a
    contract: the index buffers are never written."""

    _parts = ()  # names of the numpy buffers, in constructor order after `data`

    @property
    def shape(self):
        return self._shape

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def nbytes(self):
        return self._data.nbytes + sum(getattr(self, p).nbytes for p in self._parts)

    @property
    def _num_aux(self):
        """The number of index (auxiliary) buffers beside the values: 2 for CSR (indices,
        indptr), 1 for row_sparse (indices). Read-only; MXNet's attribute of that name,
        which its programs and tests read."""
        return len(self._parts)

    @property
    def data(self):
        """The stored values as an ``NDArray`` (shares memory)."""
        return NDArray(self._data, self._ctx)

    @property
    def values(self):
        """The stored values as the array's own numpy buffer (the one behind ``data``; see
        ``NDArray.values``): shape ``(nnz,)`` for CSR, ``(len(indices),) + shape[1:]`` for
        row_sparse."""
        return self._data

    @property
    def index_array(self):
        """The int64 indices as the array's own numpy buffer: the column of each stored
        value (CSR), the stored rows (row_sparse), in the canonical order.

        For operators and kernels, which pass it on without a copy. **Never write it**: the
        indices were validated when the array was built and every kernel trusts them (an
        index out of range is a read or write outside the arrays); build a new array from
        edited indices instead. ``indices`` is the read-only view for everyone else."""
        return self._indices

    @property
    def indices(self):
        """The index array as an int64 ``NDArray``: a read-only view (MXNet hands out a
        copy), since kernels trust the indices validated at construction; writing it
        raises numpy's ``ValueError: assignment destination is read-only``. Build a new
        array from edited indices instead (e.g. ``csr_matrix((data, indices, indptr))``)."""
        return NDArray(read_only(self._indices), self._ctx)

    def asnumpy(self):
        out = np.zeros(self.shape, dtype=self.dtype)
        self._scatter_into(out)
        return out

    def __array__(self, dtype=None, copy=None):
        raise NetsError(f"a {self.stype} array is not converted to numpy implicitly "
                        f"(it may be huge); call .asnumpy() to densify on purpose")

    def __iter__(self):
        raise NetsError(f"iterating a {self.stype} array is not supported; slice it or "
                        f"call .asnumpy()")

    def __setitem__(self, key, value):
        if RECORDER.get() is not None:
            self._check_writable_in_record()
        if not (isinstance(key, slice) and key == slice(None)):
            raise NetsError(f"a {self.stype} array supports only whole assignment "
                            f"`x[:] = value`, got key {key!r}")
        if not isinstance(value, NDArray):
            value = np.asarray(value, dtype=self.dtype)
            if value.ndim == 0 and value == 0:  # `x[:] = 0` empties x without a dense pass
                self._set_parts(self.zeros(self._shape, self.dtype), copy=False)
                return
            try:
                value = NDArray(np.broadcast_to(value, self._shape), self._ctx)
            except ValueError as e:
                raise ShapeError(f"value of shape {value.shape} cannot be broadcast to "
                                 f"{self._shape}") from e
        self._check_same_shape(value, "value")
        if value.stype != self.stype:
            self._set_parts(value.tostype(self.stype), copy=False)  # a fresh conversion
        else:
            self._set_parts(value, copy=value is not self)

    def assign_result(self, result):
        if result.stype == self.stype:
            self._check_same_shape(result, "result")
            self._set_parts(result, copy=False)  # a fresh result: adopt its buffers
        else:
            self[:] = result

    def _set_parts(self, src, copy):
        """Take ``src``'s buffers (same stype and shape), keeping self's dtype."""
        self._bump_version()
        self._data = src._data.astype(self.dtype, copy=copy)
        for p in self._parts:
            setattr(self, p, getattr(src, p).copy() if copy else getattr(src, p))

    def _with_dtype(self, dtype):
        parts = [getattr(self, p).copy() for p in self._parts]
        return type(self)(self._data.astype(as_dtype(dtype)), *parts, shape=self._shape,
                          ctx=self._ctx)

    def _buffers(self):
        return [self._data] + [getattr(self, p) for p in self._parts]

    def __setstate__(self, state):
        """Install a pickled state only after the full format check every validating
        builder runs (kernels trust the indices; a damaged payload must not reach them)."""
        what = type(self).__name__
        buffers, shape, ctx = unpickled_state(state, 1 + len(self._parts), what)
        try:
            self._validate(*buffers, shape=shape, full_check=True)
        except NetsError as e:
            raise SparseFormatError(f"unpickling a {what}: {e}") from None
        self._data, *parts = buffers
        for name, value in zip(self._parts, parts):
            setattr(self, name, value)
        self._shape, self._ctx = shape, ctx

    def with_values(self, values):
        """An array of this one's storage type, shape and pattern (its index buffers,
        shared) holding ``values``, a numpy array shaped as ``values`` is (the stored values
        of an entrywise result)."""
        return type(self)(values, *[getattr(self, p) for p in self._parts], shape=self._shape,
                          ctx=self._ctx)

    def detach(self):
        return type(self)(self._data, *[getattr(self, p) for p in self._parts],
                          shape=self._shape, ctx=self._ctx)

    def check_format(self, full_check=True):
        """Validate the buffers (MXNet's API; the indices cannot be edited in place).

        Raises ``SparseFormatError``/``ShapeError`` naming the problem. The cheap
        check covers lengths and shapes; ``full_check`` also covers index range,
        order and uniqueness.
        """
        self._validate(self._data, *[getattr(self, p) for p in self._parts],
                       shape=self._shape, full_check=full_check)

    def __repr__(self):
        shape = "x".join(str(d) for d in self.shape)
        if self.size <= 200:
            body = np.array2string(self.asnumpy(), separator=" ")  # small: show the values
        else:
            body = f"nnz={self._data.size} stored values of {self.dtype}"
        return f"\n{body}\n<{type(self).__name__} {shape} @{self._ctx}>"
