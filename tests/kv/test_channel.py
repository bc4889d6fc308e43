"""The direct worker-server channel of the distributed stores (``nets.kv.channel``):
its frames, and a real ``Server`` served on an event loop of its own (a thread here, a
killed process for a dead server), called through ``Link`` as a worker calls it. Ray is
not involved: it only hands a worker the channel's address and secret."""
import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading

import numpy as np
import pytest

import nets
from nets.base import NetsError
from nets.kv import channel
from nets.kv.channel import HEAD, ChannelError, Link
from nets.kv.server import Server
from nets.kv.shard import pack
from nets.kv.transport import FOLDER, Rows, Staged

SECRET = "0123abcd" * 8


def _roundtrip(obj):
    """``obj`` framed and read back as a worker reads an answer."""
    data = b"".join(bytes(p) for p in channel.frame(7, channel.ANSWER, obj))
    rid, kind, control, total = HEAD.unpack(data[:HEAD.size])
    assert (rid, kind) == (7, channel.ANSWER) and len(data) == HEAD.size + control + total
    body = np.frombuffer(bytearray(data[HEAD.size + control:]), np.uint8)
    return channel.decode(data[HEAD.size:HEAD.size + control], body)


def test_a_frame_carries_nested_values_exactly_and_an_array_met_twice_once():
    rows = np.array([3, 9, 12], np.int64)
    data = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    obj = [("row_sparse", data, rows, (20, 5)), (rows, None), 0.1, float("inf"), -2**40,
           "key", 4, True, [np.int64(5), np.float32(0.5)], Staged(128, (2, 3), "<f4")]
    got = _roundtrip(obj)
    (stype, d, r, shape), (r2, none) = got[0], got[1]
    assert stype == "row_sparse" and shape == (20, 5) and none is None
    np.testing.assert_array_equal(d, data)
    np.testing.assert_array_equal(r, rows)
    assert r2 is r and d.dtype == np.float32 and r.dtype == np.int64  # (laid out once)
    assert got[2:8] == [0.1, float("inf"), -2**40, "key", 4, True]
    assert got[8] == [5, 0.5] and isinstance(got[8][0], int)
    staged = got[9]
    assert isinstance(staged, Staged) and (staged.offset, staged.shape, staged.dtype) == \
        (128, (2, 3), "<f4")


def test_rows_of_an_array_travel_in_a_frame_as_the_array_of_those_rows():
    table = np.random.default_rng(2).standard_normal((50, 4)).astype(np.float32)
    positions = np.array([7, 0, 49, 7])
    got = _roundtrip(["rows", Rows(table, positions)])
    np.testing.assert_array_equal(got[1], table[positions])


def test_a_frame_refuses_what_it_cannot_carry_and_a_malformed_one_is_an_error():
    with pytest.raises(ChannelError, match="Python objects"):
        channel.encode([np.array([object()])])
    with pytest.raises(ChannelError, match="cannot carry a dict"):
        channel.encode([{"a": 1}])
    for bad in (b"[", b'{"x": 1}', b'{"a": [0, [4], "<f4"]}'):
        with pytest.raises(ChannelError):
            channel.decode(bad, np.zeros(0, np.uint8))


