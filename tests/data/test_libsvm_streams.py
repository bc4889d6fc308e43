"""LibSVM input that is not a regular file: FIFOs, ``/dev/stdin``, pipes, ``<(zcat f.gz)``,
and gzip/bzip2/xz files, read by ``load_libsvm``, ``LibSVMIter`` and the CLI. Each is
compared with the same text read from a regular file (and with scikit-learn's reader)."""
import bz2
import gc
import gzip
import lzma
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

import nets
from nets import data
from nets.base import NetsError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
N_FEATURES = 30
COMPRESS = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """A regular LibSVM file (one-based, with a comment and a blank line), its text and
    what ``load_libsvm`` reads from it."""
    rng = np.random.default_rng(0)
    X = nets.nd.array(rng.random((300, N_FEATURES))
                      * (rng.random((300, N_FEATURES)) < 0.3)).tostype("csr")
    y = nets.nd.array(rng.integers(0, 2, 300).astype(np.float32))
    path = str(tmp_path_factory.mktemp("plain") / "plain.svm")
    data.save_libsvm(path, X, y, zero_based=False)
    with open(path, "rb") as f:
        text = b"# a comment line\n\n" + f.read()
    with open(path, "wb") as f:
        f.write(text)
    return path, text, data.load_libsvm(path, n_features=N_FEATURES)


def assert_same(got, expected):
    for a, b in zip(got, expected):
        assert a.stype == b.stype and a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


class Fifo:
    """A FIFO in ``folder`` that a thread fills with ``payload``, a few bytes per write (so
    the reader sees short reads, even of a compressed file's first bytes)."""

    def __init__(self, folder, payload, name="fifo", piece=7):
        self.path = str(folder / name)
        os.mkfifo(self.path)
        self.thread = threading.Thread(target=self._write, args=(payload, piece), daemon=True)
        self.thread.start()

    def _write(self, payload, piece):
        try:
            with open(self.path, "wb") as f:
                for k in range(0, len(payload), piece):
                    f.write(payload[k:k + piece])
                    f.flush()
        except BrokenPipeError:  # the reader stopped early (a test of an error)
            pass

    def join(self):
        self.thread.join(timeout=60)
        assert not self.thread.is_alive()


@pytest.mark.parametrize("block", [None, 64])
def test_fifo_reads_as_the_regular_file(tmp_path, plain, block, monkeypatch):
    """A FIFO used to load as an empty dataset (the reader sized its work by st_size);
    small blocks make lines cross the reads' boundaries."""
    path, text, expected = plain
    if block:
        monkeypatch.setattr(nets.data.libsvm, "LOAD_BLOCK", block)
    fifo = Fifo(tmp_path, text)
    got = data.load_libsvm(fifo.path, n_features=N_FEATURES)
    fifo.join()
    assert got[0].shape == (300, N_FEATURES)
    assert_same(got, expected)
    X_sk, y_sk = load_svmlight_file(path, n_features=N_FEATURES, zero_based=False)
    np.testing.assert_allclose(got[0].asnumpy(), X_sk.toarray(), rtol=1e-7)
    np.testing.assert_array_equal(got[1].asnumpy(), y_sk)


