"""The parts of the distributed store that need no Ray: sharding (``nets.kv.shard``) and
the server and coordinator logic (``nets.kv.server``), driven here directly with asyncio
as Ray's asyncio actors drive them. Expected values come from numpy."""
import asyncio
import os

import numpy as np
import pytest

import nets
from nets.base import NetsError
from nets.kv.server import Coordinator, Server, pack_tree, unpack_tree
from nets.kv.shard import Layout, big_bound, cut, join, pack, unpack


def _rsp(dense):
    return nets.nd.array(dense).tostype("row_sparse")


def test_layout_splits_big_keys_by_rows_and_places_small_keys_by_a_stable_rule():
    big = Layout(7, (10, 3), 3, bound=30)
    assert big.parts == [(0, 0, 3), (1, 3, 6), (2, 6, 10)]
    assert not big.whole
    routed = big.route(np.array([0, 2, 3, 9]))
    assert [(s, lo, ids.tolist()) for s, lo, ids in routed] == [
        (0, 0, [0, 2]), (1, 3, [0]), (2, 6, [3])]
    small = Layout(7, (10, 3), 3, bound=31)
    assert small.whole and small.parts[0][1:] == (0, 10)
    # the same server in every process: an int key's MXNet rule, spreading consecutive
    # keys over the servers; zlib.crc32 of any other key's text, not Python's hash
    assert small.parts[0][0] == 7 * 9973 % 3
    assert [Layout(k, (4,), 3, bound=31).parts[0][0] for k in range(6)] == [0, 1, 2, 0, 1, 2]
    import zlib
    assert Layout("w7", (4,), 3, bound=31).parts[0][0] == zlib.crc32(b"'w7'") % 3
    assert Layout("w", (2, 2), 4, bound=1).parts == [(1, 0, 1), (3, 1, 2)]  # rows < servers
    assert Layout(1, (), 2, bound=1).whole  # a scalar is never split


def test_big_bound_reads_the_environment(monkeypatch):
    monkeypatch.setenv("NETS_KV_BIGARRAY_BOUND", "123")
    assert big_bound() == 123
    monkeypatch.setenv("NETS_KV_BIGARRAY_BOUND", "zero")
    with pytest.raises(NetsError, match="NETS_KV_BIGARRAY_BOUND='zero'"):
        big_bound()


@pytest.mark.parametrize("stype", ["default", "row_sparse"])
def test_cut_and_join_rebuild_the_array(stype):
    dense = np.zeros((10, 2), np.float32)
    dense[[1, 4, 5, 9]] = np.arange(8, dtype=np.float32).reshape(4, 2) + 1
    array = nets.nd.array(dense) if stype == "default" else _rsp(dense)
    layout = Layout(0, dense.shape, 3, bound=1)
    shards = [(lo, unpack(pack(cut(array, lo, hi)))) for _, lo, hi in layout.parts]
    for (_, lo, hi), (_, shard) in zip(layout.parts, shards):
        assert shard.stype == stype and shard.shape == (hi - lo, 2)
        np.testing.assert_array_equal(shard.asnumpy(), dense[lo:hi])
    whole = join(shards, dense.shape)
    assert whole.stype == stype
    np.testing.assert_array_equal(whole.asnumpy(), dense)
    if stype == "row_sparse":
        np.testing.assert_array_equal(whole.indices.asnumpy(), [1, 4, 5, 9])


def test_unpacked_arrays_are_writable():
    packed = pack(nets.nd.ones((3, 2)))
    packed[1].flags.writeable = False  # as a buffer received from Ray's object store
    out = unpack(packed)
    out[:] = 5
    assert out.asnumpy().sum() == 30


def test_state_trees_round_trip():
    state = (nets.nd.ones((2, 2)), (None, _rsp(np.eye(2, dtype=np.float32))))
    back = unpack_tree(pack_tree(state))
    np.testing.assert_array_equal(back[0].asnumpy(), np.ones((2, 2)))
    assert back[1][0] is None and back[1][1].stype == "row_sparse"
    assert unpack_tree(pack_tree(None)) is None


@pytest.fixture(autouse=True)
def _loop():
    """One event loop per test, as an actor has one for its life (a server's condition
    binds to the loop that first waits on it)."""
    global LOOP
    LOOP = asyncio.new_event_loop()
    yield
    LOOP.close()


