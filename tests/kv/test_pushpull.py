"""The fused ``pushpull`` of the distributed stores (one call per server) against
``push`` then ``pull``, bit for bit, on a real Ray cluster (tests/kv/conftest.py), and a
one-worker store against a local store's run of the same exchanges
(``dist_workers/pushpull.py``)."""
import importlib.util
import os

import numpy as np
import pytest

import nets

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "pushpull", os.path.join(HERE, "dist_workers", "pushpull.py"))
pushpull = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pushpull)


def _modes(got):
    """``{mode: {name: array}}`` of ``exchange``'s ``{"mode/name": array}``."""
    modes = {}
    for name, value in got.items():
        mode, name = name.split("/", 1)
        modes.setdefault(mode, {})[name] = value
    return modes


def _same(got, expected, what):
    assert got and sorted(got) == sorted(expected), what
    for name in expected:
        np.testing.assert_array_equal(got[name], expected[name], err_msg=f"{what}: {name}")


@pytest.mark.parametrize("store,workers,servers", [("dist_sync", 1, 1), ("dist_sync", 2, 2),
                                                   ("dist_async", 1, 1), ("dist_async", 2, 2)])
def test_fused_pushpull_equals_push_then_pull(dist_cluster, tmp_path, store, workers, servers):
    """In one launch each worker makes every exchange fused, separate (push then pull)
    and fused without shared memory ("far"), each on keys of its own."""
    codes, out = dist_cluster.run("pushpull.py", workers, servers, args=(store, tmp_path))
    assert codes == [0] * workers, out
    for rank in range(workers):
        modes = _modes(dict(np.load(tmp_path / f"pushpull{rank}.npz")))
        assert sorted(modes) == sorted(pushpull.MODES)
        for mode in ("separate", "far"):
            _same(modes[mode], modes["fused"], f"rank {rank}, {mode}")
    if workers == 1:
        local = _modes(pushpull.exchange(nets.kv.create("local"), sync=store == "dist_sync"))
        for mode in ("fused", "separate"):
            _same(modes["fused"], local[mode], f"local {mode}")
