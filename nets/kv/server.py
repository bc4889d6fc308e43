"""The actors of a distributed store: ``Server`` (holds shards and updates them) and
``Coordinator`` (barriers). Plain classes; ``nets.kv.cluster`` runs them as Ray actors
(asyncio actors: one process each, its calls interleaving only at ``await``). A worker
calls a server's data methods (``Server.CHANNEL``) through the server's channel
(``nets.kv.channel``), served on the actor's event loop, and the rare ones through Ray.

A server keeps its shards in a ``LocalKVStore``: the shards of one key are that key in the
local store, so merging the workers' pushes (``push`` of a list: row_sparse ones over the
union of their rows) and applying the optimizer (lazily for row_sparse gradients, the key
being the optimizer's parameter index) are the local store's code, run once per round.

``dist_sync``: a push of round ``r`` of a key (the ``r``-th push of that key by its worker)
waits until rounds before ``r`` completed, joins round ``r``, and returns once every worker
pushed in round ``r`` and the sum was applied. ``dist_async``: a push is applied on
arrival. Every wait ends after ``timeout`` seconds with a ``NetsError`` naming the workers
that did not arrive.
"""
import asyncio
import gc
import secrets

import numpy as np

from ..base import NetsError
from ..arrays import aligned
from ..arrays.dense import NDArray
from ..ops.sparse_ops import as_row_ids, unique_rows
from ..optim import Record, Updater
from . import channel
from .local import LocalKVStore, row_positions, rows_of
from .shard import generate, pack, unpack
from .transport import Maps, Rows

__all__ = ["Server", "Coordinator", "pack_tree", "unpack_tree"]


def pack_tree(state):
    """An optimizer state (None, an array or nested tuples of arrays) made picklable."""
    if state is None:
        return None
    if isinstance(state, NDArray):
        return pack(state)
    return [pack_tree(s) for s in state]


def unpack_tree(packed):
    """Inverse of ``pack_tree``."""
    if packed is None:
        return None
    if isinstance(packed, tuple):
        return unpack(packed)
    return tuple(unpack_tree(s) for s in packed)


class _Round:
    """One key's push rounds on a server: ``done`` rounds completed; ``arrived`` maps the
    ranks that pushed in the current round to their arrays, ``wanted`` counts those that
    asked for what the round changed; ``results`` holds, per round, those changes until
    each worker that asked took them; ``errors`` the failure of a round that raised when
    applied (reported to every worker of that round). ``applied`` counts, per rank, the
    pushes ``dist_async`` applied (or refused)."""

    def __init__(self):
        self.done, self.arrived, self.errors = 0, {}, {}
        self.wanted, self.results = 0, {}  # (results: round -> [changes, takers left])
        self.applied = {}


async def _wait(cond, predicate, timeout, describe):
    """Wait on ``cond`` until ``predicate()``; after ``timeout`` seconds raise
    ``NetsError(describe())``. A predicate already true returns at once, without the
    task and timer of a wait (the common case: a call that needs no other call)."""
    if predicate():
        return
    async with cond:
        try:
            await asyncio.wait_for(cond.wait_for(predicate), timeout)
        except asyncio.TimeoutError:
            raise NetsError(describe()) from None


def _pack_changed(result):
    """``(rows, array)`` of ``LocalKVStore._push_changed`` made picklable (or None); the
    changed rows are the packed array's own row ids (one array, sent once)."""
    if result is None:
        return None
    packed = pack(result[1], copy=False)  # (the local store's answer is a copy already)
    return None if result[0] is None else packed[2], packed


def _asked(result, ask):
    """The part of a packed ``(rows, array)`` answer (``_pack_changed``'s) that a worker
    asked for: with ``ask`` (sorted unique shard-local row ids) the rows of ``ask`` only -
    of the changed rows ``(rows & ask, those rows)``, of a whole value ``(None, its ask
    rows, row_sparse)``; ``ask`` None: all of it."""
    if ask is None or result is None:
        return result
    rows, packed = result
    if rows is None:
        return None, pack(rows_of(unpack(packed), np.asarray(ask, np.int64)))
    _, data, indices, shape = packed
    at = np.minimum(np.searchsorted(ask, indices), max(len(ask) - 1, 0))
    hit = ask[at] == indices if len(ask) else np.zeros(len(indices), bool)
    indices = indices[hit]
    return indices, ("row_sparse", data[hit], indices, shape)