class _Served:
    """A real ``Server`` of ``num_workers`` workers behind a channel, on an event loop
    in a thread: ``link()`` connects as a worker does."""

    def __init__(self, num_workers=1, timeout=5.0):
        self.server = Server(0, num_workers=num_workers, timeout=timeout)
        self.loop = asyncio.new_event_loop()
        self.listener = self.loop.run_until_complete(
            channel.listen(self.server.call, "127.0.0.1", SECRET))
        self.address = ("127.0.0.1", self.listener.sockets[0].getsockname()[1])
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def link(self, secret=SECRET, timeout=5.0):
        return Link(0, self.address, secret, timeout)

    def close(self):
        """Stop listening, end every task of the loop (a push still waiting among them),
        then the loop."""
        async def shut():
            self.listener.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        asyncio.run_coroutine_threadsafe(shut(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


@pytest.fixture
def served():
    s = _Served(num_workers=2)
    yield s
    s.close()


def test_requests_are_answered_by_id_in_the_order_they_finish(served):
    w0, w1 = served.link(), served.link()
    w0.send("init", [[(0, pack(_dense(1.0))), (1, pack(_dense(7.0)))]]).get("init")
    push = w0.send("push", [0, [(0, 0, pack(_dense(2.0)))], None])  # waits for worker 1
    pull = w0.send("pull", [0, [(1, 0)]])  # sent later, answered first
    np.testing.assert_array_equal(pull.get("pull")[0], _dense(7.0).asnumpy())
    w1.send("push", [1, [(0, 0, pack(_dense(3.0)))], None]).get("push")
    assert push.get("push") is None
    np.testing.assert_array_equal(w1.send("pull", [1, [(0, 1)]]).get("pull")[0],
                                  _dense(5.0).asnumpy())  # (no optimizer: the sum)
    dropped = w0.send("pull", [0, [(1, 0)]])
    del dropped  # its answer is discarded when it arrives
    np.testing.assert_array_equal(w0.send("pull", [0, [(0, 1)]]).get("pull")[0],
                                  _dense(5.0).asnumpy())
    assert not w0._answers


def _dense(value):
    return nets.nd.full((4, 3), value)


def test_arrays_of_megabytes_travel_in_the_frames_both_ways(served):
    big = np.random.default_rng(1).standard_normal((3000, 1000)).astype(np.float32)
    link = served.link()
    link.send("init", [[(5, pack(nets.nd.array(big)))]]).get("init")  # (12 MB sent)
    got = link.send("pull", [0, [(5, 0)]]).get("pull")[0]  # and back
    np.testing.assert_array_equal(got, big)
    assert got.flags.writeable and got.ctypes.data % 64 == 0


def test_a_server_error_is_raised_in_the_worker_and_the_channel_goes_on(served):
    link = served.link()
    with pytest.raises(NetsError, match=r"'set_optimizer' is not one of"):
        link.send("set_optimizer", [None]).get("set_optimizer")
    with pytest.raises(NetsError, match="has not been initialized"):
        link.send("pull", [0, [(9, 0)]]).get("pull")
    with pytest.raises(NetsError, match="no worker's segment"):
        link.send("pull", [0, []], "/etc/passwd", None).get("pull")
    with pytest.raises(NetsError, match="no worker's segment"):
        link.send("pull", [0, []], None, os.path.join(FOLDER, "other")).get("pull")
    assert link.send("pull", [0, []]).get("pull") == []


def test_a_wrong_secret_or_a_malformed_frame_closes_only_that_connection(served):
    with pytest.raises(NetsError, match="server 0 of the distributed store is dead"):
        served.link(secret="f" * 64).send("pull", [0, []]).get("pull")
    raw = socket.create_connection(served.address, timeout=5)
    raw.sendall(b"".join(channel.frame(0, channel.HELLO, SECRET)))
    raw.sendall(HEAD.pack(1, 9, 4, 0) + b"junk")  # an unknown kind
    assert raw.recv(1) == b""  # closed by the server
    raw.close()
    raw = socket.create_connection(served.address, timeout=5)
    raw.sendall(HEAD.pack(0, channel.HELLO, 64, 2**40))  # a greeting with a huge body
    assert raw.recv(1) == b""  # closed before anything is allocated for it
    raw.close()
    assert served.link().send("pull", [0, []]).get("pull") == []  # others are served


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's abstract sockets")
def test_a_worker_of_the_servers_machine_reaches_it_on_its_unix_socket(served):
    name, local = asyncio.run_coroutine_threadsafe(
        channel.listen_local(served.server.call, SECRET), served.loop).result(5)
    try:
        assert name.startswith("\0nets-kv-")
        link = Link(0, name, SECRET, 5.0)
        assert link._sock.family == socket.AF_UNIX
        big = np.random.default_rng(3).standard_normal((300, 100)).astype(np.float32)
        link.send("init", [[(5, pack(nets.nd.array(big)))]]).get("init")
        np.testing.assert_array_equal(link.send("pull", [0, [(5, 0)]]).get("pull")[0], big)
        with pytest.raises(NetsError, match="server 0 of the distributed store is dead"):
            Link(0, name, "f" * 64, 5.0).send("pull", [0, []]).get("pull")
    finally:
        served.loop.call_soon_threadsafe(local.close)


def test_a_silent_server_is_a_timeout_error_not_a_hang(served):
    link = served.link(timeout=0.5)
    link.send("init", [[(0, pack(_dense(1.0)))]]).get("init")
    push = link.send("push", [0, [(0, 0, pack(_dense(2.0)))], None])  # worker 1 never comes
    with pytest.raises(NetsError, match=r"push: server 0 .* sent no answer within 0.5 s"):
        push.get("push")
    with pytest.raises(NetsError, match="sent no answer"):  # the link stays failed
        link.send("pull", [0, []])


SERVE = """
import asyncio, sys
from nets.kv import channel
from nets.kv.server import Server
async def main():
    server = Server(0, num_workers=2, timeout=60)
    listener = await channel.listen(server.call, "127.0.0.1", sys.argv[1])
    print(listener.sockets[0].getsockname()[1], flush=True)
    await asyncio.sleep(3600)
asyncio.run(main())
"""


def test_a_server_that_dies_is_a_clear_error_for_waiting_and_later_calls():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.Popen([sys.executable, "-c", SERVE, SECRET], stdout=subprocess.PIPE,
                            text=True, cwd=root)
    try:
        link = Link(1, ("127.0.0.1", int(proc.stdout.readline())), SECRET, 30)
        link.send("init", [[(0, pack(_dense(1.0)))]]).get("init")
        push = link.send("push", [0, [(0, 0, pack(_dense(2.0)))], None])  # waits
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        with pytest.raises(NetsError, match=r"push: server 1 of the distributed store is "
                                            r"dead .*restart the job"):
            push.get("push")
        with pytest.raises(NetsError, match="server 1 of the distributed store is dead"):
            link.send("pull", [0, []])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
