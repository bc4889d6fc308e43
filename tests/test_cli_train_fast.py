"""`nets train` end to end (issue 26, item 2): files read into memory or streamed (`--read`),
per-optimizer defaults, the `--val` metrics against numpy, and the LibSVM block readers behind
them (`libsvm_width`, `libsvm_blocks`); `nets.data.LibSVMReader` itself is tested in
tests/data/test_reader.py."""
import gzip
import os
import threading

import numpy as np
import pytest

import nets
from nets import cli, parallel
from nets.cli import main
from nets.data import libsvm, load_libsvm, reader, save_libsvm
from nets.data.libsvm import libsvm_width
from nets.serialization import load_arrays

FEATURES = 300


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli_fast")
    X, y, _ = nets.test_utils.make_sparse_dataset(900, FEATURES, 6, task="binary", seed=5,
                                                  signal=3.0)
    save_libsvm(str(d / "train.libsvm"), X[:700], y[:700])
    save_libsvm(str(d / "val.libsvm"), X[700:], y[700:])
    return d


def _train(*argv):
    """``nets train argv`` with the random source seeded; the epoch lines it printed."""
    nets.random.seed(123)
    assert main(["train", *map(str, argv)]) == 0


def _epoch_lines(out):
    return [ln for ln in out.splitlines() if ln.startswith("epoch")]


def _model(path):
    arrays, _ = load_arrays(str(path))
    return {k: v.asnumpy() for k, v in arrays.items()}


def _field(line, name):
    return float(line.split(name + " ")[1].split()[0])


# -- memory and stream train alike ---------------------------------------------------------

@pytest.mark.parametrize("optimizer", ["adagrad", "adam"])
@pytest.mark.parametrize("features", [None, FEATURES])
def test_memory_and_stream_train_the_same_model(files, tmp_path, capsys, optimizer,
                                                features):
    """Read whole or streamed, the batches are the same rows in the same order: the same
    seed gives the same model and the same printed losses (a last batch shorter than the
    others included: 700 rows in batches of 64), with or without --features."""
    given = [] if features is None else ["--features", features]
    models, lines = [], []
    for read in ("memory", "stream"):
        path = tmp_path / f"{read}.npz"
        _train(files / "train.libsvm", "--val", files / "val.libsvm", "--optimizer",
               optimizer, "--epochs", 2, "--batch-size", 64, "--read", read, "--save", path,
               *given)
        models.append(_model(path))
        lines.append([ln.split("  ", 2)[2] for ln in _epoch_lines(capsys.readouterr().out)])
    assert lines[0] == lines[1] and len(lines[0]) == 2
    assert models[0].keys() == models[1].keys() == {"0.weight", "0.bias"}
    for name in models[0]:
        np.testing.assert_allclose(models[0][name], models[1][name], rtol=1e-6, atol=1e-7)


def test_the_feature_count_is_found_in_both_files(files, tmp_path, capsys):
    """Without --features the model is as wide as the widest of TRAIN and --val, read whole
    or streamed (the narrower file's rows are widened, not refused)."""
    narrow = tmp_path / "narrow.libsvm"
    narrow.write_text("1 0:0.5 3:1\n0 2:0.25\n")
    for read in ("memory", "stream"):
        path = tmp_path / f"{read}.npz"
        _train(narrow, "--val", files / "val.libsvm", "--epochs", 1, "--read", read,
               "--save", path)
        width = load_libsvm(str(files / "val.libsvm"), zero_based=True)[0].shape[1]
        assert _model(path)["0.weight"].shape == (width, 1)
        assert f"found {width} features" in capsys.readouterr().err


# -- the --val metrics against numpy ----------------------------------------------------------

