"""Real datasets one call away: MovieLens ratings and the LIBSVM site's binary
classification sets, downloaded once into a cache folder and checked on every use.

The cache folder is ``root``, else ``$NETS_DATA_HOME``, else ``~/.nets/datasets``. A file is
fetched from its site, or from a mirror (``mirror=`` or ``$NETS_DATA_URL``): a URL, or a plain
folder (or ``file://`` URL), holding the files flat under their original names. Downloads
use the standard library only:

* the bytes go to ``FILE.part``; an interrupted download leaves that ``.part`` and, beside it,
  ``FILE.part.json`` with the server's validator (ETag or Last-Modified), and the next call
  continues it with ``Range`` + ``If-Range``, starting over when the validator is missing,
  from another URL or mirror, or no longer matches (so the tail of a changed file is never
  spliced onto an older head). A ``.part`` that is a symbolic link is refused;
* each download has an overall deadline (``deadline=``, else ``$NETS_DATA_DEADLINE``, else
  ``DEADLINE`` seconds) besides ``TIMEOUT`` per silent read; with a pinned size at most
  ``size + 1`` bytes are read;
* the finished file is checked, then flushed, fsynced and renamed into place with
  ``os.replace``, so a file under its final name is always complete. The check is against the
  entry's size where a trustworthy source publishes one, and its pinned SHA-256 (or MD5,
  where only that is published). An entry with no published digest (the LIBSVM-site sets) is
  **trusted on first use**: the SHA-256 of its first complete download is recorded in
  ``FILE.sha256`` beside it (``sha256sum`` format), and the file is checked against that
  record on every later use and every new download. To pin a digest you trust instead, pass
  ``sha256=`` or write ``FILE.sha256`` before the first download. ``verify=False`` switches
  every check off;
* a fresh download that fails its check is discarded, with the expected and the actual value
  in the ``NetsError``; a cached file that fails it is left for you to inspect or delete;
* ``.bz2``, ``.xz`` and ``.gz`` files, and members of ``.zip`` and ``.tar.*`` archives, are
  decompressed the same way (to ``OUTPUT.part``, renamed when complete).
  The downloaded file is kept, so a second split of one archive, or a deleted decompressed
  file, needs no new download.

Offline, place a file at the cache path the error message names (it is trusted on first use
like a download). Progress lines go to stderr for files of 1 MiB or more. Every failure
(HTTP status, connection refused or offline, a dropped connection, a passed deadline, a size
or digest mismatch, a damaged archive, an unknown name, variant or split, a cache folder that
is a file) raises ``NetsError`` naming the dataset, the URL or file, and what went wrong.
"""
import contextlib
import dataclasses
import errno
import hashlib
import io
import json
import numbers
import os
import re
import sys
import tempfile
import time
import zipfile
from typing import NamedTuple, Optional

import numpy as np

from ..base import NetsError
from .libsvm import load_libsvm

__all__ = ["MovieLens", "Ratings", "libsvm", "load_libsvm_dataset", "download", "data_home",
           "Remote", "LibSVMFile", "LibSVMSet", "MOVIELENS", "LIBSVM"]

CHUNK = 1 << 20  # bytes read from the network, hashed or decompressed at a time
TIMEOUT = 60  # seconds a connection may stay silent before the download fails
DEADLINE = 4 * 60 * 60  # seconds one download may take in all, unless deadline= or
# $NETS_DATA_DEADLINE says otherwise; a .part outlives it, and the next call continues it
PROGRESS_MIN = 1 << 20  # bytes: smaller transfers print no progress line


class Remote(NamedTuple):
    """One file on a dataset's site: its URL, pinned digests (hex) and size in bytes.

    ``sha256`` and ``md5`` are copied from a published source cited beside the entry, never
    computed here; ``None`` where no source publishes one."""
    url: str
    sha256: Optional[str] = None
    md5: Optional[str] = None
    size: Optional[int] = None


class LibSVMFile(NamedTuple):
    """One split of a LIBSVM-site set: the file to download, the LibSVM file inside it when it
    is an archive (``member``; ``None`` for a plain or ``.bz2``/``.xz``/``.gz`` file) and its
    row count as the LIBSVM datasets page states it."""
    remote: Remote
    rows: int
    member: Optional[str] = None


class LibSVMSet(NamedTuple):
    """A LIBSVM-site set: its page, its number of features and its splits by name."""
    page: str
    n_features: int
    splits: dict


# MovieLens (https://grouplens.org/datasets/movielens/). SHA-256 and sizes: TensorFlow
# Datasets, tensorflow_datasets/url_checksums/movielens.txt (commit 1c076ac). MD5: as pinned in
# eli-osherovich/papers_with_code datasets/movielens/dl_config.py (GroupLens publishes them as
# ml-*.zip.md5 beside the zips). ``ratings`` is the archive member holding every rating,
# ``sep`` its field separator, ``splits`` the official train/test pairs the archive ships
# (members PREFIX.base and PREFIX.test).
class _MovieLensVariant(NamedTuple):
    remote: Remote
    ratings: str
    sep: str
    splits: tuple


