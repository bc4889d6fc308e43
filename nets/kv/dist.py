"""``DistKVStore``: the worker side of MXNet's distributed stores on Ray
(``dist_sync``, ``dist_async`` and their ``_device`` aliases).

A worker process started by ``python -m nets.kv.launch`` makes one with
``nets.kv.create('dist_sync')``; the environment says which cluster, actors and rank
(``nets.kv.cluster``). Values live on the servers (``nets.kv.server``), sharded as
``nets.kv.shard`` says; the worker holds only the keys' shapes.

- the data calls (``init``, ``push``, ``pull``, ``pushpull``, ``step``) go through this
  worker's channel to each server (``nets.kv.channel``: one connection per server, opened
  here), their large arrays through shared memory when the server shares this machine
  (``nets.kv.transport``); barriers, ``set_optimizer``, a table made from an initializer
  and the states' save and load are Ray calls.
- ``init``: only rank 0's values are sent, then every worker waits at a barrier. A value
  ``nets.init.draw`` drew by row blocks (``Module.init_params``: ``_init_drawn``) is sent
  as its spec, from which each server makes its rows (``nets.kv.shard.generate``); a worker
  whose spec equals rank 0's holds the same value and pulls nothing.
- ``push``: the arrays given for a key are compressed (if set, with residuals kept here,
  as the local store does), summed here, cut into shards and sent; the call returns
  without waiting (MXNet's non-blocking push). A later ``pull`` of the key, a
  ``barrier`` or the states' save/load first waits for this worker's pushes: under
  ``dist_sync`` a push completes when every worker pushed that round and the sum was
  applied, so a pull after a push sees the round's update.
- ``pushpull``: one call per server that pushes and answers the pull once the push is
  applied (``_pushpull``); the worker waits for it.
- a training step's push (``_start_push_changed``: ``Module.update``) is held until this
  worker's next call to the servers and sent with it: with the row pull of the next batch
  (``Module.prepare``) it is one ``step`` call per server, which applies the push and
  answers both the rows the update changed and the rows asked for.
- ``row_sparse_pull`` (and its prefetch, ``prefetch_rows``) is ordered on the servers:
  each request carries the number of pushes of its key this worker made, and the server
  answers once they are applied; the worker waits only when it takes the rows.
- ``set_optimizer``: rank 0 sends a copy of the optimizer to the servers (its
  ``param_dict`` reduced to names and multipliers); each push carries the worker's
  ``rescale_grad`` and learning rate, which ``Trainer`` may change between steps.
- ``save_optimizer_states``/``load_optimizer_states`` gather and spread the servers'
  shard states: the file is the one ``Trainer.save_states`` writes on one machine.
"""
import atexit
import copy
import hashlib

import numpy as np

from ..base import NetsError
from ..arrays.creation import zeros
from ..arrays.dense import NDArray
from ..arrays.row_sparse import RowSparseNDArray
from ..optim import Optimizer, Record, load_states, save_states
from ..ops import add_n
from ..ops.sparse_ops import unique_rows
from .base import DIST_NAMES, KVStore, Pending, register
from .channel import Link
from .cluster import MARGIN, from_environment, gather, timeout
from .compression import from_params
from .server import pack_tree, unpack_tree
from . import transport
from .shard import Layout, big_bound, cut, join, pack, unpack
from .transport import Pool

__all__ = ["DistKVStore"]


class _Param:
    """What a server's optimizer reads of a parameter: its name and multipliers."""

    def __init__(self, param):
        self.name = getattr(param, "name", None)
        self.lr_mult = getattr(param, "lr_mult", 1.0)
        self.wd_mult = getattr(param, "wd_mult", 1.0)


def _portable(optimizer):
    """A copy of ``optimizer`` to ship to the servers: parameters become ``_Param``s
    (a Parameter would carry its arrays along)."""
    out = copy.copy(optimizer)
    out.param_dict = {i: _Param(p) for i, p in optimizer.param_dict.items()}
    return out