def _push(server, key, rank, round_no, packed, hyper, changed=False, ask=None):
    """One push of one key (``Server.push`` takes a worker's list of them); its answer."""
    async def one():
        answer = await server.push(rank, [(key, round_no, packed)], hyper, changed, [ask])
        return None if answer is None else answer[0]
    return one()


def _pull(server, key):
    return _run_one(server.pull(0, [(key, 0)]))[0]


def _run(*coroutines):
    """Run ``coroutines`` concurrently; their results or exceptions."""
    async def main():
        return await asyncio.gather(*coroutines, return_exceptions=True)
    return LOOP.run_until_complete(main())


def test_a_sync_round_applies_the_optimizer_once_to_the_sum():
    server = Server(0, num_workers=2, timeout=5)
    server.init([(3, pack(nets.nd.ones((3, 2))))])
    server.set_optimizer(nets.optim.SGD(learning_rate=0.5))
    g0, g1 = np.full((3, 2), 1, np.float32), np.full((3, 2), 3, np.float32)
    results = _run(_push(server, 3, 1, 0, pack(nets.nd.array(g1)), (1.0, 0.5)),
                   _push(server, 3, 0, 0, pack(nets.nd.array(g0)), (1.0, 0.5)))
    assert results == [None, None]
    np.testing.assert_array_equal(_pull(server, 3), 1 - 0.5 * (g0 + g1))
    # the workers' rescale_grad travels with the push
    _run(_push(server, 3, 0, 1, pack(nets.nd.array(g0)), (0.25, 0.5)),
         _push(server, 3, 1, 1, pack(nets.nd.array(g1)), (0.25, 0.5)))
    np.testing.assert_array_equal(_pull(server, 3), 1 - 0.5 * (g0 + g1) * 1.25)  # 0.5 + 0.25


def test_a_round_answers_every_worker_with_the_rows_it_changed():
    """Lazy SGD on a dense shard: the round's sum touches the union of the workers' rows,
    and both workers get those rows as they are after the update (the other rows did not
    change); a dense gradient's answer is the whole shard."""
    server = Server(0, num_workers=2, timeout=5)
    start = np.arange(12, dtype=np.float32).reshape(6, 2)
    server.init([(0, pack(nets.nd.array(start))), (1, pack(nets.nd.ones((2,))))])
    server.set_optimizer(nets.optim.SGD(learning_rate=0.5))
    g0 = np.zeros((6, 2), np.float32)
    g0[[1, 4]] = [[1, 2], [3, 4]]
    g1 = np.zeros((6, 2), np.float32)
    g1[[4, 5]] = [[5, 6], [7, 8]]
    answers = _run(_push(server, 0, 1, 0, pack(_rsp(g1)), (1.0, 0.5), changed=True),
                   _push(server, 0, 0, 0, pack(_rsp(g0)), (1.0, 0.5), changed=True))
    expected = start - 0.5 * (g0 + g1)
    for rows, packed in answers:
        np.testing.assert_array_equal(rows, [1, 4, 5])
        got = unpack(packed)
        np.testing.assert_array_equal(got.indices.asnumpy(), [1, 4, 5])
        np.testing.assert_array_equal(got.data.asnumpy(), expected[[1, 4, 5]])
    np.testing.assert_array_equal(_pull(server, 0), expected)
    answers = _run(_push(server, 1, 0, 0, pack(nets.nd.ones((2,))), (1.0, 0.5), changed=True),
                   _push(server, 1, 1, 0, pack(nets.nd.ones((2,))), (1.0, 0.5), changed=True))
    for rows, packed in answers:
        assert rows is None
        np.testing.assert_array_equal(unpack(packed).asnumpy(), [0, 0])  # 1 - 0.5 * 2
    assert server.rounds[0].results == {} and server.rounds[1].results == {}  # all taken


def _sgd_server(workers, lazy):
    """A server of one 6 x 2 key (0..11) with SGD (lr 0.5) for ``workers`` workers, and two
    workers' row_sparse-shaped gradients (rows 1, 4 and rows 4, 5): ``(server, start, g0,
    g1)``."""
    server = Server(0, num_workers=workers, timeout=5)
    start = np.arange(12, dtype=np.float32).reshape(6, 2)
    server.init([(0, pack(nets.nd.array(start)))])
    server.set_optimizer(nets.optim.SGD(learning_rate=0.5, lazy_update=lazy))
    g0 = np.zeros((6, 2), np.float32)
    g0[[1, 4]] = [[1, 2], [3, 4]]
    g1 = np.zeros((6, 2), np.float32)
    g1[[4, 5]] = [[5, 6], [7, 8]]
    return server, start, g0, g1


