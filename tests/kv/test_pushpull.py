"""The fused ``pushpull`` of the distributed stores (one call per server) against
``push`` then ``pull``, bit for bit, on a real Ray cluster (tests/kv/conftest.py), and a
one-worker store against a local store's run of the same exchanges
(``dist_workers/pushpull.py``)."""
import importlib.util
import os

import numpy as np
import pytest

pytest.importorskip("ray")

import nets

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "pushpull", os.path.join(HERE, "dist_workers", "pushpull.py"))
pushpull = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pushpull)


def _same(got, expected, what):
    assert sorted(got) == sorted(expected), what
    for name in expected:
        np.testing.assert_array_equal(got[name], expected[name], err_msg=f"{what}: {name}")


@pytest.mark.parametrize("store,workers,servers", [("dist_sync", 1, 1), ("dist_sync", 2, 2),
                                                   ("dist_async", 1, 1), ("dist_async", 2, 2)])
def test_fused_pushpull_equals_push_then_pull(dist_cluster, tmp_path, store, workers, servers):
    for mode in ("fused", "separate"):
        codes, out = dist_cluster.run("pushpull.py", workers, servers,
                                      args=(store, mode, tmp_path))
        assert codes == [0] * workers, out
    for rank in range(workers):
        fused = dict(np.load(tmp_path / f"fused{rank}.npz"))
        _same(fused, dict(np.load(tmp_path / f"separate{rank}.npz")), f"rank {rank}")
    if workers == 2 and store == "dist_sync":  # servers reached without shared memory
        codes, out = dist_cluster.run("pushpull.py", workers, servers,
                                      args=(store, "fused", tmp_path, "far"))
        assert codes == [0] * workers, out
        for rank in range(workers):
            _same(dict(np.load(tmp_path / f"fusedfar{rank}.npz")),
                  dict(np.load(tmp_path / f"fused{rank}.npz")), f"far, rank {rank}")
    if workers == 1:
        for mode in ("fused", "separate"):
            local = pushpull.exchange(nets.kv.create("local"), mode, sync=store == "dist_sync")
            _same(fused, local, f"local {mode}")