_GROUPLENS = "https://files.grouplens.org/datasets/movielens/"
MOVIELENS = {
    "100k": _MovieLensVariant(
        Remote(_GROUPLENS + "ml-100k.zip",
               sha256="50d2a982c66986937beb9ffb3aa76efe955bf3d5c6b761f4e3a7cd717c6a3229",
               md5="0e33842e24a9c977be4e0107933c0723", size=4924029),
        ratings="ml-100k/u.data", sep="\t",
        splits=("ua", "ub", "u1", "u2", "u3", "u4", "u5")),
    "1m": _MovieLensVariant(
        Remote(_GROUPLENS + "ml-1m.zip",
               sha256="a6898adb50b9ca05aa231689da44c217cb524e7ebd39d264c56e2832f2c54e20",
               md5="c4d9eecfca2ab87c1945afe126590906", size=5917549),
        ratings="ml-1m/ratings.dat", sep="::", splits=()),
}

# LIBSVM binary classification sets (https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/
# binary.html). File names, row and feature counts as that page lists them, transcribed in
# mathurinm/libsvmdata libsvmdata/datasets.py and TheoGuyard/LIBSVMdata.jl src/datasets.jl
# (avazu-site's training rows are 25,832,830 = its .tr + .val files' 23,567,843 + 2,264,987,
# where LIBSVMdata.jl has 25,831,830); criteo's counts as quoted from that page in Apache
# MXNet's example/sparse/factorization_machine/README.md, and its archive layout
# (criteo.kaggle2014.svm/{train,test}.txt.svm) as other projects' loaders of that file read
# it. The site publishes no checksums and no file sizes (its folder listing rounds them), and no
# project found pins either for these files, so they carry neither: they are trusted on first
# use (``download``), and ``libsvm(..., sha256=)`` pins a digest you trust.
_LIBSVM_SITE = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/"


def _libsvm_set(anchor, n_features, **splits):
    """An entry from the page's anchor, the width and ``split=(file, rows[, member])``."""
    page = _LIBSVM_SITE[:-1] + ".html#" + anchor.replace(" ", "%20")
    return LibSVMSet(page, n_features, {split: LibSVMFile(Remote(_LIBSVM_SITE + spec[0]),
                                                          *spec[1:])
                                        for split, spec in splits.items()})


LIBSVM = {
    "rcv1": _libsvm_set("rcv1.binary", 47_236, train=("rcv1_train.binary.bz2", 20_242),
                        test=("rcv1_test.binary.bz2", 677_399)),
    "news20.binary": _libsvm_set("news20.binary", 1_355_191,
                                 train=("news20.binary.bz2", 19_996)),
    "real-sim": _libsvm_set("real-sim", 20_958, train=("real-sim.bz2", 72_309)),
    "url": _libsvm_set("url", 3_231_961, train=("url_combined.bz2", 2_396_130)),
    "avazu-app": _libsvm_set("avazu", 1_000_000, train=("avazu-app.bz2", 14_596_137),
                             test=("avazu-app.t.bz2", 1_719_304)),
    "avazu-site": _libsvm_set("avazu", 1_000_000, train=("avazu-site.bz2", 25_832_830),
                              test=("avazu-site.t.bz2", 2_858_160)),
    "kdda": _libsvm_set("kdd2010 (algebra)", 20_216_830, train=("kdda.bz2", 8_407_752),
                        test=("kdda.t.bz2", 510_302)),
    "kddb": _libsvm_set("kdd2010 (bridge to algebra)", 29_890_095,
                        train=("kddb.bz2", 19_264_097), test=("kddb.t.bz2", 748_401)),
    "criteo": _libsvm_set("criteo", 1_000_000,
                          train=("criteo.kaggle2014.svm.tar.xz", 45_840_617,
                                 "criteo.kaggle2014.svm/train.txt.svm"),
                          test=("criteo.kaggle2014.svm.tar.xz", 6_042_135,
                                "criteo.kaggle2014.svm/test.txt.svm")),
}


def _blocking_file(path):
    """The nearest existing ancestor of ``path`` (or ``path`` itself) when it is not a folder,
    so that no folder can be created at ``path``; ``None`` when nothing blocks it."""
    probe = path
    while not os.path.lexists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            return None
        probe = parent
    return None if os.path.isdir(probe) else probe


def data_home(root: Optional[str] = None) -> str:
    """The cache folder: ``root``, else ``$NETS_DATA_HOME``, else ``~/.nets/datasets``.

    Parameters
    ----------
    root : str or os.PathLike, optional
        The folder to use instead of ``$NETS_DATA_HOME``.

    Returns
    -------
    str
        The folder as an absolute path (it need not exist yet).

    Raises
    ------
    NetsError
        When the folder, or a folder above it, is a file (the message names the setting,
        ``root=`` or ``NETS_DATA_HOME``, and the file).
    """
    if root is not None:
        setting, value = "root", root
    elif os.environ.get("NETS_DATA_HOME"):
        setting, value = "NETS_DATA_HOME", os.environ["NETS_DATA_HOME"]
    else:
        setting, value = None, "~/.nets/datasets"
    path = os.path.abspath(os.path.expanduser(os.fspath(value)))
    blocker = _blocking_file(path)
    if blocker is not None:
        where = f"{setting}={os.fspath(value)!r}" if setting else f"the default {value}"
        raise NetsError(f"{where}: the dataset cache must be a folder, but {blocker} is a file")
    return path


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def _is_remote(source):
    """Whether ``source`` is a URL to request (``file://`` URLs and plain paths are local)."""
    return bool(_URL.match(source)) and not source.lower().startswith("file:")


