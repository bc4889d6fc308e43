"""The direct channel between a worker and a server of a distributed store: one connection
per (worker, server) pair that carries the store's data calls (``Server.call``: ``init``,
``push``, ``pull``, ``pushpull``, ``step``), so that a training step pays a socket round
trip, not a Ray call. Ray starts the actors and carries the rare calls (``set_optimizer``,
the states' save and load, barriers); a server opens its channel when a worker first asks
(``Server.channel``: a listening TCP socket on the address Ray reaches its node by, port
chosen by the system, and on Linux a Unix socket of a random abstract name for the
workers of its machine, ``listen_local``) and answers the addresses and a random secret
through Ray, which the worker sends first on connecting. A worker on the server's machine
connects to the Unix socket: the kernel hands its bytes over without the TCP stack.

A frame is ``HEAD`` (request id, kind, control bytes, body bytes), the control part
(JSON, UTF-8) and the body (raw array bytes, each array at a 64-byte aligned offset; a
``transport.Rows`` entry is sent as the array of its rows).
Nothing read from the socket is unpickled: the control part holds lists, ``{"t": [...]}``
for a tuple, ``{"a": [offset, shape, dtype]}`` for an array of the body and ``{"s":
[offset, shape, dtype]}`` for an array staged in a shared-memory segment
(``transport.Staged``), besides None, booleans, numbers and strings. A request's control
is ``[method, args, request segment, reply segment]`` (segments: paths or None); an
answer's, the result; an error's, ``[exception class name, message]``.

A worker sends its requests without waiting and takes each answer by its id (``Reply``);
a server serves each request as its own task (a ``dist_sync`` push waits for the other
workers while the same worker's next calls go on) and answers in the order they finish.
A worker's wait for an answer ends after ``NETS_KV_TIMEOUT`` plus a margin (the server
times out first and says why); a closed connection is a dead server. Both are a
``NetsError`` naming the server. Used from one thread of the worker.
"""
import asyncio
import hmac
import json
import secrets
import socket
import sys
import struct

import numpy as np

from ..arrays import aligned
from ..base import NetsError
from .transport import Rows, Staged, is_segment

__all__ = ["HEAD", "ChannelError", "encode", "decode", "frame", "Link", "Reply", "listen",
           "listen_local"]

HEAD = struct.Struct("<QBIQ")  # request id, kind, control bytes, body bytes
HELLO, REQUEST, ANSWER, ERROR = range(4)
_ALIGN = 64
_MAX_CONTROL = 1 << 30  # a control part is at most this many bytes
_MAX_HELLO = 1024  # a connection's first frame (the secret, no body) is at most this long
_JOIN_BYTES = 1 << 20  # a frame up to this size is sent as one buffer (one system call)


class ChannelError(NetsError):
    """A frame that does not follow the channel's format."""


