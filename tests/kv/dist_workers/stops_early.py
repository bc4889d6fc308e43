"""The fault run of a worker that stops early: ``python stops_early.py FOLDER``, 3 workers,
a short ``NETS_KV_TIMEOUT``. Worker 1 stops after init; the others must fail with the
store's timeout error instead of hanging (MXNet hung forever here: apache/mxnet#7888):

- workers 0 and 2 push two keys (without waiting);
- worker 2 then pulls the first: the error names worker 1;
- worker 0 prefetches the rows of the second: the prefetch itself raises nothing,
  taking its rows raises the timeout error naming the key and worker 1 (printed as
  ``USE SITE: ...``; the worker then ends normally).

Before making the store every worker connects to Ray and waits until all have (files in
FOLDER), so that the store's first barrier, which the timeout also bounds, does not see
the workers' different start-up times."""
import os
import sys
import time

import nets
from nets.base import NetsError
from nets.kv import cluster

folder = sys.argv[1]
rank, workers = int(os.environ["NETS_KV_RANK"]), int(os.environ["NETS_KV_NUM_WORKERS"])
cluster.connect(os.environ["NETS_KV_ADDRESS"], os.environ["NETS_KV_NAMESPACE"])
open(os.path.join(folder, f"ready{rank}"), "w").close()
deadline = time.monotonic() + 300
while len([f for f in os.listdir(folder) if f.startswith("ready")]) < workers:
    if time.monotonic() > deadline:
        sys.exit(f"worker {rank}: the other workers did not start")
    time.sleep(0.02)

kv = nets.kv.create("dist_sync")
kv.init([0, 5], [nets.nd.zeros((2, 3)), nets.nd.zeros((4, 2))])
if kv.rank == 1:
    print("worker 1 stops early")
    sys.exit(0)
kv.push([0, 5], [nets.nd.ones((2, 3)), nets.nd.ones((4, 2))])
if kv.rank == 0:
    out = nets.nd.sparse.zeros("row_sparse", (4, 2))
    pending = kv.prefetch_rows(5, out, nets.nd.array([1], dtype="int64"))
    try:
        pending.wait()
    except NetsError as e:
        print(f"USE SITE: {e}")
        sys.exit(0)
    sys.exit("the prefetch of a round that never completes returned")
try:
    kv.pull(0, out=nets.nd.zeros((2, 3)))
except NetsError as e:
    print(f"worker {kv.rank} failed: {e}")
    sys.exit(1)
print(f"worker {kv.rank}: no error")
sys.exit(3)