@pytest.mark.parametrize("read", ["memory", "stream"])
def test_val_log_loss_and_auc_match_numpy_on_the_saved_model(files, tmp_path, capsys, read):
    """The last epoch's `val loss` (sigmoid cross-entropy) and `val auc` equal a numpy
    computation from the saved weights: logits ``X @ w + b`` over the validation file."""
    path = tmp_path / "m.npz"
    _train(files / "train.libsvm", "--val", files / "val.libsvm", "--optimizer", "adagrad",
           "--epochs", 3, "--batch-size", 100, "--read", read, "--save", path)
    last = _epoch_lines(capsys.readouterr().out)[-1]
    model = _model(path)
    with open(files / "val.libsvm") as f:
        rows = [line.split() for line in f]
    labels = np.array([float(r[0]) for r in rows]) > 0
    X = np.zeros((len(rows), model["0.weight"].shape[0]))
    for i, r in enumerate(rows):
        for token in r[1:]:
            j, v = token.split(":")
            X[i, int(j)] = float(v)
    s = X @ model["0.weight"][:, 0].astype(np.float64) + float(model["0.bias"][0])
    log_loss = np.mean(np.where(labels, np.log1p(np.exp(-s)), np.log1p(np.exp(s))))
    pos, neg = s[labels], s[~labels]
    auc = ((pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()) \
        / (pos.size * neg.size)
    assert log_loss < 0.6  # (it learned something: labels are not noise)
    assert abs(_field(last, "val loss") - log_loss) < 2e-4
    assert abs(_field(last, "val auc") - auc) < 2e-4


# -- defaults ------------------------------------------------------------------------------------

def test_adagrad_defaults_to_its_rate_and_batch(files, tmp_path, capsys):
    """`--optimizer adagrad` without --lr/--batch-size trains with 0.2 and 2048 (the help
    says so), other optimizers with 0.01 and 512."""
    for optimizer, lr, batch in (("adagrad", 0.2, 2048), ("sgd", 0.01, 512)):
        paths = [tmp_path / f"{optimizer}_default.npz", tmp_path / f"{optimizer}_given.npz"]
        _train(files / "train.libsvm", "--optimizer", optimizer, "--epochs", 2, "--save",
               paths[0])
        _train(files / "train.libsvm", "--optimizer", optimizer, "--epochs", 2, "--lr", lr,
               "--batch-size", batch, "--save", paths[1])
        a, b = (_model(p) for p in paths)
        for name in a:
            np.testing.assert_array_equal(a[name], b[name])
    capsys.readouterr()
    help_text = cli.build_parser()._subparsers._group_actions[0].choices["train"].format_help()
    assert "0.2 for adagrad" in help_text and "2048" in help_text


def test_a_fifo_read_into_memory_needs_no_feature_count(files, tmp_path, capsys):
    """A pipe can be read once: streamed it needs --features (the error says so, and names
    --read memory); read whole, the one read gives the data and its width."""
    fifo = tmp_path / "train.fifo"
    os.mkfifo(fifo)
    text = (files / "train.libsvm").read_bytes()

    def feed():
        with open(fifo, "wb") as f:
            f.write(text)
    writer = threading.Thread(target=feed)
    writer.start()
    try:
        _train(fifo, "--epochs", 1, "--read", "memory", "--save", tmp_path / "m.npz")
    finally:
        writer.join()
    width = load_libsvm(str(files / "train.libsvm"), zero_based=True)[0].shape[1]
    assert f"found {width} features" in capsys.readouterr().err
    assert main(["train", str(fifo), "--read", "stream"]) == 2
    err = capsys.readouterr().err
    assert "--features" in err and "--read memory" in err


def test_predict_reads_into_memory_or_streams_alike(files, tmp_path):
    model = tmp_path / "m.npz"
    _train(files / "train.libsvm", "--epochs", 1, "--save", model)
    outs = []
    for read in ("memory", "stream"):
        out = tmp_path / f"{read}.txt"
        assert main(["predict", str(model), str(files / "val.libsvm"), "--read", read,
                     "--batch-size", "64", "--output", str(out)]) == 0
        outs.append(np.loadtxt(out))
    assert outs[0].shape == (200,)
    np.testing.assert_array_equal(outs[0], outs[1])


def test_a_bad_line_read_into_memory_is_a_one_line_error(files, tmp_path, capsys):
    """A malformed line or an index beyond --features, found while reading a file into
    memory, is the command's error, naming the file and the line."""
    bad = tmp_path / "bad.libsvm"
    text = (files / "train.libsvm").read_bytes()
    bad.write_bytes(text + b"1 3:oops\n")
    line = text.count(b"\n") + 1
    assert main(["train", str(bad), "--features", str(FEATURES), "--read", "memory"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"line {line}: malformed feature value" in err and "'3:oops'" in err
    assert main(["train", str(files / "train.libsvm"), "--features", "5", "--read",
                 "memory"]) == 2
    assert "out of range for n_features=5" in capsys.readouterr().err


# -- reading helpers ---------------------------------------------------------------------------

TEXT = b"1 0:1 7:2\n0 3:0.5\n\n1 12:1.5 40:2\n0\n1 2:1\n"


def test_libsvm_width_scans_in_bounded_blocks(tmp_path, monkeypatch):
    """The width `load_libsvm` gives, zero- and one-based, also when the file is read in
    many small blocks; an error in a later block names its line."""
    path = tmp_path / "w.libsvm"
    path.write_bytes(TEXT)
    monkeypatch.setattr(libsvm, "SCAN_BLOCK", 8)
    assert libsvm_width(str(path)) == 41 == load_libsvm(str(path), zero_based=True)[0].shape[1]
    one_based = tmp_path / "one.libsvm"
    one_based.write_bytes(TEXT.replace(b" 0:1 ", b" 1:1 "))
    assert libsvm_width(str(one_based), zero_based=False) == 40
    empty = tmp_path / "empty.libsvm"
    empty.write_bytes(b"")
    assert libsvm_width(str(empty)) == 0
    bad = tmp_path / "bad.libsvm"
    bad.write_bytes(TEXT + b"1 5:x\n")
    with pytest.raises(nets.NetsError, match=r"line 7: malformed feature value .*'5:x'"):
        libsvm_width(str(bad))
    with pytest.raises(nets.NetsError, match="zero_based"):
        libsvm_width(str(path), zero_based="auto")


@pytest.mark.parametrize("block", [1, 5, 16, 1 << 20])
def test_a_file_in_blocks_of_any_size_reads_as_a_stream_does(tmp_path, monkeypatch, block):
    """A regular file is parsed in blocks of whole lines of any size; the arrays equal those
    of the same text read from a gzip stream, and a bad token in a later block names its
    line."""
    path, packed = tmp_path / "m.libsvm", tmp_path / "m.libsvm.gz"
    path.write_bytes(TEXT + b"1 3:0.25")  # (a last line without '\n')
    packed.write_bytes(gzip.compress(path.read_bytes()))
    want_X, want_y = load_libsvm(str(packed), zero_based=True)
    monkeypatch.setattr(libsvm, "LOAD_BLOCK", block)
    X, y = load_libsvm(str(path), zero_based=True)
    assert X.shape == want_X.shape == (6, 41)  # (a blank line is no row)
    np.testing.assert_array_equal(X.asnumpy(), want_X.asnumpy())
    np.testing.assert_array_equal(y.asnumpy(), want_y.asnumpy())
    path.write_bytes(TEXT + b"1 3:0.25 2:1\n")
    with pytest.raises(nets.NetsError, match=r"line 7: feature index does not increase"):
        load_libsvm(str(path), zero_based=True)


# -- read into memory block by block, parsed ahead ---------------------------------------------

@pytest.mark.parametrize("epochs", [1, 2])
@pytest.mark.parametrize("threads", [1, 2])
def test_blocks_parsed_ahead_train_the_model_of_the_whole_file(files, tmp_path, capsys,
                                                               monkeypatch, threads, epochs):
    """With --features, a file read into memory is parsed in blocks (in a background thread
    with 2 threads) and trained on as they come: with blocks that end mid-batch (and a
    batch that spans three blocks), the model and the printed losses and metrics equal,
    bit for bit, those of the file parsed as one block (the whole file in memory); --val too,
    in one epoch (nothing kept) and over 2 (the second trains on the kept batches)."""
    models, lines = [], []
    monkeypatch.setattr(parallel, "_setting", None)  # restored afterwards
    nets.set_num_threads(threads)
    for block in (1 << 30, 700, 2100):
        monkeypatch.setattr(reader, "BLOCK_BYTES", block)
        path = tmp_path / f"{block}.npz"
        _train(files / "train.libsvm", "--val", files / "val.libsvm", "--features",
               FEATURES, "--optimizer", "adagrad", "--epochs", epochs, "--batch-size", 64,
               "--read", "memory", "--save", path)
        models.append(_model(path))
        lines.append([ln.split("  ", 2)[2] for ln in _epoch_lines(capsys.readouterr().out)])
    assert len(lines[0]) == epochs
    for other in range(1, len(models)):
        assert lines[other] == lines[0]
        for name in models[0]:
            np.testing.assert_array_equal(models[other][name], models[0][name])


@pytest.mark.parametrize("block", [1, 5, 16, 1 << 20])
def test_libsvm_blocks_join_to_the_whole_file(tmp_path, block):
    """The blocks of ``libsvm_blocks``, of any size, join to ``load_libsvm``'s arrays; an
    error in a later block names its line; the feature count and basing must be given."""
    path = tmp_path / "m.libsvm"
    path.write_bytes(TEXT + b"1 3:0.25")
    want_X, want_y = load_libsvm(str(path), n_features=50, zero_based=True)
    got = list(libsvm.libsvm_blocks(str(path), 50, block=block))
    assert all(X.shape[1] == 50 for X, _ in got)
    np.testing.assert_array_equal(np.concatenate([X.asnumpy() for X, _ in got]),
                                  want_X.asnumpy())
    np.testing.assert_array_equal(np.concatenate([y.asnumpy() for _, y in got]),
                                  want_y.asnumpy())
    path.write_bytes(TEXT.replace(b" 0:1 ", b" 1:1 "))  # (no index 0)
    one_based = list(libsvm.libsvm_blocks(str(path), 50, zero_based=False, block=block))
    np.testing.assert_array_equal(
        np.concatenate([X.asnumpy() for X, _ in one_based]),
        load_libsvm(str(path), n_features=50, zero_based=False)[0].asnumpy())
    with pytest.raises(nets.NetsError, match=r"line 4: feature index out of range"):
        list(libsvm.libsvm_blocks(str(path), 20, block=block))
    for bad in ({"zero_based": "auto"}, {"n_features": None}, {"block": 0}, {"threads": 0},
                {"threads": "2"}, {"threads": True}):
        with pytest.raises(nets.NetsError, match=next(iter(bad))):
            list(libsvm.libsvm_blocks(str(path), **{"n_features": 50, **bad}))


def test_libsvm_blocks_parse_on_at_most_the_threads_given(tmp_path, monkeypatch):
    """``libsvm_blocks(threads=1)`` parses each block in the calling thread alone, whatever
    nets' thread count, into the blocks that all threads give."""
    path = tmp_path / "m.libsvm"
    path.write_bytes(TEXT * 50)
    monkeypatch.setattr(parallel, "_setting", None)  # restored afterwards
    monkeypatch.setattr(parallel, "GRAIN", 1)
    monkeypatch.setattr(libsvm, "PART_BYTES", 64)  # (several ranges a block)
    nets.set_num_threads(4)
    want = list(libsvm.libsvm_blocks(str(path), 50, block=1000))
    with parallel.count_threads() as counts:
        got = list(libsvm.libsvm_blocks(str(path), 50, block=1000, threads=1))
    assert counts and set(counts) == {1}
    assert len(got) == len(want) > 1
    for (X, y), (X0, y0) in zip(got, want):
        np.testing.assert_array_equal(X.asnumpy(), X0.asnumpy())
        np.testing.assert_array_equal(y.asnumpy(), y0.asnumpy())
