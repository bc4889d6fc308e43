"""``KVStore``: the API every store implements (MXNet 1.9.1's ``mx.kv.KVStore``), the
backend registry and ``create``.

The base class turns the API's calling conventions - one key or a list of keys, one array
or a list of arrays per key (MXNet's values of several devices), int or str keys - into
lists of ``(key, [arrays])`` pairs checked once, and hands them to the backend's four
primitives: ``_init``, ``_push``, ``_pull`` and ``_start_pull_rows``. A backend (the local store,
the Ray one of ``dist.py``) implements those and the optimizer methods.
"""
import importlib
import numbers
import warnings
from collections.abc import Sequence

import numpy as np

from ..base import NetsError
from ..arrays.dense import NDArray
from .. import random

__all__ = ["KVStore", "KVStoreBase", "Pending", "create", "register", "DIST_NAMES"]

# MXNet's distributed store names: they need the Ray backend (``pip install nets[dist]``).
DIST_NAMES = ("dist_sync", "dist_async", "dist_sync_device", "dist_device_sync",
              "dist_async_device", "dist_device_async")

# The annotations of the API: a key, one key or a list of keys, and for each key one array
# or a list of arrays (MXNet's values of several devices); a list of keys takes a list with
# one such entry per key.
Key = int | str
Keys = Key | Sequence[Key]
Arrays = NDArray | Sequence[NDArray] | Sequence[NDArray | Sequence[NDArray]]

STATS = ("calls", "bytes_sent", "bytes_received")  # the counts of ``KVStore.stats``

DIST_BACKEND = "nets.kv.dist"  # the module that registers DIST_NAMES (imports Ray)

_REGISTRY = {}


def register(klass: type) -> type:
    """Register a ``KVStore`` subclass under each name in its ``names`` (a class decorator).

    ``create(name)`` then makes ``klass(name)``; a backend registering a name another
    class holds replaces it.

    Parameters
    ----------
    klass : type
        A subclass of ``KVStore`` whose ``names`` (a tuple of str) is not empty.

    Returns
    -------
    type
        ``klass`` itself.

    Raises
    ------
    NetsError
        ``klass`` is not a ``KVStore`` subclass, or lists no names.
    """
    if not (isinstance(klass, type) and issubclass(klass, KVStore)) or not klass.names:
        raise NetsError(f"register needs a KVStore subclass with store names, got {klass!r}")
    for name in klass.names:
        _REGISTRY[name] = klass
    return klass


def create(name: str = "local") -> "KVStore":
    """Make a new key-value store of type ``name`` (MXNet's ``mx.kv.create``).

    Parameters
    ----------
    name : str, default 'local'
        The store type.

        - ``'local'``: the values live in this process (``nets.kv.LocalKVStore``).
          ``'device'``, ``'local_update_cpu'``, ``'local_allreduce_cpu'`` and
          ``'local_allreduce_device'`` are the same store.
        - ``'dist_sync'``: a distributed store on Ray (the ``nets[dist]`` extra), made in a
          worker process started by ``python -m nets.kv.launch -n WORKERS -- COMMAND``,
          whose environment says where the cluster and the store's servers are. The r-th
          push of a key by every worker forms round r: the servers apply the round's sum
          once every worker has pushed, so a pull after a push sees it.
        - ``'dist_async'``: as ``'dist_sync'``, but each push is applied when it arrives
          (it needs an optimizer: ``set_optimizer``).
        - ``'dist_sync_device'``, ``'dist_device_sync'``, ``'dist_async_device'``,
          ``'dist_device_async'``: aliases of the two above (``DIST_NAMES``).

    Returns
    -------
    KVStore
        The new store (``LocalKVStore``, or ``nets.kv.dist.DistKVStore`` for the
        distributed types).

    Raises
    ------
    NetsError
        ``name`` is not a str or not a known type (the message lists the known ones); a
        distributed type when Ray is not installed (the message says which extra to
        install) or in a process the launcher did not start (the message names the
        missing environment variables).

    Examples
    --------
    >>> kv = nets.kv.create("local")
    >>> kv.init(3, nets.nd.zeros((2, 3)))
    >>> kv.push(3, [nets.nd.ones((2, 3)), nets.nd.ones((2, 3))])  # summed
    >>> out = nets.nd.zeros((2, 3))
    >>> kv.pull(3, out=out)
    >>> out.asnumpy()[0]
    array([2., 2., 2.], dtype=float32)
    """
    if not isinstance(name, str):
        raise NetsError(f"kv.create: name must be a string, got {type(name).__name__}")
    if name in DIST_NAMES and name not in _REGISTRY:
        _load_backend(name)
    klass = _REGISTRY.get(name)
    if klass is None:
        raise NetsError(f"kv.create: unknown store type {name!r}; valid types: "
                        f"{sorted(set(_REGISTRY) | set(DIST_NAMES))}")
    return klass(name)


