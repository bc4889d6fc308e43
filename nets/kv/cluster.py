"""The Ray side of the distributed stores: starting or joining a cluster, the store's
actors (``Group``), the worker processes, and the environment that tells a worker's
``nets.kv.create('dist_sync')`` where its store is. Used by ``python -m nets.kv.launch``,
by the store itself and by the tests (one code path).

Security: Ray runs any code a client that reaches its ports sends. A cluster started here
binds the loopback address only (Ray's single-machine mode,
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, and ``node_ip_address=127.0.0.1``), starts no
dashboard, sends no usage statistics, and requires Ray's token authentication
(``RAY_AUTH_MODE=token``, set explicitly: Ray then prints no notice that it turned it on)
with a fresh random token (``RAY_AUTH_TOKEN``) that only the processes started here receive.
"""
import os
import secrets
import subprocess
import sys
import threading
import uuid

import ray
from ray._raylet import Config as ray_config

from ..base import NetsError, env_number
from .server import Coordinator, Server

__all__ = ["ENV", "MARGIN", "timeout", "start_local", "connect", "Group", "run_workers",
           "from_environment"]

# The environment a worker process receives.
ENV = {"address": "NETS_KV_ADDRESS", "namespace": "NETS_KV_NAMESPACE",
       "rank": "NETS_KV_RANK", "num_workers": "NETS_KV_NUM_WORKERS",
       "num_servers": "NETS_KV_NUM_SERVERS"}
TIMEOUT_ENV = "NETS_KV_TIMEOUT"
DEFAULT_TIMEOUT = 300.0
MARGIN = 30.0  # a worker waits this much longer than its servers, which then say why
SERVER_NAME, COORDINATOR_NAME = "nets-kv-server-{}", "nets-kv-coordinator"


def timeout():
    """``NETS_KV_TIMEOUT``: seconds any wait of a distributed store lasts at most."""
    value = env_number(TIMEOUT_ENV, float)
    return DEFAULT_TIMEOUT if value is None else value


