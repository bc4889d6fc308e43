"""A worker of the server-side init and str-key checks (run at several server counts):
a table made on the servers from an initializer and a seed equals the one numpy makes by
the documented per-row-block seeding, whatever the number of servers; str keys push,
pull and row_sparse_pull like int ones, and an int key next to them is refused."""
import numpy as np

import nets
from nets.base import NetsError
from nets.random import BLOCK_ROWS

ROWS = BLOCK_ROWS + 4_464  # two row blocks; sharded (NETS_KV_BIGARRAY_BOUND is small)
SCALE, SEED = 0.5, 11


def expected_table():
    """Row block b drawn from default_rng([SEED, b]): U(-SCALE, SCALE) in float32."""
    parts = []
    for b, rows in enumerate((BLOCK_ROWS, ROWS - BLOCK_ROWS)):
        draw = np.random.default_rng([SEED, b]).random((rows, 2), dtype=np.float32)
        parts.append(draw * np.float32(2 * SCALE) - np.float32(SCALE))
    return np.concatenate(parts)


kv = nets.kv.create("dist_sync")
rank, nw = kv.rank, kv.num_workers
kv.init(["table", "small"], shape=[(ROWS, 2), (3,)], init=nets.init.Uniform(SCALE), seed=SEED)
table = expected_table()
out = nets.nd.zeros((ROWS, 2))
kv.pull("table", out=out)
assert np.array_equal(out.asnumpy(), table), "generated table differs from numpy's"
small = nets.nd.zeros((3,))
kv.pull("small", out=small)
first = np.random.default_rng([SEED, 0]).random(3, dtype=np.float32)
assert np.array_equal(small.asnumpy(), first * np.float32(2 * SCALE) - np.float32(SCALE))

# str keys through an optimizer: each worker's rows, lazily updated
kv.set_optimizer(nets.optim.SGD(learning_rate=1.0))
rows = np.array([3, 40_000 + rank, ROWS - 1])
grad = nets.nd.sparse.row_sparse_array((np.full((3, 2), rank + 1, np.float32), rows),
                                       shape=(ROWS, 2))
kv.push("table", grad)
got = nets.nd.sparse.zeros("row_sparse", (ROWS, 2))
kv.row_sparse_pull("table", out=got, row_ids=nets.nd.array(np.arange(ROWS), dtype="int64"))
expected = table.copy()
for r in range(nw):
    expected[[3, 40_000 + r, ROWS - 1]] -= r + 1
assert np.array_equal(got.asnumpy(), expected), "str-key push and row_sparse_pull"
try:
    kv.init(0, nets.nd.zeros((2,)))
    raise AssertionError("an int key next to str keys was accepted")
except NetsError as e:
    assert "never mixed" in str(e), e
kv.barrier()
print(f"worker {rank}: OK")