@pytest.mark.parametrize("kind", sorted(COMPRESS))
def test_compressed_files_read_directly(tmp_path, plain, kind):
    """gzip, bzip2 and xz files are recognised by their first bytes (the name does not
    matter) and read decompressed: from a file, from a FIFO, and concatenated streams."""
    _, text, expected = plain
    packed = COMPRESS[kind](text)
    for name in (f"data.svm.{kind}", "no_suffix.svm"):
        path = tmp_path / name
        path.write_bytes(packed)
        assert_same(data.load_libsvm(str(path), n_features=N_FEATURES), expected)
    half = text.index(b"\n", len(text) // 2) + 1  # `cat a.gz b.gz`: one text
    joined = tmp_path / f"joined.{kind}"
    joined.write_bytes(COMPRESS[kind](text[:half]) + COMPRESS[kind](text[half:]))
    assert_same(data.load_libsvm(str(joined), n_features=N_FEATURES), expected)
    fifo = Fifo(tmp_path, packed, piece=1 if kind == "xz" else 5)
    assert_same(data.load_libsvm(fifo.path, n_features=N_FEATURES), expected)
    fifo.join()


@pytest.mark.parametrize("kind", sorted(COMPRESS))
def test_truncated_or_corrupt_compressed_file_is_an_error(tmp_path, plain, kind):
    _, text, _ = plain
    packed = COMPRESS[kind](text)
    path = tmp_path / f"cut.{kind}"
    path.write_bytes(packed[:len(packed) // 2])
    with pytest.raises(NetsError, match=f"cut.{kind}: cannot read the "):
        data.load_libsvm(str(path))
    path.write_bytes(packed[:8] + b"\0" * 64 + packed[72:])
    with pytest.raises(NetsError, match=f"cut.{kind}: cannot read the "):
        data.load_libsvm(str(path))


def test_dev_stdin_in_a_subprocess(tmp_path, plain):
    """``load_libsvm('/dev/stdin')`` fed by a pipe, as in ``zcat f.gz | python prog.py``."""
    _, text, expected = plain
    out = tmp_path / "out.npz"
    prog = ("import sys, numpy as np; from nets import data\n"
            f"X, y = data.load_libsvm('/dev/stdin', n_features={N_FEATURES})\n"
            f"np.savez({str(out)!r}, X=X.asnumpy(), y=y.asnumpy())\n")
    subprocess.run([sys.executable, "-c", prog], input=gzip.compress(text), cwd=ROOT,
                   check=True, timeout=120)
    with np.load(out) as got:
        np.testing.assert_array_equal(got["X"], expected[0].asnumpy())
        np.testing.assert_array_equal(got["y"], expected[1].asnumpy())


def test_errors_in_a_stream_name_the_line_and_token(tmp_path, monkeypatch):
    monkeypatch.setattr(nets.data.libsvm, "LOAD_BLOCK", 32)
    lines = [b"1 1:0.5 2:1"] * 20 + [b"0 3:1 bad"] + [b"1 1:1"] * 5
    fifo = Fifo(tmp_path, gzip.compress(b"\n".join(lines) + b"\n"))
    with pytest.raises(NetsError, match=r"fifo, line 21: malformed feature .*'bad'"):
        data.load_libsvm(fifo.path)
    fifo.join()
    text = b"\n".join([b"1 6:1"] * 10 + [b"0 0:1"]) + b"\n"  # 'auto': the index 6 was
    fifo = Fifo(tmp_path, text, name="fifo2")  # out of range after all (line 1)
    with pytest.raises(NetsError, match=r"fifo2, line 1: feature index out of range .*'6:"):
        data.load_libsvm(fifo.path, n_features=6)
    fifo.join()


def test_cache_needs_a_regular_file(tmp_path, plain):
    _, text, expected = plain
    fifo = Fifo(tmp_path, text)
    with pytest.raises(NetsError, match="cache=True needs a regular file"):
        data.load_libsvm(fifo.path, cache=True)
    # let the writer end (it may have written everything or met the closed pipe already):
    # a non-blocking open never waits for a writer that is gone
    os.close(os.open(fifo.path, os.O_RDONLY | os.O_NONBLOCK))
    fifo.join()
    packed = tmp_path / "data.svm.gz"  # a compressed regular file caches
    packed.write_bytes(gzip.compress(text))
    assert_same(data.load_libsvm(str(packed), n_features=N_FEATURES, cache=True), expected)
    assert os.path.exists(str(packed) + ".nets.npz")
    assert_same(data.load_libsvm(str(packed), n_features=N_FEATURES, cache=True), expected)


def test_progress_bar_over_a_stream(tmp_path, plain, capsys):
    _, text, expected = plain
    fifo = Fifo(tmp_path, text)
    assert_same(data.load_libsvm(fifo.path, n_features=N_FEATURES, progress=True), expected)
    fifo.join()
    assert "fifo" in capsys.readouterr().err


def _batches(it):
    rows = [(b.data[0].asnumpy()[:b.data[0].shape[0] - b.pad],
             b.label[0].asnumpy()[:b.data[0].shape[0] - b.pad]) for b in it]
    return np.concatenate([r[0] for r in rows]), np.concatenate([r[1] for r in rows])


@pytest.mark.parametrize("kind", ["fifo", "gz", "fifo-xz"])
def test_libsvmiter_over_a_stream_makes_every_pass(tmp_path, plain, kind):
    """A stream is read through once into a temporary file: later passes, parts and a
    shuffle see the same rows as from the regular file; the copy goes with the iterator."""
    _, text, expected = plain
    payload = lzma.compress(text) if kind == "fifo-xz" else (
        gzip.compress(text) if kind == "gz" else text)
    fifos = []

    def source():
        if kind.startswith("fifo"):
            fifos.append(Fifo(tmp_path, payload, name=f"fifo{len(fifos)}"))
            return fifos[-1].path
        path = tmp_path / "data.svm.gz"
        path.write_bytes(payload)
        return str(path)

    X, y = expected[0].asnumpy(), expected[1].asnumpy()
    it = data.LibSVMIter(source(), data_shape=(N_FEATURES,), batch_size=32, zero_based=False,
                         round_batch=False, chunk_bytes=500)
    for _ in range(2):
        it.reset()
        got = _batches(it)
        np.testing.assert_array_equal(got[0], X)
        np.testing.assert_array_equal(got[1], y)
    shuffled = data.LibSVMIter(source(), data_shape=(N_FEATURES,), batch_size=32,
                               zero_based=False, shuffle=True, chunk_bytes=500,
                               round_batch=False)
    for fifo in fifos:
        fifo.join()
    got = _batches(shuffled)
    order = np.lexsort(got[0].T[::-1])
    np.testing.assert_array_equal(got[0][order], X[np.lexsort(X.T[::-1])])
    np.testing.assert_array_equal(got[1][order], y[np.lexsort(X.T[::-1])])
    spools = list(it._spools) + list(shuffled._spools)
    assert spools and all(os.path.exists(s) for s in spools)
    del it, shuffled
    gc.collect()
    assert not any(os.path.exists(s) for s in spools)


def test_libsvmiter_parts_of_a_stream_partition_its_rows(tmp_path, plain):
    _, text, expected = plain
    got = []
    for p in range(3):
        fifo = Fifo(tmp_path, gzip.compress(text), name=f"fifo{p}")
        it = data.LibSVMIter(fifo.path, data_shape=(N_FEATURES,), batch_size=16,
                             zero_based=False, round_batch=False, num_parts=3, part_index=p,
                             chunk_bytes=300)
        fifo.join()
        got.append(_batches(it)[0])
    assert all(len(g) for g in got)
    np.testing.assert_array_equal(np.concatenate(got), expected[0].asnumpy())


def test_libsvmiter_on_an_exhausted_stream_says_so(tmp_path, plain):
    fifo = Fifo(tmp_path, b"")
    with pytest.raises(NetsError, match="no non-empty file.*can be read only once"):
        data.LibSVMIter(fifo.path, data_shape=(N_FEATURES,), batch_size=4)
    fifo.join()


def test_cli_train_and_predict_on_streams(tmp_path, plain):
    """``nets train FIFO`` (two epochs over a one-shot stream) and ``nets predict MODEL
    <(zcat f.gz)`` in subprocesses; the CLI used to say "no such file" for them."""
    _, text, expected = plain
    fifo = Fifo(tmp_path, text)
    model = str(tmp_path / "model.npz")
    cli = [sys.executable, "-c", "import sys; from nets.cli import main; sys.exit(main())"]
    run = subprocess.run(cli + ["train", fifo.path, "--features", str(N_FEATURES + 1),
                                "--epochs", "2", "--batch-size", "50", "--save", model],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    fifo.join()
    assert run.returncode == 0, run.stderr
    assert len([ln for ln in run.stdout.splitlines() if ln.startswith("epoch")]) == 2
    packed = tmp_path / "data.svm.gz"
    packed.write_bytes(gzip.compress(text))
    cmd = " ".join(f"'{a}'" for a in cli + ["predict", model]) + f" <(zcat '{packed}')"
    run = subprocess.run(["bash", "-c", cmd], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    preds = np.array(run.stdout.split(), float)
    assert preds.shape == (expected[0].shape[0],) and np.all((preds > 0) & (preds < 1))


def test_libsvmiter_errors_name_the_compressed_file_and_its_line(tmp_path):
    path = tmp_path / "bad.svm.gz"
    path.write_bytes(gzip.compress(b"1 0:1\n" * 50 + b"1 0:x\n"))
    it = data.LibSVMIter(str(path), data_shape=(3,), batch_size=8, chunk_bytes=64)
    with pytest.raises(NetsError, match=r"bad.svm.gz, line 51: malformed feature value.*'0:x'"):
        for _ in it:
            pass


def test_cli_train_on_a_stream_needs_features(tmp_path):
    """Scanning a pipe for its feature count would consume it: ``nets train <(...)``
    without ``--features`` says so in one line instead of hanging or training on nothing."""
    path = tmp_path / "d.svm"
    path.write_bytes(b"1 0:1\n0 2:1\n")
    cli = [sys.executable, "-c", "import sys; from nets.cli import main; sys.exit(main())"]
    cmd = " ".join(f"'{a}'" for a in cli + ["train"]) + f" <(cat '{path}')"
    run = subprocess.run(["bash", "-c", cmd], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode != 0
    assert "give --features" in run.stderr and "Traceback" not in run.stderr