def _source_root():
    """The folder holding this ``nets`` package: put first on the actors' and workers'
    ``PYTHONPATH`` so that every process runs the same ``nets``."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # "0": Ray's single-machine mode
INLINE_ENV, INLINE_BYTES = "RAY_max_direct_call_object_size", 16 * 2**20
AUTH_MODE_ENV = "RAY_AUTH_MODE"
STARTUP_PROCESSES = 16  # actor processes Ray may start at once on a cluster started here


def _local_environment():
    """Set, in this process (so in Ray's processes it starts and in the workers), what a
    loopback-only, token-protected, quiet cluster needs (``RAY_AUTH_MODE=token``;
    ``RAY_AUTH_TOKEN``, a fresh random one unless the environment has one). Ray reads
    ``LOOPBACK_ENV`` when it is imported: a process that starts a cluster sets it to "0"
    before importing Ray (``python -m nets.kv.launch`` does)."""
    os.environ[LOOPBACK_ENV] = "0"
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    # What the store's Ray calls carry (the optimizer states of a save or load, megabytes)
    # travels inside the call's message rather than through Ray's object store (Ray's
    # bound: 100 KiB); the data calls have a channel of their own (``nets.kv.channel``).
    os.environ.setdefault(INLINE_ENV, str(INLINE_BYTES))
    # Only the processes the store needs: no idle Ray worker started ahead for tasks
    # (nets runs none), and the store's actors' processes started together, not one at
    # a time (Ray's default: as many at once as the node has CPUs, here one).
    os.environ.setdefault("RAY_prestart_worker_first_driver", "0")
    os.environ.setdefault("RAY_enable_worker_prestart", "0")
    os.environ.setdefault("RAY_worker_maximum_startup_concurrency", str(STARTUP_PROCESSES))
    # Token authentication, always, with this token (a caller's own RAY_AUTH_TOKEN is kept).
    # Left unset, RAY_AUTH_MODE makes ray.init turn token mode on by itself and log "Token
    # authentication is enabled for this Ray cluster. Set RAY_AUTH_MODE=disabled to opt
    # out" at every start; set, it is used as given, without a message. A caller's
    # RAY_AUTH_MODE=disabled is overridden: a cluster started here never runs without it.
    os.environ[AUTH_MODE_ENV] = "token"
    os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(32))
    # Ray reads its settings (the authentication mode, the inline bound above) when it is
    # imported; re-read them, as ray.init does when it turns token mode on itself.
    ray_config.initialize("")
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = _source_root() + (os.pathsep + path if path else "")


def start_local(object_store_memory=256 * 2**20, num_cpus=1, attempts=3):
    """Start a new Ray cluster on this machine, bound to 127.0.0.1, with this process as
    its driver (even where ``RAY_ADDRESS`` is set or a ``ray start`` cluster runs); returns
    its address (``ray.shutdown()`` stops it). Ray gives its agents a fixed time to start,
    which a busy machine can exceed: a failed start is retried."""
    _local_environment()
    for attempt in range(attempts):
        try:
            # address="local": a new cluster, never one that RAY_ADDRESS or the record of
            # the last `ray start` on this machine (Ray's temp folder) would otherwise join
            info = ray.init(address="local", _node_ip_address="127.0.0.1",
                            include_dashboard=False,
                            object_store_memory=int(object_store_memory), num_cpus=num_cpus,
                            namespace="nets-kv-launch", logging_level="warning")
            break
        except Exception as e:
            ray.shutdown()
            if attempt + 1 == attempts:
                raise NetsError(f"could not start a local Ray cluster ({attempts} attempts): "
                                f"{e}") from None
    address = info.address_info["gcs_address"]
    if not address.startswith("127.0.0.1:"):
        ray.shutdown()
        raise NetsError(f"the local Ray cluster bound {address}, not the loopback address: "
                        f"set {LOOPBACK_ENV}=0 before this process imports ray")
    return address


def connect(address, namespace):
    """Join the cluster at ``address`` as a driver in ``namespace`` (once per process)."""
    if not ray.is_initialized():
        ray.init(address=address, namespace=namespace, logging_level="warning",
                 log_to_driver=False)


def gather(refs, what, names=None):
    """The results of ``[(server index or None, ObjectRef)]``, waiting at most
    ``NETS_KV_TIMEOUT`` plus ``MARGIN`` (the actors time out first and say why): a
    ``NetsError`` raised by an actor is raised here as it was; a dead actor or a lost
    result is a ``NetsError`` naming the server."""
    try:
        return ray.get([r for _, r in refs], timeout=timeout() + MARGIN)
    except ray.exceptions.RayTaskError as e:
        cause = e.cause
        if isinstance(cause, NetsError):
            raise type(cause)(*cause.args) from None
        raise NetsError(f"{what}: a store actor failed: {cause!r}") from None
    except ray.exceptions.RayActorError as e:
        dead = [i for i, r in refs if i is not None and _dead(r)]
        who = f"server {dead[0]}" if dead else "a store actor"
        raise NetsError(f"{what}: {who} of the distributed store is dead ({e.__class__.__name__}"
                        f"); the store cannot continue: restart the job") from None
    except ray.exceptions.GetTimeoutError:
        raise NetsError(f"{what}: no answer from the store's actors within "
                        f"{timeout() + MARGIN:g} s") from None


def _dead(ref):
    try:
        ray.get(ref, timeout=0)
    except ray.exceptions.RayActorError:
        return True
    except Exception:
        return False
    return False


class Group:
    """The actors of one distributed store: ``num_servers`` servers and a coordinator,
    named in ``namespace`` (each launch its own). Owned by the process that made them:
    they end with it (Ray's fate sharing), or at ``close()``."""

    def __init__(self, num_workers, num_servers, namespace=None):
        if num_workers < 1 or num_servers < 1:
            raise NetsError(f"a distributed store needs >= 1 worker and >= 1 server, got "
                            f"{num_workers} workers, {num_servers} servers")
        self.num_workers, self.num_servers = num_workers, num_servers
        self.namespace = namespace or f"nets-kv-{uuid.uuid4().hex[:12]}"
        limit = timeout()
        opts = {"num_cpus": 0, "namespace": self.namespace, "max_restarts": 0}
        self.servers = [ray.remote(Server).options(name=SERVER_NAME.format(i), **opts)
                        .remote(i, num_workers, limit) for i in range(num_servers)]
        self.coordinator = ray.remote(Coordinator).options(name=COORDINATOR_NAME, **opts) \
            .remote(num_workers, limit)
        self.reset(num_workers)  # (waits until every actor runs)

    def reset(self, num_workers, limit=None):
        """Empty every actor for a new job of ``num_workers`` workers (``limit``: the
        seconds a wait lasts; default ``NETS_KV_TIMEOUT``)."""
        if not 1 <= num_workers:
            raise NetsError(f"a distributed store needs >= 1 worker, got {num_workers}")
        self.num_workers = num_workers
        limit = timeout() if limit is None else limit
        gather([(i, s.reset.remote(num_workers, limit)) for i, s in enumerate(self.servers)]
               + [(None, self.coordinator.reset.remote(num_workers, limit))],
               "starting the store")

    def environment(self, rank, address, num_servers=None):
        """The environment variables of worker ``rank`` (joining the cluster at
        ``address``; using the first ``num_servers`` servers, default all)."""
        return {ENV["address"]: address, ENV["namespace"]: self.namespace,
                ENV["rank"]: str(rank), ENV["num_workers"]: str(self.num_workers),
                ENV["num_servers"]: str(num_servers or self.num_servers)}

    def close(self):
        """Stop the actors."""
        for actor in self.servers + [self.coordinator]:
            ray.kill(actor)


def run_workers(cmd, environments, out=None):
    """Run ``cmd`` (an argument list) once per environment in ``environments`` (added to
    this process's), streaming each one's output as lines prefixed ``[rank]`` to ``out``
    (default stdout). Returns the return codes. On an exception (Ctrl-C) every worker
    still running is terminated before it propagates."""
    out = out or sys.stdout
    procs, threads, lock = [], [], threading.Lock()

    def stream(rank, pipe):
        for line in pipe:
            with lock:
                out.write(f"[{rank}] {line}")
                out.flush()

    try:
        for rank, extra in enumerate(environments):
            env = dict(os.environ, **extra)
            p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, bufsize=1)
            procs.append(p)
            t = threading.Thread(target=stream, args=(rank, p.stdout), daemon=True)
            t.start()
            threads.append(t)
        codes = [p.wait() for p in procs]
        for t in threads:
            t.join()
        return codes
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


def from_environment(what):
    """``(rank, num_workers, servers, coordinator)`` of the store this worker joins, from
    the environment ``Group.environment`` made (connecting to the cluster)."""
    missing = [v for v in ENV.values() if v not in os.environ]
    if missing:
        raise NetsError(f"{what}: a distributed store (nets[dist]) runs in worker processes "
                        f"started by 'python -m nets.kv.launch -n WORKERS -- COMMAND'; the "
                        f"environment lacks {missing}")
    try:
        rank, num_workers, num_servers = (int(os.environ[ENV[k]]) for k in
                                          ("rank", "num_workers", "num_servers"))
    except ValueError:
        raise NetsError(f"{what}: {ENV['rank']}, {ENV['num_workers']} and "
                        f"{ENV['num_servers']} must be whole numbers") from None
    if not (0 <= rank < num_workers and num_servers >= 1):
        raise NetsError(f"{what}: rank {rank} of {num_workers} workers, {num_servers} "
                        f"servers: expected 0 <= rank < workers and servers >= 1")
    namespace = os.environ[ENV["namespace"]]
    connect(os.environ[ENV["address"]], namespace)
    try:
        servers = [ray.get_actor(SERVER_NAME.format(i), namespace=namespace)
                   for i in range(num_servers)]
        coordinator = ray.get_actor(COORDINATOR_NAME, namespace=namespace)
    except ValueError as e:
        raise NetsError(f"{what}: the store's actors are not running in namespace "
                        f"{namespace!r} ({e})") from None
    return rank, num_workers, servers, coordinator
