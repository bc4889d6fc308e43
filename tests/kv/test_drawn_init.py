"""A parameter ``Module.init_params`` drew by row blocks (``nets.init.draw``) reaches a
distributed store as its spec: the servers make their rows (``nets.kv.shard.generate``), no
table crosses the wire, no worker pulls it back, and the run equals, bit for bit, the same
program in one process (``dist_workers/drawn_init.py``)."""
import importlib.util
import json
import os

import numpy as np

import nets

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "drawn_init", os.path.join(HERE, "dist_workers", "drawn_init.py"))
drawn_init = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(drawn_init)


def test_drawn_tables_are_made_on_the_servers_and_equal_a_single_process_run(dist_cluster,
                                                                             tmp_path):
    codes, out = dist_cluster.run("drawn_init.py", 1, servers=2, args=(tmp_path,),
                                  timeout=120)
    assert codes == [0], out
    local = tmp_path / "local"
    local.mkdir()
    drawn_init.train(nets.kv.create("local"), str(local), 0)
    got, expected = np.load(tmp_path / "drawn0.npz"), np.load(local / "drawn0.npz")
    assert sorted(got.files) == sorted(expected.files)
    for name in got.files:
        np.testing.assert_array_equal(got[name], expected[name], err_msg=name)
    np.testing.assert_array_equal(got["table_store"], got["table_init"])
    # one init call (the small bias: 4 bytes, by value); the tables went as specs
    stats = json.loads((tmp_path / "stats0.json").read_text())
    assert stats == {"calls": 1, "bytes_sent": 4, "bytes_received": 0}, stats


def test_every_worker_holds_the_drawn_tables_without_pulling_them(dist_cluster, tmp_path):
    codes, out = dist_cluster.run("drawn_init.py", 2, servers=2, args=(tmp_path,),
                                  timeout=120)
    assert codes == [0, 0], out
    first = np.load(tmp_path / "drawn0.npz")
    second = np.load(tmp_path / "drawn1.npz")
    for name in ("weight_init", "table_init", "bias_init", "weight", "table", "bias"):
        np.testing.assert_array_equal(first[name], second[name], err_msg=name)
    for rank, sent in ((0, 4), (1, 0)):  # rank 0 sends the bias; nobody pulls anything
        stats = json.loads((tmp_path / f"stats{rank}.json").read_text())
        assert stats == {"calls": 1 if rank == 0 else 0, "bytes_sent": sent,
                         "bytes_received": 0}, (rank, stats)
