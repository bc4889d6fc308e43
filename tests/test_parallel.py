"""nets.parallel: the thread count (knob, environment, cgroup/affinity detection), how calls
are split, and the behaviour users rely on: every parallel kernel honours the count, an idle
process uses no CPU, a forked child works, concurrent training equals serial training,
nested calls complete, errors propagate and Ctrl-C interrupts. No test times anything
except as a hang guard."""
import os
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import nets
from nets import autograd, nd, parallel
from nets import layers as L
from nets.base import NetsError

HANG_GUARD = 300  # seconds: only to fail a test that hangs instead of blocking the run


@pytest.fixture
def threads(monkeypatch):
    """``threads(n)`` sets the thread count for one test (restored afterwards) and lets
    every call, however small, use all of them."""
    monkeypatch.setattr(parallel, "_setting", None)
    monkeypatch.setattr(parallel, "GRAIN", 1)

    def use(n):
        nets.set_num_threads(n)
    return use


def _python(code, env=None, **kw):
    """Run ``code`` in a fresh interpreter in this checkout."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=root,
                          capture_output=True, text=True, timeout=HANG_GUARD,
                          env={**os.environ, **(env or {})}, **kw)


# -- the knob ---------------------------------------------------------------------------------

def test_set_and_get_num_threads(threads):
    nets.set_num_threads(3)
    assert nets.get_num_threads() == 3
    assert parallel.num_threads_source() == "set_num_threads"
    nets.set_num_threads(1)
    assert nets.get_num_threads() == 1


@pytest.mark.parametrize("bad", [0, -2, 1.5, "2", True, None])
def test_set_num_threads_rejects(threads, bad):
    with pytest.raises(NetsError, match=r"set_num_threads: n=.*expected an int >= 1"):
        nets.set_num_threads(bad)


def test_environment_variable():
    assert parallel._from_environment({"NETS_NUM_THREADS": "5"}) == (5, "NETS_NUM_THREADS")
    assert parallel._from_environment({"NETS_NUM_THREADS": " 1 "}) == (1, "NETS_NUM_THREADS")
    assert parallel._from_environment({}) == parallel.available_cpus()
    assert parallel._from_environment({"NETS_NUM_THREADS": ""}) == parallel.available_cpus()
    for bad in ("0", "-1", "two", "1.5"):
        with pytest.raises(NetsError, match=f"NETS_NUM_THREADS='{bad}': expected an integer"):
            parallel._from_environment({"NETS_NUM_THREADS": bad})


def test_environment_variable_read_by_a_fresh_process():
    proc = _python("import nets, nets.parallel as p; "
                   "print(nets.get_num_threads(), p.num_threads_source())",
                   env={"NETS_NUM_THREADS": "3"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["3", "NETS_NUM_THREADS"]


def _cgroup(tmp_path, files, self_cgroup="0::/\n"):
    """A fake cgroup tree under ``tmp_path``: ``files`` maps relative paths to contents."""
    root = tmp_path / "cgroup"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text + "\n")
    (tmp_path / "self").write_text(self_cgroup)
    return dict(cgroup_root=str(root), self_cgroup=str(tmp_path / "self"))


@pytest.mark.parametrize("files, self_cgroup, quota, cpus", [
    ({"cpu.max": "200000 100000"}, "0::/\n", 2.0, 2),  # docker --cpus=2, cgroup v2
    ({"cpu.max": "150000 100000"}, "0::/\n", 1.5, 2),  # rounded up
    ({"cpu.max": "20000 100000"}, "0::/\n", 0.2, 1),  # at least 1
    ({"cpu.max": "max 100000"}, "0::/\n", None, 8),  # no quota: the affinity mask
    ({"cpu.max": "1600000 100000"}, "0::/\n", 16.0, 8),  # a quota above the mask
    ({"a/b/cpu.max": "max 100000", "a/cpu.max": "300000 100000", "cpu.max": "max 100000"},
     "0::/a/b\n", 3.0, 3),  # an ancestor's quota applies
    ({"a/b/cpu.max": "400000 100000", "a/cpu.max": "600000 100000"}, "0::/a/b\n", 4.0, 4),
    ({"cpu,cpuacct/cpu.cfs_quota_us": "50000", "cpu,cpuacct/cpu.cfs_period_us": "100000"},
     "4:memory:/x\n3:cpu,cpuacct:/\n", 0.5, 1),  # cgroup v1
    ({"cpu/docker/c1/cpu.cfs_quota_us": "300000", "cpu/docker/c1/cpu.cfs_period_us": "100000"},
     "3:cpuacct,cpu:/docker/c1\n", 3.0, 3),  # v1, the process in a child cgroup
    ({"cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000"}, "1:cpu:/\n", None, 8),
    ({"cpu.max": "garbage"}, "0::/\n", None, 8),  # unreadable: ignored
    ({}, "", None, 8),  # no cgroup files at all
])
def test_cpu_detection_from_cgroup_files(tmp_path, files, self_cgroup, quota, cpus):
    where = _cgroup(tmp_path, files, self_cgroup)
    found = parallel.cgroup_cpu_quota(**where)
    assert (found and found[0]) == quota
    n, source = parallel.available_cpus(affinity=8, **where)
    assert n == cpus
    if quota is not None and cpus < 8:
        assert source == f"cgroup CPU quota ({found[1]})"
        assert found[1].startswith(where["cgroup_root"])
    else:
        assert source == "affinity mask"


def test_detection_without_a_quota_uses_the_affinity_mask(tmp_path):
    where = _cgroup(tmp_path, {})
    assert parallel.available_cpus(**where) == (len(os.sched_getaffinity(0)), "affinity mask")


# -- how a call is split ----------------------------------------------------------------------

def _chunks(count, **kw):
    """The chunks ``parallel_for`` ran and the threads that ran them."""
    seen, lock = [], threading.Lock()

    def body(lo, hi):
        with lock:
            seen.append((lo, hi, threading.get_ident()))
    with parallel.count_threads() as counts:
        parallel.parallel_for(body, count, **kw)
    return sorted(seen), counts


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("count", [0, 1, 2, 5, 97, 1000])
def test_chunks_cover_the_range_once(threads, n, count):
    threads(n)
    seen, counts = _chunks(count)
    covered = [i for lo, hi, _ in seen for i in range(lo, hi)]
    assert covered == list(range(count))
    assert all(lo < hi for lo, hi, _ in seen)
    distinct = len({t for _, _, t in seen})
    assert distinct <= n
    assert counts == ([] if count == 0 else [distinct])


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_the_thread_count_is_reached_and_not_exceeded(threads, n):
    """``n`` chunks that each wait until ``n`` threads are inside one: the call completes
    only if ``n`` threads ran chunks at once; 4n chunks never see more than ``n``."""
    threads(n)
    barrier = threading.Barrier(n, timeout=HANG_GUARD)
    ran = set()

    def body(lo, hi):
        ran.add(threading.get_ident())
        barrier.wait()
    with parallel.count_threads() as counts:
        parallel.parallel_for(body, n, chunk=1)
    assert len(ran) == n and counts == [n]
    seen, counts = _chunks(4 * n, chunk=1)
    assert len({t for _, _, t in seen}) == counts[0] <= n


@pytest.mark.parametrize("cap", [1, 2, 3])
def test_a_call_capped_at_fewer_threads_uses_at_most_those(threads, cap):
    """``threads=`` caps one call below the thread count (a parser leaving the training
    thread its core): ``cap`` threads are reached (chunks waiting for ``cap`` of them at
    once), never more."""
    threads(4)
    barrier = threading.Barrier(cap, timeout=HANG_GUARD)

    def body(lo, hi):
        barrier.wait()
    with parallel.count_threads() as counts:
        parallel.parallel_for(body, cap, chunk=1, threads=cap)
        assert parallel.parallel_map(lambda i: i, 40, threads=cap) == list(range(40))
    assert counts[0] == cap and counts[1] <= cap


def test_one_thread_runs_in_the_caller_in_one_call(threads):
    threads(1)
    seen, counts = _chunks(50)
    assert seen == [(0, 50, threading.get_ident())] and counts == [1]


def test_little_work_runs_in_one_call(threads, monkeypatch):
    threads(4)
    monkeypatch.setattr(parallel, "GRAIN", 100)
    assert len(_chunks(1000, work=150)[0]) == 1  # one thread's worth
    seen, counts = _chunks(1000, work=250)  # two threads' worth at most
    assert counts[0] <= 2


def test_parallel_map_keeps_order(threads):
    threads(3)
    assert parallel.parallel_map(lambda i: i * i, 20) == [i * i for i in range(20)]
    assert parallel.parallel_map(lambda i: i, 0) == []


@pytest.mark.parametrize("bad_chunk", [0, 7, 19])
def test_an_error_in_any_chunk_reaches_the_caller(threads, bad_chunk):
    threads(3)
    done = []

    def body(lo, hi):
        if lo == bad_chunk:
            raise ValueError(f"chunk {lo}")
        done.append(lo)
    with pytest.raises(ValueError, match=f"chunk {bad_chunk}"):
        parallel.parallel_for(body, 20, chunk=1)
    assert bad_chunk not in done
    assert parallel.parallel_map(lambda i: i, 5) == list(range(5))  # the pool still works


def test_nested_calls_complete_and_run_serially_inside(threads):
    threads(3)
    inner, lock = [], threading.Lock()

    def body(lo, hi):
        with parallel.count_threads() as counts:
            got = parallel.parallel_map(lambda i: i + lo, 6)
        with lock:
            inner.append((got == [i + lo for i in range(6)], counts))
    parallel.parallel_for(body, 12, chunk=1)
    assert len(inner) == 12
    assert all(ok and counts == [1] for ok, counts in inner)


def test_callers_in_several_threads_at_once(threads):
    """Four Python threads calling at once: each call covers its own range once."""
    threads(3)
    results = {}

    def caller(k):
        out = []
        for _ in range(30):
            seen = []
            parallel.parallel_for(lambda lo, hi, seen=seen: seen.extend(range(lo, hi)), 50 + k,
                                  chunk=3)
            out.append(sorted(seen) == list(range(50 + k)))
        results[k] = all(out)
    ts = [threading.Thread(target=caller, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(HANG_GUARD)
    assert results == {0: True, 1: True, 2: True, 3: True}


# -- every parallel kernel honours the count --------------------------------------------------

def _kernel_calls(tmp_path):
    """Each parallel kernel, through its public entry point: ``name -> call``."""
    rng = np.random.default_rng(0)
    x = nd.array(rng.random((600, 300)) * (rng.random((600, 300)) < 0.1)).tostype("csr")
    w = nd.array(rng.normal(size=(300, 16)))
    grad = nd.sparse.row_sparse_array((rng.normal(size=(200, 16)).astype(np.float32),
                                       np.arange(0, 400, 2)), shape=(400, 16))
    weight = nd.array(rng.normal(size=(400, 16)), dtype="float32")
    path = str(tmp_path / "k.txt")
    nets.data.save_libsvm(path, x, nd.array(rng.normal(size=600)))

    def step(name):
        opt = nets.optim.create(name, learning_rate=0.1)
        state = opt.create_state(0, weight)
        return lambda: opt.update(0, weight, grad, state)
    return {"csr . dense": lambda: nd.dot(x, w),
            "sgd": step("sgd"), "adam": step("adam"), "adagrad": step("adagrad"),
            "rmsprop": step("rmsprop"), "ftrl": step("ftrl"),
            "load_libsvm": lambda: nets.data.load_libsvm(path, n_features=300),
            "save_libsvm": lambda: nets.data.save_libsvm(path, x, nd.zeros(600))}


def test_every_parallel_kernel_honours_the_thread_count(threads, tmp_path, monkeypatch):
    monkeypatch.setattr(nets.data.libsvm, "PART_BYTES", 256)  # the parser splits small files
    calls = _kernel_calls(tmp_path)
    for n in (1, 2, 3):
        threads(n)
        for name, call in calls.items():
            most = 0
            for _ in range(1000):  # until the workers joined a call (a hang guard only)
                with parallel.count_threads() as counts:
                    call()
                assert counts and max(counts) <= n, (name, n, counts)
                most = max(most, *counts)
                if most == n:
                    break
            assert most == n, (name, n)


# -- process-level behaviour ------------------------------------------------------------------

_WORK = """
import numpy as np, nets
from nets import nd, parallel
nets.set_num_threads(2)
parallel.GRAIN = 1
rng = np.random.default_rng(0)
x = nd.array(rng.random((400, 200)) * (rng.random((400, 200)) < 0.1),
             dtype="float64").tostype("csr")