@pytest.mark.parametrize("lazy", [True, False])
def test_a_round_answers_each_worker_only_the_rows_it_asks_for(lazy):
    """The round of the test before, each worker asking for the rows it holds: a lazy
    update answers the changed rows among them (never the other worker's), a non-lazy one
    (every row may change) those rows of the whole shard; an empty ask is answered None
    (a worker whose row pull replaces the rows asks for none)."""
    server, start, g0, g1 = _sgd_server(3, lazy)
    asks = [np.array([0, 1, 4]), np.array([4, 5]), np.array([], np.int64)]
    answers = _run(*[_push(server, 0, r, 0, pack(_rsp(g)), (1.0, 0.5), True, asks[r])
                     for r, g in enumerate([g0, g1, np.zeros((6, 2), np.float32)])])
    expected = start - 0.5 * (g0 + g1)
    want = [[1, 4], [4, 5]] if lazy else [[0, 1, 4], [4, 5]]
    assert answers[2] is None
    for (rows, packed), w in zip(answers, want):
        assert (rows is None) == (not lazy)
        got = unpack(packed)
        np.testing.assert_array_equal(got.indices.asnumpy(), w)
        np.testing.assert_array_equal(got.data.asnumpy(), expected[w].reshape(-1, 2))
    np.testing.assert_array_equal(_pull(server, 0), expected)


def test_a_step_call_pushes_then_answers_the_rows_after_the_round():
    """``Server.step``: each worker's push and its row pull of the next batch in one call.
    The pulled rows are those after the round (both workers' gradients summed, SGD), a
    worker asking for no rows with its push gets None for it, and one asking gets the
    changed rows among its ask (computed here with numpy)."""
    server, start, g0, g1 = _sgd_server(2, True)
    after = start - 0.5 * (g0 + g1)
    answers = _run(server.step(0, [(0, 0, pack(_rsp(g0)))], (1.0, 0.5),
                               [np.zeros(0, np.int64)], [(0, np.array([0, 5]), 1)]),
                   server.step(1, [(0, 0, pack(_rsp(g1)))], (1.0, 0.5),
                               [np.array([2, 4])], [(0, np.array([1, 3]), 1)]))
    (pushed0, rows0), (pushed1, rows1) = answers
    assert pushed0 == [None]
    changed, packed = pushed1[0]
    np.testing.assert_array_equal(changed, [4])
    np.testing.assert_array_equal(unpack(packed).data.asnumpy(), after[[4]])
    for rows, ids in ((rows0, [0, 5]), (rows1, [1, 3])):
        got = unpack(rows[0])
        np.testing.assert_array_equal(got.indices.asnumpy(), ids)
        np.testing.assert_array_equal(got.data.asnumpy(), after[ids])


def test_one_call_serves_keys_in_any_order():
    """Workers list the keys of one call in different orders: the pushes are served
    concurrently, so neither waits for the other's next key."""
    server = Server(0, num_workers=2, timeout=2)
    server.init([(k, pack(nets.nd.zeros((2,)))) for k in (0, 1)])
    one = pack(nets.nd.ones((2,)))
    results = _run(server.push(0, [(0, 0, one), (1, 0, one)], None),
                   server.push(1, [(1, 0, one), (0, 0, one)], None))
    assert results == [None, None]
    for k in (0, 1):
        np.testing.assert_array_equal(_pull(server, k), [2, 2])


def test_a_second_push_of_a_worker_joins_the_next_round():
    server = Server(0, num_workers=2, timeout=5)
    server.init([(0, pack(nets.nd.zeros((2,))))])
    seen = []
    server.set_updater(lambda key, grad, stored: seen.append(grad.asnumpy().tolist()))
    one = pack(nets.nd.ones((2,)))
    _run(_push(server, 0, 0, 0, one, None), _push(server, 0, 0, 1, pack(nets.nd.ones((2,)) * 2),
                                                      None),
         _push(server, 0, 1, 0, one, None), _push(server, 0, 1, 1, one, None))
    assert seen == [[2.0, 2.0], [3.0, 3.0]]  # round 0: 1 + 1, round 1: 2 + 1


