"""`nets train` and `nets predict` on hostile inputs (issue 41, items 6, 9 and 12): a file
whose largest index asks for gigabytes of model, files without rows, non-finite labels and
edited model configurations each end in one line on stderr and a non-zero exit, before the
work (or the save) they would spoil."""
import os
import textwrap

import numpy as np
import pytest

import nets
from nets.cli import main
from nets.serialization import load_arrays, save_arrays
from tests.limits import run_limited


def _error_line(capsys):
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err
    return lines[-1]


# -- item 9: no rows, non-finite labels ----------------------------------------------------------

ROWLESS = {"empty": b"", "comments": b"# a header\n\n   \n# another comment\n",
           "blank lines": b"\n\n\n"}


@pytest.mark.parametrize("read", ["memory", "stream"])
@pytest.mark.parametrize("features", [None, "8"])
@pytest.mark.parametrize("kind", sorted(ROWLESS))
def test_train_on_a_file_without_rows_fails_and_saves_nothing(tmp_path, capsys, kind,
                                                               features, read):
    path = tmp_path / "rowless.svm"
    path.write_bytes(ROWLESS[kind])
    model = tmp_path / "model.npz"
    argv = ["train", str(path), "--epochs", "2", "--read", read, "--save", str(model)]
    argv += ["--features", features] if features else []
    assert main(argv) == 2
    line = _error_line(capsys)
    assert line.startswith("nets train: error: ")
    assert str(path) in line
    assert ("no rows" in line or "no non-empty file" in line
            or "no feature index" in line), line
    assert not model.exists()


def test_an_empty_validation_file_fails(tmp_path, capsys):
    train, val = tmp_path / "train.svm", tmp_path / "val.svm"
    train.write_bytes(b"1 0:1\n0 1:1\n")
    val.write_bytes(b"# nothing\n")
    assert main(["train", str(train), "--val", str(val), "--epochs", "1"]) == 2
    assert _error_line(capsys) == (f"nets train: error: --val {val}: no rows (the file is "
                                   f"empty or holds only blank lines and comments): nothing "
                                   f"to evaluate")


@pytest.mark.parametrize("read", ["memory", "stream"])
@pytest.mark.parametrize("loss", ["l2", "logistic"])
@pytest.mark.parametrize("label, line", [("nan", 4), ("inf", 4), ("-inf", 4), ("NaN", 4)])
def test_non_finite_labels_fail_naming_the_line_and_save_nothing(tmp_path, capsys, read,
                                                                  loss, label, line):
    path = tmp_path / "labels.svm"
    path.write_bytes(b"1 0:1\n# a comment\n0 1:1\n" + label.encode() + b" 2:1\n1 0:2\n")
    model = tmp_path / "model.npz"
    assert main(["train", str(path), "--loss", loss, "--read", read, "--batch-size", "2",
                 "--epochs", "1", "--save", str(model)]) == 2
    value = float(label)
    assert _error_line(capsys) == (
        f"nets train: error: TRAIN {path}, line {line}: label {value!r} is not a finite "
        f"number (1 such labels in its batch): a model trained on it would be NaN")
    assert not model.exists()


def test_the_line_of_a_row_is_found_across_files(tmp_path):
    """``row_location``, which names the line of a bad label: rows counted end to end over
    the files, blank lines and comments skipped, a compressed file read too."""
    import gzip

    from nets.data.reader import row_location
    a, b = tmp_path / "a.svm", tmp_path / "b.svm.gz"
    a.write_bytes(b"1 0:1\n  # note\n0 1:1")  # (no final line end)
    b.write_bytes(gzip.compress(b"\n1 0:1\r\n\t\ninf 1:1\n"))
    files = [str(a), str(b)]
    assert [row_location(files, r) for r in range(5)] == [
        (str(a), 1), (str(a), 3), (str(b), 2), (str(b), 4), None]


def test_non_finite_labels_in_a_compressed_file_name_the_line(tmp_path, capsys):
    import gzip
    path = tmp_path / "labels.svm.gz"
    path.write_bytes(gzip.compress(b"1 0:1\n\n0 1:1\n" * 5 + b"nan 2:1\n"))
    assert main(["train", str(path), "--epochs", "1", "--batch-size", "4"]) == 2
    assert f"TRAIN {path}, line 16: label nan is not a finite number" in _error_line(capsys)


# -- item 6: the model's memory ------------------------------------------------------------------

def test_a_huge_index_is_refused_before_the_model_is_allocated(tmp_path):
    """A two-line file whose largest index is 3e8: the model (1.2 GB of weight, 2.4 GB of
    Adam state) is refused in a child whose address space has 1 GiB of headroom, naming the
    feature count, the file and line of the index, the bytes and the remedies; it was a
    ``MemoryError`` (or gigabytes taken) before."""
    path = tmp_path / "huge.svm"
    path.write_bytes(b"1 0:1\n# the next line is the widest\n0 3:1 300000000:1\n1 2:1\n")
    code = textwrap.dedent(f"""
        from nets.cli import main
        print("RC", main(["train", {str(path)!r}, "--epochs", "1"]))
        """)
    proc = run_limited(code, headroom=1 << 30, timeout=120,
                       env={**os.environ, "TQDM_DISABLE": "1"})
    assert proc.returncode == 0, proc.stderr
    assert "RC 2" in proc.stdout, (proc.stdout, proc.stderr)
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("nets train: error: the model needs about ")
    assert (f"for 300000001 features (the largest feature index, 300000000, on line 3 of "
            f"{path})") in line
    assert "adam state" in line and "is available" in line
    assert "--features N" in line and "hash the feature indices" in line
    assert "distributed store" in line


