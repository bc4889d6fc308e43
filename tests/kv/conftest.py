"""The Ray cluster of the distributed-store tests: one per test run, started on first use
on 127.0.0.1 with a capped object store (``nets.kv.cluster.start_local``, as the launcher
starts it), with one store's actors (2 servers and a coordinator) that every test reuses,
emptied between tests. Workers are subprocesses started through
``nets.kv.cluster.run_workers``, the launcher's code path."""
import io
import os
import sys

import pytest

# Ray reads this when imported: "0" puts the cluster these tests start on 127.0.0.1 only
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
HERE = os.path.dirname(os.path.abspath(__file__))
WORKERS = os.path.join(HERE, "dist_workers")
# The tests load some worker scripts as modules (to run them in process on a local store);
# those import their sibling helpers (csr_batches) as the scripts do when run.
sys.path.insert(0, WORKERS)
# The cluster's processes (Ray's, the servers) and the processes the tests start in it
# (workers, the launcher: ``DistCluster.env``) import Ray without rfc3987_syntax (see
# ray_imports/rfc3987_syntax.py); pytest's own process and every other process it starts
# (the notebooks' kernels, for one) are left as they are.
RAY_IMPORTS = os.path.join(HERE, "ray_imports")


def _ray_imports_path():
    """``PYTHONPATH`` with ``RAY_IMPORTS`` first."""
    path = os.environ.get("PYTHONPATH")
    return RAY_IMPORTS + (os.pathsep + path if path else "")
SERVERS = 2
BOUND = "20"  # NETS_KV_BIGARRAY_BOUND in the workers: tiny, so that big keys are sharded


class DistCluster:
    """The session's cluster: ``address``, the reused actors ``group``, ``run``, and
    ``env``, the environment a process the tests start in the cluster adds to theirs."""

    def __init__(self, cluster, address, group):
        self.cluster, self.address, self.group = cluster, address, group
        self.env = {"PYTHONPATH": _ray_imports_path()}

    def run(self, script, workers, servers=SERVERS, args=(), timeout=60, env=None):
        """Run ``dist_workers/script`` as ``workers`` workers of a fresh store on the first
        ``servers`` servers (waits of ``timeout`` seconds); ``(return codes, output)``."""
        self.group.reset(workers, timeout)
        extra = {"NETS_KV_BIGARRAY_BOUND": BOUND, "NETS_KV_TIMEOUT": str(timeout),
                 **self.env, **(env or {})}
        envs = [dict(self.group.environment(r, self.address, servers), **extra)
                for r in range(workers)]
        out = io.StringIO()
        codes = self.cluster.run_workers([sys.executable, os.path.join(WORKERS, script),
                                          *map(str, args)], envs, out)
        return codes, out.getvalue()


@pytest.fixture(scope="session")
def dist_cluster():
    import ray
    from nets.kv import cluster
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = _ray_imports_path()  # (what Ray's processes inherit)
    try:
        address = cluster.start_local(object_store_memory=128 * 2**20)
    finally:
        if path is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = path
    try:
        yield DistCluster(cluster, address, cluster.Group(4, SERVERS))
    finally:
        ray.shutdown()


class CompatPrograms:
    """tests/compat's programs copied (renamed to nets) into ``folder``, with their data:
    ``argv(name)`` gives a program's arguments, ``check(name, result)`` asserts that its
    ``RESULT`` lies in the compat band around MXNet 1.9.1's metric."""

    def __init__(self, folder):
        compat = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                              "compat")
        sys.path.insert(0, compat)
        try:
            from compat_runner import NETS_ROOT, PROGRAMS, prepare
            from make_data import make_all
            from test_compat_programs import REFERENCE, tolerance
        finally:
            sys.path.remove(compat)
        self.folder, self.nets_root, self.reference = folder, NETS_ROOT, REFERENCE
        self._programs, self._tolerance = PROGRAMS, tolerance
        self.data = folder / "data"
        self.data.mkdir()
        make_all(str(self.data), REFERENCE["data_seed"])
        prepare(str(folder), True)

    def path(self, name):
        return str(self.folder / f"{name}.py")

    def argv(self, name):
        return [a.format(d=self.data, w=self.folder) for a in self._programs[name]["args"]]

    def check(self, name, got):
        ref = self.reference["programs"][name]
        assert got["metric"] == ref["metric"]
        assert abs(got["value"] - ref["mean"]) <= self._tolerance(ref), (got, ref)


@pytest.fixture
def compat_programs(tmp_path):
    return CompatPrograms(tmp_path)