def test_a_missing_worker_times_out_naming_its_rank():
    server = Server(1, num_workers=3, timeout=0.2)
    server.init([("w", pack(nets.nd.zeros((2,))))])
    results = _run(_push(server, "w", 0, 0, pack(nets.nd.ones((2,))), None),
                   _push(server, "w", 2, 0, pack(nets.nd.ones((2,))), None))
    for r in results:
        assert isinstance(r, NetsError)
        assert "workers [1] did not push" in str(r) and "key 'w'" in str(r)
        assert "server 1" in str(r) and "NETS_KV_TIMEOUT" in str(r)
    coordinator = Coordinator(num_workers=3, timeout=0.2)
    results = _run(coordinator.barrier(0, 1), coordinator.barrier(1, 1))
    assert all(isinstance(r, NetsError) and "barrier 1: workers [2] did not arrive" in str(r)
               for r in results)
    assert _run(coordinator.barrier(0, 2), coordinator.barrier(1, 2),
                coordinator.barrier(2, 2)) == [None] * 3


def test_async_pushes_apply_on_arrival_and_need_an_optimizer():
    server = Server(0, num_workers=2, timeout=5)
    server.set_sync(False)
    server.init([(0, pack(nets.nd.ones((2,))))])
    with pytest.raises(NetsError, match="dist_async.*set_optimizer"):
        _run_one(_push(server, 0, 0, 0, pack(nets.nd.ones((2,))), None))
    server.set_optimizer(nets.optim.SGD(learning_rate=1.0))
    _run_one(_push(server, 0, 1, 0, pack(nets.nd.ones((2,))), (1.0, 1.0)))
    np.testing.assert_array_equal(_pull(server, 0), [0, 0])  # applied without worker 0


def _run_one(coroutine):
    result = _run(coroutine)[0]
    if isinstance(result, BaseException):
        raise result
    return result


def test_server_states_round_trip_and_rows():
    server = Server(0, num_workers=1, timeout=5)
    server.init([(0, pack(nets.nd.ones((4, 2))))])
    server.set_optimizer(nets.optim.Adam(learning_rate=0.1))
    grad = _rsp(np.array([[0, 0], [1, 2], [0, 0], [3, 4]], np.float32))
    _run_one(_push(server, 0, 0, 0, pack(grad), (1.0, 0.1)))
    states = server.get_states([0, 1])
    assert list(states) == [0] and states[0][1][0] == 1  # one update of key 0
    other = Server(1, num_workers=1, timeout=5)  # the weight and states of the first
    other.init([(0, pack(nets.nd.array(_pull(server, 0))))])
    other.set_optimizer(nets.optim.Adam(learning_rate=0.1))
    other.set_states(states)
    for s in (server, other):  # the same second update from the same states
        _run_one(_push(s, 0, 0, 1 if s is server else 0, pack(grad), (1.0, 0.1)))
    np.testing.assert_array_equal(_pull(server, 0), _pull(other, 0))
    rows = unpack(_run_one(server.pull_rows(0, [(0, np.array([1, 3]), 0)]))[0])
    np.testing.assert_array_equal(rows.indices.asnumpy(), [1, 3])
    np.testing.assert_array_equal(rows.data.asnumpy(), _pull(server, 0)[[1, 3]])
    with pytest.raises(NetsError, match="key 5 has not been initialized"):
        _pull(server, 5)


@pytest.mark.parametrize("stype", ["default", "row_sparse"])
@pytest.mark.parametrize("density", [0.0, 0.4, 1.0])
def test_a_pull_of_rows_answers_the_held_rows_of_any_ids_as_the_dense_value(stype, density):
    """The rows a server answers (gathered where the answer is written: ``Rows``) against
    the dense value: ids in any order, repeated, sorted or not; a row_sparse shard answers
    only the asked rows it holds; an id out of range is a ``NetsError`` naming it."""
    rng = np.random.default_rng(int(density * 10) + len(stype))
    dense = rng.standard_normal((40, 3)).astype(np.float32)
    dense[rng.random(40) >= density] = 0
    value = nets.nd.array(dense)
    held = np.arange(40)
    if stype == "row_sparse":
        value = value.tostype("row_sparse")
        held = value.indices.asnumpy()
    server = Server(0, num_workers=1, timeout=5)
    server.init([(0, pack(value))])
    for ids in (np.arange(40), rng.integers(0, 40, 25), np.sort(rng.choice(40, 12, False))):
        got = unpack(_run_one(server.pull_rows(0, [(0, ids, 0)]))[0])
        want = np.intersect1d(np.unique(ids), held)
        np.testing.assert_array_equal(got.indices.asnumpy(), want)
        np.testing.assert_array_equal(got.data.asnumpy(), dense[want])
    with pytest.raises(NetsError, match="40"):
        _run_one(server.pull_rows(0, [(0, np.array([3, 40]), 0)]))


