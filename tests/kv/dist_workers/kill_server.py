"""Run by the launcher: records this worker's pid and the store's namespace under
argv[1], then worker 0 kills server 1 and waits until Ray reports it dead (``ray.kill``
only asks for it to end: until it has, it still serves its channel); pushing to and
pulling from the sharded key must then fail with a NetsError naming the dead server."""
import os
import sys
import time

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
    server = ray.get_actor("nets-kv-server-1", namespace=namespace)
    ray.kill(server)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            ray.get(server.set_sync.remote(True), timeout=5)
        except ray.exceptions.RayActorError:
            break
        time.sleep(0.05)
kv.barrier()
try:
    kv.push(0, nets.nd.ones((12, 5)))
    kv.pull(0, out=nets.nd.zeros((12, 5)))
except NetsError as e:
    print(f"dead server reported: {e}")
    sys.exit(0)
print("no error after a server died")
sys.exit(3)
