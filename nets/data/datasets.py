"""Real datasets one call away: MovieLens ratings and the LIBSVM site's binary
classification sets, downloaded once into a cache folder and checked against pinned digests.

The cache folder is ``root``, else ``$NETS_DATA_HOME``, else ``~/.nets/datasets``. A file is
fetched from its site, or from a mirror (``mirror=`` or ``$NETS_DATA_URL``) that holds the
files flat under their original names. Downloads use the standard library only:

* the bytes go to ``FILE.part``; an interrupted download leaves only that ``.part`` file, and
  the next call resumes it with an HTTP ``Range`` request (a server that ignores ``Range`` and
  answers with the whole file restarts it);
* the finished ``.part`` is checked against the entry's size and pinned SHA-256 (or MD5, where
  only that is published), then flushed, fsynced and renamed into place with ``os.replace`` -
  so a file under its final name is always complete and verified, and a later call uses it
  without touching the network;
* a mismatch discards the ``.part`` and raises ``NetsError`` with the expected and the actual
  digest; an entry with no published digest is refused unless the caller passes
  ``verify=False``;
* ``.bz2``, ``.xz`` and ``.gz`` files, and members of ``.zip`` and ``.tar.*`` archives, are
  decompressed the same way (to ``OUTPUT.part``, renamed when complete).
  The downloaded file is kept, so a second split of one archive, or a deleted decompressed
  file, needs no new download.

Every failure (HTTP status, connection refused or offline, a dropped connection, a digest
mismatch, a damaged archive, an unknown name, variant or split) raises ``NetsError`` naming
the dataset, the URL or file, and what went wrong.
"""
import contextlib
import dataclasses
import hashlib
import io
import os
import re
import zipfile
from typing import NamedTuple, Optional

import numpy as np

from ..base import NetsError
from .libsvm import load_libsvm

__all__ = ["MovieLens", "Ratings", "libsvm", "load_libsvm_dataset", "download", "data_home",
           "Remote", "LibSVMFile", "LibSVMSet", "MOVIELENS", "LIBSVM"]

CHUNK = 1 << 20  # bytes read from the network, hashed or decompressed at a time
TIMEOUT = 60  # seconds a connection may stay silent before the download fails


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
# it. The site publishes no checksums and no project found pins one for these files, so their
# digests are unknown and they download only with ``verify=False``.
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


def data_home(root=None):
    """The cache folder: ``root``, else ``$NETS_DATA_HOME``, else ``~/.nets/datasets``."""
    root = root if root is not None else os.environ.get("NETS_DATA_HOME") or "~/.nets/datasets"
    return os.path.abspath(os.path.expanduser(os.fspath(root)))


def _source(url, mirror):
    """``url``, or the file of the same name under ``mirror`` / ``$NETS_DATA_URL``."""
    mirror = mirror if mirror is not None else os.environ.get("NETS_DATA_URL")
    return mirror.rstrip("/") + "/" + url.rsplit("/", 1)[-1] if mirror else url


def _choose(kind, key, table):
    if key not in table:
        raise NetsError(f"unknown {kind} {key!r}; valid: {', '.join(map(repr, table))}")
    return table[key]


# -- atomic files ----------------------------------------------------------------------------

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


@contextlib.contextmanager
def _atomic_output(path):
    """Yield ``path + '.part'`` opened for writing; on success it is flushed, fsynced and
    renamed to ``path``; on any error it is removed, so ``path`` never holds a partial file.
    Callers hold ``_folder_lock``, which makes the ``.part`` name theirs alone."""
    part = path + ".part"
    try:
        with open(part, "wb") as f:
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


# -- download --------------------------------------------------------------------------------

def _progress(on, total, initial, desc):
    if not on:
        return contextlib.nullcontext(None)
    from tqdm.auto import tqdm
    return tqdm(total=total, initial=initial, unit="B", unit_scale=True, desc=desc)


def _file_digest(path, algorithm):
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def _open(url, offset, what):
    """Send the GET (from byte ``offset`` with a Range header) and return the response."""
    import urllib.error  # the network modules load on first download, not at ``import nets``
    import urllib.request
    headers = {"User-Agent": "nets", "Accept-Encoding": "identity"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    try:
        return urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                      timeout=TIMEOUT)
    except urllib.error.HTTPError as e:
        e.close()
        if e.code == 416 and offset:
            return None  # the .part is not a prefix the server can continue: start again
        raise NetsError(f"{what}: downloading {url} failed: HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise NetsError(f"{what}: cannot reach {url} ({reason}). Offline? Set NETS_DATA_URL "
                        f"or pass mirror= to use a mirror, or place the file in the cache "
                        f"folder yourself") from None


def _fetch_part(url, part, what, progress):
    """Bring ``part`` to the whole file at ``url``, continuing what it already holds."""
    import http.client
    have = os.path.getsize(part) if os.path.exists(part) else 0
    resp = _open(url, have, what)
    if resp is None:
        os.remove(part)
        have = 0
        resp = _open(url, 0, what)
    if have and not (resp.status == 206 and resp.headers.get("Content-Range", "")
                     .startswith(f"bytes {have}-")):
        if resp.status == 206:  # a range other than the one asked for: fetch the whole file
            resp.close()
            resp = _open(url, 0, what)
        have = 0  # the whole file is coming (a server that ignores Range): restart the .part
    with resp:
        length = resp.headers.get("Content-Length")
        total = have + int(length) if length is not None and length.isdigit() else None
        got = have
        try:
            with open(part, "ab" if have else "wb") as f, \
                    _progress(progress, total, have, os.path.basename(part)[:-5]) as bar:
                for chunk in iter(lambda: resp.read(CHUNK), b""):
                    f.write(chunk)
                    got += len(chunk)
                    if bar is not None:
                        bar.update(len(chunk))
                f.flush()
                os.fsync(f.fileno())
        except (OSError, http.client.HTTPException) as e:
            raise NetsError(f"{what}: the connection to {url} failed after {got} bytes ({e}); "
                            f"{part} keeps them and the next call resumes it") from None
    if total is not None and got != total:
        raise NetsError(f"{what}: the connection to {url} closed after {got} of {total} "
                        f"bytes; {part} keeps them and the next call resumes it")