@register
class DistKVStore(KVStore):
    """A distributed store (``nets.kv.create('dist_sync')`` in a launched worker)."""

    names = DIST_NAMES

    def __init__(self, name):
        super().__init__(name)
        self._rank, self._num_workers, self._servers, self._coordinator = \
            from_environment(f"kv.create({name!r})")
        self._bound = big_bound()
        self._layouts = {}  # key -> Layout
        self._kinds = {}  # key -> (dtype, stype) of its value: what its optimizer state is for
        self._rounds = {}  # key -> pushes of the key by this worker
        self._pending = []  # [(keys, _Exchange)]: pushes not yet waited for
        self._unsent = None  # a ``_Step`` not sent yet (``_start_push_changed``)
        self._same_init = {}  # key -> whether this worker's init value was rank 0's
        self._barriers = 0
        self._optimizer = None
        self._compression = None
        if self._rank == 0:
            sync = "async" not in name
            gather([(i, s.set_sync.remote(sync)) for i, s in enumerate(self._servers)],
                   f"kv.create({name!r})")
        self.barrier()
        self._pool = Pool() if transport.available() else None
        self._near = _shares_memory(self._servers) if self._pool is not None else \
            [False] * len(self._servers)
        self._links = _connect(self._servers, self._near, f"kv.create({name!r})")
        atexit.register(self._close)
        atexit.register(self._wait_pushes)  # (runs first: atexit runs last-in first-out)

    # -- description ---------------------------------------------------------------------
    @property
    def rank(self):
        """This worker's rank (``NETS_KV_RANK``)."""
        return self._rank

    @property
    def num_workers(self):
        """How many workers share the store (``NETS_KV_NUM_WORKERS``)."""
        return self._num_workers

    def barrier(self):
        """Wait for this worker's pushes, then until every worker reaches its barrier of
        the same number (a ``NetsError`` after ``NETS_KV_TIMEOUT`` names the absent)."""
        self._meet()

    def _meet(self, share=None):
        """``barrier``, returning what rank 0 brought to it (its ``share``)."""
        self._wait_pushes()
        self._barriers += 1
        return gather([(None, self._coordinator.barrier.remote(self._rank, self._barriers,
                                                               share))], "barrier")[0]

    _barrier = barrier

    # -- helpers ---------------------------------------------------------------------------
    def _close(self):
        """Close the channels to the servers."""
        for link in self._links:
            link.close()

    def _held(self, key):
        return self._layouts.get(key)

    def _wait_pushes(self, keys=None):
        """Send the held step, then wait for this worker's pushes of ``keys`` (all keys
        when None): every exchange that pushed one of them (raising its error)."""
        self._send_held()
        keys = None if keys is None else set(keys)
        waiting = [ex for ks, ex in self._pending if keys is None or ks & keys]
        self._pending = [(ks, ex) for ks, ex in self._pending
                         if not (keys is None or ks & keys)]
        for exchange in waiting:
            exchange.answers()

    def _invoke(self, server, method, *args):
        """Call ``method(*args)`` on ``server`` through its channel (``Server.call``)
        without waiting: a call ``(server, Reply, segments)``. A server on this machine
        gets the large arrays through shared memory (``nets.kv.transport``; ``segments``
        are the call's), another in the channel's frame (``segments`` None)."""
        self._stats["calls"] += 1
        if not self._near[server]:
            return server, self._sent(self._links[server].send(method, args)), None
        args, path, reply, segs = self._pool.request(args)
        try:
            return server, self._sent(self._links[server].send(method, args, path, reply)), segs
        except Exception:
            self._pool.discard(segs)
            raise

    def _sent(self, reply):
        """``reply`` (a sent request's), its request's bytes counted."""
        self._stats["bytes_sent"] += reply.sent
        return reply

    def _results(self, calls, what, copy=True, release=True):
        """The answers of ``calls`` (``_invoke``'s), in order; with ``copy=False`` the
        arrays of a nearby server's answer are views valid until the next call (with
        ``release=False``: until the caller returns the segments to the pool)."""
        try:
            got = [reply.get(what) for _, reply, _ in calls]
        except Exception:
            if self._pool is not None:
                self._pool.discard(_segments(calls))
            raise
        self._stats["bytes_received"] += sum(reply.received for _, reply, _ in calls)
        return [answer if segs is None else self._pool.answer(answer, segs, copy, release)
                for (_, _, segs), answer in zip(calls, got)]

    def _start(self, method, requests, args_of, servers=()):
        """One call of ``method`` per server, not waited for, with the list of that
        server's requests (``requests`` is ``[(server, request)]``): ``[([request numbers],
        call)]`` (``_invoke``'s calls); server ``s`` gets ``method(*args_of(s), its requests)``,
        and so does each of ``servers`` without requests (with an empty list)."""
        self._send_held()  # (first: the servers see this worker's calls in order)
        by_server = {server: [] for server in servers}
        for n, (server, request) in enumerate(requests):
            by_server.setdefault(server, []).append((n, request))
        return [([n for n, _ in batch], self._invoke(server, method, *args_of(server),
                                                     [r for _, r in batch]))
                for server, batch in by_server.items()]

    # -- primitives ------------------------------------------------------------------------
    def _init(self, pairs, specs=None):
        """Rank 0 sends each pair's value, or, where ``specs`` (per pair) has the spec
        ``nets.init.draw`` drew the value from, that spec: the servers make their rows
        (``_make``). A worker holds the store's value (``_holds_init``) when its value's
        SHA-256 digest, or its spec, equals rank 0's."""
        self._check_init(pairs)
        self._send_held()
        specs = specs or [None] * len(pairs)
        layouts = {key: Layout(key, array.shape, len(self._servers), self._bound)
                   for key, array in pairs}
        self._kinds.update({key: (array.dtype, array.stype) for key, array in pairs})
        calls, made = [], []
        if self._rank == 0:
            items = {}
            for (key, array), spec in zip(pairs, specs):
                if spec is not None:
                    made.append((key, spec, array.stype))
                    continue
                for server, lo, hi in layouts[key].parts:
                    items.setdefault(server, []).append((key, pack(cut(array, lo, hi),
                                                                   copy=False)))
            calls = [self._invoke(s, "init", batch) for s, batch in items.items()]
        marks = [_digest(array) if spec is None else spec
                 for (_, array), spec in zip(pairs, specs)]  # (while the servers store them)
        self._results(calls, "init")
        self._make(made, layouts)
        self._layouts.update(layouts)
        kept = self._meet(marks if self._rank == 0 else None)
        self._same_init.update((key, mine == theirs)
                               for (key, _), mine, theirs in zip(pairs, marks, kept))

    def _init_drawn(self, keys, values, specs):
        pairs = self._pairs(keys, values, "init")
        for k, arrays in pairs:
            if len(arrays) != 1:
                raise NetsError(f"init: key {k!r} takes one value, got {len(arrays)}")
        self._init([(k, arrays[0]) for k, arrays in pairs], list(specs))

    def _holds_init(self, key):
        """Whether this worker's value given to ``init`` of ``key`` equals, bit for bit,
        the one the store kept (rank 0's): their SHA-256 digests, or the specs they were
        drawn from, agree."""
        return self._same_init.get(key, False)

    def _make(self, items, layouts):
        """Have the servers make each ``(key, spec, stype)`` of ``items`` (rank 0's), each
        its rows of the key's ``layouts`` (``Server.init_generated``). A Ray call: a spec
        is data - the initializer's rule, the shape, dtype and seed: numbers and strings,
        no array and no Python object."""
        by_server = {}
        for key, spec, stype in items:
            for server, lo, hi in layouts[key].parts:
                by_server.setdefault(server, []).append((key, spec, stype, lo, hi))
        gather([(s, self._servers[s].init_generated.remote(batch))
                for s, batch in by_server.items()], "init")

    def _init_generated(self, items):
        self._send_held()
        layouts = {key: Layout(key, spec[1], len(self._servers), self._bound)
                   for key, spec, _ in items}
        self._kinds.update({key: (np.dtype(spec[2]), stype) for key, spec, stype in items})
        if self._rank == 0:
            self._make(items, layouts)
        self._layouts.update(layouts)
        self.barrier()

    def _shards(self, pairs):
        """``pairs`` compressed (if set), each key's arrays summed here and cut into
        shards, each counted as this worker's next push of its key: ``({server: [(key,
        round number, packed shard)]}, [[(lo, server, position in that server's
        list)] per pair])``."""
        by_server, where = {}, []
        for key, arrays in pairs:
            if self._compression is not None:
                arrays = [self._compression(key, i, a) for i, a in enumerate(arrays)]
            merged = arrays[0] if len(arrays) == 1 else add_n(*arrays)
            round_no = self._rounds.get(key, 0)
            self._rounds[key] = round_no + 1
            shards = []
            for server, lo, hi in self._layouts[key].parts:
                items = by_server.setdefault(server, [])
                shards.append((lo, server, len(items)))
                items.append((key, round_no, pack(cut(merged, lo, hi), copy=False)))
            where.append(shards)
        return by_server, where

    def _hyper(self):
        """What a push carries of the optimizer: ``(rescale_grad, lr)``, or None."""
        opt = self._optimizer
        return None if opt is None else (opt.rescale_grad, opt.lr)

    def _push(self, pairs):
        self._check_push(pairs)
        self._send_held()
        by_server, _ = self._shards(pairs)
        hyper = self._hyper()
        self._pending += [(frozenset(k for k, _, _ in items), _Exchange(
            self, [self._invoke(server, "push", self._rank, items, hyper, False)], "push"))
            for server, items in by_server.items()]

    def _push_changed(self, pairs, asks=None):
        """``KVStore._push_changed``: ``_start_push_changed`` sent and waited for."""
        return self._start_push_changed(pairs, asks).wait()

    def _start_push_changed(self, pairs, asks=None, targets=None):
        """``KVStore._start_push_changed``; each server answers, of the rows the round
        changed, only those of ``asks`` (per pair: sorted unique row ids, or None for all),
        routed to it with the push: what a worker receives does not grow with the workers.

        The push is held (``_Step``) until this worker's next call to the servers: a row
        pull (``_start_pull_rows``) carries it in the same call per server, and a pair
        whose target that pull fills asks for no rows (its answer is replaced); any other
        call, and the returned ``Pending``'s ``wait()``, send it first on its own. Its
        arrays are read when it is sent: they must not change until then."""
        self._check_push(pairs)
        self._send_held()
        by_server, where = self._shards(pairs)
        routed = {s: [None] * len(items) for s, items in by_server.items()}
        for (key, _), ask, shards in zip(pairs, asks or [None] * len(pairs), where):
            if ask is not None:
                for (_, server, at), (_, _, ids) in zip(shards,
                                                        self._layouts[key].route(ask)):
                    routed[server][at] = ids
        step = self._unsent = _Step(pairs, where, by_server, routed, self._hyper(),
                                    targets or [None] * len(pairs))
        return Pending(lambda: self._step_result(step))

    def _send_held(self):
        """Send the held step on its own (one ``step`` call per server), if there is one."""
        if self._unsent is not None:
            self._exchange_step([], "push")

    def _exchange_step(self, requests, what, outs=(), fill=None):
        """One ``Server.step`` call per server carrying the held step's push (if any) and
        the row pulls ``requests`` (``[(server, (key, local ids, pushes))]``), which the
        server answers after that push: ``(the request numbers of each call, in call
        order, the _Exchange)``. The held step is then sent (its ``exchange`` set); its
        pairs whose target is one of the pull's ``outs`` (``(key, out)``) ask for no rows,
        and ``fill(targets)`` fills those targets when the step's result is taken."""
        step, self._unsent = self._unsent, None
        if step is not None:
            filled = {id(o): k for k, o in outs}
            for i, ((key, _), target) in enumerate(zip(step.pairs, step.targets)):
                if target is not None and filled.get(id(target), _NONE) == key:
                    step.replaced.append(i)
                    for _, server, at in step.where[i]:
                        step.asks[server][at] = _NO_ROWS
            step.fill = fill
        by_server = {server: [] for server in (step.by_server if step is not None else ())}
        for n, (server, request) in enumerate(requests):
            by_server.setdefault(server, []).append((n, request))
        pushes = {} if step is None else step.by_server
        calls = [self._invoke(server, "step", self._rank, pushes.get(server, []),
                              None if step is None else step.hyper,
                              None if step is None else step.asks.get(server),
                              [r for _, r in batch])
                 for server, batch in by_server.items()]
        exchange = _Exchange(self, calls, what)
        if step is not None:
            step.exchange, step.servers = exchange, list(by_server)
            self._pending.append((frozenset(k for k, _ in step.pairs), exchange))
        return [[n for n, _ in batch] for batch in by_server.values()], exchange

    def _step_result(self, step):
        """What ``_start_push_changed`` returns (sending the step first if it is held)."""
        if step is self._unsent:
            self._send_held()
        self._pending = [(ks, ex) for ks, ex in self._pending if ex is not step.exchange]
        answers = dict(zip(step.servers, [pushed for pushed, _ in step.exchange.answers()]))
        if step.replaced:
            step.fill([step.targets[i] for i in step.replaced])
        out = []
        for i, ((key, _), shards) in enumerate(zip(step.pairs, step.where)):
            if i in step.replaced:
                out.append(None)
                continue
            got = [(lo, answers[server][at]) for lo, server, at in shards
                   if answers[server][at] is not None]  # (None: that shard was asked nothing)
            if not got:
                empty = RowSparseNDArray.zeros(self._layouts[key].shape, self._kinds[key][0])
                out.append((empty.index_array, empty))
                continue
            whole = {rows is None for _, (rows, _) in got}
            if len(whole) != 1:
                raise NetsError(f"push: the shards of key {key!r} disagree on whether the "
                                f"update was lazy")
            layout = self._layouts[key]
            value = join([(lo, unpack(packed)) for lo, (_, packed) in got], layout.shape,
                         copy=True)
            out.append((None, value) if whole == {True} else (value.index_array, value))
        return out

    def _wanted(self, pairs, ignore_sparse):
        """The ``(key, [outs])`` of ``pairs`` a pull fills (not every out ignored) and
        its requests ``[(server, (key, pushes of the key by this worker))]``, one per
        shard: a server answers once those pushes are applied."""
        wanted = [(key, outs) for key, outs in pairs
                  if not all(self._ignored(key, o, ignore_sparse) for o in outs)]
        requests = [(server, (key, self._rounds.get(key, 0))) for key, _ in wanted
                    for server, _, _ in self._layouts[key].parts]
        return wanted, requests

    def _fill(self, wanted, values, ignore_sparse):
        """Fill the outs of ``wanted`` (``_wanted``'s) from ``values``, its requests'
        answers in order (dense shards)."""
        values = iter(values)
        for key, outs in wanted:
            layout = self._layouts[key]
            value = join([(lo, NDArray(next(values))) for _, lo, _ in layout.parts],
                         layout.shape)
            for o in outs:
                if o.stype != "row_sparse" or not ignore_sparse:
                    o[:] = value

    def _pull(self, pairs, ignore_sparse):
        self._check_pull(pairs, "pull")
        wanted, requests = self._wanted(pairs, ignore_sparse)
        keys = [key for key, _ in wanted]
        calls = self._start("pull", requests, lambda server: (self._rank,))
        self._wait_pushes(keys)  # (their errors; the servers order the pull after them)
        self._fill(wanted, self._answers(calls, len(requests), f"pull of keys {keys}",
                                         copy=False), ignore_sparse)  # (copied by _fill)

    def _pushpull(self, pairs, outs, ignore_sparse):
        """One ``pushpull`` call per server: the server applies the push (under
        ``dist_sync`` it joins the round and waits for it, as ``push`` does), then
        answers the pull, which it orders after the push as it orders a ``pull`` sent
        after a ``push``; the results are those of ``_push`` then ``_pull``. The call is
        waited for, so the push's errors are raised here."""
        by_server, _ = self._shards(pairs)
        wanted, requests = self._wanted(outs, ignore_sparse)
        keys = [key for key, _ in pairs]
        hyper = self._hyper()
        calls = self._start("pushpull", requests,
                            lambda server: (self._rank, by_server[server], hyper),
                            servers=by_server)
        self._wait_pushes(keys)  # (errors of earlier pushes; the servers order after them)
        self._fill(wanted, self._answers(calls, len(requests), f"pushpull of keys {keys}",
                                         copy=False), ignore_sparse)

    def _start_pull_rows(self, triples):
        """One call per server, each request carrying how many pushes of its key this
        worker made: the server answers once those are applied (under ``dist_sync``:
        their rounds completed), so the pull sees them without this worker waiting here.
        ``wait()`` then surfaces those pushes' errors, takes the answers and fills the
        outs."""
        for key, out, _ in triples:
            self._check_shape(key, out, self._known(key, "row_sparse_pull"),
                              "row_sparse_pull", "out")
        requests = []
        for key, _, row_ids in triples:
            layout = self._layouts[key]
            rows = unique_rows(row_ids.values, layout.shape[0], "row_sparse_pull", "row_ids")
            requests += [(server, (key, ids, self._rounds.get(key, 0)))
                         for server, _, ids in layout.route(rows)]
        keys = list(dict.fromkeys(key for key, _, _ in triples))
        what = f"row_sparse_pull of keys {keys}"
        done = set()  # ids of the outs filled already (by the step sent with this pull)

        def fill(only=None):
            shards = [None] * len(requests)
            for batch, (_, rows) in zip(numbers, exchange.answers()):
                for n, answer in zip(batch, rows):
                    shards[n] = answer
            shards = iter(shards)
            for key, out, _ in triples:
                layout = self._layouts[key]
                got = [(lo, next(shards)) for _, lo, _ in layout.parts]
                if id(out) in done or (only is not None and not any(out is o for o in only)):
                    continue
                out.assign_result(join([(lo, unpack(g)) for lo, g in got], layout.shape,
                                       copy=True))
                done.add(id(out))

        def finish():
            self._wait_pushes(keys)
            fill()
        numbers, exchange = self._exchange_step(requests, what,
                                                [(k, o) for k, o, _ in triples], fill)
        return Pending(finish)

    def _answers(self, calls, count, what, copy=True):
        """The answers of ``_start``'s calls, one per request in request order
        (``count``; ``copy`` as for ``_results``)."""
        answers = [None] * count
        for (numbers, _), batch in zip(calls, self._results([c for _, c in calls], what,
                                                            copy)):
            for n, answer in zip(numbers, batch):
                answers[n] = answer
        return answers

    # -- optimizer and compression -------------------------------------------------------------
    def _to_servers(self, method, args, what):
        """Rank 0 calls ``method(*args[i])`` on server ``i``; then every worker waits at a
        barrier, so that none goes on before the servers changed."""
        self._send_held()
        if self._rank == 0:
            gather([(i, getattr(s, method).remote(*args[i]))
                    for i, s in enumerate(self._servers)], what)
        self.barrier()

    def set_optimizer(self, optimizer):
        if not isinstance(optimizer, Optimizer):
            raise NetsError(f"set_optimizer: expected a nets.optim.Optimizer, got "
                            f"{type(optimizer).__name__}")
        self._optimizer = optimizer
        self._to_servers("set_optimizer", [(_portable(optimizer),)] * len(self._servers),
                         "set_optimizer")

    def _set_updater(self, updater):
        """Run ``updater(key, pushed_sum, stored_shard)`` on the servers at each push (it
        is pickled to them; a shard of a big key has local row ids)."""
        if not callable(updater):
            raise NetsError(f"_set_updater: expected a callable, got {type(updater).__name__}")
        self._optimizer = None
        self._to_servers("set_updater", [(updater,)] * len(self._servers), "_set_updater")

    def set_gradient_compression(self, compression_params):
        self._compression = from_params(compression_params)

    def _states_optimizer(self, what):
        """A shallow copy of the optimizer, whose ``state`` is replaced (never changed in
        place) by the servers' or a file's."""
        if self._optimizer is None:
            raise NetsError(f"{what}: the store has no optimizer; call set_optimizer first")
        self._wait_pushes()
        return copy.copy(self._optimizer)

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Gather every server's shard states into ``fname``: the file a single-process
        ``Trainer.save_states`` writes (MXNet 1.x refused this in distributed mode).
        ``dump_optimizer`` is accepted for MXNet's signature; the optimizer is not
        stored."""
        opt = self._states_optimizer("save_optimizer_states")
        keys = list(self._layouts)
        refs = [(i, s.get_states.remote(keys)) for i, s in enumerate(self._servers)]
        by_server = gather(refs, "save_optimizer_states")
        state = {}
        for key in keys:
            layout = self._layouts[key]
            got = [(lo, by_server[s].get(key)) for s, lo, _ in layout.parts]
            if any(g is None for _, g in got):
                continue  # not updated yet: no record (made at the key's first update)
            (step, log_decay, _), stamps = got[0][1][1], [g[1][2] for _, g in got]
            record = state[key] = Record(step, log_decay, None if stamps[0] is None
                                         else np.concatenate(stamps))
            if got[0][1][0] is not None:
                record.set_state(_join_state([(lo, unpack_tree(g[0])) for lo, g in got],
                                             layout.shape))
        opt.state = state
        opt.num_update = max((r.step for r in state.values()), default=0)
        save_states(fname, opt)

    def load_optimizer_states(self, fname):
        """Read ``fname`` (written by ``save_optimizer_states`` here, by a local store, or
        by ``Trainer.save_states``) and give each server its shards' states."""
        opt = self._states_optimizer("load_optimizer_states")
        load_states(fname, opt, _Templates(self._layouts, self._kinds))
        items = [{} for _ in self._servers]
        for key, r in opt.state.items():
            if key not in self._layouts:
                raise NetsError(f"load_optimizer_states: {fname} holds a state for key "
                                f"{key!r}, which the store does not hold")
            for server, lo, hi in self._layouts[key].parts:
                packed = pack_tree(_cut_state(r.state, lo, hi)) if r.has_state else None
                items[server][key] = (packed, (r.step, r.log_decay, None if r.stamps is None
                                               else r.stamps[lo:hi]))
        self._to_servers("set_states", [(i,) for i in items], "load_optimizer_states")


