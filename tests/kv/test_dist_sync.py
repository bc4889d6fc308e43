"""The distributed stores on a real Ray cluster (tests/kv/conftest.py): worker processes
run the scripts of ``dist_workers/``, which check their values against numpy and exit
non-zero on a mismatch; exactness tests compare the workers' parameters with a local
Trainer run here."""
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

import nets
from nets.ops import add_n

HERE = os.path.dirname(os.path.abspath(__file__))


def _module(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, "dist_workers",
                                                                     f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


train = _module("train")
async_trainer = _module("async_trainer")
prefetch = _module("prefetch")


def _ok(codes, out, workers):
    assert codes == [0] * workers, out
    return out


@pytest.mark.parametrize("workers,servers", [(2, 2), (3, 2), (4, 1)])
def test_dist_sync_store(dist_cluster, workers, servers):
    out = _ok(*dist_cluster.run("sync_store.py", workers, servers), workers)
    assert out.count(": OK") == workers


def _local(workers, steps, states=None, start=0, net=None):
    """Train the model here for ``steps`` steps (from step ``start``): each step's gradient
    is the sum of the ``workers`` workers' batch gradients (add_n in rank order, as the
    servers merge them), applied by a store-less Trainer."""
    net = net or train.build()
    trainer = nets.Trainer(net.collect_params(), train.optimizer())
    if states is not None:
        trainer.load_states(states)
    params = list(net.collect_params().values())
    for step in range(start, start + steps):
        grads = []
        for rank in range(workers):
            train.gradients(net, *train.batch(rank, step))
            grads.append([p.grad().copy() for p in params])
        for p, gs in zip(params, zip(*grads)):
            p.grad()[:] = gs[0] if workers == 1 else add_n(*gs)
        trainer.step(train.BATCH)
    return net


def _same_params(tmp_path, workers, expected):
    assert len(expected) == 4
    for rank in range(workers):
        got = np.load(tmp_path / f"params{rank}.npz")
        assert len(got.files) == 4
        for i, value in enumerate(expected):
            np.testing.assert_array_equal(got[f"arr_{i}"], value, err_msg=f"{rank}: {i}")


def test_dist_sync_trainer_equals_a_local_run_on_the_summed_gradients(dist_cluster, tmp_path):
    """Every worker's copy of every parameter, bit for bit: the row_sparse embedding (read
    back from the store), and whole, as the worker holds them, the dense-weight embedding
    with a row_sparse gradient (of which each step brings back only the rows the round
    changed, so rows only another worker's batch touched come from the round's answer)
    and the dense layer. (One worker: the next test.)"""
    _ok(*dist_cluster.run("train.py", 2, args=("dist_sync", 4, tmp_path)), 2)
    _same_params(tmp_path, 2, train.params(_local(2, 4)))


def test_dist_sync_trainer_asking_for_each_batchs_rows_equals_a_local_run(dist_cluster,
                                                                          tmp_path):
    """As the test before, with the row_sparse embedding asking for each batch's rows
    (``row_sparse_data``) before its forward: it then holds only those rows, and each
    step's answer carries only those of them (no other worker's rows), bit for bit."""
    _ok(*dist_cluster.run("train.py", 2, args=("dist_sync", 4, tmp_path),
                          env={"TRAIN_ASKS_ROWS": "1"}), 2)
    _same_params(tmp_path, 2, train.params(_local(2, 4)))


def test_one_dist_worker_equals_a_local_trainer_and_its_states_continue_locally(dist_cluster,
                                                                                tmp_path):
    """One dist_sync worker's parameters equal a local Trainer's, bit for bit (as in the
    test before), and its optimizer states, saved then loaded by a local Trainer, continue
    as the local run does."""
    _ok(*dist_cluster.run("train.py", 1, args=("dist_sync", 3, tmp_path, "save")), 1)
    _same_params(tmp_path, 1, train.params(_local(1, 3)))
    net = train.build()
    saved = np.load(tmp_path / "params0.npz")
    for i, p in enumerate(net.collect_params().values()):
        p.set_data(nets.nd.array(saved[f"arr_{i}"]).tostype(p.stype))
    resumed = train.params(_local(1, 2, states=str(tmp_path / "states0.npz"), start=3, net=net))
    straight = train.params(_local(1, 5))
    for i, value in enumerate(straight):
        np.testing.assert_array_equal(resumed[i], value, err_msg=str(i))


@pytest.mark.parametrize("workers", [1, 2])
def test_prepare_prefetches_the_rows_with_the_results_of_a_blocking_pull(dist_cluster,
                                                                         tmp_path, workers):
    """Module.prepare's pull left in flight until the next forward gives every worker the
    weights a pull taken at once gives, bit for bit (a prepare never used in between), and
    one worker's equal a local store's run of both modes; the worker also checks that a
    prefetch right after a non-blocking push sees the push's round, and that a dropped
    one writes nothing."""
    # (one worker: compared with the local runs only, which stand for its blocking run)
    modes = ("blocking", "prefetch") if workers > 1 else ("prefetch",)
    for mode in modes:
        out = _ok(*dist_cluster.run("prefetch.py", workers, args=(mode, tmp_path)), workers)
    assert out.count(" ok") == workers, out
    if workers == 1:
        local = tmp_path / "local"
        local.mkdir()
        for mode in ("blocking", "prefetch"):
            prefetch.train(nets.kv.create("local"), mode, str(local))
            _same_npz(local / f"{mode}0.npz", tmp_path / "prefetch0.npz", f"local {mode}")
    else:
        for rank in range(workers):
            _same_npz(tmp_path / f"prefetch{rank}.npz", tmp_path / f"blocking{rank}.npz",
                      f"rank {rank}")


def _same_npz(got, expected, what):
    got, expected = np.load(got), np.load(expected)
    for name in ("weight", "bias"):
        np.testing.assert_array_equal(got[name], expected[name], err_msg=f"{what}: {name}")


def test_a_worker_that_stops_early_makes_the_others_fail_naming_it(dist_cluster, tmp_path):
    """Worker 1 stops after init: worker 2's push and pull fail naming it, and worker 0's
    prefetched row pull raises where its rows are taken, naming the key and worker 1
    (``dist_workers/stops_early.py``; its workers meet before the short timeout runs)."""
    codes, out = dist_cluster.run("stops_early.py", 3, args=(tmp_path,), timeout=4)
    assert codes == [0, 0, 1], out
    lines = {line[:3]: line for line in out.splitlines()
             if line.startswith(("[0] USE SITE: ", "[2] worker 2 failed: "))}
    assert sorted(lines) == ["[0]", "[2]"], out
    assert "key 5" in lines["[0]"] and "key 0" in lines["[2]"], out
    for line in lines.values():
        assert "workers [1] did not" in line and "NETS_KV_TIMEOUT" in line, out


@pytest.mark.parametrize("workers,servers", [(2, 2), (3, 2), (4, 1)])
def test_dist_async_applies_each_push_on_arrival(dist_cluster, workers, servers):
    out = _ok(*dist_cluster.run("async_store.py", workers, servers), workers)
    assert out.count(": OK") == workers


def test_a_dist_async_worker_holds_its_own_rows_exactly_and_others_stale(dist_cluster,
                                                                         tmp_path):
    """dist_async's documented staleness (nets.kv.training): a worker's copy of a dense
    weight with a row_sparse gradient equals the store on the rows its own updates
    changed and keeps the value last received elsewhere; a full pull brings every row.
    The expectation is each worker's rows trained alone by a local Trainer (a row's
    update depends on that row only)."""
    workers, steps = 2, 4
    _ok(*dist_cluster.run("async_trainer.py", workers, args=(steps, tmp_path)), workers)
    initial = async_trainer.build(workers).weight.data().asnumpy()
    final = initial.copy()
    for rank in range(workers):
        net = async_trainer.build(workers)
        trainer = nets.Trainer(net.collect_params(), async_trainer.optimizer())
        async_trainer.train(net, trainer, rank, steps)
        own = slice(async_trainer.OWN * rank, async_trainer.OWN * (rank + 1))
        final[own] = net.weight.data().asnumpy()[own]
    for rank in range(workers):
        got = np.load(tmp_path / f"async{rank}.npz")
        own = np.zeros(len(initial), bool)
        own[async_trainer.OWN * rank:async_trainer.OWN * (rank + 1)] = True
        np.testing.assert_array_equal(got["copy"][own], final[own])  # exact
        np.testing.assert_array_equal(got["copy"][~own], initial[~own])  # stale
        np.testing.assert_array_equal(got["pulled"], final)
    assert not np.array_equal(final, initial)


@pytest.mark.parametrize("workers,servers", [(1, 1), (2, 2)])
def test_servers_make_a_table_from_an_initializer_and_str_keys_work(dist_cluster, workers,
                                                                     servers):
    out = _ok(*dist_cluster.run("generated_str_keys.py", workers, servers), workers)
    assert out.count(": OK") == workers


def test_the_cluster_listens_on_the_loopback_address_only(dist_cluster):
    import psutil
    me = psutil.Process()
    listening = []
    for proc in [me] + me.children(recursive=True):
        try:
            conns = proc.net_connections(kind="inet")
        except psutil.NoSuchProcess:
            continue
        listening += [(proc.name(), c.laddr) for c in conns if c.status == psutil.CONN_LISTEN]
    assert listening, "no listening socket found: the check would prove nothing"
    loopback = {"127.0.0.1", "::ffff:127.0.0.1"}  # (the second: IPv4 loopback on a v6 socket)
    assert all(addr.ip in loopback for _, addr in listening), listening
    names = {name for name, _ in listening}
    assert not any("dashboard" in n and "agent" not in n for n in names), names


def test_launcher_cleans_up_and_a_dead_server_is_a_clear_error(dist_cluster, tmp_path):
    import psutil
    import ray
    pids = tmp_path / "pids"
    pids.mkdir()
    script = os.path.join(HERE, "dist_workers", "kill_server.py")
    result = subprocess.run(
        [sys.executable, "-m", "nets.kv.launch", "-n", "2", "-s", "2", "--address",
         dist_cluster.address, "--", sys.executable, script, str(pids)],
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, **dist_cluster.env, NETS_KV_BIGARRAY_BOUND="20",
                 NETS_KV_TIMEOUT="20"))
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "[0] dead server reported: " in out and "server 1" in out, out
    # nothing the launcher made outlives it: its actors and its worker processes
    namespace = (pids / "namespace").read_text()
    left = [a for a in ray.util.list_named_actors(all_namespaces=True)
            if a["namespace"] == namespace]
    assert left == [], left
    for f in pids.glob("pid*"):
        assert not psutil.pid_exists(int(f.read_text())), f.name


def test_launcher_runs_the_linear_classification_compat_program(dist_cluster, compat_programs):
    """tests/compat's linear-classification program (MXNet's sparse example, renamed) with
    ``--kvstore dist_sync`` on 2 workers and 2 servers reaches the single-process metric
    within the compat tests' band around MXNet 1.9.1's. Each dist_sync step averages two
    workers' batches, so twice the epochs make the single process's number of updates."""
    import json
    name, seed = "linear_classification", compat_programs.reference["init_seeds"][0]
    result = subprocess.run(
        [sys.executable, "-m", "nets.kv.launch", "-n", "2", "-s", "2", "--address",
         dist_cluster.address, "--", sys.executable, compat_programs.path(name),
         *compat_programs.argv(name), "--kvstore", "dist_sync", "--num-epoch", "10",
         "--seed", str(seed)],
        capture_output=True, text=True, timeout=600, cwd=compat_programs.folder,
        env=dict(os.environ, **dist_cluster.env))
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-3000:]
    line = [x for x in out.splitlines() if x.startswith("[0] RESULT ")]
    assert line, out[-3000:]
    compat_programs.check(name, json.loads(line[0][len("[0] RESULT "):]))