def _local_path(source):
    """The file system path of a plain path or a ``file://`` URL."""
    if source.lower().startswith("file:"):
        import urllib.parse
        import urllib.request
        return urllib.request.url2pathname(urllib.parse.urlparse(source).path)
    return source


def _source(url, mirror):
    """``url``, or the file of the same name under ``mirror`` / ``$NETS_DATA_URL``: a URL, or
    a plain folder path (or ``file://`` URL) whose file is copied."""
    if mirror is not None:
        setting, mirror = "mirror", os.fspath(mirror)
    else:
        setting, mirror = "NETS_DATA_URL", os.environ.get("NETS_DATA_URL")
    if not mirror:
        return url
    name = url.rsplit("/", 1)[-1]
    if _is_remote(mirror):
        return mirror.rstrip("/") + "/" + name
    folder = os.path.abspath(os.path.expanduser(_local_path(mirror)))
    if not os.path.isdir(folder):
        raise NetsError(f"{setting}={mirror!r} is neither a URL nor an existing folder "
                        f"({folder})")
    return os.path.join(folder, name)


def _choose(kind, key, table):
    if key not in table:
        raise NetsError(f"unknown {kind} {key!r}; valid: {', '.join(map(repr, table))}")
    return table[key]


def _deadline_seconds(deadline):
    """Validate ``deadline`` (else ``$NETS_DATA_DEADLINE``, else ``DEADLINE``) in seconds."""
    if deadline is None:
        text = os.environ.get("NETS_DATA_DEADLINE", "").strip()
        if not text:
            return float(DEADLINE)
        setting = f"NETS_DATA_DEADLINE={text!r}"
        try:
            value = float(text)
        except ValueError:
            raise NetsError(f"{setting} is not a number of seconds") from None
    else:
        setting = f"deadline={deadline!r}"
        if isinstance(deadline, bool) or not isinstance(deadline, numbers.Real):
            raise NetsError(f"{setting} is not a number of seconds")
        value = float(deadline)
    if not value > 0:  # also refuses NaN
        raise NetsError(f"{setting} must be a positive number of seconds (math.inf for none)")
    return value


def _hex_digest(value, length, argument):
    """``value`` lower-cased, or ``None``; a ``NetsError`` unless it is ``length`` hex digits."""
    if value is None:
        return None
    if not isinstance(value, str) or not re.fullmatch(f"[0-9a-fA-F]{{{length}}}", value):
        raise NetsError(f"{argument}={value!r} is not a hex digest of {length} digits")
    return value.lower()


# -- files inside the cache ------------------------------------------------------------------

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # absent on Windows: the islink check stands alone


def _refuse_link(path, what):
    if os.path.islink(path):
        raise NetsError(f"{what}: {path} is a symbolic link; a download is never written "
                        f"through a link (it could change a file outside the cache); remove it")


def _open_part(path, what, append=False):
    """Open ``path`` (a ``.part`` file in the cache) for binary writing, appending or
    truncating, without following a symbolic link at ``path``."""
    _refuse_link(path, what)
    flags = (os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC) | _NOFOLLOW
             | getattr(os, "O_BINARY", 0))
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP:  # a link put there after the check above
            _refuse_link(path, what)
        raise NetsError(f"{what}: cannot write {path}: {e.strerror}") from None
    return os.fdopen(fd, "ab" if append else "wb")