_NONE = object()
_NO_ROWS = np.zeros(0, np.int64)  # the ask of an answer a row pull replaces


class _Step:
    """A ``_start_push_changed`` push until it is sent: its ``pairs``, where each pair's
    shards went (``where``, as ``_shards`` returns it), each server's items
    (``by_server``) and asked rows (``asks``), the optimizer's ``hyper`` and each pair's
    ``targets``; once sent, the ``exchange`` that carried it, its ``servers`` in call
    order, the pairs whose answer a row pull of the same exchange ``replaced`` and that
    pull's ``fill``."""

    def __init__(self, pairs, where, by_server, asks, hyper, targets):
        self.pairs, self.where, self.by_server, self.asks = pairs, where, by_server, asks
        self.hyper, self.targets, self.exchange, self.servers = hyper, targets, None, None
        self.replaced, self.fill = [], None


class _Exchange:
    """Calls made to the servers (``_invoke``'s), answered once: ``answers()`` waits for
    them the first time and keeps their answers in call order (or the error, raised
    again at each call). The arrays of a nearby server's answers are views of the call's
    shared-memory segments, which stay the exchange's while it lives (a reader copies
    what it keeps) and return to the pool when it is collected; dropped unanswered, the
    segments are removed, never reused (a server may still write into them)."""

    def __init__(self, store, calls, what):
        self._store, self._calls, self._what = store, calls, what
        self._answers = self._error = None
        self._segs = _segments(calls)
        self._abandon = store._pool.abandon_later(self, self._segs) if self._segs else None

    def answers(self):
        if self._answers is None and self._error is None:
            if self._abandon is not None:
                self._abandon.detach()
            try:
                self._answers = self._store._results(self._calls, self._what, copy=False,
                                                     release=False)
                if self._segs:
                    self._store._pool.release_later(self, self._segs)
            except Exception as e:
                self._error = e
            self._calls = None
        if self._error is not None:
            raise self._error
        return self._answers


