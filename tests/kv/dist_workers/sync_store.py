"""A worker of the dist_sync store checks (MXNet's nightly dist_sync_kvstore.py, our code):
run by tests/kv/test_dist_sync.py through nets.kv.cluster.run_workers with
NETS_KV_BIGARRAY_BOUND small, so that the big keys are sharded over the servers.
Every expected value is computed here from numpy; any failed check exits non-zero."""
import numpy as np

import nets
from nets.base import NetsError

RATE = 2.0
SHAPE, BIG = (2, 3), (12, 5)  # BIG has >= NETS_KV_BIGARRAY_BOUND elements: sharded
RSP, BIG_RSP = (8, 3), (30, 4)


def updater(key, grad, stored):
    """MXNet's nightly 'test' optimizer: stored += RATE * grad (dense or row_sparse)."""
    stored[:] = stored + grad * RATE


def rsp(rows, shape, value):
    """A row_sparse array holding ``rows`` (sorted unique), every element ``value``."""
    data = np.full((len(rows),) + shape[1:], value, np.float32)
    return nets.nd.sparse.row_sparse_array((data, np.asarray(rows, np.int64)), shape=shape)


def check(got, expected, what):
    got = got.asnumpy() if hasattr(got, "asnumpy") else got
    if not np.array_equal(got, expected):
        raise AssertionError(f"{what}: got\n{got}\nexpected\n{expected}")


def expect_error(pattern, fn):
    try:
        fn()
    except NetsError as e:
        assert pattern in str(e), f"{pattern!r} not in {e}"
        return
    raise AssertionError(f"no NetsError matching {pattern!r}")


kv = nets.kv.create("dist_sync")
rank, nw = kv.rank, kv.num_workers
assert kv.type == "dist_sync"

# -- without an updater the pushed sum replaces the value ---------------------------------
kv.init([0, 1], [nets.nd.ones(SHAPE), nets.nd.zeros(BIG)])
kv.push(0, nets.nd.ones(SHAPE) * (rank + 1))
out = nets.nd.zeros(SHAPE)
kv.pull(0, out=out)
check(out, np.full(SHAPE, sum(range(1, nw + 1)), np.float32), "replace by the sum")
big = np.arange(np.prod(BIG), dtype=np.float32).reshape(BIG)
outs = [nets.nd.zeros(BIG), nets.nd.zeros(BIG)]
kv.push(1, [nets.nd.array(big), nets.nd.array(big * rank)])  # two arrays of one worker: summed
kv.pull(1, out=outs)
for o in outs:
    check(o, big * (nw + sum(range(nw))), "big key, sharded")
kv.barrier()

# -- with MXNet's 'test' updater ---------------------------------------------------------
kv._set_updater(updater)
kv.init([2, 3], [nets.nd.ones(SHAPE), nets.nd.ones(BIG)])
for step in range(3):
    kv.push([2, 3], [nets.nd.ones(SHAPE) * (rank + 1), nets.nd.ones(BIG) * (rank + 1)])
    o2, o3 = nets.nd.zeros(SHAPE), nets.nd.zeros(BIG)
    kv.pull([2, 3], out=[o2, o3])
    total = 1 + (step + 1) * RATE * sum(range(1, nw + 1))
    check(o2, np.full(SHAPE, total, np.float32), f"small key, step {step}")
    check(o3, np.full(BIG, total, np.float32), f"big key, step {step}")

# -- row_sparse keys -----------------------------------------------------------------------
for key, shape in ((4, RSP), (5, BIG_RSP)):
    kv.init(key, rsp(np.arange(shape[0]), shape, 1.0))
    mine = np.arange(rank, shape[0], nw + 1)  # rows this worker pushes
    kv.push(key, rsp(mine, shape, rank + 1))
    expected = np.ones(shape, np.float32)
    for r in range(nw):
        expected[np.arange(r, shape[0], nw + 1)] += RATE * (r + 1)
    ids = np.array([[shape[0] - 1, 0], [3, 0], [shape[0] - 1, 2]])  # 2-D, duplicates, unsorted
    for dtype in (np.int64, np.int32, np.float32):
        out = nets.nd.sparse.zeros("row_sparse", shape)
        kv.row_sparse_pull(key, out=out, row_ids=nets.nd.array(ids, dtype=dtype))
        rows = np.unique(ids)
        check(out.indices, rows, f"key {key}: rows of row_sparse_pull ({dtype.__name__} ids)")
        check(out.data, expected[rows], f"key {key}: values of row_sparse_pull")
    # an empty push (no rows) and an empty pull (no ids)
    kv.push(key, rsp([], shape, 0.0))
    out = nets.nd.sparse.zeros("row_sparse", shape)
    kv.row_sparse_pull(key, out=out, row_ids=nets.nd.array(np.zeros(0), dtype="int64"))
    check(out.indices, np.zeros(0, np.int64), f"key {key}: empty pull")
    kv.row_sparse_pull(key, out=out, row_ids=nets.nd.arange(shape[0], dtype="int64"))
    check(out.asnumpy(), expected, f"key {key}: every row after an empty push")

# -- 2-bit compression with residuals on the workers, against a bit-level reference -----------
T = 0.5
kv.set_gradient_compression({"type": "2bit", "threshold": T})
kv.init(6, nets.nd.zeros(BIG))
pattern = (np.arange(np.prod(BIG), dtype=np.float32).reshape(BIG) % 7 - 3) / 4


def grad_of(r, step):
    return (pattern * (r + 1) * (1 if step % 2 == 0 else -0.5)).astype(np.float32)


residual = [np.zeros(BIG, np.float32) for _ in range(nw)]
expected = np.zeros(BIG, np.float32)
for step in range(3):
    kv.push(6, nets.nd.array(grad_of(rank, step)))
    sent_sum = np.zeros(BIG, np.float32)
    for r in range(nw):
        residual[r] += grad_of(r, step)
        sent = np.where(residual[r] >= T, np.float32(T),
                        np.where(residual[r] <= -T, np.float32(-T), np.float32(0)))
        residual[r] -= sent
        sent_sum += sent
    expected = expected + sent_sum * RATE
    out = nets.nd.zeros(BIG)
    kv.pull(6, out=out)
    check(out, expected, f"2-bit compression, step {step}")

# -- invalid uses --------------------------------------------------------------------------
expect_error("has not been initialized", lambda: kv.push(99, nets.nd.ones(SHAPE)))
expect_error("already initialized", lambda: kv.init(2, nets.nd.ones(SHAPE)))
expect_error("has shape", lambda: kv.push(2, nets.nd.ones((5, 5))))
expect_error("has not been initialized", lambda: kv.pull(98, out=nets.nd.zeros(SHAPE)))
kv.barrier()
print(f"worker {rank} of {nw}: OK")