def test_the_estimate_counts_the_optimizer_state():
    from nets import cli
    cfg = {"features": 1000, "hidden": [8], "loss": "logistic", "classes": 2}
    sgd = cli._model_bytes(cfg, "sgd", {"learning_rate": 0.1})
    adam = cli._model_bytes(cfg, "adam", {"learning_rate": 0.1})
    momentum = cli._model_bytes(cfg, "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    assert sgd == (2 * 32000, 32000, 0)
    assert adam == (2 * 32000 + 64000, 32000, 64000)
    assert momentum == (2 * 32000 + 32000, 32000, 32000)
    catchup = cli._model_bytes(cfg, "sgd", {"learning_rate": 0.1, "wd": 0.1,
                                            "wd_mode": "catchup"})
    assert catchup == (2 * 32000 + 8000, 32000, 8000)


def test_a_model_that_fits_is_trained(tmp_path, capsys, monkeypatch):
    """The check refuses only what does not fit: with the memory reported as just enough,
    the model trains; one byte less and it is refused."""
    from nets import cli
    from nets.data import reader
    path = tmp_path / "small.svm"
    path.write_bytes(b"1 0:1\n0 99:1\n")
    cfg = {"features": 100, "hidden": [], "loss": "logistic", "classes": 2}
    need = cli._model_bytes(cfg, "adam", {"learning_rate": 0.01})[0]
    monkeypatch.setattr(reader, "available_memory", lambda: need)
    assert main(["train", str(path), "--epochs", "1"]) == 0
    monkeypatch.setattr(reader, "available_memory", lambda: need - 1)
    assert main(["train", str(path), "--epochs", "1"]) == 2
    assert f"line 2 of {path}" in _error_line(capsys)


# -- item 12: edited model configurations --------------------------------------------------------

@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli_hostile")
    X, y, _ = nets.test_utils.make_sparse_dataset(60, 6, 3, task="binary", seed=3)
    nets.data.save_libsvm(str(d / "data.svm"), X, y)
    assert main(["train", str(d / "data.svm"), "--epochs", "1", "--model", "mlp:4",
                 "--save", str(d / "model.npz")]) == 0
    return d


def _edited(model, tmp_path, edit):
    arrays, config = load_arrays(str(model / "model.npz"))
    edit(config["extra"])
    path = tmp_path / "edited.npz"
    save_arrays(str(path), arrays, config)
    return path


def _set(key, value):
    def edit(extra):
        extra["nets_cli_model"][key] = value
    return edit


def _drop(key):
    def edit(extra):
        del extra["nets_cli_model"][key]
    return edit


def _replace(value):
    def edit(extra):
        extra["nets_cli_model"] = value
    return edit


@pytest.mark.parametrize("edit, message", [
    (_set("features", "six"), "features='six': expected a positive integer"),
    (_set("features", 0), "features=0: expected a positive integer"),
    (_set("features", 6.0), "features=6.0: expected a positive integer"),
    (_set("features", True), "features=True: expected a positive integer"),
    (_drop("features"), "features='(missing)': expected a positive integer"),
    (_set("hidden", ["4"]), "hidden=['4']: expected a list of positive integers"),
    (_set("hidden", 4), "hidden=4: expected a list of positive integers"),
    (_set("hidden", [-4]), "hidden=[-4]: expected a list of positive integers"),
    (_set("loss", "hinge"), "loss='hinge': expected one of ['l2', 'logistic', 'softmax']"),
    (_drop("loss"), "loss='(missing)': expected one of"),
    (_set("classes", 1), "classes=1: expected an integer >= 2"),
    (_set("classes", "2"), "classes='2': expected an integer >= 2"),
    (_set("model", "mlp:8"), "model='mlp:8': expected 'linear' or 'mlp:UNITS,...' matching "
                             "hidden=[4]"),
    (_set("model", 7), "model=7: expected"),
    (_replace([1, 2]), "nets_cli_model=[1, 2]: expected an object of the model's settings"),
])
def test_predict_refuses_an_edited_model_config(model, tmp_path, capsys, edit, message):
    path = _edited(model, tmp_path, edit)
    assert main(["predict", str(path), str(model / "data.svm")]) == 2
    line = _error_line(capsys)
    assert line.startswith(f"nets predict: error: {path}: its model config has ")
    assert message in line
    assert "(an edited or damaged model file)" in line


def test_predict_refuses_a_config_whose_width_differs_from_the_weights(model, tmp_path):
    """``features`` edited to 3e8: the stored weight's shape disagrees; refused before a
    model that wide is allocated (a child with 512 MiB of headroom)."""
    path = _edited(model, tmp_path, _set("features", 300_000_000))
    code = textwrap.dedent(f"""
        from nets.cli import main
        print("RC", main(["predict", {str(path)!r}, {str(model / "data.svm")!r}]))
        """)
    proc = run_limited(code, headroom=512 << 20, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "RC 2" in proc.stdout, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("nets predict: error: ")


def test_predict_with_the_saved_config_still_works(model, capsys):
    assert main(["predict", str(model / "model.npz"), str(model / "data.svm")]) == 0
    out = capsys.readouterr().out
    assert np.loadtxt(out.splitlines()).shape == (60,)


def test_out_of_memory_in_train_names_the_batch_size_used(tmp_path, capsys, monkeypatch):
    """Without --batch-size, an out-of-memory error named "--batch-size None"; it names the
    size the run used (adam's default, 512)."""
    from nets import cli
    path = tmp_path / "small.svm"
    path.write_bytes(b"1 0:1\n0 1:1\n")

    def exhausted(cfg):
        raise MemoryError
    monkeypatch.setattr(cli, "_build", exhausted)
    assert main(["train", str(path), "--epochs", "1"]) == 1
    assert _error_line(capsys) == ("nets train: error: out of memory (MemoryError); reduce "
                                   "--batch-size 512")
