"""A worker of the dist_async checks (MXNet's nightly dist_async_kvstore.py, our code):
pushes are applied on arrival by the optimizer, which dist_async requires."""
import numpy as np

import nets
from nets.base import NetsError

kv = nets.kv.create("dist_async")
rank, nw = kv.rank, kv.num_workers
SHAPE, BIG = (2, 3), (12, 5)  # BIG is sharded (NETS_KV_BIGARRAY_BOUND is small)
kv.init([0, 1], [nets.nd.zeros(SHAPE), nets.nd.zeros(BIG)])
kv.push(0, nets.nd.ones(SHAPE))
try:
    kv.pull(0, out=nets.nd.zeros(SHAPE))
    raise AssertionError("a dist_async push without an optimizer did not fail")
except NetsError as e:
    assert "set_optimizer" in str(e), e
kv.barrier()  # every worker saw its push refused before rank 0 gives the servers an optimizer
kv.set_optimizer(nets.optim.SGD(learning_rate=1.0))
for _ in range(3):
    kv.push([0, 1], [nets.nd.ones(SHAPE) * (rank + 1), nets.nd.ones(BIG) * (rank + 1)])
kv.barrier()  # every worker's pushes were applied
o0, o1 = nets.nd.zeros(SHAPE), nets.nd.zeros(BIG)
kv.pull([0, 1], out=[o0, o1])
total = -3.0 * sum(range(1, nw + 1))  # w -= lr * g, for every push of every worker
assert np.array_equal(o0.asnumpy(), np.full(SHAPE, total, np.float32)), o0.asnumpy()
assert np.array_equal(o1.asnumpy(), np.full(BIG, total, np.float32)), o1.asnumpy()
kv.barrier()
print(f"worker {rank}: OK")