w = nd.array(rng.normal(size=(200, 8)), dtype="float64")
expected = x.asnumpy() @ w.asnumpy()
def check():
    with parallel.count_threads() as counts:
        out = nd.dot(x, w).asnumpy()
    assert np.allclose(out, expected), "wrong product"
    return counts
for _ in range(50):
    check()
"""


def test_an_idle_process_uses_no_cpu():
    """After kernels ran on 2 threads, 5 s of idling cost < 1% of one CPU."""
    proc = _python(_WORK + """
import time
time.sleep(0.5)  # let the workers go back to waiting
before = time.process_time()
time.sleep(5)
print(time.process_time() - before)
""")
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout) < 0.05


def test_a_forked_child_computes_correctly():
    proc = _python(_WORK + """
import os
pid = os.fork()
if pid == 0:
    try:
        used = [c for _ in range(20) for c in check()]
        os._exit(0 if max(used) <= 2 else 3)
    except BaseException:
        os._exit(4)
_, status = os.waitpid(pid, 0)
check()  # the parent still works too
print(os.waitstatus_to_exitcode(status))
""")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "0"


def test_ctrl_c_interrupts_a_long_loop_of_kernel_calls():
    proc = subprocess.Popen(
        [sys.executable, "-c", _WORK + """
try:
    print("ready", flush=True)
    while True:
        check()
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""], cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # Python turns SIGINT into KeyboardInterrupt unless it starts with SIGINT ignored,
        # as it does under a shell's background job: the child starts with the default
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(2)  # SIGINT
        out, err = proc.communicate(timeout=HANG_GUARD)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert out.strip() == "interrupted"


