"""nets.kernels.threads: ``share`` hands out every chunk of a range exactly once, over the
threads that are there when it is claimed (the caller never waits for a late worker, only
for a chunk a worker holds), keeps small work in one call and raises errors from any
thread; ``counter``/``claim`` chunk a range; ``each`` runs every index once, results in
order."""
import multiprocessing
import os
import threading
import time

import numpy as np
import pytest

from nets.kernels import threads


def _recorder(count):
    """A ``run(counter)`` that claims chunks of ``[0, count)`` until none are left, recording
    ``(a, b, thread)`` per chunk, and the list it records into."""
    seen, lock = [], threading.Lock()

    def run(counter, before_chunk=None):
        a, b = threads.claim(counter, count, 0)
        while a < b:
            if before_chunk:
                before_chunk(a)
            with lock:
                seen.append((a, b, threading.current_thread()))
            a, b = threads.claim(counter, count, b - a)
    return run, seen


def _covered(seen, count):
    items = sorted(i for a, b, _ in seen for i in range(a, b))
    return items == list(range(count))


@pytest.mark.parametrize("chunk", [None, 1, 3, 4, 10])
@pytest.mark.parametrize("count", [0, 1, 7, 10])
def test_claim_hands_out_chunks_in_order(count, chunk):
    run, seen = _recorder(count)
    counter = threads.WHOLE if chunk is None else threads.counter(chunk)
    run(counter)
    size = chunk or count
    assert [(a, b) for a, b, _ in seen] == [(a, min(a + size, count))
                                            for a in range(0, count, max(size, 1))]
    if chunk:
        assert counter[1] == count  # every item reported done
    assert not len(threads.WHOLE)


