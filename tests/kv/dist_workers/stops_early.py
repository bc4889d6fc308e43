"""Worker 1 stops after init; the others push and pull, and must fail with the timeout
error naming worker 1 (MXNet hung forever here: apache/mxnet#7888)."""
import sys

import nets
from nets.base import NetsError

kv = nets.kv.create("dist_sync")
kv.init(0, nets.nd.zeros((2, 3)))
if kv.rank == 1:
    print("worker 1 stops early")
    sys.exit(0)
try:
    kv.push(0, nets.nd.ones((2, 3)))
    kv.pull(0, out=nets.nd.zeros((2, 3)))
except NetsError as e:
    print(f"worker {kv.rank} failed: {e}")
    sys.exit(1)
print(f"worker {kv.rank}: no error")
sys.exit(3)