def _gathered(packed):
    """A packed row_sparse array whose values are ``transport.Rows``, with those rows
    gathered into an array of their own."""
    stype, rows, indices, shape = packed
    return stype, rows.array(), indices, shape


def _sorted_rows(ids, n):
    """``ids`` as int64 row ids of a shard of ``n`` rows, checked (a ``NetsError`` names a
    bad one), sorted and unique: as a worker sends them (``Layout.route``), or made so."""
    rows = as_row_ids(ids, n, "row_sparse_pull", "row_ids").reshape(-1)
    return rows if np.all(rows[1:] > rows[:-1]) else unique_rows(rows, n, "row_sparse_pull",
                                                                  "row_ids")


def _missing(arrived, num_workers):
    return sorted(set(range(num_workers)) - set(arrived))


class Server:
    """Server ``index`` of a distributed store: one shard of each key it holds."""

    def __init__(self, index, num_workers, timeout):
        self.index = index
        self.maps = Maps()
        self._channel = None  # once asked: the future of _listen's answer
        self.reset(num_workers, timeout)

    def reset(self, num_workers, timeout):
        """Forget every key, the optimizer and the rounds; serve ``num_workers`` workers,
        waiting at most ``timeout`` seconds for them."""
        self.num_workers, self.timeout, self.sync = num_workers, timeout, True
        self.store = LocalKVStore("local")
        self.updater = None  # the Updater of set_optimizer
        self.updating = False  # whether pushes update (set_optimizer or set_updater)
        self.rounds = {}
        self.changed = asyncio.Condition()

    # the methods a worker calls through its channel (``call``): their arguments and
    # answers are arrays and plain values (``nets.kv.channel``)
    CHANNEL = frozenset({"init", "push", "pull", "pushpull", "step"})
    # the methods whose answer holds views of the held values, for ``call``, whose answer
    # is copied out (into its reply segment or its frame) before any other call runs
    VIEWS = {"pull": "_values", "pushpull": "_pushed_values", "step": "_step_views"}

    async def channel(self):
        """``(host, port, secret, local)`` of this server's channel (``nets.kv.channel``),
        opened at the first ask on the address Ray reaches this node by and, for the
        workers of this machine, on the Unix socket named ``local`` (None where there is
        none: ``channel.listen_local``): a worker connects to one and sends ``secret``
        first."""
        if self._channel is None:  # (opened once, however many workers ask at once)
            self._channel = asyncio.ensure_future(self._listen())
        return (await self._channel)[:4]

    async def _listen(self):
        """``(host, port, secret, local, (the listening asyncio servers))``."""
        import ray  # (only an actor, which runs in Ray, opens a channel)
        # The actor's process is the server's own: what it has loaded (Ray, nets) moves
        # out of the cyclic collector's reach, whose full passes would otherwise scan all
        # of it in the middle of a round, every worker waiting.
        gc.freeze()
        host = ray.util.get_node_ip_address()
        secret = secrets.token_hex(32)
        listener = await channel.listen(self.call, host, secret)
        name, local = await channel.listen_local(self.call, secret) or (None, None)
        return host, listener.sockets[0].getsockname()[1], secret, name, (listener, local)

    async def call(self, method, args, path, reply):
        """``method(*args)`` (one of ``CHANNEL``) for a worker. A worker on this machine
        names shared-memory segments: the large arrays of ``args`` are read from the
        segment ``path`` and those of the answer written into the segment ``reply``
        (``nets.kv.transport``); a distant worker gives None for both and gets the
        answer's arrays in the channel's frame."""
        if method not in self.CHANNEL:
            raise NetsError(f"server call: {method!r} is not one of {sorted(self.CHANNEL)}")
        result = getattr(self, self.VIEWS.get(method, method))(
            *self.maps.unstage(args, path))
        if asyncio.iscoroutine(result):
            result = await result
        return self.maps.stage_into(result, reply)

    @staticmethod
    def sees(path, token):
        """Whether the file ``path`` holds ``token``: a worker's test that this server
        shares its machine's memory."""
        try:
            with open(path, "rb") as f:
                return f.read() == token.encode()
        except OSError:
            return False

    def set_sync(self, sync):
        """``dist_sync`` (True: rounds) or ``dist_async`` (False: applied on arrival)."""
        self.sync = bool(sync)

    def init(self, items):
        """Store each ``(key, packed shard)``."""
        pairs = [(key, unpack(packed)) for key, packed in items]
        self.store.init([k for k, _ in pairs], [a for _, a in pairs])

    def init_generated(self, items):
        """Make and store, for each ``(key, spec, stype, lo, hi)``, rows ``[lo, hi)`` of
        the array ``nets.kv.shard.generate`` makes from ``spec`` (data: the initializer's
        rule, the shape, dtype and seed), as the shard's local rows ``0 .. hi-lo-1``;
        returns one None per item."""
        for key, spec, stype, lo, hi in items:
            self.store._adopt(key, generate(spec, lo, hi, stype))
        return [None] * len(items)

    def set_optimizer(self, optimizer):
        """Run ``optimizer`` (a copy of the workers') on every push."""
        self.updater = Updater(optimizer)
        self.store._set_updater(self.updater)
        self.updating = True

    def set_updater(self, updater):
        """Run ``updater(key, pushed, stored)`` on every push (``_set_updater``)."""
        self.updater = None
        self.store._set_updater(updater)
        self.updating = True

    def _set_hyper(self, hyper):
        if hyper is not None and self.updater is not None:
            self.updater.optimizer.rescale_grad, self.updater.optimizer.lr = hyper

    async def push(self, rank, items, hyper, changed=False, asks=None):
        """Worker ``rank``'s pushes ``items``: ``[(key, round_no, packed shard)]``, the
        ``round_no``-th push of each key by that worker (see the module's docstring),
        served concurrently (so that workers listing keys in different orders do not wait
        on each other). ``hyper`` = the worker optimizer's ``(rescale_grad, lr)``, applied
        to the server's copy (Trainer sets ``rescale_grad`` per batch size). With
        ``changed``, returns for each item what its update changed in the shard, packed
        (``LocalKVStore._push_changed``: ``(rows, array)``; under ``dist_sync`` the
        round's), cut to the rows the worker asks for: ``asks`` gives, per item, sorted
        unique shard-local row ids or None (every changed row); see ``_asked``. An item
        asking for no rows is answered None (a round that no worker asks anything of does
        not gather its changed rows)."""
        self._set_hyper(hyper)  # (dist_sync sets it again when it applies a round)
        asks = asks or [None] * len(items)
        results = await asyncio.gather(*[self._push_one(key, rank, round_no, packed, hyper,
                                                        changed, ask)
                                         for (key, round_no, packed), ask in zip(items, asks)])
        return results if changed else None

    async def _push_one(self, key, rank, round_no, packed, hyper, changed, ask=None):
        changed = changed and (ask is None or len(ask) > 0)  # (asking for no rows: None)
        array = unpack(packed)
        state = self.rounds.setdefault(key, _Round())
        if not self.sync:
            try:
                if not self.updating:
                    raise NetsError("dist_async: a push is applied on arrival and needs an "
                                    "optimizer; call set_optimizer before pushing")
                return _asked(_pack_changed(self._apply(key, [array], changed)), ask)
            finally:
                async with self.changed:
                    state.applied[rank] = state.applied.get(rank, 0) + 1
                    self.changed.notify_all()

        def late():
            return (f"dist_sync: push of key {key!r} (round {round_no}) on server "
                    f"{self.index}: workers {_missing(state.arrived, self.num_workers)} did "
                    f"not push within {self.timeout:g} s (NETS_KV_TIMEOUT); a worker stopped "
                    f"early or pushed this key fewer times")

        await _wait(self.changed, lambda: state.done >= round_no, self.timeout, late)
        if rank in state.arrived:
            raise NetsError(f"dist_sync: worker {rank} pushed key {key!r} twice in round "
                            f"{round_no}")
        state.arrived[rank] = array
        if changed:
            state.wanted += 1
        if len(state.arrived) == self.num_workers:
            arrays = [state.arrived[r] for r in sorted(state.arrived)]
            wanted, state.arrived, state.wanted = state.wanted, {}, 0
            try:
                self._set_hyper(hyper)
                result = self._apply(key, arrays, wanted > 0)
                if wanted:
                    state.results[round_no] = [_pack_changed(result), wanted]
            except Exception as e:  # every worker of the round hears of it
                state.errors[round_no] = e
            async with self.changed:
                state.done += 1
                self.changed.notify_all()
        else:
            await _wait(self.changed, lambda: state.done > round_no, self.timeout, late)
        error = state.errors.get(round_no)
        if error is not None:
            raise error
        if not changed:
            return None
        entry = state.results[round_no]
        entry[1] -= 1
        if not entry[1]:
            del state.results[round_no]
        return _asked(entry[0], ask)

    def _apply(self, key, arrays, changed):
        """Apply the sum of ``arrays`` to ``key``; with ``changed``, return what changed."""
        if changed:
            return self.store._push_changed([(key, arrays)])[0]
        self.store.push(key, arrays)
        return None

    async def pull(self, rank, items):
        """For each ``(key, pushes)`` of ``items``, the dense value of ``key``'s shard (a
        numpy array) once the first ``pushes`` pushes of ``key`` by worker ``rank`` are
        applied (``_after``)."""
        return [np.array(v) for v in await self._values(rank, items)]

    async def _values(self, rank, items):
        """``pull``'s arrays as views of the held values (a row_sparse one densified),
        valid until the next push."""
        for key, pushes in items:
            await self._after("pull", rank, key, pushes)
        out = []
        for key, _ in items:
            value = self.store._known(key, "pull")
            if value.stype == "default":
                out.append(value.values)
                continue
            o = NDArray(aligned.empty(value.shape, value.dtype))
            self.store.pull(key, out=o, ignore_sparse=False)
            out.append(o.asnumpy())
        return out

    async def pushpull(self, rank, items, hyper, pulls):
        """``push(rank, items, hyper)`` then ``pull(rank, pulls)`` in one call: the pull's
        ``(key, pushes)`` count this call's pushes, so it is answered once they are
        applied (under ``dist_sync``: their rounds completed)."""
        return [np.array(v) for v in await self._pushed_values(rank, items, hyper, pulls)]

    async def _pushed_values(self, rank, items, hyper, pulls):
        """``pushpull``'s arrays as views of the held values (``_values``)."""
        await self.push(rank, items, hyper)
        return await self._values(rank, pulls)

    async def _after(self, what, rank, key, pushes):
        """Return once the first ``pushes`` pushes of ``key`` by worker ``rank`` are
        applied (``dist_sync``: their rounds completed, failed rounds included): a pull
        sent right after a push sees it."""
        state = self.rounds.setdefault(key, _Round())
        if self.sync:
            def ready():
                return state.done >= pushes
        else:
            def ready():
                return state.applied.get(rank, 0) >= pushes

        def late():
            waiting = (f"workers {_missing(state.arrived, self.num_workers)} did not push"
                       if self.sync else "the pushes did not arrive")
            return (f"{what} of key {key!r} on server {self.index}: worker {rank}'s {pushes} "
                    f"pushes of the key were not applied within {self.timeout:g} s "
                    f"(NETS_KV_TIMEOUT): {waiting}")
        await _wait(self.changed, ready, self.timeout, late)

    async def step(self, rank, items, hyper, asks, pulls):
        """A worker's training step in one call: ``push(rank, items, hyper, True, asks)``
        (nothing when ``items`` is empty) then ``pull_rows(rank, pulls)``, whose
        ``(key, local_ids, pushes)`` count this call's pushes, so the rows are those after
        them (under ``dist_sync``: after their rounds). Returns ``(the push's answer, the
        rows)``."""
        changed, rows = await self._step_views(rank, items, hyper, asks, pulls)
        return changed, [_gathered(packed) for packed in rows]

    async def _step_views(self, rank, items, hyper, asks, pulls):
        """``step``'s answer, its rows' values ``transport.Rows`` (``_row_views``)."""
        changed = await self.push(rank, items, hyper, True, asks) if items else []
        return changed, await self._row_views(rank, pulls) if pulls else []

    async def pull_rows(self, rank, items):
        """For each ``(key, local_ids, pushes)`` of ``items`` (sorted unique shard-local
        ids), those rows of ``key``'s shard, packed row_sparse, answered once the first
        ``pushes`` pushes of ``key`` by worker ``rank`` are applied (``_after``)."""
        return [_gathered(packed) for packed in await self._row_views(rank, items)]

    async def _row_views(self, rank, items):
        """``pull_rows``' answer, its packed values ``transport.Rows`` of the held values
        (gathered where ``call`` writes the answer: into its reply segment or frame)."""
        for key, _, pushes in items:
            await self._after("row_sparse_pull", rank, key, pushes)
        out = []
        for key, local_ids, _ in items:
            value = self.store._known(key, "row_sparse_pull")
            rows = _sorted_rows(local_ids, value.shape[0])
            positions, held = row_positions(value, rows)
            out.append(("row_sparse", Rows(value.values, positions), held,
                        tuple(value.shape)))
        return out

    def get_states(self, keys):
        """``{key: (packed state or None, (step, log_decay, stamps))}``: the optimizer's
        record of each of ``keys`` it updated (None: no state made, as ``Record.has_state``
        False)."""
        state = self._updater("save_optimizer_states").optimizer.state
        out = {}
        for key in keys:
            r = state.get(key)
            if r is not None:
                out[key] = (pack_tree(r.state) if r.has_state else None,
                            (r.step, r.log_decay, r.stamps))
        return out

    def set_states(self, items):
        """Replace the optimizer's state by ``{key: (packed state or None, (step,
        log_decay, stamps))}`` as ``get_states`` returns it (keys absent start afresh)."""
        opt = self._updater("load_optimizer_states").optimizer
        state = {}
        for key, (packed, counts) in items.items():
            record = state[key] = Record(*counts)
            if packed is not None:
                record.set_state(unpack_tree(packed))
        opt.state = state
        opt.num_update = max((r.step for r in state.values()), default=0)

    def _updater(self, what):
        if self.updater is None:
            raise NetsError(f"{what}: the store has no optimizer; call set_optimizer first")
        return self.updater


