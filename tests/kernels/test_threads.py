"""nets.kernels.threads.split: parts cover the range in order, small work stays whole,
errors in any part reach the caller; threads.each runs every index once, results in order."""
import multiprocessing
import threading

import pytest

from nets.kernels import threads


@pytest.mark.parametrize("count", [3, 4, 10, 1001])
def test_parts_cover_the_range_in_order(split_kernels, count):
    parts = threads.split(lambda a, b: (a, b), count, work=30)
    assert len(parts) == 3
    assert parts[0][0] == 0 and parts[-1][1] == count
    assert all(p[1] == q[0] and p[0] < p[1] for p, q in zip(parts, parts[1:]))


def test_the_last_part_runs_in_the_caller(split_kernels):
    names = threads.split(lambda a, b: threading.current_thread(), 8, work=30)
    assert names[-1] is threading.current_thread()
    assert all(t is not threading.current_thread() for t in names[:-1])


@pytest.mark.parametrize("count, work, expected", [
    (10, 0, 1), (10, 1, 1), (10, 2, 2), (2, 30, 2), (0, 30, 1), (1, 30, 1)])
def test_no_part_smaller_than_the_grain(split_kernels, count, work, expected):
    # GRAIN is 1 under split_kernels: work 1 is one part's worth
    parts = threads.split(lambda a, b: (a, b), count, work)
    assert len(parts) == expected
    assert parts[0][0] == 0 and parts[-1][1] == count


def test_an_error_in_a_worker_part_is_raised(split_kernels):
    def run(a, b):
        if a == 0:
            raise ValueError("part 0 failed")
        return a
    with pytest.raises(ValueError, match="part 0 failed"):
        threads.split(run, 9, work=30)


def _split_in_child(queue):
    queue.put(threads.split(lambda a, b: (a, b), 9, work=30))


def test_a_forked_child_gets_its_own_workers(monkeypatch):
    """After the parent's worker has run, a forked child's split still completes (a copy
    of the parent's pool would queue the work for a thread that does not exist there)."""
    monkeypatch.setattr(threads, "CORES", 2)
    monkeypatch.setattr(threads, "GRAIN", 1)
    monkeypatch.setattr(threads, "_POOL", threads.ThreadPoolExecutor(1))
    threads.split(lambda a, b: None, 9, work=30)  # the parent's one worker exists now
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_split_in_child, args=(queue,))
    child.start()
    child.join(timeout=60)
    if child.is_alive():
        child.kill()
    assert child.exitcode == 0
    assert queue.get(timeout=5) == [(0, 4), (4, 9)]


@pytest.mark.parametrize("count", [0, 1, 2, 17])
def test_each_runs_every_index_once_in_order_of_results(split_kernels, count):
    seen, lock = [], threading.Lock()

    def run(k):
        with lock:
            seen.append(k)
        return k * k
    assert threads.each(run, count) == [k * k for k in range(count)]
    assert sorted(seen) == list(range(count))


def test_each_shares_the_indices_between_threads(split_kernels):
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


def test_an_error_in_each_is_raised(split_kernels):
    def run(k):
        if k == 3:
            raise ValueError("index 3 failed")
        return k
    with pytest.raises(ValueError, match="index 3 failed"):
        threads.each(run, 8)
