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

import numpy as np

from ..base import NetsError
from ..arrays.dense import NDArray
from .shard import check_initializer

__all__ = ["KVStore", "KVStoreBase", "Pending", "create", "register", "DIST_NAMES"]

# MXNet's distributed store names: they need the Ray backend (``pip install nets[dist]``).
DIST_NAMES = ("dist_sync", "dist_async", "dist_sync_device", "dist_device_sync",
              "dist_async_device", "dist_device_async")

DIST_BACKEND = "nets.kv.dist"  # the module that registers DIST_NAMES (imports Ray)

_REGISTRY = {}


def register(klass):
    """Register a ``KVStore`` subclass under each name in its ``names`` (a class decorator).

    ``create(name)`` then makes ``klass(name)``; a backend registering a name another
    class holds replaces it."""
    if not (isinstance(klass, type) and issubclass(klass, KVStore)) or not klass.names:
        raise NetsError(f"register needs a KVStore subclass with store names, got {klass!r}")
    for name in klass.names:
        _REGISTRY[name] = klass
    return klass


def create(name="local"):
    """A new store of type ``name``: ``'local'`` (``'device'``, ...) or a distributed one
    (``'dist_sync'``, ``'dist_async'``, ...: the Ray backend of the ``nets[dist]`` extra)."""
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
    """A pull in flight: ``wait()`` completes it (once; later calls return at once)."""

    def __init__(self, finish=None):
        self._finish = finish

    def wait(self):
        """Complete the pull (a pull that ran when it started has nothing left to do)."""
        finish, self._finish = self._finish, None
        if finish is not None:
            finish()


