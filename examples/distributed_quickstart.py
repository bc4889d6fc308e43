"""nets' distributed key-value store in one script.

Run it as 2 workers with 2 servers on a Ray cluster that the launcher starts on this
machine (bound to 127.0.0.1) and stops when the workers finish:

    python -m nets.kv.launch -n 2 -s 2 -- python examples/distributed_quickstart.py

The script holds no Ray code: ``nets.kv.create("dist_sync")`` finds the cluster, this
worker's rank and the number of workers in the environment the launcher sets. It shows
the store's API (a ``dist_sync`` push sums every worker's value), then trains a logistic
regression over 100,000 sparse features with a ``Trainer`` that hands its gradients to
the store: each worker reads its own part of the data, the servers hold the weight and
apply lazy Adam to the rows each step's batches touched, and every worker's copy of the
weight stays equal to the servers'. ``docs/distributed.md`` shows what it prints.
"""
import numpy as np

import nets
from nets import autograd, data, layers

FEATURES, BATCH, STEPS = 100_000, 256, 60

kv = nets.kv.create("dist_sync")
print(f"worker {kv.rank} of {kv.num_workers}")

# 1. The API. Under dist_sync a pull after a push sees the sum of every worker's push.
# Keys are ints or strs, one kind per store: the Trainer below keys its parameters 0, 1, ...
COUNTS = 100
kv.init(COUNTS, nets.nd.zeros((2, 3)))
kv.push(COUNTS, nets.nd.ones((2, 3)) * (kv.rank + 1))
counts = nets.nd.zeros((2, 3))
kv.pull(COUNTS, out=counts)
print(f"counts after one push per worker: {counts.asnumpy()[0].tolist()}")

# 2. Training. Every worker makes the same click log (seed 0) and reads its own rows.
rows = BATCH * STEPS
X, y, _ = data.make_sparse_dataset(rows * kv.num_workers, FEATURES, 20, seed=0, signal=3.0)
X, y = X[kv.rank * rows:(kv.rank + 1) * rows], y[kv.rank * rows:(kv.rank + 1) * rows]
net = layers.FullyConnectedSparse(FEATURES, 1, weight_grad_stype="row_sparse")
nets.random.seed(0)  # (so that each run prints the same numbers)
net.initialize()  # the store keeps rank 0's initial weight and gives it to every worker
trainer = nets.Trainer(net.collect_params(), "adam", {"learning_rate": 0.05}, kvstore=kv)
loss_fn = nets.loss.SigmoidBinaryCrossEntropyLoss()
total = 0.0
for step in range(STEPS):
    x, label = X[step * BATCH:(step + 1) * BATCH], y[step * BATCH:(step + 1) * BATCH]
    with autograd.record():
        loss = loss_fn(net(x), label)
    loss.backward()
    trainer.step(BATCH)  # one call per server: push the gradient rows, get the new rows
    total += loss.mean().asscalar()
    if step % 20 == 19:
        print(f"steps {step - 19:2d}-{step:2d}: mean loss {total / 20:.4f}")
        total = 0.0

# dist_sync keeps every worker's copy equal to the servers' weight, bit for bit.
weight = net.weight.data().asnumpy()
print(f"weight {weight.shape}, sum {float(np.sum(weight, dtype=np.float64)):.6f}")
