"""nets.data.datasets against a real HTTP server (http.server in a thread, 127.0.0.1, port 0)
serving fixture files built here: a small ml-100k/ml-1m-shaped zip, LibSVM text compressed as
.bz2/.xz/.gz and inside .zip/.tar.xz archives.

No test touches the internet: the registries' real entries are inspected, or fetched from
the local server under their real names, and test-only entries, with digests computed here
from the fixtures' bytes, are swapped in with monkeypatch and fetched through
``mirror=``/``NETS_DATA_URL``. Cases that could run without end (an endless body, a trickling
server) run in a thread the test abandons, failing, after a bounded wait.
"""
import bz2
import gzip
import hashlib
import http.server
import io
import json
import lzma
import os
import re
import socket
import tarfile
import threading
import time
import zipfile

import numpy as np
import pytest

from nets.base import NetsError
from nets.data import datasets as ds


class _Handler(http.server.BaseHTTPRequestHandler):
    """Serves ``server.files`` by name, with ``server.etags[name]`` / ``server.dates[name]`` as
    its ETag / Last-Modified when set. ``Range: bytes=N-`` is honoured (206 + Content-Range)
    unless an ``If-Range`` differs from the file's ETag (or date), which gets the whole file
    (200). ``server.mode``: 'range' (the above), 'ignore-range' (always 200),
    'ignore-if-range' (Range honoured whatever If-Range says), 'drop' (the headers of the
    answer, then half of its body, then close), 'endless' (no Content-Length; the file
    repeated until the client leaves), 'trickle' (one byte every 10 ms). Endless and trickling
    answers also end when ``server.stop`` is set or after ``STREAM_CAP`` bytes / 20 s."""

    def do_GET(self):
        srv = self.server
        name = self.path.lstrip("/")
        srv.requests.append((name, self.headers.get("Range")))
        srv.if_range.append(self.headers.get("If-Range"))
        data = srv.files.get(name)
        if data is None:
            self.send_error(404, "Not Found")
            return
        current = srv.etags.get(name) or srv.dates.get(name)
        if_range = self.headers.get("If-Range")
        start = 0
        match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
        if match and srv.mode != "ignore-range" and (
                if_range is None or if_range == current or srv.mode == "ignore-if-range"):
            start = int(match.group(1))
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        for header, table in (("ETag", srv.etags), ("Last-Modified", srv.dates)):
            if name in table:
                self.send_header(header, table[name])
        body = data[start:]
        if srv.mode != "endless":
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if srv.mode in ("endless", "trickle"):
            self._stream(body)
            return
        if srv.mode == "drop":
            body = body[:len(body) // 2]
            self.close_connection = True
        self.wfile.write(body)
        srv.sent += len(body)

    def _stream(self, body):
        srv, ends = self.server, time.monotonic() + 20
        self.close_connection = True
        step = 1 if srv.mode == "trickle" else len(body)
        i = 0
        try:
            while not srv.stop.is_set() and srv.sent < STREAM_CAP and time.monotonic() < ends:
                piece = body[i % len(body):i % len(body) + step]
                self.wfile.write(piece)
                self.wfile.flush()
                srv.sent += len(piece)
                i += len(piece)
                if srv.mode == "trickle":
                    time.sleep(0.01)
                    if i >= len(body):
                        return
        except OSError:
            pass  # the client hung up, which is what these answers wait for

    def log_message(self, *args):
        pass


STREAM_CAP = 64 << 20  # an endless answer's bound, so no test can run on without end


@pytest.fixture
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.files, srv.requests, srv.if_range, srv.mode, srv.sent = {}, [], [], "range", 0
    srv.etags, srv.dates, srv.stop = {}, {}, threading.Event()
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}"
    thread = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield srv
    srv.stop.set()
    srv.shutdown()
    srv.server_close()
    thread.join()


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A fresh NETS_DATA_HOME, and no mirror or deadline from the environment."""
    monkeypatch.setenv("NETS_DATA_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("NETS_DATA_URL", raising=False)
    monkeypatch.delenv("NETS_DATA_DEADLINE", raising=False)
    return tmp_path / "home"


@pytest.fixture(autouse=True)
def _no_deadline_from_the_environment(monkeypatch):
    monkeypatch.delenv("NETS_DATA_DEADLINE", raising=False)


def _sha(data):
    return hashlib.sha256(data).hexdigest()


def _bounded(fn, seconds=30):
    """``fn()`` in a thread; the test fails, rather than hangs, if it runs past ``seconds``."""
    box = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as e:  # re-raised in the test's thread below
            box["error"] = e

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    if "error" in box:
        raise box["error"]
    return box["value"]


PAYLOAD = bytes(range(256)) * 40 + b"odd"  # every byte value, and an odd length
NEW = PAYLOAD[::-1] + b"new"  # the same file, changed on the server


# -- download --------------------------------------------------------------------------------

def test_download_verifies_and_writes_the_file(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    path = tmp_path / "sub" / "a.bin"
    out = ds.download(server.url + "/a.bin", path, sha256=_sha(PAYLOAD), size=len(PAYLOAD))
    assert out == str(path)
    assert path.read_bytes() == PAYLOAD
    assert sorted(os.listdir(path.parent)) == ["a.bin"]  # no .part, temporary file or record
    assert server.requests == [("a.bin", None)]


def test_a_cached_file_is_not_downloaded_again(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    path = tmp_path / "a.bin"
    for _ in range(3):
        ds.download(server.url + "/a.bin", path, sha256=_sha(PAYLOAD), progress=False)
    assert len(server.requests) == 1


def test_concurrent_calls_download_once(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    path = tmp_path / "a.bin"
    results, errors = [], []

    def fetch():
        try:
            results.append(ds.download(server.url + "/a.bin", path, sha256=_sha(PAYLOAD),
                                       progress=False))
        except Exception as e:  # reported by the assertion below
            errors.append(e)

    threads = [threading.Thread(target=fetch) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and results == [str(path)] * 4
    assert len(server.requests) == 1
    assert path.read_bytes() == PAYLOAD


def test_md5_is_checked_where_only_md5_is_published(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    with pytest.raises(NetsError, match="MD5 mismatch: expected 0{32}, got "
                       + hashlib.md5(PAYLOAD).hexdigest()):
        ds.download(server.url + "/a.bin", tmp_path / "a.bin", md5="0" * 32)
    ds.download(server.url + "/a.bin", tmp_path / "a.bin", md5=hashlib.md5(PAYLOAD).hexdigest())
    assert (tmp_path / "a.bin").read_bytes() == PAYLOAD


def test_digest_mismatch_raises_and_leaves_no_file(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    wrong = _sha(b"something else")
    with pytest.raises(NetsError) as err:
        ds.download(server.url + "/a.bin", tmp_path / "a.bin", sha256=wrong, name="toy")
    msg = str(err.value)
    assert "toy" in msg and server.url + "/a.bin" in msg
    assert f"expected {wrong}, got {_sha(PAYLOAD)}" in msg
    assert os.listdir(tmp_path) == []  # neither the file nor its .part


def test_size_mismatch_raises_before_hashing(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    size = len(PAYLOAD) + 5
    with pytest.raises(NetsError, match=f"size mismatch: expected {size} bytes, got "
                       f"{len(PAYLOAD)}"):
        ds.download(server.url + "/a.bin", tmp_path / "a.bin", sha256=_sha(PAYLOAD), size=size)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("kwargs, message", [
    ({"sha256": "abc"}, "sha256='abc' is not a hex digest of 64 digits"),
    ({"md5": "z" * 32}, "md5='z{32}' is not a hex digest of 32 digits"),
    ({"size": -1}, "size=-1 is not a byte count"),
    ({"deadline": 0}, r"deadline=0 must be a positive number of seconds"),
    ({"deadline": float("nan")}, r"deadline=nan must be a positive number of seconds"),
    ({"deadline": "soon"}, "deadline='soon' is not a number of seconds"),
])
def test_bad_arguments_are_named_before_any_request(server, tmp_path, kwargs, message):
    server.files["a.bin"] = PAYLOAD
    with pytest.raises(NetsError, match=message):
        ds.download(server.url + "/a.bin", tmp_path / "a.bin", **kwargs)
    assert server.requests == []


# -- trust on first use ----------------------------------------------------------------------

def test_an_unpinned_file_is_trusted_on_first_use_and_its_digest_recorded(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    path = ds.download(server.url + "/a.bin", tmp_path / "a.bin")  # no verify=False needed
    assert open(path, "rb").read() == PAYLOAD
    assert sorted(os.listdir(tmp_path)) == ["a.bin", "a.bin.sha256"]
    assert (tmp_path / "a.bin.sha256").read_text() == f"{_sha(PAYLOAD)}  a.bin\n"
    ds.download(server.url + "/a.bin", tmp_path / "a.bin")
    assert len(server.requests) == 1


def test_a_cached_file_is_checked_against_its_record_on_every_use(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    ds.download(server.url + "/a.bin", tmp_path / "a.bin", name="toy")
    (tmp_path / "a.bin").write_bytes(NEW)  # damaged or replaced in the cache
    with pytest.raises(NetsError) as err:
        ds.download(server.url + "/a.bin", tmp_path / "a.bin", name="toy")
    msg = str(err.value)
    assert msg.startswith(f"toy: the cached {tmp_path / 'a.bin'} fails its check")
    assert f"SHA256 mismatch: expected {_sha(PAYLOAD)}, got {_sha(NEW)}" in msg
    assert str(tmp_path / "a.bin.sha256") in msg and "delete it" in msg
    assert (tmp_path / "a.bin").read_bytes() == NEW  # left for the user to inspect
    assert len(server.requests) == 1


def test_a_new_download_must_match_the_recorded_digest(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    ds.download(server.url + "/a.bin", tmp_path / "a.bin")
    os.remove(tmp_path / "a.bin")
    server.files["a.bin"] = NEW  # the file changed on the server
    with pytest.raises(NetsError, match=f"SHA256 mismatch: expected {_sha(PAYLOAD)}, got "
                       f"{_sha(NEW)} \\(the expected digest is the one recorded in "
                       f"{re.escape(str(tmp_path / 'a.bin.sha256'))}"):
        ds.download(server.url + "/a.bin", tmp_path / "a.bin")
    assert os.listdir(tmp_path) == ["a.bin.sha256"]  # the download was discarded
    assert (tmp_path / "a.bin.sha256").read_text() == f"{_sha(PAYLOAD)}  a.bin\n"


def test_a_digest_you_trust_is_pinned_by_argument_or_by_writing_the_record(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    url = server.url + "/a.bin"
    with pytest.raises(NetsError, match=f"expected {'0' * 64}, got {_sha(PAYLOAD)}"):
        ds.download(url, tmp_path / "a.bin", sha256="0" * 64)
    ds.download(url, tmp_path / "a.bin", sha256=_sha(PAYLOAD).upper())
    assert os.listdir(tmp_path) == ["a.bin"]  # a pinned digest needs no record

    pinned = tmp_path / "pinned"
    pinned.mkdir()
    (pinned / "a.bin.sha256").write_text(_sha(NEW) + "\n")  # written before the download
    with pytest.raises(NetsError, match=f"expected {_sha(NEW)}, got {_sha(PAYLOAD)}"):
        ds.download(url, pinned / "a.bin")
    assert os.listdir(pinned) == ["a.bin.sha256"]
    (pinned / "a.bin.sha256").write_text(f"{_sha(PAYLOAD)}  a.bin\n")
    ds.download(url, pinned / "a.bin")
    assert (pinned / "a.bin").read_bytes() == PAYLOAD


def test_a_malformed_record_is_reported_with_its_path(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    (tmp_path / "a.bin.sha256").write_text("not a digest\n")
    with pytest.raises(NetsError, match=f"{re.escape(str(tmp_path / 'a.bin.sha256'))} holds "
                       "'not a digest\\\\n', not a SHA-256"):
        ds.download(server.url + "/a.bin", tmp_path / "a.bin")
    assert server.requests == []


def test_a_file_placed_by_hand_is_recorded_at_first_use(tmp_path):
    (tmp_path / "a.bin").write_bytes(PAYLOAD)
    url = f"http://127.0.0.1:{_closed_port()}/a.bin"  # never contacted
    assert ds.download(url, tmp_path / "a.bin") == str(tmp_path / "a.bin")
    assert (tmp_path / "a.bin.sha256").read_text() == f"{_sha(PAYLOAD)}  a.bin\n"


def test_verify_false_checks_and_records_nothing(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    ds.download(server.url + "/a.bin", tmp_path / "a.bin", sha256="0" * 64,
                size=len(PAYLOAD) + 1, verify=False)
    assert os.listdir(tmp_path) == ["a.bin"]
    assert (tmp_path / "a.bin").read_bytes() == PAYLOAD


def test_a_published_size_is_checked_without_a_digest(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    with pytest.raises(NetsError, match=f"size mismatch: expected {len(PAYLOAD) + 1} bytes, "
                       f"got {len(PAYLOAD)}"):
        ds.download(server.url + "/a.bin", tmp_path / "a.bin", size=len(PAYLOAD) + 1)
    assert os.listdir(tmp_path) == []  # nothing kept, nothing recorded
    ds.download(server.url + "/a.bin", tmp_path / "a.bin", size=len(PAYLOAD))
    assert (tmp_path / "a.bin.sha256").read_text() == f"{_sha(PAYLOAD)}  a.bin\n"


# -- progress --------------------------------------------------------------------------------

def test_a_file_under_1_mib_prints_no_progress(server, tmp_path, capsys):
    server.files["a.bin"] = PAYLOAD
    ds.download(server.url + "/a.bin", tmp_path / "a.bin", sha256=_sha(PAYLOAD))
    assert capsys.readouterr().err == ""


def test_a_large_file_prints_its_100_percent_line_once(server, tmp_path, capsys):
    big = bytes(range(256)) * 6000  # 1,536,000 bytes
    server.files["big.bin"] = big
    ds.download(server.url + "/big.bin", tmp_path / "big.bin", sha256=_sha(big))
    err = capsys.readouterr().err
    assert err.count("100%") == 1
    assert err.endswith("big.bin: 100% 1.5/1.5 MB\n")
    assert ds.download(server.url + "/big.bin", tmp_path / "big.bin")  # cached: silent
    assert capsys.readouterr().err == ""


def test_a_file_read_in_one_piece_prints_its_100_percent_line_once(tmp_path, monkeypatch,
                                                                 capsys):
    big = bytes(range(256)) * 6000
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "big.bin").write_bytes(big)
    monkeypatch.setattr(ds, "CHUNK", 4 << 20)  # the first read completes the file
    ds.download(str(mirror / "big.bin"), tmp_path / "big.bin", sha256=_sha(big))
    assert capsys.readouterr().err == "\rbig.bin: 100% 1.5/1.5 MB\n"


# -- resume ----------------------------------------------------------------------------------

def _interrupted(server, path, name="a.bin"):
    """Leave ``path.part`` holding the first half of ``server.files[name]``, as a dropped
    connection does; returns that half's length."""
    server.mode = "drop"
    with pytest.raises(NetsError, match="keeps them for the next call"):
        ds.download(f"{server.url}/{name}", path, progress=False)
    server.mode = "range"
    return len(server.files[name]) // 2