class KVStore:
    """A key-value store of arrays (MXNet's ``KVStore``); make one with ``nets.kv.create``.

    Keys are ints or strs (one kind per store). ``value``/``out`` arguments take, for one
    key, an array or a list of arrays (summed by ``push``, each filled by ``pull``) and, for
    a list of keys, a list with one such entry per key.
    """

    names = ()  # the store types a subclass serves (see ``register``)
    OPTIMIZER = "optimizer"

    def __init__(self, name):
        self._type = name
        self._key_kind = None  # int or str, fixed by the first key the store sees
        self._warned = set()  # keys whose ignored row_sparse pull was reported

    # -- description ---------------------------------------------------------------------
    @property
    def type(self):
        """The store type given to ``create``."""
        return self._type

    @property
    def rank(self):
        """This worker's rank among ``num_workers`` (0 for a local store)."""
        return 0

    @property
    def num_workers(self):
        """How many workers share the store (1 for a local store)."""
        return 1

    def barrier(self):
        """Wait until every worker reaches this call (immediate for a local store)."""

    _barrier = barrier

    def is_capable(self, capability):
        """Whether the store supports ``capability`` (``KVStore.OPTIMIZER``)."""
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
    def init(self, key, value=None, shape=None, init=None, seed=0, dtype="float32"):
        """Store a copy of ``value`` under ``key`` (once per key); or, without ``value``,
        a dense table of ``shape`` (a tuple of positive ints; for a list of keys, a list of
        one per key) made by the initializer ``init`` (a ``nets.init`` initializer instance,
        given the key as the parameter name) from ``seed`` (an int >= 0) in ``dtype``.

        A generated table is the same on every store: its rows are drawn in blocks of
        ``nets.kv.shard.INIT_BLOCK_ROWS``, block ``b`` from a generator seeded with
        ``(seed, b)`` (``nets.kv.shard.generate``); a distributed store's servers each
        make their own rows, nothing is sent from a worker. Initializers whose rule
        reads the array's shape (``shape_dependent``: ``Xavier``) are refused."""
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
        initializer = check_initializer(init, "init")
        dtype = np.dtype(dtype)
        if dtype not in (np.float16, np.float32, np.float64):
            raise NetsError(f"init: dtype={dtype}; expected float16, float32 or float64")
        keys = [self._check_key(k, "init") for k in keys]
        if len(set(keys)) != len(keys):
            raise NetsError(f"init: keys listed twice: {keys}")
        for k in keys:
            self._check_new(k)
        self._init_generated([(k, tuple(int(d) for d in s), dtype, initializer, int(seed))
                              for k, s in zip(keys, shapes)])

    def broadcast(self, key, value, out, priority=0):
        """``init(key, value)`` then ``pull(key, out)``."""
        self.init(key, value)
        self.pull(key, out=out, priority=priority)

    def push(self, key, value, priority=0):
        """Push ``value`` to ``key``: the arrays given for one key are summed (row_sparse
        ones over the union of their rows) and the sum either replaces the held value or,
        with an optimizer or updater set, updates it. ``priority`` is accepted and unused
        (a local store runs each call at once)."""
        self._push(self._pairs(key, value, "push"))

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Copy the value of ``key`` into each array of ``out`` (keeping their storage type).
        With ``ignore_sparse`` a row_sparse ``out`` is left unchanged (with a warning, once
        per key): pull rows with ``row_sparse_pull``."""
        if out is None:
            raise NetsError("pull: out is required")
        self._pull(self._pairs(key, out, "pull", "out"), ignore_sparse)

    def pushpull(self, key, value, out=None, priority=0, ignore_sparse=True):
        """``push(key, value)`` then ``pull(key, out, ignore_sparse=ignore_sparse)``, with
        the same results; ``out=None`` pulls into ``value``. A distributed store does both
        in one call per server, answered once the push is applied (under ``dist_sync``:
        the round merged and applied), and waits for it. All arguments are checked before
        anything is sent."""
        pairs = self._pairs(key, value, "pushpull")
        outs = self._pairs(key, value if out is None else out, "pushpull", "out")
        self._check_push(pairs)
        self._check_pull(outs, "pushpull")
        self._pushpull(pairs, outs, ignore_sparse)

    def row_sparse_pull(self, key, out=None, priority=0, row_ids=None):
        """Pull the rows ``row_ids`` of ``key`` into each row_sparse array of ``out``.

        ``row_ids`` are integer (or whole-number) arrays of any shape; order and duplicates
        do not matter: each ``out`` becomes row_sparse holding the sorted unique rows (those
        of a row_sparse value that it does not hold stay absent). Give one ``row_ids``
        array per ``out`` array, or one for all the arrays of a key."""
        self._start_pull_rows(self._rows_work(key, out, row_ids)).wait()

    def _prefetch_rows(self, key, out, row_ids):
        """Start ``row_sparse_pull(key, out=out, row_ids=row_ids)`` without waiting for it;
        returns its ``Pending``: ``wait()`` fills the outs (raising what the pull raised,
        naming the keys). A pending pull is ordered after this worker's pushes made
        before it (it sees their updates, as ``row_sparse_pull`` at this point would) and
        before those made after; one never waited for writes nothing and holds nothing
        once dropped. ``Module.prepare`` prefetches the next batch's rows with it."""
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

    def _init_generated(self, specs):
        """Store, for each ``(key, shape, dtype, initializer, seed)``, the table
        ``nets.kv.shard.generate`` makes."""
        raise NotImplementedError

    def _push(self, pairs):
        """Reduce and apply each ``(key, [arrays])``."""
        raise NotImplementedError

    def _push_changed(self, pairs):
        """``_push(pairs)`` that also returns, for each key in order, what its push changed
        in the held value: ``(rows, array)``, the sorted row ids an optimizer's lazy update
        wrote and a row_sparse array of those rows after the update, or ``(None, array)``,
        the whole value after the update, when any row may have changed. It waits for the
        update (under ``dist_sync``: the round's, after every worker pushed), so ``rows``
        are every row the store changed; a worker that applied each result to a copy that
        equalled the store keeps it equal (``nets.kv.training``)."""
        raise NotImplementedError

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
        returns a ``Pending`` whose ``wait()`` completes it (see ``_prefetch_rows``)."""
        raise NotImplementedError

    def set_optimizer(self, optimizer):
        """Apply ``optimizer`` (a ``nets.optim.Optimizer``) to each key's value at a push."""
        raise NotImplementedError

    def set_gradient_compression(self, compression_params):
        """Compress pushed gradients: ``{'type': '2bit', 'threshold': t}``."""
        raise NotImplementedError

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Save the optimizer states of the store's keys."""
        raise NotImplementedError

    def load_optimizer_states(self, fname):
        """Load states written by ``save_optimizer_states``."""
        raise NotImplementedError


KVStoreBase = KVStore  # MXNet 1.9's name of the base class