class _Templates:
    """``{key: a zero array of the key's shape, dtype and storage type}``, made when
    asked: what ``load_states`` checks a key's stored state against."""

    def __init__(self, layouts, kinds):
        self._layouts, self._kinds = layouts, kinds

    def __contains__(self, key):
        return key in self._layouts

    def __getitem__(self, key):
        dtype, stype = self._kinds[key]
        return zeros(self._layouts[key].shape, dtype=dtype, stype=stype)


def _digest(array):
    """SHA-256 of a dense or row_sparse array's type, shape and buffers."""
    h = hashlib.sha256(repr((array.stype, str(array.dtype), tuple(array.shape))).encode())
    parts = [array.values] + ([array.index_array] if array.stype == "row_sparse" else [])
    for part in parts:
        h.update(np.ascontiguousarray(part).reshape(-1).view(np.uint8))
    return h.digest()


def _segments(calls):
    """The shared-memory segments of ``_invoke``'s calls (none for a distant server)."""
    return [seg for _, _, segs in calls for seg in segs or ()]


def _shares_memory(servers):
    """Whether each of ``servers`` sees this machine's shared memory: it reads back a
    file this worker wrote there (``Server.sees``)."""
    with transport.probe_file() as (path, token):
        return [bool(b) for b in gather([(i, s.sees.remote(path, token))
                                         for i, s in enumerate(servers)], "kv.create")]


