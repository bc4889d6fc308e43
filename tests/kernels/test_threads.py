"""nets.kernels.threads: ``share`` hands out every chunk of a range exactly once, over the
threads that are there when it is claimed (the caller never waits for a late worker, only
for a chunk a worker holds), keeps small work in one call and raises errors from any
thread; ``counter``/``claim`` chunk a range; ``each`` runs every index once, results in
order."""
import multiprocessing
import os
import sys
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
    """Both workers busy inside another thread's call: the caller takes every chunk and
    returns."""
    gate, inside = threading.Event(), threading.Semaphore(0)

    def busy(counter):  # held inside until the gate opens, by each thread that joins
        a, b = threads.claim(counter, 1000, 0)
        if threading.current_thread().name.startswith("nets-kernel"):
            inside.release()
        gate.wait(10)
        while a < b:
            a, b = threads.claim(counter, 1000, b - a)
    other = threading.Thread(target=threads.share, args=(busy, 1000, 30))
    other.start()
    try:
        assert inside.acquire(timeout=10) and inside.acquire(timeout=10)
        run, seen = _recorder(50)
        threads.share(run, 50, work=30)
        assert _covered(seen, 50)
        assert all(t is threading.current_thread() for *_, t in seen)
        assert not gate.is_set()
    finally:
        gate.set()
        other.join()


def test_a_chunk_held_by_a_worker_is_waited_for(shared_kernels, monkeypatch):
    """A worker that holds its chunk longer than the caller polls: share returns only
    once that chunk is done."""
    monkeypatch.setattr(threads, "SETTLE", 1e-6)
    assert len(_joined_call(hold=0.2)) > 1


@pytest.mark.parametrize("where", ["worker", "caller"])
def test_an_error_in_any_thread_is_raised(shared_kernels, where):
    taken = threading.Event()

    def run(counter):
        main = threading.current_thread() is threading.main_thread()
        a, b = threads.claim(counter, 24, 0)
        if main:
            taken.wait(10)  # until a worker holds a chunk too
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
    queue.put(_covered(seen, 9) and threads.each(lambda k: k, 3) == [0, 1, 2])


def test_a_forked_child_gets_its_own_workers(monkeypatch):
    """After the parent's worker has run, a forked child's shared call still completes (a
    copy of the parent's workers would be announced calls by a thread that does not exist
    there, and its pool would queue work for one)."""
    monkeypatch.setattr(threads, "CORES", 2)
    monkeypatch.setattr(threads, "GRAIN", 1)
    crew = threads._Crew(1)
    monkeypatch.setattr(threads, "_CREW", crew)
    monkeypatch.setattr(threads, "_POOL", threads.ThreadPoolExecutor(1))
    threads._POOL.submit(lambda: None).result()  # the parent's pool thread exists now
    run, seen = _recorder(9)
    threads.share(run, 9, work=30)  # and its worker of share
    assert crew.threads[0].is_alive()
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_share_in_child, args=(queue,))
    child.start()
    child.join(timeout=60)
    if child.is_alive():
        child.kill()
    crew.close()
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


def _joined_call(count=24, hold=0.0, late_return=0.0):
    """A shared call whose caller, before its first chunk, waits for a worker to take one;
    that worker holds its first chunk ``hold`` seconds, and returns ``late_return`` seconds
    after its last. Unless it holds one, the caller also waits for the worker to finish all
    the other chunks: they run Python, and one still waiting for the GIL when the caller is
    done would look like a worker held up by another process. Returns the threads that
    took chunks."""
    taken, returning = threading.Event(), threading.Event()
    run, seen = _recorder(count)

    def before_chunk(a):
        if threading.current_thread() is threading.main_thread():
            taken.wait(10)
            if not hold:
                returning.wait(10)
        elif not taken.is_set():
            taken.set()
            time.sleep(hold)

    def body(counter):
        run(counter, before_chunk)
        if threading.current_thread() is not threading.main_thread():
            returning.set()
            time.sleep(late_return)
    threads.share(body, count, work=30)
    assert taken.is_set() and _covered(seen, count)
    return {t for *_, t in seen}


