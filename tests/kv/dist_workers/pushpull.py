"""A worker of the fused ``pushpull`` tests: ``python pushpull.py STORE OUT_DIR``.

Runs ``exchange(kv)`` on a store of type STORE and writes every array it pulled to
``OUT_DIR/pushpull{rank}.npz``. ``exchange`` makes each exchange three times, in
lockstep, each time on keys of its own (so that one worker launch serves all three):
``fused`` calls ``kv.pushpull`` (checking that a distributed store makes one ``pushpull``
call per server for it), ``separate`` calls ``kv.push`` then ``kv.pull`` with the same
arguments, and ``far`` calls ``kv.pushpull`` with every array sent in the channel's
frames, as to a server on another machine (no shared memory). The test compares the three bit for
bit, and a one-worker run with a local store's (the test imports this module and runs
``exchange`` on ``nets.kv.create('local')``).

The exchanges cover dense and row_sparse values and outs (a row_sparse out left
unchanged by ``ignore_sparse``, or filled without it), several values and outs per key,
lists of keys, a key sharded over the servers, ``out=None``, the sum replacing the value
(``dist_sync`` only), an updater, an optimizer and 2-bit compression. Values are whole
multiples of powers of two, so that every sum is exact whatever its order. Under
``dist_async`` each worker uses its own keys: its answers then do not depend on when the
other workers' pushes arrive.
"""
import os
import sys
import warnings

import numpy as np

import nets

SMALL, BIG = (3, 4), (12, 5)  # BIG has >= NETS_KV_BIGARRAY_BOUND elements: sharded


def _value(shape, seed, stype="default"):
    rng = np.random.default_rng(seed)
    dense = rng.integers(-8, 9, shape).astype(np.float32) / 4
    if stype == "row_sparse":
        dense[rng.random(shape[0]) < 0.5] = 0
        return nets.nd.array(dense).tostype("row_sparse")
    return nets.nd.array(dense)


MODES = ("fused", "separate", "far")


def exchange(kv, sync=None):
    """Push and pull through ``kv`` in each of ``MODES`` (see the module's docstring);
    returns ``{"MODE/name": numpy array}`` of everything pulled. ``sync`` (default:
    whether ``kv`` is not a ``dist_async`` store) includes the exchanges without an
    optimizer."""
    sync = "async" not in kv.type if sync is None else sync
    rank = kv.rank
    # each mode its own keys; under dist_async each worker pushes its own keys too (every
    # worker inits all of them)
    workers = [0] if sync else range(kv.num_workers)
    bases = {mode: [1000 * m + 100 * r for r in workers] for m, mode in enumerate(MODES)}
    got = {}

    calls = []  # (server, method) of each call a distributed store made
    if hasattr(kv, "_invoke"):
        invoke = kv._invoke
        kv._invoke = lambda server, method, *args: (calls.append((server, method)),
                                                    invoke(server, method, *args))[1]

    def pp(mode, key, value, out=None, ignore_sparse=True):
        if mode == "separate":
            kv.push(key, value)
            kv.pull(key, out=value if out is None else out, ignore_sparse=ignore_sparse)
            return
        near = getattr(kv, "_near", None)
        if mode == "far" and near is not None:
            kv._near = [False] * len(near)
        try:
            calls.clear()
            kv.pushpull(key, value, out=out, ignore_sparse=ignore_sparse)
        finally:
            if near is not None:
                kv._near = near
        servers = [s for s, _ in calls]  # one pushpull call per server, nothing else
        assert len(set(servers)) == len(servers), calls
        assert all(m == "pushpull" for _, m in calls), calls

    def keep(mode, name, arrays):
        for i, a in enumerate(arrays if isinstance(arrays, list) else [arrays]):
            got[f"{mode}/{name}.{i}"] = a.asnumpy()
            if a.stype == "row_sparse":
                got[f"{mode}/{name}.{i}.rows"] = a.indices.asnumpy()

    def seed(step, k):
        return 1000 * rank + 10 * step + k

    def init(first, values):
        kv.init([b + first + i for mode in MODES for b in bases[mode]
                 for i in range(len(values))], values * len(MODES) * len(workers))

    keys = {mode: [bases[mode][0 if sync else rank] + i for i in range(8)] for mode in MODES}
    init(0, [_value(SMALL, 1), _value(BIG, 2), _value(SMALL, 3), _value(BIG, 4, "row_sparse")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the row_sparse outs pull leaves unchanged)
        if sync:  # without an updater the round's sum replaces the value
            for step in range(2):
                for mode, k in keys.items():
                    out = nets.nd.zeros(SMALL)
                    pp(mode, k[0], _value(SMALL, seed(step, 0)), out)
                    keep(mode, f"replace.{step}.small", out)
                    outs = [nets.nd.zeros(BIG), nets.nd.zeros(BIG)]
                    pp(mode, k[1], [_value(BIG, seed(step, 1)),
                                    _value(BIG, seed(step, 2), "row_sparse")], outs)
                    keep(mode, f"replace.{step}.big", outs)
                    value = _value(BIG, seed(step, 3), "row_sparse")  # the held value: rsp
                    dense, sparse = nets.nd.zeros(BIG), nets.nd.sparse.zeros("row_sparse", BIG)
                    pp(mode, k[3], value, [dense, sparse])  # the rsp out is left as it was
                    keep(mode, f"replace.{step}.rsp", [dense, sparse])
            kv._set_updater(_updater)
            for step in range(2):
                for mode, k in keys.items():
                    small = _value(SMALL, seed(step, 4))
                    pp(mode, k[2], small)  # out=None: pulled into the value
                    keep(mode, f"updater.{step}.none", small)
                    outs = [nets.nd.zeros(SMALL), nets.nd.zeros(BIG)]
                    pp(mode, [k[0], k[1]], [_value(SMALL, seed(step, 5)),
                                            _value(BIG, seed(step, 6))], outs)
                    keep(mode, f"updater.{step}.list", outs)
        kv.set_optimizer(nets.optim.SGD(learning_rate=0.25, momentum=0.5, lazy_update=True))
        init(4, [_value(BIG, 5), _value(SMALL, 6)])
        for step in range(3):
            for mode, k in keys.items():
                outs = [nets.nd.zeros(BIG), nets.nd.zeros(BIG),
                        nets.nd.sparse.zeros("row_sparse", BIG)]
                pp(mode, k[4], _value(BIG, seed(step, 7), "row_sparse"), outs,
                   ignore_sparse=False)
                keep(mode, f"optimizer.{step}.lazy", outs)
                outs = [nets.nd.zeros(BIG), nets.nd.zeros(SMALL)]
                pp(mode, [k[1], k[5]], [[_value(BIG, seed(step, 8)), _value(BIG, seed(step, 9))],
                                        _value(SMALL, seed(step, 10))], outs)
                keep(mode, f"optimizer.{step}.list", outs)
        kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
        init(6, [_value(BIG, 7)])
        for step in range(3):
            for mode, k in keys.items():
                out = nets.nd.zeros(BIG)
                pp(mode, k[6], _value(BIG, seed(step, 11)), out)
                keep(mode, f"2bit.{step}", out)
    kv.barrier()
    return got


def _updater(key, grad, stored):
    """MXNet's nightly 'test' optimizer: stored += 2 * grad."""
    stored[:] = stored + grad * 2


def main():
    store, out_dir = sys.argv[1:3]
    kv = nets.kv.create(store)
    got = exchange(kv)
    np.savez(os.path.join(out_dir, f"pushpull{kv.rank}.npz"), **got)
    print(f"worker {kv.rank}: {len(got)} arrays")


if __name__ == "__main__":
    main()
