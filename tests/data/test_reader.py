"""``nets.data.LibSVMReader`` and its pieces: batches of consecutive CSR rows (``rebatch``)
from files read into memory or streamed, the rule of ``read='auto'`` (``read_mode``), and the
``Background`` thread that parses ahead."""
import gzip
import os

import numpy as np
import pytest

import nets
from nets import parallel
from nets.data import LibSVMReader, StreamWidthError, load_libsvm, read_mode, rebatch, reader

TEXT = b"1 0:1 7:2\n0 3:0.5\n\n1 12:1.5 40:2\n0\n-1 2:1\n1 5:0.25 6:1\n0 1:3\n"
ROWS = 7  # (a blank line is no row)


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "r.libsvm"
    p.write_bytes(TEXT)
    return str(p)


def _rows(batches):
    """The dense rows and labels of ``(X, y)`` batches, joined; the batch sizes."""
    batches = list(batches)
    return (np.concatenate([X.asnumpy() for X, _ in batches]),
            np.concatenate([y.asnumpy() for _, y in batches]), [X.shape[0] for X, _ in batches])


# -- rebatch -----------------------------------------------------------------------------------

def test_rebatched_blocks_are_the_slices_of_their_rows():
    """``rebatch`` cuts consecutive blocks (empty ones, ones shorter than a batch) into the
    batches that slicing the joined rows gives, for tuples of any length."""
    rng = np.random.default_rng(0)
    dense = (rng.random((53, 7)) < 0.3) * rng.random((53, 7)).astype(np.float32)
    labels = rng.integers(-1, 2, 53).astype(np.float32)
    cuts = [0, 0, 3, 4, 4, 20, 22, 50, 53]
    blocks = [(nets.nd.sparse.csr_matrix(dense[a:b]), nets.nd.array(labels[a:b]),
               nets.nd.array(dense[a:b, :2]))
              for a, b in zip(cuts[:-1], cuts[1:])]
    for batch_size in (1, 5, 16, 53, 60):
        got = list(rebatch(blocks, batch_size))
        starts = range(0, 53, batch_size)
        assert len(got) == len(starts)
        for (X, y, z), a in zip(got, starts):
            assert X.stype == "csr" and X.shape == (min(batch_size, 53 - a), 7)
            np.testing.assert_array_equal(X.asnumpy(), dense[a:a + batch_size])
            np.testing.assert_array_equal(y.asnumpy(), labels[a:a + batch_size])
            np.testing.assert_array_equal(z.asnumpy(), dense[a:a + batch_size, :2])
    with pytest.raises(nets.NetsError, match="batch_size=0"):
        list(rebatch(blocks, 0))


def test_rebatch_takes_a_block_only_when_the_last_is_used_up():
    taken = []

    def blocks():
        for a in (0, 4, 8):
            taken.append(a)
            yield (nets.nd.array(np.arange(a, a + 4, dtype=np.float32)),)
    batches = rebatch(blocks(), 4)
    next(batches)
    assert taken == [0]
    next(batches)
    assert taken == [0, 4]


# -- LibSVMReader ------------------------------------------------------------------------------

@pytest.mark.parametrize("read", ["memory", "stream"])
@pytest.mark.parametrize("n_features", [None, 50])
@pytest.mark.parametrize("block_bytes", [1, 16, 1 << 20])
def test_the_reader_gives_the_files_rows_in_batches(path, read, n_features, block_bytes):
    """Read into memory (whole, or block by block with ``n_features``) or streamed, in
    blocks of any size, the batches are ``load_libsvm``'s rows in order, ``batch_size`` at
    a time (the last fewer); without ``n_features`` the width is the file's."""
    want_X, want_y = load_libsvm(path, n_features=n_features, zero_based=True)
    with LibSVMReader(path, 3, n_features=n_features, read=read,
                      block_bytes=block_bytes) as r:
        assert r.mode == read and r.n_features == (41 if n_features is None else 50)
        for _ in range(2):  # (a second pass gives the same batches)
            X, y, sizes = _rows(r)
            assert sizes == [3, 3, 1] and r.num_batches == 3
            np.testing.assert_array_equal(X, want_X.asnumpy())
            np.testing.assert_array_equal(y, want_y.asnumpy())


def test_a_folder_and_a_compressed_file_read_as_their_rows(tmp_path, path):
    folder = tmp_path / "parts"
    folder.mkdir()
    (folder / "a.libsvm").write_bytes(TEXT[:18])  # (the first two lines)
    (folder / "b.libsvm.gz").write_bytes(gzip.compress(TEXT[18:]))
    want_X, want_y = load_libsvm(path, zero_based=True)
    for read in ("memory", "stream"):
        X, y, sizes = _rows(LibSVMReader(str(folder), 4, read=read))
        assert sizes == [4, 3]
        np.testing.assert_array_equal(X, want_X.asnumpy())
        np.testing.assert_array_equal(y, want_y.asnumpy())


def test_keep_false_makes_one_pass(path):
    """In memory, ``keep=False`` lets the batches go: one pass, a second is refused rather
    than empty; ``keep=True`` passes again."""
    r = LibSVMReader(path, 2, n_features=50, read="memory", keep=False, block_bytes=8)
    assert _rows(r)[2] == [2, 2, 2, 1]
    with pytest.raises(nets.NetsError, match="one pass"):
        list(r)
    r = LibSVMReader(path, 2, n_features=50, read="memory", block_bytes=8)
    assert _rows(r)[2] == _rows(r)[2] == [2, 2, 2, 1]