def _check(part, url, what, sha256, md5, size):
    """Raise (and discard ``part``) unless it has the pinned size and digest."""
    problem = None
    actual = os.path.getsize(part)
    if size is not None and actual != size:
        problem = f"size mismatch: expected {size} bytes, got {actual}"
    else:
        for algorithm, expected in (("sha256", sha256), ("md5", md5)):
            if expected is not None:
                got = _file_digest(part, algorithm)
                if got != expected.lower():
                    problem = f"{algorithm.upper()} mismatch: expected {expected}, got {got}"
                break  # the strongest pinned digest decides
    if problem:
        os.remove(part)
        raise NetsError(f"{what}: {url}: {problem}; the download was discarded")


def download(url, path, sha256=None, md5=None, size=None, verify=True, progress=True,
             name=None):
    """Download ``url`` to ``path`` once; returns ``path`` as an absolute path string.

    An existing ``path`` is returned at once (files reach their final name only complete and
    verified). Otherwise the bytes go to ``path + '.part'``, resumed with an HTTP Range request
    when a ``.part`` is left from an interrupted call; the finished file is checked against
    ``size`` and ``sha256`` (else ``md5``) when ``verify``, then fsynced and renamed to
    ``path``. Processes downloading into one folder take turns (an advisory lock on it).
    With ``verify=True`` and no digest, nothing is downloaded: an unverified file is only
    accepted with ``verify=False``. ``name`` names the dataset in error messages.
    """
    what = name or os.path.basename(path)
    path = os.path.abspath(path)
    if verify and sha256 is None and md5 is None:
        raise NetsError(f"{what}: no published digest is pinned for {url}, so its contents "
                        f"cannot be verified; pass verify=False to use it unverified")
    if os.path.exists(path):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with _folder_lock(os.path.dirname(path)):
        if not os.path.exists(path):  # another process may have fetched it while we waited
            part = path + ".part"
            _fetch_part(url, part, what, progress)
            if verify:
                _check(part, url, what, sha256, md5, size)
            _commit(part, path)
    return path


def _fetch(remote, folder, what, mirror, verify, progress):
    url = _source(remote.url, mirror)
    path = os.path.join(folder, remote.url.rsplit("/", 1)[-1])
    return download(url, path, remote.sha256, remote.md5, remote.size, verify, progress, what)


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
            f = stack.enter_context(_atomic_output(out))
            bar = stack.enter_context(_progress(progress, None, 0, "unpack " + what))
            for chunk in iter(lambda: stream.read(CHUNK), b""):
                f.write(chunk)
                if bar is not None:
                    bar.update(len(chunk))
    except (OSError, EOFError, KeyError, lzma.LZMAError, zipfile.BadZipFile,
            tarfile.TarError) as e:
        raise NetsError(f"{what}: cannot decompress {src}"
                        f"{'' if member is None else f' (member {member!r})'}: "
                        f"{type(e).__name__}: {e}; delete it to download it again") from None
    return out


# -- LIBSVM sets -----------------------------------------------------------------------------

def libsvm(name, split="train", root=None, mirror=None, verify=True, progress=True):
    """Path of the decompressed LibSVM file of LIBSVM-site set ``name``, ``split``.

    ``name`` is a key of ``LIBSVM`` (e.g. ``'rcv1'``, ``'news20.binary'``, ``'url'``,
    ``'avazu-app'``, ``'criteo'``), ``split`` one of its splits (``'train'``, and ``'test'``
    where the site has one). The file is downloaded into ``data_home(root)/libsvm/NAME`` and
    decompressed beside the download once; later calls return the path without network
    access. The LIBSVM site publishes no checksums, so these files need ``verify=False``
    (see ``download``). Read the result with ``load_libsvm`` or stream it with ``LibSVMIter``.
    """
    entry = _choose("LIBSVM dataset", name, LIBSVM)
    item = _choose(f"split of {name!r}", split, entry.splits)
    what = f"{name} ({split})"
    folder = os.path.join(data_home(root), "libsvm", name)
    src = _fetch(item.remote, folder, what, mirror, verify, progress)
    return _unpack(src, item.member, what, progress)


def load_libsvm_dataset(name, split="train", root=None, mirror=None, verify=True,
                        progress=True, dtype="float32"):
    """``load_libsvm`` of ``libsvm(name, split, ...)``: ``(X, y)`` with ``X`` a CSR array of
    the set's full width (``LIBSVM[name].n_features`` columns, so train and test agree)."""
    path = libsvm(name, split, root, mirror, verify, progress)
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

    Downloads ``ml-VARIANT.zip`` into ``data_home(root)/movielens`` once (verified against
    its pinned SHA-256) and reads the ratings from it. Attributes:

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
    """

    def __init__(self, variant="100k", root=None, split="random", test_fraction=0.1, seed=0,
                 mirror=None, verify=True, progress=True):
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
                           mirror, verify, progress)
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