def encode(obj):
    """``(control bytes, [(offset, array or Rows)], body bytes, payload)``: ``obj`` (nested
    lists and tuples of None, bools, numbers, strings, numpy arrays, ``Rows`` and
    ``Staged`` entries) as a frame's control part and body (each array laid out once, at an
    aligned offset); ``payload`` counts the bytes of its arrays, staged ones included, each
    once."""
    arrays, offsets, staged, total, payload = [], {}, set(), 0, 0

    def tag(o):
        nonlocal total, payload
        if o is None or isinstance(o, (bool, int, float, str)):
            return o
        if isinstance(o, list):
            return [tag(x) for x in o]
        if isinstance(o, tuple):
            return {"t": [tag(x) for x in o]}
        if isinstance(o, (np.ndarray, Rows)):
            if o.dtype.hasobject:
                raise ChannelError("the channel carries no arrays of Python objects")
            at = offsets.get(id(o))
            if at is None:
                at = offsets[id(o)] = total
                arrays.append((at, o))
                total += -(-o.nbytes // _ALIGN) * _ALIGN
                payload += o.nbytes
            return {"a": [at, list(o.shape), o.dtype.str]}
        if isinstance(o, Staged):
            if o.offset not in staged:
                staged.add(o.offset)
                payload += o.nbytes
            return {"s": [o.offset, list(o.shape), o.dtype]}
        if isinstance(o, np.integer):
            return int(o)
        if isinstance(o, np.floating):
            return float(o)
        raise ChannelError(f"the channel cannot carry a {type(o).__name__}")
    control = json.dumps(tag(obj), separators=(",", ":")).encode()
    return control, arrays, total, payload


def _array(spec, body):
    offset, shape, dtype = spec
    dtype = np.dtype(dtype)
    if dtype.hasobject:
        raise ChannelError("an array of Python objects")
    count = int(np.prod(shape, dtype=np.int64))
    return body[offset:offset + count * dtype.itemsize].view(dtype).reshape(shape)


def decode(control, body):
    """The object ``encode`` described: its arrays writable views of ``body`` (a uint8
    numpy array; an array laid out once for two entries is one array for both, as it was
    sent), its staged arrays ``Staged`` entries. A malformed frame raises
    ``ChannelError``."""
    return _decode(control, body)[0]


def _decode(control, body):
    """``(decode(control, body), payload)``: ``payload`` as ``encode`` counts it."""
    seen, staged, payload = {}, set(), 0

    def untag(o):  # (each tagged dict, its contents already read: json's object_hook)
        nonlocal payload
        (kind, value), = o.items()
        if kind == "t":
            return tuple(value)
        if kind == "a":  # (empty arrays share an offset: told apart by the rest)
            at = (value[0], tuple(value[1]), value[2])
            if at not in seen:
                seen[at] = _array(value, body)
                payload += seen[at].nbytes
            return seen[at]
        if kind == "s":
            offset, shape, dtype = value
            entry = Staged(int(offset), tuple(int(d) for d in shape), str(dtype))
            if entry.offset not in staged:
                staged.add(entry.offset)
                payload += entry.nbytes
            return entry
        raise ChannelError(f"unknown tag {kind!r}")
    try:
        return json.loads(control, object_hook=untag), payload
    except ChannelError:
        raise
    except (ValueError, TypeError, KeyError) as e:
        raise ChannelError(f"a malformed frame ({e})") from None


def frame(rid, kind, obj):
    """The buffers of one frame carrying ``obj`` (``encode``): header, control, then the
    body's arrays with their padding."""
    return _frame(rid, kind, obj)[0]


def _frame(rid, kind, obj):
    """``(frame(rid, kind, obj), payload)``: ``payload`` as ``encode`` counts it."""
    control, arrays, total, payload = encode(obj)
    parts, at = [HEAD.pack(rid, kind, len(control), total), control], 0
    for offset, a in arrays:
        if offset > at:
            parts.append(bytes(offset - at))
        if isinstance(a, Rows):
            a = a.array()
        if a.nbytes:
            parts.append(np.ascontiguousarray(a).reshape(-1).view(np.uint8).data)
        at = offset + a.nbytes
    if total > at:
        parts.append(bytes(total - at))
    return parts, payload


def _check_head(kind, control):
    """Refuse a header of an unknown kind or announcing an oversized control part."""
    if kind not in (HELLO, REQUEST, ANSWER, ERROR) or control > _MAX_CONTROL:
        raise ChannelError(f"a malformed frame header (kind {kind}, {control} control "
                           f"bytes)")


class Reply:
    """The answer to come of one request sent on a ``Link``: ``get()`` waits for it.
    Dropped untaken, its answer is discarded when it arrives. ``sent``: the bytes of the
    request's arrays; ``received``, once taken: those of the answer's (``encode``'s
    payload)."""

    __slots__ = ("_link", "_rid", "_taken", "sent", "received")

    def __init__(self, link, rid, sent):
        self._link, self._rid, self._taken = link, rid, False
        self.sent, self.received = sent, 0

    def get(self, what):
        """The answer (raising the server's error, or a ``NetsError`` when the server is
        dead or silent); ``what`` names the operation in the message."""
        self._taken = True
        value, self.received = self._link.take(self._rid, what)
        return value

    def __del__(self):
        if not self._taken:
            self._link.forget(self._rid)


def _connect(address, timeout):
    """A socket connected to ``address``: ``(host, port)`` over TCP, or a str naming a Unix
    socket (``listen_local``)."""
    if isinstance(address, str):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(address)
        except BaseException:
            sock.close()
            raise
        return sock
    sock = socket.create_connection(tuple(address), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _where(address):
    return repr(address) if isinstance(address, str) else f"{address[0]}:{address[1]}"


class Link:
    """A worker's connection to server ``index`` at ``address`` (``(host, port)``, or the
    name of its Unix socket: ``listen_local``), opened by sending ``secret``; waits end
    after ``timeout`` seconds."""

    def __init__(self, index, address, secret, timeout):
        self.index, self.timeout = index, timeout
        self._next, self._answers, self._dropped, self._dead = 1, {}, set(), None
        try:
            self._sock = _connect(address, timeout)
        except OSError as e:
            raise NetsError(f"kv.create: cannot reach server {index}'s channel at "
                            f"{_where(address)} ({e})") from None
        self._file = self._sock.makefile("rb")
        self._send(frame(0, HELLO, secret), "kv.create")

    def _fail(self, what, why):
        self._dead = self._dead or why
        raise NetsError(f"{what}: server {self.index} of the distributed store {self._dead}; "
                        f"the store cannot continue: restart the job") from None

    def _send(self, parts, what):
        if self._dead:
            self._fail(what, self._dead)
        try:
            if sum(len(p) for p in parts) <= _JOIN_BYTES:
                self._sock.sendall(b"".join(parts))
            else:
                for p in parts:
                    self._sock.sendall(p)
        except TimeoutError:
            self._fail(what, f"took no request within {self.timeout:g} s")
        except OSError as e:
            self._fail(what, f"is dead (its channel closed: {e.__class__.__name__})")

    def send(self, method, args, path=None, reply=None):
        """Send the request ``method(*args)`` (``path``/``reply``: its shared-memory
        segments, or None) without waiting: its ``Reply``."""
        rid, self._next = self._next, self._next + 1
        parts, payload = _frame(rid, REQUEST, [method, list(args), path, reply])
        self._send(parts, method)
        return Reply(self, rid, payload)

    def take(self, rid, what):
        """``(request rid's answer, its payload)``, reading the frames that come before
        it."""
        while rid not in self._answers:
            if self._dead:
                self._fail(what, self._dead)
            got, kind, value, payload = self._read(what)
            if got in self._dropped:
                self._dropped.discard(got)
            else:
                self._answers[got] = kind, value, payload
        kind, value, payload = self._answers.pop(rid)
        if kind == ERROR:
            name, message = value
            if name == "NetsError":
                raise NetsError(message)
            raise NetsError(f"{what}: server {self.index} failed: {name}: {message}")
        return value, payload

    def forget(self, rid):
        """Discard request ``rid``'s answer (now or when it arrives)."""
        if self._answers.pop(rid, None) is None:
            self._dropped.add(rid)

    def _read(self, what):
        try:
            head = self._file.read(HEAD.size)
            if len(head) < HEAD.size:
                self._fail(what, "is dead (its channel closed)")
            rid, kind, control, total = HEAD.unpack(head)
            _check_head(kind, control)
            control, size = self._file.read(control), control
            body = aligned.empty(total, np.uint8)
            if len(control) < size or (total and self._file.readinto(memoryview(body)) < total):
                self._fail(what, "is dead (its channel closed)")
        except TimeoutError:
            self._fail(what, f"sent no answer within {self.timeout:g} s")
        except OSError as e:
            self._fail(what, f"is dead (its channel closed: {e.__class__.__name__})")
        if kind not in (ANSWER, ERROR):
            self._fail(what, f"sent a frame of kind {kind}, not an answer")
        return (rid, kind) + _decode(control, body)

    def close(self):
        """Close the connection (the server forgets it)."""
        self._dead = self._dead or "was closed by this worker"
        self._file.close()
        self._sock.close()


async def _read_frame(reader, hello=False):
    """``(request id, kind, decoded object)`` of the next frame, or None at the end. The
    ``hello`` frame, read before the peer is known, must be small and without a body
    (nothing large is allocated for an unknown peer)."""
    try:
        head = await reader.readexactly(HEAD.size)
    except asyncio.IncompleteReadError:
        return None
    rid, kind, control, total = HEAD.unpack(head)
    _check_head(kind, control)
    if hello and (kind != HELLO or control > _MAX_HELLO or total):
        raise ChannelError("a connection's first frame is not a greeting")
    control = await reader.readexactly(control)
    body = aligned.empty(total, np.uint8)
    if total:
        body[:] = np.frombuffer(await reader.readexactly(total), np.uint8)
    return rid, kind, decode(control, body)


async def listen(call, host, secret):
    """Serve the channel on ``host`` (a free port): each request of a connection that
    first sent ``secret`` (a str) is answered with ``await call(method, args, path,
    reply)``, a segment path being one of a worker's (``transport.is_segment``). Returns
    the listening ``asyncio.Server``."""
    return await asyncio.start_server(_serve(call, secret), host, 0)


async def listen_local(call, secret):
    """Serve the channel as ``listen`` does on a Unix socket of a random name in Linux's
    abstract namespace (no file; reachable from this machine's network namespace, the
    secret keeping strangers out, as on ``listen``'s port): ``(name, asyncio.Server)``,
    or None where the system has no such namespace."""
    if not sys.platform.startswith("linux"):
        return None
    name = f"\0nets-kv-{secrets.token_hex(16)}"
    return name, await asyncio.start_unix_server(_serve(call, secret), name)


def _serve(call, secret):
    """The connection handler of ``listen`` and ``listen_local``."""
    async def answer(writer, rid, request):
        try:
            method, args, path, reply = request
            if not all(p is None or (isinstance(p, str) and is_segment(p))
                       for p in (path, reply)):
                raise ChannelError("a request named a file that is no worker's segment")
            parts = frame(rid, ANSWER, await call(method, args, path, reply))
        except Exception as e:  # the worker hears of it (its wait raises)
            name = "NetsError" if isinstance(e, NetsError) else type(e).__name__
            parts = frame(rid, ERROR, [name, str(e)])
        if not writer.is_closing():
            writer.write(b"".join(parts))  # (copied before any other task runs)
            try:
                await writer.drain()
            except ConnectionError:
                pass

    async def connection(reader, writer):
        sock = writer.get_extra_info("socket")
        if sock.family != socket.AF_UNIX:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        tasks = set()
        try:
            hello = await _read_frame(reader, hello=True)
            if (hello is None or not isinstance(hello[2], str)
                    or not hmac.compare_digest(hello[2].encode(), secret.encode())):
                return
            while True:
                got = await _read_frame(reader)
                if got is None:
                    return
                rid, kind, request = got
                if kind != REQUEST:
                    return
                task = asyncio.ensure_future(answer(writer, rid, request))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        except (ConnectionError, ChannelError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()

    return connection