def _rows(server, rank, key, ids, pushes):
    return server.pull_rows(rank, [(key, np.array(ids), pushes)])


def test_a_pull_of_rows_waits_for_the_rounds_of_the_pushes_before_it():
    """A row pull sent before the pushes it follows are applied (a prefetch) answers with
    the rows after them; one that follows no push answers at once, with the rows before."""
    server = Server(0, num_workers=2, timeout=5)
    start = np.arange(8, dtype=np.float32).reshape(4, 2)
    server.init([(0, pack(nets.nd.array(start)))])
    g0, g1 = np.full((4, 2), 1, np.float32), np.full((4, 2), 3, np.float32)
    before, after, _, _ = _run(_rows(server, 0, 0, [1, 3], 0), _rows(server, 0, 0, [1, 3], 1),
                               _push(server, 0, 1, 0, pack(nets.nd.array(g1)), None),
                               _push(server, 0, 0, 0, pack(nets.nd.array(g0)), None))
    for answer, expected in ((before, start), (after, g0 + g1)):  # (no optimizer: the sum)
        rows = unpack(answer[0])
        np.testing.assert_array_equal(rows.indices.asnumpy(), [1, 3])
        np.testing.assert_array_equal(rows.data.asnumpy(), expected[[1, 3]])


def _async_server():
    """A dist_async server of 2 workers holding key 0 = ones((3, 2)), SGD with rate 1, and
    a gradient of 0.25s for it."""
    server = Server(0, num_workers=2, timeout=5)
    server.set_sync(False)
    server.init([(0, pack(nets.nd.ones((3, 2))))])
    server.set_optimizer(nets.optim.SGD(learning_rate=1.0))
    return server, np.full((3, 2), 0.25, np.float32)


def test_a_pull_of_rows_under_async_waits_for_this_workers_pushes():
    server, grad = _async_server()
    answer, _ = _run(_rows(server, 1, 0, [0, 2], 1),
                     _push(server, 0, 1, 0, pack(nets.nd.array(grad)), (1.0, 1.0)))
    np.testing.assert_array_equal(unpack(answer[0]).data.asnumpy(), np.full((2, 2), 0.75))


def test_a_pull_of_rows_after_a_missing_round_times_out_naming_the_key_and_workers():
    server = Server(1, num_workers=2, timeout=0.2)
    server.init([("t", pack(nets.nd.zeros((3, 2))))])
    with pytest.raises(NetsError) as e:
        _run_one(_rows(server, 0, "t", [0], 1))
    assert "row_sparse_pull of key 't' on server 1" in str(e.value)
    assert "workers [0, 1] did not push" in str(e.value) and "NETS_KV_TIMEOUT" in str(e.value)


def test_a_pushpull_answers_every_worker_with_the_value_after_its_round():
    """Two workers' fused calls of one round: each answer is the value after the round's
    single update (the SGD step on the sum), the same for both workers; the second
    round's answers follow the second update."""
    server = Server(0, num_workers=2, timeout=5)
    start = np.arange(6, dtype=np.float32).reshape(3, 2)
    server.init([(0, pack(nets.nd.array(start)))])
    server.set_optimizer(nets.optim.SGD(learning_rate=0.5))
    g0, g1 = np.full((3, 2), 1, np.float32), np.full((3, 2), 3, np.float32)
    expected = start
    for round_no in range(2):
        answers = _run(server.pushpull(1, [(0, round_no, pack(nets.nd.array(g1)))], (1.0, 0.5),
                                       [(0, round_no + 1)]),
                       server.pushpull(0, [(0, round_no, pack(nets.nd.array(g0)))], (1.0, 0.5),
                                       [(0, round_no + 1)]))
        expected = expected - 0.5 * (g0 + g1)
        for answer in answers:
            np.testing.assert_array_equal(answer[0], expected)
    assert server.rounds[0].done == 2


def test_a_pushpull_under_async_answers_after_its_own_push():
    server, grad = _async_server()
    answer = _run_one(server.pushpull(1, [(0, 0, pack(nets.nd.array(grad)))], (1.0, 1.0),
                                      [(0, 1)]))
    np.testing.assert_array_equal(answer[0], np.full((3, 2), 0.75))


def test_import_nets_does_not_import_ray():
    import subprocess
    import sys
    code = "import sys, nets, nets.kv; assert 'ray' not in sys.modules, 'ray imported'"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root)
