"""Run by the launcher: records this worker's pid and the store's namespace under
argv[1], then worker 0 kills server 1; pushing to and pulling from the sharded key must
then fail with a NetsError naming the dead server."""
import os
import sys

import ray

import nets
from nets.base import NetsError

folder = sys.argv[1]
kv = nets.kv.create("dist_sync")
with open(os.path.join(folder, f"pid{kv.rank}"), "w") as f:
    f.write(str(os.getpid()))
namespace = os.environ["NETS_KV_NAMESPACE"]
if kv.rank == 0:
    with open(os.path.join(folder, "namespace"), "w") as f:
        f.write(namespace)
kv.init(0, nets.nd.zeros((12, 5)))  # sharded over both servers
if kv.rank == 0:
    ray.kill(ray.get_actor("nets-kv-server-1", namespace=namespace))
kv.barrier()
try:
    kv.push(0, nets.nd.ones((12, 5)))
    kv.pull(0, out=nets.nd.zeros((12, 5)))
except NetsError as e:
    print(f"dead server reported: {e}")
    sys.exit(0)
print("no error after a server died")
sys.exit(3)