@pytest.mark.parametrize("count", [1, 3, 10, 1001])
def test_share_covers_the_range_once(shared_kernels, count):
    run, seen = _recorder(count)
    threads.share(run, count, work=30)
    assert _covered(seen, count)
    assert all(b - a <= -(-count // 24) for a, b, _ in seen)  # 8 chunks per thread, 3 threads


@pytest.mark.parametrize("count, work", [(10, 0), (10, 1), (0, 30), (1, 30)])
def test_small_work_is_one_call_in_the_caller(shared_kernels, count, work):
    # GRAIN is 1 under shared_kernels: work 1 is one thread's worth, so one call
    run, seen = _recorder(count)
    threads.share(run, count, work)
    assert [(a, b) for a, b, _ in seen] == ([(0, count)] if count else [])
    assert all(t is threading.current_thread() for *_, t in seen)


def test_the_caller_does_not_wait_for_a_late_worker(shared_kernels):
    """Both workers busy elsewhere: the caller takes every chunk and returns."""
    gate = threading.Event()
    blocked = [threads._POOL.submit(gate.wait, 10) for _ in range(2)]
    try:
        run, seen = _recorder(50)
        threads.share(run, 50, work=30)
        assert _covered(seen, 50)
        assert all(t is threading.current_thread() for *_, t in seen)
        assert not gate.is_set()
    finally:
        gate.set()
        for f in blocked:
            f.result()


def test_a_chunk_held_by_a_worker_is_waited_for(shared_kernels, monkeypatch):
    """A worker that holds its chunk longer than the caller polls: share returns only
    once that chunk is done."""
    monkeypatch.setattr(threads, "SPINS", 10)
    taken = threading.Event()
    run, seen = _recorder(24)

    def slow_worker(a):
        if threading.current_thread() is threading.main_thread():
            taken.wait(10)  # let a worker claim first
        elif not taken.is_set():
            taken.set()
            time.sleep(0.2)
    threads.share(lambda c: run(c, slow_worker), 24, work=30)
    assert taken.is_set() and _covered(seen, 24)
    assert any(t is not threading.current_thread() for *_, t in seen)


@pytest.mark.parametrize("where", ["worker", "caller"])
def test_an_error_in_any_thread_is_raised(shared_kernels, where):
    taken = threading.Event()

    def run(counter):
        main = threading.current_thread() is threading.main_thread()
        if main:
            taken.wait(10)  # a worker holds a chunk first
        a, b = threads.claim(counter, 24, 0)
        taken.set()
        if main == (where == "caller"):
            raise ValueError(f"the {where} failed")
        while a < b:
            a, b = threads.claim(counter, 24, b - a)
    with pytest.raises(ValueError, match=f"the {where} failed"):
        threads.share(run, 24, work=30)


def _share_in_child(queue):
    run, seen = _recorder(9)
    threads.share(run, 9, work=30)
    queue.put(_covered(seen, 9))


def test_a_forked_child_gets_its_own_workers(monkeypatch):
    """After the parent's worker has run, a forked child's shared call still completes (a
    copy of the parent's pool would queue the work for a thread that does not exist
    there)."""
    monkeypatch.setattr(threads, "CORES", 2)
    monkeypatch.setattr(threads, "GRAIN", 1)
    monkeypatch.setattr(threads, "_POOL", threads.ThreadPoolExecutor(1))
    threads._POOL.submit(lambda: None).result()  # the parent's one worker exists now
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_share_in_child, args=(queue,))
    child.start()
    child.join(timeout=60)
    if child.is_alive():
        child.kill()
    assert child.exitcode == 0
    assert queue.get(timeout=5) is True


def test_counter_layout():
    np.testing.assert_array_equal(threads.counter(3), [0, 0, 3])
    np.testing.assert_array_equal(threads.counter(3, workers=2), [0, 0, 3, 0, 0])


@pytest.mark.parametrize("count", [0, 1, 2, 17])
def test_each_runs_every_index_once_in_order_of_results(shared_kernels, count):
    seen, lock = [], threading.Lock()

    def run(k):
        with lock:
            seen.append(k)
        return k * k
    assert threads.each(run, count) == [k * k for k in range(count)]
    assert sorted(seen) == list(range(count))


def test_each_shares_the_indices_between_threads(shared_kernels):
    """A slow index on one thread: the others take the rest (dynamic, not a fixed split)."""
    gate = threading.Event()

    def run(k):
        if k == 0:
            gate.wait(5)  # held until every other index is done, elsewhere
        elif k == 9:
            gate.set()
        return threading.current_thread()
    who = threads.each(run, 10)
    assert gate.is_set() and len(set(who)) > 1 and sum(t is who[0] for t in who) == 1


def test_an_error_in_each_is_raised(shared_kernels):
    def run(k):
        if k == 3:
            raise ValueError("index 3 failed")
        return k
    with pytest.raises(ValueError, match="index 3 failed"):
        threads.each(run, 8)


def _affinity_after(cpus):
    """The affinity of a fresh thread after it avoids each CPU of ``cpus`` in turn."""
    seen = []

    def body():
        for cpu in cpus:
            threads._avoid(cpu)
            seen.append(os.sched_getaffinity(0))
    t = threading.Thread(target=body)
    t.start()
    t.join()
    return seen


@pytest.mark.skipif(threads._getcpu is None, reason="needs sched_getcpu (Linux)")
def test_a_worker_avoids_its_callers_cpu():
    allowed = os.sched_getaffinity(0)
    cpu = min(allowed)
    first, again, none = _affinity_after([cpu, cpu, None])
    assert first == (allowed - {cpu} or allowed) and again == first and none == first
    assert os.sched_getaffinity(0) == allowed  # the caller's own affinity is untouched
    assert 0 <= threads._getcpu() < os.cpu_count()


@pytest.mark.skipif(threads._getcpu is None, reason="needs sched_getcpu (Linux)")
def test_workers_of_a_shared_call_leave_the_caller_its_cpu(shared_kernels, monkeypatch):
    """Each worker that joins a shared call runs with the caller's CPU outside its affinity
    (the CPU pinned here: the caller may migrate); the caller keeps its own."""
    masks, lock = {}, threading.Lock()
    before = os.sched_getaffinity(0)
    cpu = min(before)
    monkeypatch.setattr(threads, "_getcpu", lambda: cpu)

    def run(counter):
        with lock:
            masks[threading.current_thread()] = os.sched_getaffinity(0)
        a, b = threads.claim(counter, 48, 0)
        while a < b:
            time.sleep(0.001)  # long enough for the workers to join
            a, b = threads.claim(counter, 48, b - a)
    threads.share(run, 48, work=30)
    assert masks.pop(threading.current_thread()) == before
    assert masks and all(m == (before - {cpu} or before) for m in masks.values())


def test_a_refused_affinity_is_only_a_lost_hint(monkeypatch):
    """Steering is a hint: where the system refuses it, the worker runs on as it was."""
    def refuse(pid, mask):
        raise PermissionError("not allowed here")
    monkeypatch.setattr(os, "sched_setaffinity", refuse)
    before = os.sched_getaffinity(0)
    assert _affinity_after([0, 0]) == [before, before]