def _fsync_dir(folder):
    """Make a rename inside ``folder`` durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse fsync on a folder; the rename itself is still atomic
    finally:
        os.close(fd)


def _commit(tmp, path):
    """Rename the finished, fsynced ``tmp`` to ``path`` (same folder) and persist the rename."""
    os.replace(tmp, path)
    _fsync_dir(os.path.dirname(path))


def _write_small(path, text):
    """Write ``text`` to ``path`` atomically: a fresh temporary file of its own (created
    exclusively, so never through a link) in the same folder, fsynced, then renamed."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path),
                               prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        _commit(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


@contextlib.contextmanager
def _atomic_output(path, what):
    """Yield ``path + '.part'`` opened for writing; on success it is flushed, fsynced and
    renamed to ``path``; on any error it is removed, so ``path`` never holds a partial file.
    Callers hold ``_folder_lock``, which makes the ``.part`` name theirs alone."""
    part = path + ".part"
    f = _open_part(part, what)
    try:
        with f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        _commit(part, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(part)
        raise


@contextlib.contextmanager
def _folder_lock(folder):
    """Hold an exclusive advisory lock (POSIX ``flock``) on ``folder``, so that processes
    sharing a cache download a file once, one after the other, instead of writing one ``.part``
    together; a no-op where ``flock`` does not exist."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _makedirs(folder, what):
    try:
        os.makedirs(folder, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise NetsError(f"{what}: cannot create the cache folder {folder}: "
                        f"{_blocking_file(folder) or folder} is a file") from None


# -- digests ---------------------------------------------------------------------------------

def _file_digest(path, algorithm):
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def _read_record(record, what):
    """The SHA-256 in ``record`` (``sha256sum`` format: the hex digest, then optionally two
    spaces and the file name), or ``None`` when there is no record."""
    try:
        with open(record, encoding="utf-8") as f:
            text = f.read(4096)
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise NetsError(f"{what}: cannot read the digest record {record}: {e}") from None
    token = text.split(maxsplit=1)[0] if text.split() else ""
    if not re.fullmatch("[0-9a-fA-F]{64}", token):
        raise NetsError(f"{what}: the digest record {record} holds {text[:80]!r}, not a "
                        f"SHA-256 (64 hex digits); fix or delete it")
    return token.lower()


def _write_record(record, digest):
    _write_small(record, f"{digest}  {os.path.basename(record)[:-len('.sha256')]}\n")


class _Expected(NamedTuple):
    """The digest a file must have: ``algorithm``, ``hex`` and where it came from (``record``:
    the record's path for a trust-on-first-use digest, ``None`` for a pinned one)."""
    algorithm: str
    hex: str
    record: Optional[str] = None


def _problem(path, expected, size):
    """What is wrong with ``path`` against ``size`` and ``expected``, or ``None``."""
    actual = os.path.getsize(path)
    if size is not None and actual != size:
        return f"size mismatch: expected {size} bytes, got {actual}"
    if expected is None:
        return None
    got = _file_digest(path, expected.algorithm)
    if got == expected.hex:
        return None
    problem = f"{expected.algorithm.upper()} mismatch: expected {expected.hex}, got {got}"
    if expected.record is not None:
        problem += (f" (the expected digest is the one recorded in {expected.record} at the "
                    f"file's first use)")
    return problem


# -- download --------------------------------------------------------------------------------

class _Progress:
    """Progress of one transfer, on ``sys.stderr``. A transfer under ``PROGRESS_MIN`` bytes
    (known from its total, else from the bytes seen so far) prints nothing; redraws come at
    most twice a second; the line reading 100% is printed by ``close`` alone, so it appears
    once."""

    def __init__(self, on, desc, total=None, done=0):
        self.on, self.desc, self.total, self.done = on, desc, total, done
        self.shown, self.last = False, 0.0

    def _visible(self):
        return self.on and max(self.total or 0, self.done) >= PROGRESS_MIN

    def _line(self):
        mb = self.done / 1e6
        if self.total:
            pct = min(100, 100 * self.done // self.total)  # 100 only once every byte is in
            return f"{self.desc}: {pct:3d}% {mb:.1f}/{self.total / 1e6:.1f} MB"
        return f"{self.desc}: {mb:.1f} MB"

    def _write(self, text):
        sys.stderr.write(text)
        sys.stderr.flush()

    def update(self, n):
        self.done += n
        if not self._visible() or (self.total is not None and self.done >= self.total):
            return  # complete: the final line is close()'s
        now = time.monotonic()
        if not self.shown or now - self.last >= 0.5:
            self._write("\r" + self._line())
            self.shown, self.last = True, now

    def close(self, complete):
        if complete and self._visible():
            self._write("\r" + self._line() + "\n")
        elif self.shown:
            self._write("\n")  # end the interrupted line


def _validator(headers):
    """The response's strong validator for ``If-Range``: its ETag unless weak (RFC 9110
    forbids weak ones there), else its Last-Modified date; ``None`` when it has neither."""
    etag = headers.get("ETag")
    if etag and not etag.startswith("W/"):
        return etag
    return headers.get("Last-Modified")


def _open(url, offset, validator, what, path, timeout):
    """Send the GET (from byte ``offset`` with ``Range`` and ``If-Range: validator``) and
    return the response; ``None`` for a 416 answer to a range request."""
    import urllib.error  # the network modules load on first download, not at ``import nets``
    import urllib.request
    headers = {"User-Agent": "nets", "Accept-Encoding": "identity"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
        headers["If-Range"] = validator
    try:
        return urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                      timeout=timeout)
    except urllib.error.HTTPError as e:
        e.close()
        if e.code == 416 and offset:
            return None  # the .part is not a prefix the server can continue: start again
        raise NetsError(f"{what}: downloading {url} failed: HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise NetsError(f"{what}: cannot reach {url} ({reason}). Offline? Set NETS_DATA_URL "
                        f"or pass mirror= to use a mirror (a URL or a folder), or place the "
                        f"file at {path} yourself") from None


def _load_resume(meta):
    """The ``{"url", "validator"}`` saved beside a ``.part``, or ``None`` if absent or bad."""
    try:
        with open(meta, encoding="utf-8") as f:
            saved = json.load(f)
    except (OSError, ValueError):
        return None
    ok = (isinstance(saved, dict) and isinstance(saved.get("url"), str)
          and isinstance(saved.get("validator"), str))
    return saved if ok else None


def _request(url, part, meta, what, path, ends):
    """The response to read into ``part`` and the byte it starts at. The ``.part`` is
    continued only under the validator saved beside it for this very URL, sent as
    ``If-Range``, and only when the server answers with that range of that same
    representation; anything else starts the file over."""
    have = os.lstat(part).st_size if os.path.lexists(part) else 0
    saved = _load_resume(meta) if have else None
    if saved is None or saved["url"] != url:
        have = 0  # a part from an unknown file, an older version or another mirror
    timeout = max(0.001, min(TIMEOUT, ends - time.monotonic()))
    resp = _open(url, have, saved and saved["validator"], what, path, timeout)
    if resp is None:
        return _open(url, 0, None, what, path, timeout), 0
    if have and not (resp.status == 206
                     and resp.headers.get("Content-Range", "").startswith(f"bytes {have}-")
                     and _validator(resp.headers) == saved["validator"]):
        if resp.status == 206:  # another range or representation: fetch the whole file
            resp.close()
            resp = _open(url, 0, None, what, path, timeout)
        have = 0  # the whole file is coming: restart the .part
    return resp, have


def _fetch_part(source, part, what, progress, size, seconds, path):
    """Bring ``part`` to the whole file at ``source`` (a URL, continuing what ``part`` holds
    where the server confirms it, or a local file, copied), reading at most ``size + 1``
    bytes when ``size`` is pinned and failing once ``seconds`` have passed."""
    import http.client
    ends = time.monotonic() + seconds
    meta = part + ".json"
    _refuse_link(part, what)
    if _is_remote(source):
        resp, have = _request(source, part, meta, what, path, ends)
        length = resp.headers.get("Content-Length")
        total = have + int(length) if length is not None and length.isdigit() else None
        validator = _validator(resp.headers)
    else:
        local = _local_path(source)
        try:
            resp = open(local, "rb")
        except OSError as e:
            raise NetsError(f"{what}: cannot read {local} from the mirror folder "
                            f"({e.strerror}); place the file there or at {path}") from None
        have, total, validator = 0, os.fstat(resp.fileno()).st_size, None
    got = have
    limit = None if size is None else size + 1  # one byte past the pinned size proves excess
    bar = _Progress(progress, os.path.basename(path), total, have)
    complete = False
    with resp:
        read = getattr(resp, "read1", resp.read)  # read1: one receive, so the deadline holds
        try:
            with _open_part(part, what, append=bool(have)) as f:
                if not have:  # what the new .part holds, for a later resume
                    if validator is not None and _is_remote(source):
                        _write_small(meta, json.dumps({"url": source, "validator": validator}))
                    else:
                        with contextlib.suppress(FileNotFoundError):
                            os.remove(meta)
                while limit is None or got < limit:
                    if time.monotonic() > ends:
                        raise NetsError(
                            f"{what}: downloading {source} did not finish within its deadline "
                            f"of {seconds:g} s (set by deadline= or NETS_DATA_DEADLINE); "
                            f"{part} keeps the {got} bytes received"
                            + (", and the next call continues from them if the server "
                               "confirms the file is unchanged" if _is_remote(source) else ""))
                    chunk = read(CHUNK if limit is None else min(CHUNK, limit - got))
                    if not chunk:
                        break
                    f.write(chunk)
                    got += len(chunk)
                    bar.update(len(chunk))
                f.flush()
                os.fsync(f.fileno())
            complete = total is None or got == total
        except (OSError, http.client.HTTPException) as e:
            raise NetsError(f"{what}: the connection to {source} failed after {got} bytes "
                            f"({e}); {part} keeps them for the next call") from None
        finally:
            bar.close(complete and (limit is None or got < limit))
    if limit is not None and got >= limit:
        _discard(part)
        raise NetsError(f"{what}: {source} sent more than the pinned size of {size} bytes "
                        f"(reading stopped at byte {got}); the download was discarded")
    if total is not None and got != total:
        raise NetsError(f"{what}: the connection to {source} closed after {got} of {total} "
                        f"bytes; {part} keeps them for the next call")


def _discard(part):
    for stale in (part, part + ".json"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(stale)


def download(url: str, path: str, sha256: Optional[str] = None, md5: Optional[str] = None,
             size: Optional[int] = None, verify: bool = True, progress: bool = True,
             name: Optional[str] = None, deadline: Optional[float] = None) -> str:
    """Download ``url`` to ``path`` once, checked; returns ``path`` as an absolute path.

    The bytes go to ``path + '.part'``, then are checked, fsynced and renamed to ``path``, so
    a file under its final name is always complete. Processes downloading into one folder
    take turns (an advisory lock on it).

    What a file is checked against (when ``verify``):

    * ``size``, when given (a size a trustworthy source publishes);
    * a pinned digest: ``sha256``, else ``md5``;
    * otherwise the SHA-256 recorded in ``path + '.sha256'`` (``sha256sum`` format). With no
      record yet, the file is trusted on first use: the SHA-256 of its first complete
      download (or of a file you placed at ``path``) is written to that record, and every
      later use checks against it. To pin a digest you trust, pass ``sha256=`` or write the
      record before the first download.

    The check runs on every call, on a fresh download and on the cached file alike (one read
    of the file). A fresh download that fails it is discarded; a cached file that fails it
    is left in place for you to inspect or delete. ``verify=False`` switches every check off
    and records nothing.

    An interrupted download leaves its ``.part`` and, beside it, ``.part.json`` with the URL
    and the server's validator (ETag or Last-Modified). The next call continues it with
    ``Range`` and ``If-Range``, and starts over when the validator is missing, belongs to
    another URL (an older file, another mirror) or no longer matches. A ``.part`` that is a
    symbolic link is refused, never written through. With ``size`` given, at most
    ``size + 1`` bytes are read, so an endless body stops there.

    Parameters
    ----------
    url : str
        An ``http(s)://`` URL, or a local file (a path or ``file://`` URL) to copy.
    path : str or os.PathLike
        Where the file goes; its folder is created.
    sha256, md5 : str, optional
        Pinned hex digests (``sha256`` wins when both are given).
    size : int, optional
        The file's size in bytes.
    verify : bool
        Check sizes and digests as above (default); ``False`` checks nothing.
    progress : bool
        Show a progress line on stderr for files of ``PROGRESS_MIN`` bytes (1 MiB) or more.
    name : str, optional
        The dataset's name in error messages (default: the file name).
    deadline : float, optional
        Seconds the whole download may take (``math.inf``: no limit), beyond ``TIMEOUT``
        per silent read; default ``$NETS_DATA_DEADLINE``, else ``DEADLINE`` (4 hours). The
        ``.part`` is kept when it passes, for the next call to continue.

    Returns
    -------
    str
        ``path``, absolute.

    Raises
    ------
    NetsError
        On a bad argument, an HTTP error, no connection (naming ``path``, where the file can
        be placed by hand), a dropped connection, a passed deadline, a body over ``size``,
        a size or digest mismatch, or a ``.part`` that is a symbolic link.
    """
    what = name or os.path.basename(os.fspath(path))
    path = os.path.abspath(os.fspath(path))
    sha256 = _hex_digest(sha256, 64, "sha256")
    md5 = _hex_digest(md5, 32, "md5")
    if size is not None and (isinstance(size, bool) or not isinstance(size, numbers.Integral)
                             or size < 0):
        raise NetsError(f"{what}: size={size!r} is not a byte count")
    seconds = _deadline_seconds(deadline)
    folder, record = os.path.dirname(path), path + ".sha256"
    expected = None
    if verify:
        if sha256 is not None or md5 is not None:
            expected = _Expected("sha256", sha256) if sha256 else _Expected("md5", md5)
        else:
            recorded = _read_record(record, what)
            expected = recorded and _Expected("sha256", recorded, record)
    if not os.path.exists(path):
        _makedirs(folder, what)
        with _folder_lock(folder):
            if not os.path.exists(path):  # another process may have fetched it while we waited
                part = path + ".part"
                _fetch_part(url, part, what, progress, size, seconds, path)
                if verify:
                    problem = _problem(part, expected, size)
                    if problem:
                        _discard(part)
                        raise NetsError(f"{what}: {url}: {problem}; the download was "
                                        f"discarded")
                    if expected is None:  # trust on first use
                        _write_record(record, _file_digest(part, "sha256"))
                _commit(part, path)
                with contextlib.suppress(FileNotFoundError):
                    os.remove(part + ".json")
                return path
    if verify:
        problem = _problem(path, expected, size)
        if problem:
            raise NetsError(f"{what}: the cached {path} fails its check: {problem}; delete it "
                            f"to download it again")
        if expected is None:  # a file placed by hand, or kept from verify=False: first use
            _write_record(record, _file_digest(path, "sha256"))
    return path


def _fetch(remote, folder, what, mirror, verify, progress, sha256=None, deadline=None):
    url = _source(remote.url, mirror)
    path = os.path.join(folder, remote.url.rsplit("/", 1)[-1])
    return download(url, path, sha256 or remote.sha256, None if sha256 else remote.md5,
                    remote.size, verify, progress, what, deadline)


# -- decompression ---------------------------------------------------------------------------

_STREAMS = (".bz2", ".xz", ".gz")  # one compressed file, unpacked to its name less the suffix
_TARS = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")  # archives whose member is read


def _open_unpacked(stack, src, member):
    """A binary stream of the decompressed contents of ``src`` (of ``member`` for archives)."""
    import bz2
    import gzip
    import lzma
    import tarfile
    lower = src.lower()
    if member is None:
        opener = {".bz2": bz2.open, ".xz": lzma.open, ".gz": gzip.open}[os.path.splitext(lower)[1]]
        return stack.enter_context(opener(src))
    if lower.endswith(".zip"):
        return stack.enter_context(stack.enter_context(zipfile.ZipFile(src)).open(member))
    if lower.endswith(_TARS):
        stream = stack.enter_context(tarfile.open(src)).extractfile(member)
        if stream is None:
            raise KeyError(f"{member!r} is not a regular file")
        return stack.enter_context(stream)
    raise NetsError(f"{src}: a member ({member!r}) is named, but the file is not a .zip or "
                    f".tar archive")


def _unpacked_name(src, member):
    if member is not None:
        return member.rsplit("/", 1)[-1]
    base = os.path.basename(src)
    return base.rsplit(".", 1)[0] if base.lower().endswith(_STREAMS) else base


def _unpack(src, member, what, progress):
    """Decompress ``src`` (or its ``member``) beside it, once; returns the output path."""
    import lzma
    import tarfile
    out = os.path.join(os.path.dirname(src), _unpacked_name(src, member))
    if out == src or os.path.exists(out):
        return out
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(_folder_lock(os.path.dirname(out)))
            if os.path.exists(out):  # another process unpacked it while we waited
                return out
            stream = _open_unpacked(stack, src, member)
            f = stack.enter_context(_atomic_output(out, what))
            bar = _Progress(progress, "unpack " + os.path.basename(out))
            complete = False
            try:
                for chunk in iter(lambda: stream.read(CHUNK), b""):
                    f.write(chunk)
                    bar.update(len(chunk))
                complete = True
            finally:
                bar.close(complete)
    except (OSError, EOFError, KeyError, lzma.LZMAError, zipfile.BadZipFile,
            tarfile.TarError) as e:
        raise NetsError(f"{what}: cannot decompress {src}"
                        f"{'' if member is None else f' (member {member!r})'}: "
                        f"{type(e).__name__}: {e}; delete it to download it again") from None
    return out


# -- LIBSVM sets -----------------------------------------------------------------------------

def libsvm(name: str, split: str = "train", root: Optional[str] = None,
           mirror: Optional[str] = None, verify: bool = True, progress: bool = True,
           sha256: Optional[str] = None, deadline: Optional[float] = None) -> str:
    """Path of the decompressed LibSVM file of LIBSVM-site set ``name``, ``split``.

    The file is downloaded into ``data_home(root)/libsvm/NAME`` and decompressed beside the
    download once; later calls check the download and return the path without network
    access. The LIBSVM site publishes no checksums, so the download is trusted on first use:
    its SHA-256 is recorded in ``FILE.sha256`` beside it and every later use, or new
    download, must match it (see ``download``). Read the result with ``load_libsvm`` or
    stream it with ``LibSVMIter``.

    Parameters
    ----------
    name : str
        A key of ``LIBSVM`` (e.g. ``'rcv1'``, ``'news20.binary'``, ``'url'``,
        ``'avazu-app'``, ``'criteo'``).
    split : str
        One of its splits: ``'train'``, and ``'test'`` where the site has one.
    root : str or os.PathLike, optional
        The cache folder (default ``$NETS_DATA_HOME``, else ``~/.nets/datasets``).
    mirror : str, optional
        A URL or a local folder holding the site's files under their names (default
        ``$NETS_DATA_URL``, else the LIBSVM site).
    verify : bool
        Check the download (default); ``False`` checks and records nothing.
    progress : bool
        Progress lines on stderr for transfers of 1 MiB or more.
    sha256 : str, optional
        A digest you trust for the downloaded (compressed) file, pinned instead of trusting
        the first download.
    deadline : float, optional
        Seconds the download may take in all (default ``$NETS_DATA_DEADLINE``, else
        ``DEADLINE``).

    Returns
    -------
    str
        The decompressed file's path.
    """
    entry = _choose("LIBSVM dataset", name, LIBSVM)
    item = _choose(f"split of {name!r}", split, entry.splits)
    what = f"{name} ({split})"
    folder = os.path.join(data_home(root), "libsvm", name)
    src = _fetch(item.remote, folder, what, mirror, verify, progress, sha256, deadline)
    return _unpack(src, item.member, what, progress)


def load_libsvm_dataset(name: str, split: str = "train", root: Optional[str] = None,
                        mirror: Optional[str] = None, verify: bool = True,
                        progress: bool = True, dtype: str = "float32", sha256: Optional[str] = None,
                        deadline: Optional[float] = None):
    """``load_libsvm`` of ``libsvm(name, split, ...)``.

    Parameters
    ----------
    name, split, root, mirror, verify, progress, sha256, deadline
        As for ``libsvm`` (``progress`` also shows the parse's progress).
    dtype : str or numpy.dtype
        The values' dtype.

    Returns
    -------
    tuple
        ``(X, y)`` with ``X`` a CSR array of the set's full width
        (``LIBSVM[name].n_features`` columns, so train and test agree).
    """
    path = libsvm(name, split, root, mirror, verify, progress, sha256, deadline)
    return load_libsvm(path, n_features=LIBSVM[name].n_features, dtype=dtype,
                       progress=progress)


# -- MovieLens -------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Ratings:
    """Parallel arrays, one entry per rating (``len`` is their length): 0-based ``user`` and
    ``item`` ids (int64), ``rating`` (float32) and ``timestamp`` (int64, seconds since the
    epoch)."""
    user: np.ndarray
    item: np.ndarray
    rating: np.ndarray
    timestamp: np.ndarray

    def __len__(self):
        return len(self.user)

    def take(self, rows):
        """The ratings at ``rows`` (an index array or boolean mask)."""
        return Ratings(self.user[rows], self.item[rows], self.rating[rows],
                       self.timestamp[rows])


def _read_ratings(archive, member, sep, what):
    """Parse ``user SEP item SEP rating SEP timestamp`` lines (1-based ids) of a zip member."""
    try:
        with zipfile.ZipFile(archive) as z:
            text = z.read(member)
    except (OSError, KeyError, zipfile.BadZipFile) as e:
        raise NetsError(f"{what}: cannot read {member!r} from {archive}: {e}") from None
    table = np.empty((0, 4), dtype=np.int64)
    if text.strip():
        try:
            table = np.loadtxt(io.BytesIO(text.replace(sep.encode(), b"\t")), dtype=np.int64,
                               delimiter="\t", ndmin=2)
        except ValueError as e:  # numpy counts rows from 0; name the line as an editor does
            problem = re.sub(r"at row (\d+)", lambda m: f"on line {int(m.group(1)) + 1}",
                             str(e))
            raise NetsError(f"{what}: {archive}:{member}: {problem} (expected lines of 4 "
                            f"integers separated by {sep!r})") from None
    if table.shape[1] != 4:
        raise NetsError(f"{what}: {archive}:{member}: expected 4 fields per line, got "
                        f"{table.shape[1]}")
    if table.size and table[:, :2].min() < 1:
        raise NetsError(f"{what}: {archive}:{member}: user and item ids must be >= 1 "
                        f"(MovieLens ids are 1-based)")
    return Ratings(table[:, 0] - 1, table[:, 1] - 1, table[:, 2].astype(np.float32),
                   table[:, 3])


class MovieLens:
    """The MovieLens ``variant`` (``'100k'`` or ``'1m'``) ratings, with a train/test split.

    Downloads ``ml-VARIANT.zip`` into ``data_home(root)/movielens`` once (checked against
    its pinned size and SHA-256 then and on every later use) and reads the ratings from it.
    ``mirror``, ``verify``, ``progress`` and ``deadline`` are as for ``libsvm``. Attributes:

    * ``ratings``: every rating, a ``Ratings`` of 0-based ids (MovieLens id - 1);
    * ``n_users``, ``n_items``: the largest user and item id, so ``Embedding(n_users, k)``
      covers every id (1m's item ids have gaps; unused ids are simply never looked up);
    * ``train``, ``test``: ``Ratings``. ``split='random'`` (any variant) puts a
      ``test_fraction`` share of the ratings, drawn with ``numpy.random.default_rng(seed)``,
      in ``test`` - the same seed gives the same split. For ``'100k'``, ``split`` may also
      name an official split shipped in the archive: ``'ua'``/``'ub'`` (10 ratings of each
      user in test) or ``'u1'``..``'u5'`` (the five 80/20 folds), read from
      ``SPLIT.base``/``SPLIT.test``;
    * ``path``: the downloaded zip.

    Parameters
    ----------
    variant : str
        ``'100k'`` or ``'1m'``.
    root : str or os.PathLike, optional
        The cache folder (default ``$NETS_DATA_HOME``, else ``~/.nets/datasets``).
    split : str
        ``'random'``, or an official split of ``'100k'`` (``'ua'``, ``'ub'``, ``'u1'``..``'u5'``).
    test_fraction : float
        The test share of a random split, in (0, 1).
    seed : int
        The random split's seed.
    mirror : str, optional
        A URL or local folder holding ``ml-VARIANT.zip`` (default ``$NETS_DATA_URL``).
    verify : bool
        Check the pinned size and SHA-256 (default); ``False`` checks nothing.
    progress : bool
        A progress line on stderr for the download.
    deadline : float, optional
        Seconds the download may take in all (default ``$NETS_DATA_DEADLINE``, else
        ``DEADLINE``).
    """

    def __init__(self, variant: str = "100k", root: Optional[str] = None,
                 split: str = "random", test_fraction: float = 0.1, seed: int = 0,
                 mirror: Optional[str] = None, verify: bool = True, progress: bool = True,
                 deadline: Optional[float] = None):
        spec = _choose("MovieLens variant", variant, MOVIELENS)
        what = f"MovieLens {variant}"
        valid = ("random",) + spec.splits
        if split not in valid:
            raise NetsError(f"{what}: unknown split {split!r}; valid: "
                            f"{', '.join(map(repr, valid))}")
        if split == "random" and not 0.0 < test_fraction < 1.0:
            raise NetsError(f"{what}: test_fraction={test_fraction!r} must lie in (0, 1)")
        self.variant, self.split = variant, split
        self.path = _fetch(spec.remote, os.path.join(data_home(root), "movielens"), what,
                           mirror, verify, progress, deadline=deadline)
        self.ratings = _read_ratings(self.path, spec.ratings, spec.sep, what)
        self.n_users = int(self.ratings.user.max()) + 1 if len(self.ratings) else 0
        self.n_items = int(self.ratings.item.max()) + 1 if len(self.ratings) else 0
        if split == "random":
            in_test = np.zeros(len(self.ratings), dtype=bool)
            n_test = int(round(test_fraction * len(self.ratings)))
            in_test[np.random.default_rng(seed).permutation(len(self.ratings))[:n_test]] = True
            self.train, self.test = self.ratings.take(~in_test), self.ratings.take(in_test)
        else:
            folder = spec.ratings.rsplit("/", 1)[0]
            self.train, self.test = (_read_ratings(self.path, f"{folder}/{split}.{part}",
                                                   spec.sep, what)
                                     for part in ("base", "test"))

    def __repr__(self):
        return (f"MovieLens({self.variant!r}, split={self.split!r}: {len(self.train)} train, "
                f"{len(self.test)} test ratings, {self.n_users} users, {self.n_items} items)")
