"""nets.data.datasets against a real HTTP server (http.server in a thread, 127.0.0.1, port 0)
serving fixture files built here: a small ml-100k/ml-1m-shaped zip, LibSVM text compressed as
.bz2/.xz/.gz and inside .zip/.tar.xz archives.

No test touches the internet: the registries' real entries are only inspected (or refused
before any request), and test-only entries, with digests computed from the fixtures' bytes,
are swapped in with monkeypatch and fetched through ``mirror=``/``NETS_DATA_URL``.
"""
import bz2
import gzip
import hashlib
import http.server
import io
import lzma
import os
import re
import socket
import tarfile
import threading
import zipfile

import numpy as np
import pytest

from nets.base import NetsError
from nets.data import datasets as ds


class _Handler(http.server.BaseHTTPRequestHandler):
    """Serves ``server.files`` by name. ``server.mode``: 'range' honours ``Range: bytes=N-``
    (206 + Content-Range), 'ignore-range' always sends the whole file (200), 'drop' sends the
    headers of the whole file and then half of the body before closing the connection."""

    def do_GET(self):
        srv = self.server
        name = self.path.lstrip("/")
        srv.requests.append((name, self.headers.get("Range")))
        data = srv.files.get(name)
        if data is None:
            self.send_error(404, "Not Found")
            return
        start = 0
        match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
        if match and srv.mode != "ignore-range":
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
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if srv.mode == "drop":
            body = body[:len(body) // 2]
            self.close_connection = True
        self.wfile.write(body)
        srv.sent += len(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.files, srv.requests, srv.mode, srv.sent = {}, [], "range", 0
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}"
    thread = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join()


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A fresh NETS_DATA_HOME, and no mirror from the environment."""
    monkeypatch.setenv("NETS_DATA_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("NETS_DATA_URL", raising=False)
    return tmp_path / "home"


def _sha(data):
    return hashlib.sha256(data).hexdigest()


PAYLOAD = bytes(range(256)) * 40 + b"odd"  # every byte value, and an odd length


# -- download --------------------------------------------------------------------------------

def test_download_verifies_and_writes_the_file(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    path = tmp_path / "sub" / "a.bin"
    out = ds.download(server.url + "/a.bin", path, sha256=_sha(PAYLOAD), size=len(PAYLOAD))
    assert out == str(path)
    assert path.read_bytes() == PAYLOAD
    assert sorted(os.listdir(path.parent)) == ["a.bin"]  # no .part or temporary file left
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
    with pytest.raises(NetsError, match=f"size mismatch: expected 5 bytes, got {len(PAYLOAD)}"):
        ds.download(server.url + "/a.bin", tmp_path / "a.bin", sha256=_sha(PAYLOAD), size=5)
    assert os.listdir(tmp_path) == []


def test_an_unpinned_file_needs_verify_false(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    with pytest.raises(NetsError, match="no published digest.*verify=False"):
        ds.download(server.url + "/a.bin", tmp_path / "a.bin", name="toy")
    assert server.requests == []  # refused before any request
    ds.download(server.url + "/a.bin", tmp_path / "a.bin", verify=False)
    assert (tmp_path / "a.bin").read_bytes() == PAYLOAD


def test_resume_sends_a_range_request_for_the_missing_bytes(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    k = 3000
    (tmp_path / "a.bin.part").write_bytes(PAYLOAD[:k])
    ds.download(server.url + "/a.bin", tmp_path / "a.bin", sha256=_sha(PAYLOAD))
    assert server.requests == [("a.bin", f"bytes={k}-")]
    assert server.sent == len(PAYLOAD) - k
    assert (tmp_path / "a.bin").read_bytes() == PAYLOAD
    assert not (tmp_path / "a.bin.part").exists()


def test_a_server_ignoring_range_restarts_the_download(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    server.mode = "ignore-range"
    (tmp_path / "a.bin.part").write_bytes(PAYLOAD[:3000])
    ds.download(server.url + "/a.bin", tmp_path / "a.bin", sha256=_sha(PAYLOAD))
    assert server.requests == [("a.bin", "bytes=3000-")]
    assert server.sent == len(PAYLOAD)
    assert (tmp_path / "a.bin").read_bytes() == PAYLOAD


def test_a_part_longer_than_the_file_restarts_the_download(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    (tmp_path / "a.bin.part").write_bytes(PAYLOAD + b"extra")  # server answers 416
    ds.download(server.url + "/a.bin", tmp_path / "a.bin", sha256=_sha(PAYLOAD))
    assert server.requests == [("a.bin", f"bytes={len(PAYLOAD) + 5}-"), ("a.bin", None)]
    assert (tmp_path / "a.bin").read_bytes() == PAYLOAD


def test_a_dropped_connection_keeps_the_part_and_the_next_call_resumes(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    server.mode = "drop"
    path = tmp_path / "a.bin"
    half = len(PAYLOAD) // 2
    with pytest.raises(NetsError, match=f"after {half} of {len(PAYLOAD)} bytes.*resumes"):
        ds.download(server.url + "/a.bin", path, sha256=_sha(PAYLOAD), name="toy")
    assert not path.exists()
    assert (tmp_path / "a.bin.part").read_bytes() == PAYLOAD[:half]
    server.mode = "range"
    ds.download(server.url + "/a.bin", path, sha256=_sha(PAYLOAD))
    assert server.requests[-1] == ("a.bin", f"bytes={half}-")
    assert path.read_bytes() == PAYLOAD


def test_a_corrupt_part_fails_the_digest_and_the_next_call_starts_afresh(server, tmp_path):
    server.files["a.bin"] = PAYLOAD
    (tmp_path / "a.bin.part").write_bytes(b"\xff" * 100)  # not a prefix of the file
    with pytest.raises(NetsError, match="SHA256 mismatch"):
        ds.download(server.url + "/a.bin", tmp_path / "a.bin", sha256=_sha(PAYLOAD))
    assert os.listdir(tmp_path) == []
    ds.download(server.url + "/a.bin", tmp_path / "a.bin", sha256=_sha(PAYLOAD))
    assert server.requests[-1] == ("a.bin", None)
    assert (tmp_path / "a.bin").read_bytes() == PAYLOAD


def test_http_errors_name_the_status_and_url(server, tmp_path):
    with pytest.raises(NetsError, match=r"toy: downloading .*/missing\.bin failed: HTTP 404"):
        ds.download(server.url + "/missing.bin", tmp_path / "m.bin", sha256="0" * 64,
                    name="toy")
    assert os.listdir(tmp_path) == []


def _closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_offline_raises_a_clear_error(tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}/a.bin"
    with pytest.raises(NetsError) as err:
        ds.download(url, tmp_path / "a.bin", sha256="0" * 64, name="toy")
    msg = str(err.value)
    assert msg.startswith("toy: cannot reach " + url) and "Offline?" in msg
    assert "NETS_DATA_URL" in msg and "refused" in msg.lower()
    assert os.listdir(tmp_path) == []


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


def test_libsvm_entries_without_a_digest_need_verify_false(server, home, monkeypatch):
    _register_libsvm(monkeypatch, server, "toy",
                     {"train": ("toy.bz2", bz2.compress(LIBSVM_TEXT), None, False)})
    with pytest.raises(NetsError, match="toy \\(train\\): no published digest.*verify=False"):
        ds.libsvm("toy", mirror=server.url)
    assert server.requests == []
    path = ds.libsvm("toy", mirror=server.url, verify=False)
    assert open(path, "rb").read() == LIBSVM_TEXT


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


def test_real_libsvm_sets_are_refused_unverified_before_any_network_access(home, monkeypatch):
    monkeypatch.setenv("NETS_DATA_URL", f"http://127.0.0.1:{_closed_port()}")
    for name, entry in ds.LIBSVM.items():
        for split in entry.splits:
            with pytest.raises(NetsError, match=f"{re.escape(name)} \\({split}\\): no "
                               "published digest is pinned.*verify=False"):
                ds.libsvm(name, split)
    assert not home.exists() or not any(home.rglob("*.part"))


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