def _connect(servers, near, what):
    """A ``Link`` (``nets.kv.channel``) to each of ``servers``, whose waits end after
    ``NETS_KV_TIMEOUT`` plus ``MARGIN``: to its Unix socket when it is ``near`` (shares
    this machine's memory) and has one, else (or when that socket is out of reach: another
    network namespace) to its TCP port."""
    got = gather([(i, s.channel.remote()) for i, s in enumerate(servers)], what)
    limit = timeout() + MARGIN
    links = []
    for i, (host, port, secret, local) in enumerate(got):
        if near[i] and local is not None:
            try:
                links.append(Link(i, local, secret, limit))
                continue
            except NetsError:
                pass
        links.append(Link(i, (host, port), secret, limit))
    return links


def _cut_state(state, lo, hi):
    """Rows ``[lo, hi)`` of every array of an optimizer state."""
    if state is None:
        return None
    if isinstance(state, NDArray):
        return cut(state, lo, hi)
    return tuple(_cut_state(s, lo, hi) for s in state)


def _join_state(shards, shape):
    """One state from ``[(lo, shard state)]``: each array joined along rows."""
    first = shards[0][1]
    if first is None:
        return None
    if isinstance(first, NDArray):
        return join([(lo, s) for lo, s in shards], (shape[0],) + tuple(first.shape[1:]))
    return tuple(_join_state([(lo, s[i]) for lo, s in shards], shape)
                 for i in range(len(first)))