# -- concurrent training ----------------------------------------------------------------------

def _model_and_data(seed):
    """A sparse model (CSR input, row-sparse weight gradient) and its batches."""
    nets.random.seed(seed)
    rng = np.random.default_rng(seed)
    net = L.Sequential()
    net.add(L.FullyConnectedSparse(500, 8, weight_grad_stype="row_sparse"), L.Dense(1, in_units=8))
    net.initialize(init=nets.init.Normal(0.1))
    batches = [(nd.array(rng.random((64, 500)) * (rng.random((64, 500)) < 0.05),
                         dtype="float32").tostype("csr"),
                nd.array(rng.normal(size=(64, 1)), dtype="float32")) for _ in range(8)]
    return net, batches


def _train(net, batches, optimizer):
    trainer = nets.Trainer(net.collect_params(), optimizer, {"learning_rate": 0.05})
    loss_fn = nets.loss.L2Loss()
    for _ in range(3):
        for x, y in batches:
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(x.shape[0])
    return [p.data().asnumpy().copy() for p in net.collect_params().values()]


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_two_threads_training_equal_serial_training(threads, optimizer):
    threads(3)
    serial = [_train(*_model_and_data(seed), optimizer) for seed in (1, 2)]
    models = [_model_and_data(seed) for seed in (1, 2)]
    results = {}

    def run(k):
        results[k] = _train(*models[k], optimizer)
    ts = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(HANG_GUARD)
    for k in range(2):
        assert len(results[k]) == len(serial[k])
        for got, exp in zip(results[k], serial[k]):
            np.testing.assert_array_equal(got, exp)