@pytest.fixture
def one_worker(monkeypatch):
    """A crew of one worker of its own (2 cores, any work shared); yields the crew."""
    monkeypatch.setattr(threads, "CORES", 2)
    monkeypatch.setattr(threads, "GRAIN", 1)
    crew = threads._Crew(1)
    monkeypatch.setattr(threads, "_CREW", crew)
    yield crew
    crew.close()
    assert not crew.threads[0].is_alive()


def _wait_for(condition, seconds=10):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def test_a_sleeping_worker_wakes_for_the_next_call(one_worker, monkeypatch):
    monkeypatch.setattr(threads, "LINGER", 1e-5)  # it sleeps as good as at once
    assert len(_joined_call()) == 2
    _wait_for(lambda: one_worker.sleepers == 1)
    assert len(_joined_call()) == 2  # woken by the call
    assert one_worker.threads[0] in _joined_call()


def test_a_worker_polls_between_calls(one_worker, monkeypatch):
    monkeypatch.setattr(threads, "LINGER", 60.0)
    for _ in range(3):
        assert len(_joined_call()) == 2
        time.sleep(0.02)
        assert one_worker.sleepers == 0  # never asleep: no call had to wake it


def test_a_call_that_never_begins_lets_the_worker_sleep(one_worker, monkeypatch):
    """A caller that fails before its first claim: the worker gives the call up after its
    polls (it does not poll for it until the next call)."""
    monkeypatch.setattr(threads, "LINGER", 1e-3)

    def fail(counter):
        raise ValueError("failed before claiming")
    _joined_call()
    with pytest.raises(ValueError, match="before claiming"):
        threads.share(fail, 24, work=30)
    _wait_for(lambda: one_worker.sleepers == 1)
    assert one_worker.calls == [None] * threads.SLOTS  # let go of, with what runs hold
    assert len(_joined_call()) == 2


def test_counters_are_reused_in_turn_skipping_those_in_use(one_worker):
    for _ in range(2 * threads.SLOTS + 5):
        run, seen = _recorder(30)
        threads.share(run, 30, work=30)
        assert _covered(seen, 30)
    crew = one_worker
    turn = crew.turn
    crew.counters[turn, 3] = threads._IN  # a worker still inside the call of this one
    crew.busy.add((turn + 1) % threads.SLOTS)  # and a caller still inside this one's
    call, row = crew.post(lambda counter: None, 10, 1)
    assert call.slot == (turn + 2) % threads.SLOTS and crew.calls[call.slot] is call
    assert np.shares_memory(row, crew.counters[call.slot])
    assert list(row) == [0, 0, 1, call.number * 4 + threads._OUT]
    crew.done(call)
    assert crew.calls[call.slot] is None
    crew.counters[turn, 3] = threads._BACK
    crew.busy.clear()


def test_a_call_runs_whole_when_every_counter_is_in_use(one_worker):
    one_worker.busy.update(range(threads.SLOTS))
    run, seen = _recorder(30)
    threads.share(run, 30, work=30)
    assert [(a, b) for a, b, _ in seen] == [(0, 30)]
    assert one_worker.busy == set(range(threads.SLOTS))
    one_worker.busy.clear()