class Coordinator:
    """Barriers of the workers of one distributed store."""

    def __init__(self, num_workers, timeout):
        self.reset(num_workers, timeout)

    def reset(self, num_workers, timeout):
        """Forget past barriers; serve ``num_workers`` workers, waiting at most ``timeout``
        seconds for them."""
        self.num_workers, self.timeout = num_workers, timeout
        self.arrived = {}  # barrier number -> ranks that reached it
        self.shared = {}  # barrier number -> what rank 0 brought to it
        self.changed = asyncio.Condition()

    async def barrier(self, rank, number, share=None):
        """Worker ``rank`` reached its ``number``-th barrier: return, when all have, what
        rank 0 brought to it (``share``; None from the other ranks is ignored)."""
        ranks = self.arrived.setdefault(number, set())
        async with self.changed:
            ranks.add(rank)
            if rank == 0 and share is not None:
                self.shared[number] = share
            self.changed.notify_all()
        await _wait(self.changed, lambda: len(ranks) == self.num_workers, self.timeout,
                    lambda: f"barrier {number}: workers {_missing(ranks, self.num_workers)} "
                            f"did not arrive within {self.timeout:g} s (NETS_KV_TIMEOUT); a "
                            f"worker stopped early or skipped a barrier")
        return self.shared.get(number)
