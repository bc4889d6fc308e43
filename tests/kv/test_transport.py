"""The same-machine path of the distributed store's calls (``nets.kv.transport``), driven
without Ray: a worker's ``Pool`` and a server's ``Maps`` in one process. Expected values
are the arrays sent."""
import gc
import os
import stat

import numpy as np
import pytest

from nets.kv import transport
from nets.kv.transport import STAGE_BYTES, Maps, Pool

pytestmark = pytest.mark.skipif(not transport.available(), reason="no /dev/shm")


def _big(seed, rows=700):
    return np.random.default_rng(seed).standard_normal((rows, 64)).astype(np.float32)


def test_a_call_round_trips_its_large_arrays_and_keeps_small_ones_in_the_message():
    pool, maps = Pool(), Maps()
    try:
        big, small = _big(0), np.arange(5, dtype=np.int64)
        assert big.nbytes >= STAGE_BYTES > small.nbytes
        args, path, reply, segs = pool.request(([("default", big)], {"ids": small}, 3))
        staged = args[0][0][1]
        assert isinstance(staged, transport.Staged) and args[1]["ids"] is small
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        got = maps.unstage(args, path)
        np.testing.assert_array_equal(got[0][0][1], big)
        assert got[0][0][1].flags.writeable and got[2] == 3
        answer = [("default", big * 2), small]  # larger than the reply segment: it grows
        back = pool.answer(maps.stage_into(answer, reply), segs)
        np.testing.assert_array_equal(back[0][1], big * 2)
        assert back[1] is small
        # the segments return to the pool: the next call reuses them, no new file
        before = set(os.listdir(transport.FOLDER))
        args, path2, reply2, segs2 = pool.request(([("default", _big(1))],))
        assert {path2, reply2} == {path, reply}
        assert set(os.listdir(transport.FOLDER)) == before
        np.testing.assert_array_equal(maps.unstage(args, path2)[0][0][1], _big(1))
        pool.discard(segs2)
        assert not os.path.exists(path2) and not os.path.exists(reply2)
    finally:
        pool.close()


def test_an_answers_rows_are_gathered_straight_into_the_reply_segment():
    pool, maps = Pool(), Maps()
    try:
        table = _big(5, rows=2000)
        few, many = np.array([4, 1]), np.arange(1999, 0, -9)
        rows = transport.Rows(table, many)
        assert rows.nbytes >= STAGE_BYTES > transport.Rows(table, few).nbytes
        _, _, reply, segs = pool.request(([],))
        answer = maps.stage_into([rows, transport.Rows(table, few)], reply)
        assert isinstance(answer[0], transport.Staged)
        assert isinstance(answer[1], transport.Rows)  # (a small one: the frame gathers it)
        back = pool.answer(answer, segs)
        np.testing.assert_array_equal(back[0], table[many])
    finally:
        pool.close()


def test_a_dropped_owner_removes_its_segments_and_close_removes_every_file():
    pool = Pool()
    args, path, reply, segs = pool.request(([_big(2)],))

    class Owner:
        pass
    owner = Owner()
    pool.abandon_later(owner, segs)
    del owner
    gc.collect()
    assert not os.path.exists(path) and not os.path.exists(reply)
    _, path, reply, _ = pool.request(([_big(3)],))
    pool.close()
    assert not os.path.exists(path) and not os.path.exists(reply)


def _files_of_a_killed_process(script):
    """The paths ``script`` (run in a new Python process) prints on one line, once that
    process is killed (no atexit: its files stay); each is checked to exist."""
    import signal
    import subprocess
    import sys
    child = subprocess.Popen([sys.executable, "-c", script + "; sys.stdout.flush(); "
                              "sys.stdin.read()"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    paths = child.stdout.readline().split()
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert paths and all(os.path.exists(p) for p in paths)
    return paths


def test_the_files_of_a_killed_worker_are_removed_by_the_next_pool():
    paths = _files_of_a_killed_process(
        "import sys, numpy as np; from nets.kv.transport import Pool; p = Pool(); "
        "a = p.request(([np.ones((700, 64), np.float32)],)); print(a[1], a[2])")
    assert len(paths) == 2
    mine = Pool()  # a new worker's pool sweeps them
    try:
        assert not any(os.path.exists(p) for p in paths)
        _, path, reply, segs = mine.request(([_big(4)],))
        assert os.path.exists(path) and os.path.exists(reply)  # a live owner's: kept
        transport.sweep()
        assert os.path.exists(path) and os.path.exists(reply)
    finally:
        mine.close()


def test_a_probe_file_is_removed_after_use_or_by_a_sweep_once_its_process_died():
    with transport.probe_file() as (path, token):
        assert os.path.dirname(path) == transport.FOLDER
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        with open(path, "rb") as f:
            assert f.read() == token.encode()
        transport.sweep()  # its process is alive: kept
        assert os.path.exists(path)
    assert not os.path.exists(path)
    (left,) = _files_of_a_killed_process(  # killed mid-probe: its file stays
        "import sys; from nets.kv import transport; probe = transport.probe_file(); "
        "print(probe.__enter__()[0])")
    transport.sweep()
    assert not os.path.exists(left)