def _load_backend(name):
    """Import the Ray backend, which registers the distributed names. It is found by
    module name on first use (as a plugin entry point would be), so that neither this
    module nor ``import nets`` imports Ray."""
    try:
        importlib.import_module(DIST_BACKEND)
    except ImportError as e:
        raise NetsError(f"kv.create({name!r}): distributed stores need Ray: pip install "
                        f"'nets[dist]' ({e})") from None


def _is_key(key):
    return isinstance(key, str) or (isinstance(key, numbers.Integral)
                                    and not isinstance(key, bool))


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


class Pending:
    """Work in flight (a pull, a push whose answer is awaited): ``wait()`` completes it
    once and returns its result; later calls return the same result at once."""

    def __init__(self, finish=None):
        self._finish, self._result = finish, None

    @classmethod
    def ready(cls, result):
        """Work done already, whose ``wait()`` returns ``result``."""
        done = cls()
        done._result = result
        return done

    @property
    def done(self):
        """Whether ``wait()`` has nothing left to do."""
        return self._finish is None

    def wait(self):
        """Complete the work (work that ran when it started has nothing left to do) and
        return its result (None for a pull)."""
        finish, self._finish = self._finish, None
        if finish is not None:
            self._result = finish()
        return self._result


class KVStore:
    """A key-value store of arrays (MXNet's ``KVStore``); make one with ``nets.kv.create``.

    Keys are ints or strs (one kind per store: the first key fixes it). ``value``/``out``
    arguments take, for one key, an array or a list of arrays (summed by ``push``, each
    filled by ``pull``) and, for a list of keys, a list with one such entry per key. A
    wrong argument raises ``NetsError`` naming the method, the argument and the key.
    """

    names = ()  # the store types a subclass serves (see ``register``)
    OPTIMIZER = "optimizer"

    def __init__(self, name):
        self._type = name
        self._key_kind = None  # int or str, fixed by the first key the store sees
        self._warned = set()  # keys whose ignored row_sparse pull was reported
        self._stats = dict.fromkeys(STATS, 0)

    # -- description ---------------------------------------------------------------------
    @property
    def type(self) -> str:
        """The store type given to ``create``."""
        return self._type

    @property
    def rank(self) -> int:
        """This worker's rank among ``num_workers`` (0 for a local store)."""
        return 0

    @property
    def num_workers(self) -> int:
        """How many workers share the store (1 for a local store)."""
        return 1

    def barrier(self) -> None:
        """Wait until every worker reaches this call (immediate for a local store).

        A distributed store first waits for this worker's pushes, and raises ``NetsError``
        naming the workers that did not arrive within ``NETS_KV_TIMEOUT`` seconds."""

    _barrier = barrier

    def stats(self) -> dict[str, int]:
        """What this worker's store calls moved since it was made or ``reset_stats``
        (a nets addition): ``calls``, the calls to the servers (one per server a
        ``push``, ``pull``, ``pushpull`` or row pull of several keys reaches; a
        ``Trainer.step`` is one per server), and ``bytes_sent``/``bytes_received``, the
        bytes of the arrays those calls carried (values, and row ids of row_sparse ones
        and of row requests; Ray's framing of a message, a few hundred bytes, is not
        counted). A local store moves nothing: all 0. Barriers, ``set_optimizer`` and
        the states' save and load are not counted.

        Returns
        -------
        dict
            ``{'calls': int, 'bytes_sent': int, 'bytes_received': int}`` (a copy).

        Examples
        --------
        >>> kv.reset_stats()
        >>> trainer.step(batch_size)
        >>> kv.stats()["bytes_received"]  # this worker's answer of one step
        """
        return dict(self._stats)

    def reset_stats(self) -> None:
        """Set every count of ``stats`` to 0."""
        self._stats = dict.fromkeys(STATS, 0)

    def is_capable(self, capability: str) -> bool:
        """Whether the store supports ``capability``.

        Parameters
        ----------
        capability : str
            ``KVStore.OPTIMIZER`` (``'optimizer'``), the only capability: every store can
            run an optimizer.

        Returns
        -------
        bool
            True.

        Raises
        ------
        NetsError
            ``capability`` is not a known capability.
        """
        if capability != self.OPTIMIZER:
            raise NetsError(f"is_capable: unknown capability {capability!r}; known: "
                            f"{[self.OPTIMIZER]}")
        return True

    def __repr__(self):
        return f"<{type(self).__name__} type={self._type!r}>"

    # -- argument conventions --------------------------------------------------------------
    def _check_key(self, key, what):
        if not _is_key(key):
            raise NetsError(f"{what}: keys are ints or strs, got {key!r} "
                            f"({type(key).__name__})")
        kind = str if isinstance(key, str) else int
        if self._key_kind is None:
            self._key_kind = kind
        elif kind is not self._key_kind:
            raise NetsError(f"{what}: key {key!r} is {'a str' if kind is str else 'an int'}, but "
                            f"this store's keys are {self._key_kind.__name__}s (int and str "
                            f"keys are never mixed)")
        return key if kind is str else int(key)

    def _pairs(self, key, value, what, arg="value"):
        """``[(key, [arrays])]`` from one key and its array(s), or lists of both."""
        if isinstance(key, (list, tuple)):
            if not isinstance(value, (list, tuple)) or len(value) != len(key):
                got = len(value) if isinstance(value, (list, tuple)) else type(value).__name__
                raise NetsError(f"{what}: {len(key)} keys need a list of {len(key)} {arg}s "
                                f"(one per key), got {got}")
            keys, values = list(key), list(value)
        else:
            keys, values = [key], [value]
        out = []
        for k, v in zip(keys, values):
            k = self._check_key(k, what)
            arrays = _as_list(v)
            if not arrays:
                raise NetsError(f"{what}: key {k!r} has an empty list of {arg}s")
            for a in arrays:
                if not isinstance(a, NDArray):
                    raise NetsError(f"{what}: {arg} for key {k!r} must be a nets NDArray, got "
                                    f"{type(a).__name__}")
            out.append((k, arrays))
        return out

    @staticmethod
    def _check_shape(key, array, value, what, arg):
        if tuple(array.shape) != tuple(value.shape):
            raise NetsError(f"{what}: {arg} for key {key!r} has shape {tuple(array.shape)}, "
                            f"the key's value {tuple(value.shape)}")

    def _held(self, key):
        """What the store keeps of ``key`` (with its ``shape``), None for an unknown key."""
        raise NotImplementedError

    def _known(self, key, what):
        """``_held(key)``, or a NetsError when ``key`` was not initialized."""
        held = self._held(key)
        if held is None:
            raise NetsError(f"{what}: key {key!r} has not been initialized; call "
                            f"init({key!r}, value) first")
        return held

    def _check_new(self, key):
        if self._held(key) is not None:
            raise NetsError(f"init: key {key!r} is already initialized")

    def _check_init(self, pairs):
        """Refuse to init a key twice, or with a value neither dense nor row_sparse."""
        for key, array in pairs:
            self._check_new(key)
            if array.stype not in ("default", "row_sparse"):
                raise NetsError(f"init: value for key {key!r} is {array.stype}; a store holds "
                                f"dense or row_sparse values")

    def _check_push(self, pairs):
        """Refuse to push to an unknown key, or arrays of another shape or a sparse type
        other than row_sparse."""
        for key, arrays in pairs:
            held = self._known(key, "push")
            for a in arrays:
                self._check_shape(key, a, held, "push", "value")
                if a.stype not in ("default", "row_sparse"):
                    raise NetsError(f"push: value for key {key!r} is {a.stype}; push dense or "
                                    f"row_sparse arrays")

    def _check_pull(self, pairs, what):
        """Refuse to pull an unknown key, or into an out of another shape."""
        for key, outs in pairs:
            held = self._known(key, what)
            for o in outs:
                self._check_shape(key, o, held, what, "out")

    def _ignored(self, key, out, ignore_sparse):
        """Whether ``pull`` leaves ``out`` unchanged: a row_sparse ``out`` with
        ``ignore_sparse`` (reported once per key)."""
        if out.stype != "row_sparse" or not ignore_sparse:
            return False
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(f"pull: key {key!r}: a row_sparse out is left unchanged "
                          f"(ignore_sparse=True); use row_sparse_pull, or Module.prepare "
                          f"with sparse_row_id_fn", stacklevel=4)
        return True

    # -- the API ---------------------------------------------------------------------------
    def init(self, key: Keys, value: Arrays | None = None,
             shape: tuple[int, ...] | list[tuple[int, ...]] | None = None,
             init: object | None = None, seed: int = 0, dtype: str = "float32") -> None:
        """Give each key its first value: a copy of ``value``, or a table the store makes.

        Each key is initialized once. A distributed store keeps rank 0's values (the other
        workers' are not sent) and every worker waits for the others before returning.

        Parameters
        ----------
        key : int or str, or a list of them
            The key(s) to create.
        value : NDArray, or a list with one NDArray per key, optional
            The initial value, dense or row_sparse, copied into the store. Give either
            ``value``, or ``shape`` and ``init``.
        shape : tuple of int, or a list of tuples (one per key), optional
            Without ``value``: the shape (positive ints) of a dense table the store makes.
        init : nets.init.Initializer, optional
            Without ``value``: the initializer instance that fills the table, given the
            key as the parameter name (a key ending in ``bias`` gets zeros). Its rule for
            the table (``Initializer.rule``) must be data (a built-in initializer with
            plain int or float arguments; ``Xavier`` scales by the whole table's fans):
            the servers draw from that rule. Initializer names (str) are refused.
        seed : int, default 0
            Without ``value``: the seed (>= 0) of the table's draws. The table is the same
            on every store whatever its number of servers: its rows are drawn in blocks of
            ``nets.random.BLOCK_ROWS``, block ``b`` from a generator seeded with
            ``(seed, b)`` (``nets.kv.shard.generate``); a distributed store's servers each
            make their own rows, nothing is sent from a worker.
        dtype : str or numpy dtype, default 'float32'
            Without ``value``: float16, float32 or float64.

        Raises
        ------
        NetsError
            A key already initialized or listed twice, a key that is neither int nor str
            (or of the other kind than the store's keys), a value that is not an NDArray
            or is CSR, both ``value`` and ``shape``/``init`` or neither, and a bad
            ``shape``, ``seed``, ``init`` or ``dtype`` (the message names the argument and
            its value).
        """
        if value is not None:
            if shape is not None or init is not None:
                raise NetsError("init: give either value, or shape and init, not both")
            pairs = self._pairs(key, value, "init")
            for k, arrays in pairs:
                if len(arrays) != 1:
                    raise NetsError(f"init: key {k!r} takes one value, got {len(arrays)}")
            self._init([(k, arrays[0]) for k, arrays in pairs])
            return
        if shape is None or init is None:
            raise NetsError("init: give value, or shape and init (a table made by the store)")
        keys = list(key) if isinstance(key, (list, tuple)) else [key]
        shapes = [shape] if not isinstance(key, (list, tuple)) \
            else list(shape) if isinstance(shape, list) else None
        if shapes is None or len(shapes) != len(keys):
            raise NetsError(f"init: {len(keys)} keys need a list of {len(keys)} shapes, got "
                            f"{shape!r}")
        for s in shapes:
            if not (isinstance(s, tuple) and s and all(
                    isinstance(d, numbers.Integral) and d > 0 for d in s)):
                raise NetsError(f"init: shape={s!r}; expected a tuple of positive ints")
        if not (isinstance(seed, numbers.Integral) and not isinstance(seed, bool)
                and seed >= 0):
            raise NetsError(f"init: seed={seed!r}; expected an int >= 0")
        rules = [None if isinstance(init, str) or not callable(getattr(init, "rule", None))
                 else init.rule(str(k), s) for k, s in zip(keys, shapes)]
        if not all(random.is_data(r) for r in rules):
            raise NetsError(f"init: init={init!r}; expected an initializer instance such as "
                            f"nets.init.Uniform(0.07) whose rule is data (built in, with int "
                            f"or float arguments): the store draws from it")
        dtype = np.dtype(dtype)
        if dtype not in (np.float16, np.float32, np.float64):
            raise NetsError(f"init: dtype={dtype}; expected float16, float32 or float64")
        keys = [self._check_key(k, "init") for k in keys]
        if len(set(keys)) != len(keys):
            raise NetsError(f"init: keys listed twice: {keys}")
        for k in keys:
            self._check_new(k)
        self._init_generated([(k, (r, tuple(int(d) for d in s), dtype.str, int(seed)),
                               "default") for k, s, r in zip(keys, shapes, rules)])

    def broadcast(self, key: Keys, value: Arrays, out: Arrays, priority: int = 0) -> None:
        """``init(key, value)`` then ``pull(key, out=out)``: every worker gets rank 0's value.

        Parameters
        ----------
        key : int or str, or a list of them
            The key(s) to create.
        value : NDArray, or a list with one NDArray per key
            The initial value (a distributed store keeps rank 0's).
        out : NDArray or list of NDArray, or a list with one such entry per key
            Filled with the stored value, as ``pull`` fills it.
        priority : int, default 0
            Accepted for MXNet's signature; unused.
        """
        self.init(key, value)
        self.pull(key, out=out, priority=priority)

    def push(self, key: Keys, value: Arrays, priority: int = 0) -> None:
        """Push values to keys: the sum replaces the stored value, or updates it through
        the optimizer once ``set_optimizer`` was called.

        The arrays given for one key are summed (row_sparse ones over the union of their
        rows). Without an optimizer the sum replaces the stored value; with one, it is the
        gradient of an update of the stored value (lazy, row by row, for a row_sparse
        gradient), the key being the optimizer's parameter index. Under ``dist_sync`` the
        r-th push of every worker is summed into one update; under ``dist_async`` each
        push is applied on arrival. A distributed store's push returns at once: a later
        ``pull`` of the key, ``barrier`` or save of the states waits for it (and raises
        its errors).

        Parameters
        ----------
        key : int or str, or a list of them
            Keys already initialized (``init``).
        value : NDArray or list of NDArray, or a list with one such entry per key
            Dense or row_sparse arrays of the key's shape. With 2-bit compression
            (``set_gradient_compression``) dense arrays are compressed first.
        priority : int, default 0
            Accepted for MXNet's signature; unused.

        Raises
        ------
        NetsError
            An unknown key, an array of another shape or a CSR array, a list of values of
            another length than the list of keys.
        """
        self._push(self._pairs(key, value, "push"))

    def pull(self, key: Keys, out: Arrays | None = None, priority: int = 0,
             ignore_sparse: bool = True) -> None:
        """Copy the stored value of each key into each of its ``out`` arrays.

        A distributed store's pull sees every push this worker made before it (under
        ``dist_sync``: their rounds, with every worker's pushes).

        Parameters
        ----------
        key : int or str, or a list of them
            Keys already initialized.
        out : NDArray or list of NDArray, or a list with one such entry per key
            Arrays of the key's shape, each filled with the whole value and keeping its own
            storage type. Required.
        priority : int, default 0
            Accepted for MXNet's signature; unused.
        ignore_sparse : bool, default True
            Leave a row_sparse ``out`` unchanged (warning once per key), as MXNet does:
            pull its rows with ``row_sparse_pull``. False fills it with every row.

        Raises
        ------
        NetsError
            ``out`` missing, an unknown key, an ``out`` of another shape.
        """
        if out is None:
            raise NetsError("pull: out is required")
        self._pull(self._pairs(key, out, "pull", "out"), ignore_sparse)

    def pushpull(self, key: Keys, value: Arrays, out: Arrays | None = None,
                 priority: int = 0, ignore_sparse: bool = True) -> None:
        """``push(key, value)`` then ``pull(key, out, ignore_sparse=ignore_sparse)``, with
        the same results.

        A distributed store does both in one call per server, answered once the push is
        applied (under ``dist_sync``: the round merged and applied), and waits for it. All
        arguments are checked before anything is sent.

        Parameters
        ----------
        key : int or str, or a list of them
            Keys already initialized.
        value : NDArray or list of NDArray, or a list with one such entry per key
            What to push, as for ``push``.
        out : NDArray or list of NDArray, or a list with one such entry per key, optional
            Where to pull, as for ``pull``; None pulls into ``value``.
        priority : int, default 0
            Accepted for MXNet's signature; unused.
        ignore_sparse : bool, default True
            As for ``pull`` (a nets addition: MXNet's ``pushpull`` has no such argument).

        Raises
        ------
        NetsError
            What ``push`` or ``pull`` would raise for these arguments.
        """
        pairs = self._pairs(key, value, "pushpull")
        outs = self._pairs(key, value if out is None else out, "pushpull", "out")
        self._check_push(pairs)
        self._check_pull(outs, "pushpull")
        self._pushpull(pairs, outs, ignore_sparse)

    def row_sparse_pull(self, key: Keys, out: Arrays | None = None, priority: int = 0,
                        row_ids: NDArray | Sequence[NDArray | Sequence[NDArray]] | None = None
                        ) -> None:
        """Pull only some rows of each key into row_sparse arrays.

        Each ``out`` becomes row_sparse holding the sorted unique rows of its ``row_ids``
        (rows that a row_sparse stored value does not hold stay absent). A distributed
        store asks each server only for the rows it holds, and the pull sees this worker's
        earlier pushes.

        Parameters
        ----------
        key : int or str, or a list of them
            Keys already initialized.
        out : RowSparseNDArray or list of them, or a list with one such entry per key
            Arrays of the key's shape. Required.
        priority : int, default 0
            Accepted for MXNet's signature; unused.
        row_ids : NDArray, or a list (one entry per key) of an NDArray or a list of them
            Dense arrays of row ids, integer or whole-number floats, of any shape, in any
            order, with repeats. Give one per ``out`` array, or one for all the ``out``
            arrays of a key. Required.

        Raises
        ------
        NetsError
            ``out`` or ``row_ids`` missing, an ``out`` that is not row_sparse, ``row_ids``
            that are not a dense NDArray, ids out of range or not whole numbers, lists of
            mismatched lengths, an unknown key.
        """
        self._start_pull_rows(self._rows_work(key, out, row_ids)).wait()

    def prefetch_rows(self, key: Keys, out: Arrays,
                      row_ids: NDArray | Sequence[NDArray | Sequence[NDArray]]) -> Pending:
        """Start ``row_sparse_pull(key, out=out, row_ids=row_ids)`` without waiting for it
        (a nets addition).

        A pending pull is ordered after this worker's pushes made before it (it sees their
        updates, as ``row_sparse_pull`` at this point would) and before those made after;
        one never waited for writes nothing and holds nothing once dropped.
        ``Module.prepare`` prefetches the next batch's rows with it.

        Parameters
        ----------
        key : int or str, or a list of them
            As for ``row_sparse_pull``.
        out : RowSparseNDArray or list of them, or a list with one such entry per key
            As for ``row_sparse_pull``; filled by ``wait()``.
        row_ids : NDArray, or a list (one entry per key) of an NDArray or a list of them
            As for ``row_sparse_pull``.

        Returns
        -------
        Pending
            Its ``wait()`` fills the ``out`` arrays, raising what the pull raised (naming
            the keys).

        Raises
        ------
        NetsError
            What ``row_sparse_pull`` raises for these arguments (checked at once).
        """
        return self._start_pull_rows(self._rows_work(key, out, row_ids))


    def _rows_work(self, key, out, row_ids):
        """``[(key, out, row_ids)]`` of ``row_sparse_pull``'s arguments, checked."""
        if out is None or row_ids is None:
            raise NetsError("row_sparse_pull: out and row_ids are required")
        pairs = self._pairs(key, out, "row_sparse_pull", "out")
        ids = row_ids if isinstance(key, (list, tuple)) else [row_ids]
        if not isinstance(ids, (list, tuple)) or len(ids) != len(pairs):
            raise NetsError(f"row_sparse_pull: {len(pairs)} keys need a list of {len(pairs)} "
                            f"row_ids entries")
        work = []
        for (k, outs), k_ids in zip(pairs, ids):
            k_ids = _as_list(k_ids)
            if len(k_ids) == 1:
                k_ids = k_ids * len(outs)
            if len(k_ids) != len(outs):
                raise NetsError(f"row_sparse_pull: key {k!r} has {len(outs)} out arrays but "
                                f"{len(k_ids)} row_ids arrays")
            for o, r in zip(outs, k_ids):
                if o.stype != "row_sparse":
                    raise NetsError(f"row_sparse_pull: out for key {k!r} must be row_sparse, "
                                    f"got {o.stype} (use pull for dense arrays)")
                if not isinstance(r, NDArray) or r.stype != "default":
                    raise NetsError(f"row_sparse_pull: row_ids for key {k!r} must be a dense "
                                    f"NDArray, got {getattr(r, 'stype', type(r).__name__)}")
                work.append((k, o, r))
        return work

    # -- what a backend implements -----------------------------------------------------------
    def _init(self, pairs):
        """Store a copy of each ``(key, array)``."""
        raise NotImplementedError

    def _init_generated(self, items):
        """Store, for each ``(key, spec, stype)``, the array of storage type ``stype`` that
        ``nets.kv.shard.generate`` makes from ``spec``."""
        raise NotImplementedError

    def _init_drawn(self, keys, values, specs):
        """``init(keys, values)`` for values that ``nets.init.draw`` filled: ``specs`` has,
        per key, the spec ``draw`` returned (None: not drawn by row blocks). A store that
        copies values ignores the specs; a distributed one sends a spec instead of its
        values (``DistKVStore``)."""
        self.init(keys, values)

    def _push(self, pairs):
        """Reduce and apply each ``(key, [arrays])``."""
        raise NotImplementedError

    def _push_changed(self, pairs, asks=None):
        """``_push(pairs)`` that also returns, for each key in order, what its push changed
        in the held value: ``(rows, array)``, the sorted row ids an optimizer's lazy update
        wrote and a row_sparse array of those rows after the update, or ``(None, array)``,
        the whole value after the update, when any row may have changed. It waits for the
        update (under ``dist_sync``: the round's, after every worker pushed), so ``rows``
        are every row the store changed; a worker that applied each result to a copy that
        equalled the store keeps it equal (``nets.kv.training``).

        ``asks`` (None, or per pair None or sorted unique int64 row ids) are the rows the
        worker holds of each key: a backend may answer only those (``rows`` then the
        changed rows among them, ``(None, array)`` then the value's rows among them,
        row_sparse), so that a worker receives what it asked for and not the rows other
        workers changed elsewhere (the distributed store does; the local store, whose one
        worker changed every row, answers all)."""
        raise NotImplementedError

    def _holds_init(self, key):
        """Whether the value this worker gave ``init`` for ``key`` is, bit for bit, the one
        the store kept (so a copy of it needs no pull). A local store copies it in."""
        return True

    def _start_push_changed(self, pairs, asks=None, targets=None):
        """``_push_changed(pairs, asks)`` started: a ``Pending`` whose ``wait()`` returns its
        result. A backend may hold the push until its next exchange with the servers and
        send it with that one (the distributed store sends it with the next row pull, so
        that a training step makes one call per server); its order among this worker's
        calls is kept.

        ``targets`` (None, or per pair the array the caller applies the answer to, or None)
        let such a backend skip an answer that a row pull sent with the push replaces: when
        that pull fills a pair's target (a row_sparse weight), the pair's result is None
        and ``wait()`` has filled the target with the pulled rows (which are after this
        push), whether or not the pull is waited for. This one runs the push now."""
        return Pending.ready(self._push_changed(pairs, asks))

    def _pull(self, pairs, ignore_sparse):
        """Fill each array of each ``(key, [outs])`` with the key's value."""
        raise NotImplementedError

    def _pushpull(self, pairs, outs, ignore_sparse):
        """``_push(pairs)`` then ``_pull(outs, ignore_sparse)`` (both checked already); a
        backend that can do both in one exchange overrides it."""
        self._push(pairs)
        self._pull(outs, ignore_sparse)

    def _start_pull_rows(self, triples):
        """Start filling each row_sparse ``out`` of ``(key, out, row_ids)`` with those rows;
        returns a ``Pending`` whose ``wait()`` completes it (see ``prefetch_rows``)."""
        raise NotImplementedError

    def set_optimizer(self, optimizer: object) -> None:
        """Make every later ``push`` update the stored value with ``optimizer``.

        The key is the optimizer's parameter index (``Trainer`` keys its parameters
        0, 1, ...). A row_sparse gradient is applied lazily: only its rows of the value and
        of the optimizer's state are read or written. A distributed store sends a copy of
        the optimizer to its servers (rank 0's); the learning rate and ``rescale_grad``
        travel with each push, so later changes on the worker take effect.

        Parameters
        ----------
        optimizer : nets.optim.Optimizer
            An optimizer instance, e.g. ``nets.optim.create('adam', learning_rate=0.01)``.

        Raises
        ------
        NetsError
            ``optimizer`` is not a ``nets.optim.Optimizer``.
        """
        raise NotImplementedError

    def set_gradient_compression(self, compression_params: dict) -> None:
        """Compress the dense arrays of every later ``push`` to 2 bits per element.

        Each pushed array is added to its residual (per key and per array of the push);
        elements ``>= threshold`` are sent as ``threshold``, ``<= -threshold`` as
        ``-threshold``, the others as 0, and the residual keeps the difference. Pushing a
        row_sparse array then raises ``NetsError``.

        Parameters
        ----------
        compression_params : dict
            ``{'type': '2bit', 'threshold': t}`` with ``t`` a finite number > 0 (default
            0.5 when absent), or ``{'type': 'none'}``: no compression.

        Raises
        ------
        NetsError
            Not a dict with a ``'type'``, another type, a threshold that is not a finite
            positive number, an entry other than ``'type'`` and ``'threshold'``.
        """
        raise NotImplementedError

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        """Write the optimizer's state of every key to ``fname``.

        The file is the one ``Trainer.save_states`` writes (nets' ``.npz``, read without
        pickle; a key is named by the optimizer's ``param_dict`` where it names it). A
        distributed store gathers its servers' states into one such file, which a local
        store or a single-process ``Trainer`` can load, and the reverse.

        Parameters
        ----------
        fname : str
            The file to write.
        dump_optimizer : bool, default False
            Accepted for MXNet's signature; the optimizer itself is never stored.

        Raises
        ------
        NetsError
            No optimizer set (``set_optimizer``).
        """
        raise NotImplementedError

    def load_optimizer_states(self, fname: str) -> None:
        """Read the optimizer's state of every key from ``fname``.

        Parameters
        ----------
        fname : str
            A file written by ``save_optimizer_states`` (of any store) or
            ``Trainer.save_states``.

        Raises
        ------
        NetsError
            No optimizer set; a missing, truncated or mismatched file (the message names
            what is wrong).
        """
        raise NotImplementedError


KVStoreBase = KVStore  # MXNet 1.9's name of the base class