def test_await_between_calls():
    """``_await`` (compiled): marks the worker back, then joins only a call that began with
    chunks left, and only if the counter is still that call's."""
    bell, counters = np.zeros(4, np.int64), np.zeros((2, 4), np.int64)
    counters[1, 3] = 3 * 4 + threads._IN  # inside call 3
    assert threads._await(bell, counters, 3, 1, 0, 50, 50) == (False, 0, -1)  # none posted
    assert counters[1, 3] == 3 * 4 + threads._BACK
    bell[:3] = 5, 0, 10  # call 5, on counter 0, over 10 items
    assert threads._take(counters[0], 5, 2) and list(counters[0]) == [0, 0, 2, 20]
    assert threads._await(bell, counters, 3, -1, 0, 50, 50) == (False, 5, -1)  # not begun
    assert threads._await(bell, counters, 3, -1, 0, 0, 0) == (False, 5, -1)
    counters[0, 0] = 4
    assert threads._await(bell, counters, 3, -1, 5, 50, 50) == (False, 5, -1)  # seen
    assert threads._await(bell, counters, 3, -1, 0, 0, 0) == (True, 5, 0)  # polls used up
    assert counters[0, 3] == 5 * 4 + threads._IN
    assert not threads._take(counters[0], 6, 2)  # a worker is inside: not reused
    counters[0, 3] = 5 * 4 + threads._OUT
    bell[0] = 4  # a worker that read call 4 on this counter, now call 5's: joins nothing
    assert threads._await(bell, counters, 3, -1, 0, 50, 50) == (False, 4, -1)
    bell[0], counters[0, 0] = 5, 12
    assert threads._await(bell, counters, 3, -1, 0, 50, 50) == (False, 5, -1)  # all claimed
    counters[0, 0], bell[3] = 4, 1
    assert threads._await(bell, counters, 3, -1, 0, 50, 50) == (False, 0, -1)  # stop
    assert counters[0, 3] == 5 * 4 + threads._OUT


def _begins_late(bell, counters):
    time.sleep(0.05)
    counters[0, 0] = 1


def test_await_waits_for_a_posted_call_to_begin():
    """A call posted but not begun is polled for past ``polls`` (up to ``begin``)."""
    bell, counters = np.array([1, 0, 10, 0], np.int64), np.array([[0, 0, 1, 4]], np.int64)
    t = threading.Thread(target=_begins_late, args=(bell, counters))
    t.start()
    assert threads._await(bell, counters, 3, -1, 0, 0, 1 << 62) == (True, 1, 0)
    t.join()


def test_polls_scale_with_the_time():
    assert 1 <= threads._poll_rate()


def test_a_held_up_chunk_stops_polling_for_a_while(one_worker, monkeypatch):
    """A worker that holds a chunk longer than the caller's whole run lost its CPU: the
    workers sleep between calls for the next QUIET seconds (however long LINGER is)."""
    monkeypatch.setattr(threads, "LINGER", 60.0)
    monkeypatch.setattr(threads, "QUIET", 60.0)
    before = time.perf_counter()
    assert len(_joined_call(hold=0.1)) == 2
    assert one_worker.quiet_until > before + 59
    _wait_for(lambda: one_worker.sleepers == 1)  # asleep long before LINGER is up
    assert len(_joined_call()) == 2  # and still joins, once woken


def test_a_worker_returning_late_does_not_stop_polling(one_worker, monkeypatch):
    """A worker that has done its chunks but is slow to return (waiting for the GIL; here
    sleeping) is waited for, and the workers go on polling between calls."""
    monkeypatch.setattr(threads, "LINGER", 60.0)
    start = time.perf_counter()
    assert len(_joined_call(late_return=0.1)) == 2
    assert time.perf_counter() - start >= 0.1  # the caller waited for it
    assert one_worker.quiet_until == 0.0


def test_callers_in_several_threads_at_once(shared_kernels):
    """Four threads sharing calls at the same time: each call's range is covered once, by
    its own run (no two calls on one counter), however the workers join them. The GIL
    changes hands as often as it can, so two callers' posts interleave."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    results, errors = [], []

    def caller():
        try:
            for _ in range(40):
                run, seen = _recorder(37)
                threads.share(run, 37, work=30)
                results.append(_covered(seen, 37))
        except BaseException as e:  # reported below
            errors.append(e)
    callers = [threading.Thread(target=caller) for _ in range(4)]
    try:
        for t in callers:
            t.start()
        for t in callers:
            t.join(60)
    finally:
        sys.setswitchinterval(interval)
    assert not errors and len(results) == 160 and all(results)
    assert not threads._CREW.busy and threads._CREW.calls == [None] * threads.SLOTS