def test_a_dropped_connection_keeps_the_part_and_its_validator(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    server.etags["a.bin"] = '"v1"'
    path = tmp_path / "a.bin"
    half = len(PAYLOAD) // 2
    server.mode = "drop"
    with pytest.raises(NetsError, match=f"toy: the connection to .* closed after {half} of "
                       f"{len(PAYLOAD)} bytes; .*a.bin.part keeps them"):
        ds.download(server.url + "/a.bin", path, sha256=_sha(PAYLOAD), name="toy")
    assert not path.exists()
    assert (tmp_path / "a.bin.part").read_bytes() == PAYLOAD[:half]
    assert json.loads((tmp_path / "a.bin.part.json").read_text()) == {
        "url": server.url + "/a.bin", "validator": '"v1"'}


def test_resume_sends_range_with_the_saved_validator(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    server.etags["a.bin"] = '"v1"'
    half = _interrupted(server, tmp_path / "a.bin")
    server.sent = 0
    ds.download(server.url + "/a.bin", tmp_path / "a.bin", sha256=_sha(PAYLOAD))
    assert server.requests[-1] == ("a.bin", f"bytes={half}-")
    assert server.if_range[-1] == '"v1"'
    assert server.sent == len(PAYLOAD) - half
    assert (tmp_path / "a.bin").read_bytes() == PAYLOAD
    assert os.listdir(tmp_path) == ["a.bin"]  # the .part and its validator are gone


def test_the_last_modified_date_is_the_validator_when_the_etag_is_weak(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    server.etags["a.bin"] = 'W/"weak"'
    server.dates["a.bin"] = "Mon, 01 Jan 2024 00:00:00 GMT"
    half = _interrupted(server, tmp_path / "a.bin")
    server.etags.pop("a.bin")  # the server compares If-Range with the date
    ds.download(server.url + "/a.bin", tmp_path / "a.bin", sha256=_sha(PAYLOAD))
    assert server.requests[-1] == ("a.bin", f"bytes={half}-")
    assert server.if_range[-1] == "Mon, 01 Jan 2024 00:00:00 GMT"
    assert (tmp_path / "a.bin").read_bytes() == PAYLOAD


def test_a_part_of_an_older_file_is_not_spliced_onto_the_new_one(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    server.etags["a.bin"] = '"v1"'
    half = _interrupted(server, tmp_path / "a.bin")
    server.files["a.bin"], server.etags["a.bin"] = NEW, '"v2"'  # changed on the server
    server.sent = 0
    ds.download(server.url + "/a.bin", tmp_path / "a.bin", sha256=_sha(NEW))
    assert server.requests[-1] == ("a.bin", f"bytes={half}-")  # If-Range "v1" -> 200
    assert server.sent == len(NEW)
    assert (tmp_path / "a.bin").read_bytes() == NEW


def test_a_server_ignoring_if_range_is_caught_by_the_validator_it_returns(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    server.etags["a.bin"] = '"v1"'
    half = _interrupted(server, tmp_path / "a.bin")
    server.files["a.bin"], server.etags["a.bin"] = NEW, '"v2"'
    server.mode = "ignore-if-range"  # answers 206 with the new file's tail and ETag "v2"
    ds.download(server.url + "/a.bin", tmp_path / "a.bin", sha256=_sha(NEW))
    assert server.requests[-2:] == [("a.bin", f"bytes={half}-"), ("a.bin", None)]
    assert (tmp_path / "a.bin").read_bytes() == NEW


def test_a_part_without_a_validator_starts_over(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    (tmp_path / "a.bin.part").write_bytes(b"\xff" * 100)  # left by something else
    ds.download(server.url + "/a.bin", tmp_path / "a.bin", sha256=_sha(PAYLOAD))
    assert server.requests == [("a.bin", None)]
    assert (tmp_path / "a.bin").read_bytes() == PAYLOAD


def test_a_part_from_another_mirror_starts_over(server, tmp_path):
    server.files["m1/a.bin"] = PAYLOAD
    server.files["m2/a.bin"] = PAYLOAD
    server.etags["m1/a.bin"] = server.etags["m2/a.bin"] = '"same-looking"'
    _interrupted(server, tmp_path / "a.bin", "m1/a.bin")
    ds.download(server.url + "/m2/a.bin", tmp_path / "a.bin", sha256=_sha(PAYLOAD))
    assert server.requests[-1] == ("m2/a.bin", None)
    assert (tmp_path / "a.bin").read_bytes() == PAYLOAD


def test_a_server_ignoring_range_restarts_the_download(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    server.etags["a.bin"] = '"v1"'
    half = _interrupted(server, tmp_path / "a.bin")
    server.mode, server.sent = "ignore-range", 0
    ds.download(server.url + "/a.bin", tmp_path / "a.bin", sha256=_sha(PAYLOAD))
    assert server.requests[-1] == ("a.bin", f"bytes={half}-")
    assert server.sent == len(PAYLOAD)
    assert (tmp_path / "a.bin").read_bytes() == PAYLOAD


def test_a_part_longer_than_the_file_restarts_the_download(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    server.etags["a.bin"] = '"v1"'
    _interrupted(server, tmp_path / "a.bin")
    (tmp_path / "a.bin.part").write_bytes(PAYLOAD + b"extra")  # server answers 416
    ds.download(server.url + "/a.bin", tmp_path / "a.bin", sha256=_sha(PAYLOAD))
    assert server.requests[-2:] == [("a.bin", f"bytes={len(PAYLOAD) + 5}-"), ("a.bin", None)]
    assert (tmp_path / "a.bin").read_bytes() == PAYLOAD


def test_a_corrupt_part_fails_the_digest_and_the_next_call_starts_afresh(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    server.etags["a.bin"] = '"v1"'
    half = _interrupted(server, tmp_path / "a.bin")
    (tmp_path / "a.bin.part").write_bytes(b"\xff" * half)  # same length, wrong bytes
    with pytest.raises(NetsError, match="SHA256 mismatch"):
        ds.download(server.url + "/a.bin", tmp_path / "a.bin", sha256=_sha(PAYLOAD))
    assert os.listdir(tmp_path) == []
    ds.download(server.url + "/a.bin", tmp_path / "a.bin", sha256=_sha(PAYLOAD))
    assert server.requests[-1] == ("a.bin", None)
    assert (tmp_path / "a.bin").read_bytes() == PAYLOAD


def test_a_part_that_is_a_symbolic_link_is_refused(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    victim = tmp_path / "outside.txt"
    victim.write_bytes(b"keep me")
    cache = tmp_path / "cache"
    cache.mkdir()
    os.symlink(victim, cache / "a.bin.part")
    with pytest.raises(NetsError, match=f"{re.escape(str(cache / 'a.bin.part'))} is a "
                       "symbolic link"):
        ds.download(server.url + "/a.bin", cache / "a.bin", sha256=_sha(PAYLOAD))
    assert victim.read_bytes() == b"keep me"
    assert server.requests == []
    assert not (cache / "a.bin").exists()


def test_an_endless_body_stops_one_byte_past_the_pinned_size(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    server.mode = "endless"  # no Content-Length, the bytes never end
    with pytest.raises(NetsError, match=f"sent more than the pinned size of {len(PAYLOAD)} "
                       f"bytes \\(reading stopped at byte {len(PAYLOAD) + 1}\\)"):
        _bounded(lambda: ds.download(server.url + "/a.bin", tmp_path / "a.bin",
                                     sha256=_sha(PAYLOAD), size=len(PAYLOAD)))
    assert os.listdir(tmp_path) == []


def test_a_trickling_server_meets_the_deadline(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    server.mode = "trickle"  # one byte every 10 ms: about 100 s for the whole file
    began = time.monotonic()
    with pytest.raises(NetsError, match="did not finish within its deadline of 0.5 s \\(set "
                       "by deadline= or NETS_DATA_DEADLINE\\); .*a.bin.part keeps the"):
        _bounded(lambda: ds.download(server.url + "/a.bin", tmp_path / "a.bin",
                                     sha256=_sha(PAYLOAD), deadline=0.5))
    assert time.monotonic() - began < 10
    kept = (tmp_path / "a.bin.part").read_bytes()
    assert 0 < len(kept) < len(PAYLOAD) and PAYLOAD.startswith(kept)


def test_the_deadline_comes_from_nets_data_deadline(server, tmp_path, monkeypatch):
    server.files["a.bin"] = PAYLOAD
    server.mode = "trickle"
    monkeypatch.setenv("NETS_DATA_DEADLINE", "0.3")
    with pytest.raises(NetsError, match="within its deadline of 0.3 s"):
        _bounded(lambda: ds.download(server.url + "/a.bin", tmp_path / "a.bin",
                                     sha256=_sha(PAYLOAD)))
    monkeypatch.setenv("NETS_DATA_DEADLINE", "abc")
    with pytest.raises(NetsError, match="NETS_DATA_DEADLINE='abc' is not a number of seconds"):
        ds.download(server.url + "/a.bin", tmp_path / "b.bin", sha256=_sha(PAYLOAD))


def test_http_errors_name_the_status_and_url(server, tmp_path):
    with pytest.raises(NetsError, match=r"toy: downloading .*/missing\.bin failed: HTTP 404"):
        ds.download(server.url + "/missing.bin", tmp_path / "m.bin", sha256="0" * 64,
                    name="toy")
    assert os.listdir(tmp_path) == []


def _closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_offline_raises_a_clear_error_naming_where_to_place_the_file(tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}/a.bin"
    with pytest.raises(NetsError) as err:
        ds.download(url, tmp_path / "a.bin", sha256="0" * 64, name="toy")
    msg = str(err.value)
    assert msg.startswith("toy: cannot reach " + url) and "Offline?" in msg
    assert "NETS_DATA_URL" in msg and "refused" in msg.lower()
    assert msg.endswith(f"place the file at {tmp_path / 'a.bin'} yourself")
    assert os.listdir(tmp_path) == []


# -- the cache folder and mirrors ------------------------------------------------------------

def test_a_cache_folder_that_is_a_file_is_named(tmp_path, monkeypatch):
    monkeypatch.delenv("NETS_DATA_URL", raising=False)
    afile = tmp_path / "f"
    afile.write_text("")
    monkeypatch.setenv("NETS_DATA_HOME", str(afile))
    with pytest.raises(NetsError) as err:
        ds.libsvm("rcv1")
    assert str(err.value) == (f"NETS_DATA_HOME={str(afile)!r}: the dataset cache must be a "
                              f"folder, but {afile} is a file")
    monkeypatch.setenv("NETS_DATA_HOME", str(afile / "sub"))
    with pytest.raises(NetsError, match=f"but {re.escape(str(afile))} is a file$"):
        ds.MovieLens("100k")
    with pytest.raises(NetsError, match=f"^root={re.escape(repr(str(afile)))}: the dataset "
                       "cache must be a folder"):
        ds.data_home(str(afile))


def test_a_plain_folder_is_a_mirror(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "a.bin").write_bytes(PAYLOAD)
    remote = ds.Remote("https://example.invalid/x/a.bin", sha256=_sha(PAYLOAD),
                       size=len(PAYLOAD))
    for n, setting in enumerate((str(mirror), mirror.as_uri())):
        folder = tmp_path / f"cache{n}"
        path = ds._fetch(remote, str(folder), "toy", setting, True, False)
        assert open(path, "rb").read() == PAYLOAD
        assert sorted(os.listdir(folder)) == ["a.bin"]
    monkeypatch.setenv("NETS_DATA_URL", str(mirror))
    path = ds._fetch(remote, str(tmp_path / "cache2"), "toy", None, True, False)
    assert open(path, "rb").read() == PAYLOAD


def test_a_folder_mirror_without_the_file_names_both_places(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    remote = ds.Remote("https://example.invalid/x/a.bin", sha256=_sha(PAYLOAD))
    with pytest.raises(NetsError) as err:
        ds._fetch(remote, str(tmp_path / "cache"), "toy", str(mirror), True, False)
    msg = str(err.value)
    assert msg.startswith(f"toy: cannot read {mirror / 'a.bin'} from the mirror folder")
    assert msg.endswith(f"place the file there or at {tmp_path / 'cache' / 'a.bin'}")
    with pytest.raises(NetsError, match="mirror='/no/such/folder' is neither a URL nor an "
                       "existing folder"):
        ds._fetch(remote, str(tmp_path / "cache"), "toy", "/no/such/folder", True, False)


# -- LIBSVM sets -----------------------------------------------------------------------------

LIBSVM_TEXT = b"+1 1:0.5 3:2\n-1 2:1.5\n+1 4:-1 5:3\n"
X_DENSE = np.array([[0.5, 0, 2, 0, 0, 0], [0, 1.5, 0, 0, 0, 0], [0, 0, 0, -1, 3, 0]],
                   dtype=np.float32)  # 1-based indices in the file; the set is 6 wide
Y = np.array([1, -1, 1], dtype=np.float32)


def _zip(members):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _tar_xz(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as t:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _register_libsvm(monkeypatch, server, name, files, n_features=6):
    """A test-only LIBSVM entry: ``files`` maps split -> (file name, bytes, member, verify)."""
    splits = {}
    for split, (fname, data, member, pin) in files.items():
        server.files[fname] = data
        remote = ds.Remote("https://libsvm.invalid/binary/" + fname,
                           sha256=_sha(data) if pin else None, size=len(data))
        splits[split] = ds.LibSVMFile(remote, rows=3, member=member)
    monkeypatch.setitem(ds.LIBSVM, name, ds.LibSVMSet("https://libsvm.invalid/", n_features,
                                                      splits))


@pytest.mark.parametrize("fname, data, member", [
    ("toy.bz2", bz2.compress(LIBSVM_TEXT), None),
    ("toy.xz", lzma.compress(LIBSVM_TEXT), None),
    ("toy.gz", gzip.compress(LIBSVM_TEXT), None),
    ("toy.svm", LIBSVM_TEXT, None),  # an uncompressed file is used as downloaded
    ("toy.zip", _zip({"toy/train.svm": LIBSVM_TEXT, "toy/other": b"x"}), "toy/train.svm"),
    ("toy.tar.xz", _tar_xz({"toy/readme": b"x", "toy/train.svm": LIBSVM_TEXT}),
     "toy/train.svm"),
], ids=["bz2", "xz", "gz", "plain", "zip", "tar.xz"])
def test_libsvm_downloads_and_decompresses_each_format(server, home, monkeypatch, fname, data,
                                                       member):
    _register_libsvm(monkeypatch, server, "toy", {"train": (fname, data, member, True)})
    path = ds.libsvm("toy", mirror=server.url)
    assert open(path, "rb").read() == LIBSVM_TEXT
    assert os.path.dirname(path) == str(home / "libsvm" / "toy")
    kept = os.path.join(os.path.dirname(path), fname)
    assert open(kept, "rb").read() == data  # the download is kept beside the output
    assert set(os.listdir(os.path.dirname(path))) == {fname, os.path.basename(path)}
    X, y = ds.load_libsvm_dataset("toy", mirror=server.url, progress=False)
    np.testing.assert_array_equal(X.asnumpy(), X_DENSE)
    np.testing.assert_array_equal(y.asnumpy(), Y)
    assert len(server.requests) == 1  # the second call used the cache


def test_libsvm_splits_of_one_archive_share_one_download(server, home, monkeypatch):
    test_text = b"-1 6:1\n"
    archive = _tar_xz({"t/train.svm": LIBSVM_TEXT, "t/test.svm": test_text})
    _register_libsvm(monkeypatch, server, "toy", {
        "train": ("t.tar.xz", archive, "t/train.svm", True),
        "test": ("t.tar.xz", archive, "t/test.svm", True)})
    monkeypatch.setenv("NETS_DATA_URL", server.url)  # the mirror from the environment
    assert open(ds.libsvm("toy", "train"), "rb").read() == LIBSVM_TEXT
    assert open(ds.libsvm("toy", "test"), "rb").read() == test_text
    assert len(server.requests) == 1
    X, _ = ds.load_libsvm_dataset("toy", "test")
    assert X.shape == (1, 6)  # the set's width, though the test file names only column 6


def test_libsvm_entries_without_a_digest_are_trusted_on_first_use(server, home, monkeypatch):
    data = bz2.compress(LIBSVM_TEXT)
    _register_libsvm(monkeypatch, server, "toy", {"train": ("toy.bz2", data, None, False)})
    path = ds.libsvm("toy", mirror=server.url, progress=False)  # no verify=False
    assert open(path, "rb").read() == LIBSVM_TEXT
    folder = home / "libsvm" / "toy"
    assert (folder / "toy.bz2.sha256").read_text() == f"{_sha(data)}  toy.bz2\n"
    (folder / "toy.bz2").write_bytes(data + b"tampered")
    with pytest.raises(NetsError, match="toy \\(train\\): the cached .*toy.bz2 fails its "
                       f"check: size mismatch: expected {len(data)} bytes"):
        ds.libsvm("toy", mirror=server.url)
    with pytest.raises(NetsError, match="sha256='bad' is not a hex digest"):
        ds.libsvm("toy", mirror=server.url, sha256="bad")


def test_libsvm_sha256_pins_the_download(server, home, monkeypatch):
    data = bz2.compress(LIBSVM_TEXT)
    _register_libsvm(monkeypatch, server, "toy", {"train": ("toy.bz2", data, None, False)})
    with pytest.raises(NetsError, match=f"toy \\(train\\): .*SHA256 mismatch: expected "
                       f"{'1' * 64}, got {_sha(data)}; the download was discarded"):
        ds.libsvm("toy", mirror=server.url, sha256="1" * 64)
    X, y = ds.load_libsvm_dataset("toy", mirror=server.url, sha256=_sha(data), progress=False)
    np.testing.assert_array_equal(X.asnumpy(), X_DENSE)
    assert sorted(os.listdir(home / "libsvm" / "toy")) == ["toy", "toy.bz2"]  # no record


def test_libsvm_offline_names_the_cache_path_for_the_file(home, monkeypatch):
    monkeypatch.setenv("NETS_DATA_URL", f"http://127.0.0.1:{_closed_port()}")
    with pytest.raises(NetsError, match="rcv1 \\(test\\): cannot reach .*place the file at "
                       f"{re.escape(str(home / 'libsvm' / 'rcv1' / 'rcv1_test.binary.bz2'))} "
                       "yourself$"):
        ds.libsvm("rcv1", "test")


def test_an_unpacked_part_that_is_a_symbolic_link_is_refused(server, home, monkeypatch):
    _register_libsvm(monkeypatch, server, "toy",
                     {"train": ("toy.bz2", bz2.compress(LIBSVM_TEXT), None, True)})
    folder = home / "libsvm" / "toy"
    folder.mkdir(parents=True)
    victim = home / "outside.txt"
    victim.write_bytes(b"keep me")
    os.symlink(victim, folder / "toy.part")  # the decompressed file's .part
    with pytest.raises(NetsError, match="toy.part is a symbolic link"):
        ds.libsvm("toy", mirror=server.url)
    assert victim.read_bytes() == b"keep me"
    assert not (folder / "toy").exists()


def test_a_damaged_archive_raises_and_leaves_no_output(server, home, monkeypatch):
    damaged = bz2.compress(LIBSVM_TEXT)[:-20] + b"\0" * 20
    _register_libsvm(monkeypatch, server, "toy", {"train": ("toy.bz2", damaged, None, True)})
    with pytest.raises(NetsError, match="toy \\(train\\): cannot decompress .*toy.bz2"):
        ds.libsvm("toy", mirror=server.url)
    assert os.listdir(home / "libsvm" / "toy") == ["toy.bz2"]  # no output or temporary file


def test_a_missing_archive_member_raises(server, home, monkeypatch):
    _register_libsvm(monkeypatch, server, "toy",
                     {"train": ("toy.zip", _zip({"a": LIBSVM_TEXT}), "b", True)})
    with pytest.raises(NetsError, match="cannot decompress .*member 'b'"):
        ds.libsvm("toy", mirror=server.url)


def test_unknown_names_and_splits_list_the_valid_ones(home):
    with pytest.raises(NetsError, match="unknown LIBSVM dataset 'nope'; valid: .*'rcv1'.*"
                       "'news20.binary'.*'url'.*'avazu-app'.*'criteo'"):
        ds.libsvm("nope")
    with pytest.raises(NetsError, match="unknown split of 'url' 'test'; valid: 'train'$"):
        ds.libsvm("url", "test")
    with pytest.raises(NetsError, match="unknown MovieLens variant '10m'; valid: '100k', '1m'"):
        ds.MovieLens("10m")
    with pytest.raises(NetsError, match="unknown split 'ua'; valid: 'random'$"):
        ds.MovieLens("1m", split="ua")


def test_the_libsvm_table_records_each_sets_files_and_sizes():
    site = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/"
    for name in ("rcv1", "news20.binary", "url", "avazu-app", "criteo"):
        entry = ds.LIBSVM[name]
        assert entry.n_features > 0 and "train" in entry.splits
        for f in entry.splits.values():
            assert f.remote.url.startswith(site) and f.rows > 0
            assert f.remote.url.endswith((".bz2", ".xz")) or f.member is not None
    # the numbers the LIBSVM page states
    assert ds.LIBSVM["rcv1"].n_features == 47236
    assert ds.LIBSVM["rcv1"].splits["test"].rows == 677399
    assert ds.LIBSVM["news20.binary"].n_features == 1355191
    assert ds.LIBSVM["criteo"].splits["train"].member.endswith("train.txt.svm")


def test_every_real_libsvm_entry_downloads_without_verify_false(server, home, monkeypatch):
    """Each registered file, served under its real name by the local server (a stand-in with
    LIBSVM_TEXT inside), is fetched, trusted on first use and decompressed by default."""
    archives = {}
    for entry in ds.LIBSVM.values():
        for f in entry.splits.values():
            fname = f.remote.url.rsplit("/", 1)[-1]
            if f.member is not None:
                archives.setdefault(fname, {})[f.member] = LIBSVM_TEXT
            else:
                assert fname.endswith(".bz2")
                server.files[fname] = bz2.compress(LIBSVM_TEXT)
    for fname, members in archives.items():
        server.files[fname] = _tar_xz(members)
    monkeypatch.setenv("NETS_DATA_URL", server.url)
    for name, entry in ds.LIBSVM.items():
        for split, f in entry.splits.items():
            path = ds.libsvm(name, split, progress=False)
            assert open(path, "rb").read() == LIBSVM_TEXT
            fname = f.remote.url.rsplit("/", 1)[-1]
            record = home / "libsvm" / name / (fname + ".sha256")
            assert record.read_text() == f"{_sha(server.files[fname])}  {fname}\n"
    assert not any(home.rglob("*.part"))


def test_the_movielens_table_pins_published_digests():
    for variant in ("100k", "1m"):
        remote = ds.MOVIELENS[variant].remote
        assert re.fullmatch("[0-9a-f]{64}", remote.sha256)
        assert re.fullmatch("[0-9a-f]{32}", remote.md5)
        assert remote.url == f"https://files.grouplens.org/datasets/movielens/ml-{variant}.zip"


def test_data_home_defaults(monkeypatch, tmp_path):
    monkeypatch.delenv("NETS_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert ds.data_home() == str(tmp_path / ".nets" / "datasets")
    monkeypatch.setenv("NETS_DATA_HOME", str(tmp_path / "env"))
    assert ds.data_home() == str(tmp_path / "env")
    assert ds.data_home(tmp_path / "arg") == str(tmp_path / "arg")


# -- MovieLens -------------------------------------------------------------------------------

# (user, item, rating, timestamp), 1-based ids as in MovieLens; user 4 and item 7 are the
# largest ids, item 6 is never rated (1m's item ids have such gaps).
RATINGS = [(1, 1, 5, 881250949), (1, 3, 3, 891717742), (2, 1, 4, 878887116),
           (2, 7, 1, 880606923), (3, 2, 2, 886397596), (3, 5, 4, 884182806),
           (4, 4, 5, 881171488), (4, 1, 3, 891628467), (1, 2, 4, 886324817),
           (2, 5, 2, 883603013)]
UA_TEST = [0, 3, 6]  # rows of RATINGS in the official fixture split's test part


def _lines(rows, sep):
    return "".join(sep.join(map(str, r)) + "\n" for r in rows).encode()


def _register_movielens(monkeypatch, server, variant, archive_name, members, ratings, sep,
                        splits):
    data = _zip(members)
    server.files[archive_name] = data
    remote = ds.Remote("https://grouplens.invalid/" + archive_name, sha256=_sha(data))
    monkeypatch.setitem(ds.MOVIELENS, variant,
                        ds.MOVIELENS[variant]._replace(remote=remote, ratings=ratings, sep=sep,
                                                       splits=splits))


def _expect(rows):
    a = np.array(rows, dtype=np.int64).reshape(-1, 4)
    return a[:, 0] - 1, a[:, 1] - 1, a[:, 2].astype(np.float32), a[:, 3]


def _assert_ratings(r, rows):
    user, item, rating, timestamp = _expect(rows)
    assert r.user.dtype == np.int64 and r.item.dtype == np.int64
    assert r.rating.dtype == np.float32 and r.timestamp.dtype == np.int64
    np.testing.assert_array_equal(r.user, user)
    np.testing.assert_array_equal(r.item, item)
    np.testing.assert_array_equal(r.rating, rating)
    np.testing.assert_array_equal(r.timestamp, timestamp)


@pytest.fixture
def ml100k(server, monkeypatch):
    train = [r for i, r in enumerate(RATINGS) if i not in UA_TEST]
    members = {"ml-100k/u.data": _lines(RATINGS, "\t"), "ml-100k/README": b"fixture",
               "ml-100k/ua.base": _lines(train, "\t"),
               "ml-100k/ua.test": _lines([RATINGS[i] for i in UA_TEST], "\t")}
    _register_movielens(monkeypatch, server, "100k", "ml-100k.zip", members,
                        "ml-100k/u.data", "\t", ("ua",))
    return server


def test_movielens_100k_reads_zero_based_ids_and_counts(ml100k, home):
    ml = ds.MovieLens("100k", mirror=ml100k.url)
    _assert_ratings(ml.ratings, RATINGS)
    assert (ml.n_users, ml.n_items) == (4, 7)
    assert ml.path == str(home / "movielens" / "ml-100k.zip")
    assert ml100k.requests == [("ml-100k.zip", None)]
    ds.MovieLens("100k", mirror=ml100k.url, split="ua")
    assert len(ml100k.requests) == 1  # cached


def test_movielens_official_split_reads_the_shipped_files(ml100k, home):
    ml = ds.MovieLens("100k", split="ua", mirror=ml100k.url)
    _assert_ratings(ml.test, [RATINGS[i] for i in UA_TEST])
    _assert_ratings(ml.train, [r for i, r in enumerate(RATINGS) if i not in UA_TEST])
    assert (ml.n_users, ml.n_items) == (4, 7)  # counted over every rating


def test_movielens_random_split_is_a_seeded_partition(ml100k, home):
    ml = ds.MovieLens("100k", test_fraction=0.3, seed=5, mirror=ml100k.url)
    assert (len(ml.train), len(ml.test)) == (7, 3)
    def rows(r):
        return [tuple(map(int, x)) for x in zip(r.user, r.item, r.rating, r.timestamp)]

    train, test = rows(ml.train), rows(ml.test)
    assert set(train) | set(test) == set(rows(ml.ratings)) and not set(train) & set(test)
    assert sorted(train + test) == sorted(rows(ml.ratings))  # nothing lost or repeated
    again = ds.MovieLens("100k", test_fraction=0.3, seed=5, mirror=ml100k.url)
    np.testing.assert_array_equal(again.test.timestamp, ml.test.timestamp)
    others = {tuple(ds.MovieLens("100k", test_fraction=0.3, seed=s,
                                 mirror=ml100k.url).test.timestamp) for s in range(8)}
    assert len(others) > 1  # the seed chooses the split
    with pytest.raises(NetsError, match="test_fraction=1.0 must lie in \\(0, 1\\)"):
        ds.MovieLens("100k", test_fraction=1.0, mirror=ml100k.url)


def test_movielens_1m_reads_double_colon_separated_ratings(server, home, monkeypatch):
    _register_movielens(monkeypatch, server, "1m", "ml-1m.zip",
                        {"ml-1m/ratings.dat": _lines(RATINGS, "::"), "ml-1m/users.dat": b""},
                        "ml-1m/ratings.dat", "::", ())
    ml = ds.MovieLens("1m", mirror=server.url)
    _assert_ratings(ml.ratings, RATINGS)
    assert (ml.n_users, ml.n_items) == (4, 7)
    assert len(ml.test) == 1 and len(ml.train) == 9  # round(0.1 * 10)


def test_movielens_malformed_ratings_name_the_line(server, home, monkeypatch):
    bad = _lines(RATINGS[:2], "\t") + b"3\tx\t4\t5\n"
    _register_movielens(monkeypatch, server, "100k", "ml-100k.zip", {"ml-100k/u.data": bad},
                        "ml-100k/u.data", "\t", ())
    with pytest.raises(NetsError, match="ml-100k/u.data: could not convert string 'x' to "
                       "int64 on line 3, column 2.*expected lines of 4 integers"):
        ds.MovieLens("100k", mirror=server.url)


def test_movielens_digest_mismatch_names_the_dataset(server, home, monkeypatch):
    _register_movielens(monkeypatch, server, "100k", "ml-100k.zip",
                        {"ml-100k/u.data": _lines(RATINGS, "\t")}, "ml-100k/u.data", "\t", ())
    server.files["ml-100k.zip"] = _zip({"ml-100k/u.data": b"1\t1\t1\t1\n"})  # changed file
    with pytest.raises(NetsError, match="MovieLens 100k: .*ml-100k.zip: SHA256 mismatch"):
        ds.MovieLens("100k", mirror=server.url)
    assert os.listdir(home / "movielens") == []


def test_movielens_offline_names_the_dataset(home, monkeypatch):
    monkeypatch.setenv("NETS_DATA_URL", f"http://127.0.0.1:{_closed_port()}")
    with pytest.raises(NetsError, match="MovieLens 1m: cannot reach http://127.0.0.1:.*/ml-1m"
                       "\\.zip"):
        ds.MovieLens("1m")