@pytest.mark.parametrize("read", ["memory", "stream"])
def test_the_batches_widen_but_never_narrow(path, read):
    r = LibSVMReader(path, 4, read=read)
    r.n_features = 60
    X, _, _ = _rows(r)
    assert X.shape == (ROWS, 60)
    np.testing.assert_array_equal(X[:, :41], load_libsvm(path, zero_based=True)[0].asnumpy())
    assert not X[:, 41:].any()
    with pytest.raises(nets.NetsError, match="n_features=40"):
        r.n_features = 40


def test_a_stream_is_not_scanned_for_its_width(tmp_path):
    """Streamed without ``n_features``, a FIFO (which nothing writes to here) is refused
    before it is opened: scanning it would consume it."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(StreamWidthError, match="n_features") as e:
        LibSVMReader(str(fifo), 4, read="stream")
    assert e.value.path == str(fifo)


def test_a_bad_line_names_the_file_and_line(tmp_path, path):
    bad = tmp_path / "bad.libsvm"
    bad.write_bytes(TEXT + b"1 3:oops\n")
    for read in ("memory", "stream"):
        with pytest.raises(nets.NetsError, match=r"bad.libsvm, line 9: malformed feature "
                                                 r"value.*'3:oops'"):
            list(LibSVMReader(str(bad), 4, n_features=50, read=read))
    with pytest.raises(nets.NetsError, match="out of range for n_features=20"):
        list(LibSVMReader(path, 4, n_features=20, read="stream"))


@pytest.mark.parametrize("kwargs, match", [
    ({"batch_size": 0}, "batch_size=0"),
    ({"n_features": 0}, "n_features=0"),
    ({"read": "disk"}, "read='disk'"),
    ({"zero_based": "auto"}, "zero_based='auto'"),
    ({"keep": 1}, "keep=1"),
    ({"block_bytes": -1}, "block_bytes=-1"),
    ({"source": "/no/such/file"}, "no such file"),
])
def test_reader_argument_errors(path, kwargs, match):
    args = {"source": path, "batch_size": 4, **kwargs}
    with pytest.raises(nets.NetsError, match=match):
        LibSVMReader(**args)


@pytest.mark.parametrize("threads", [1, 2])
def test_blocks_parsed_ahead_are_the_blocks_parsed_in_turn(path, monkeypatch, threads):
    """In memory with ``n_features``, the blocks parsed in turn (one thread) or ahead in a
    background thread (several) give the file's rows."""
    monkeypatch.setattr(parallel, "_setting", None)  # restored afterwards
    nets.set_num_threads(threads)
    r = LibSVMReader(path, 3, n_features=50, read="memory", block_bytes=8)
    X, _, _ = _rows(r)
    np.testing.assert_array_equal(X, load_libsvm(path, n_features=50,
                                                 zero_based=True)[0].asnumpy())


# -- read='auto' -------------------------------------------------------------------------------

def test_auto_reads_into_memory_what_fits_a_quarter_of_the_available_memory(tmp_path, path,
                                                                          monkeypatch):
    other = tmp_path / "val.libsvm"
    other.write_bytes(TEXT * 3)
    total = os.path.getsize(path) + os.path.getsize(other)
    monkeypatch.setattr(reader, "available_memory", lambda: 4 * total)
    assert read_mode("auto", [path, str(other)]) == "memory"
    assert LibSVMReader(path, 4).mode == "memory"
    monkeypatch.setattr(reader, "available_memory", lambda: 4 * total - 1)
    assert read_mode("auto", [path, str(other)]) == "stream"
    monkeypatch.setattr(reader, "available_memory", lambda: None)  # unknown: stream
    assert read_mode("auto", [path]) == "stream"
    for choice in ("memory", "stream"):  # an explicit choice is kept
        assert read_mode(choice, [path]) == choice
    with pytest.raises(nets.NetsError, match="read='fast'"):
        read_mode("fast", [path])


def test_auto_counts_a_compressed_file_ten_times_and_streams_a_fifo(tmp_path, path,
                                                                    monkeypatch):
    packed = tmp_path / "train.libsvm.gz"
    packed.write_bytes(gzip.compress(TEXT * 20))
    size = os.path.getsize(packed)
    monkeypatch.setattr(reader, "available_memory", lambda: 4 * 10 * size)
    assert read_mode("auto", [str(packed)]) == "memory"
    monkeypatch.setattr(reader, "available_memory", lambda: 4 * 10 * size - 1)
    assert read_mode("auto", [str(packed)]) == "stream"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    monkeypatch.setattr(reader, "available_memory", lambda: 1 << 60)
    assert read_mode("auto", [str(fifo)]) == "stream"


def test_available_memory_is_a_positive_byte_count():
    available = reader.available_memory()
    assert available is None or 0 < available <= os.sysconf("SC_PAGE_SIZE") * os.sysconf(
        "SC_PHYS_PAGES")


# -- Background --------------------------------------------------------------------------------

def test_background_hands_over_items_errors_and_stops():
    """``Background`` yields the items in order, then raises the producer's error; it holds
    at most ``ahead`` items; ``close()`` stops a producer that would never end."""
    from nets.data.reader import Background

    def failing():
        yield from range(5)
        raise nets.NetsError("bad block")
    got = []
    with pytest.raises(nets.NetsError, match="bad block"):
        for item in Background(failing()):
            got.append(item)
    assert got == [0, 1, 2, 3, 4]
    produced = []

    def endless():
        k = 0
        while True:
            produced.append(k)
            yield k
            k += 1
    ahead = Background(endless(), ahead=2)
    assert [next(ahead) for _ in range(3)] == [0, 1, 2]
    ahead.close()
    assert len(produced) <= 3 + 2 + 1  # taken, waiting, and the one being produced
    assert list(ahead) == []
    with pytest.raises(nets.NetsError, match="ahead"):
        Background([], ahead=0)
