"""The `nets` command a user expects (issue 39): `--seed` reproduces a run, `train --help`
shows every default, the accepted optimizers and models and an example, a misspelled
optimizer fails before any data is read, `predict` prints one summary line, and `demo`
prints each epoch's losses."""
import os
import subprocess
import sys

import numpy as np
import pytest

import nets
from nets import cli, parallel
from nets.cli import main
from nets.data import save_libsvm
from nets.serialization import load_arrays


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli_usability")
    X, y, _ = nets.test_utils.make_sparse_dataset(400, 120, 6, task="binary", seed=2,
                                                  signal=3.0)
    save_libsvm(str(d / "train.libsvm"), X[:300], y[:300])
    save_libsvm(str(d / "val.libsvm"), X[300:], y[300:])
    return d


def _nets(*argv, **env):
    return subprocess.run([sys.executable, "-m", "nets.cli", *map(str, argv)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TQDM_DISABLE": "1", **env})


def _arrays(path):
    arrays, _ = load_arrays(str(path))
    return {k: v.asnumpy() for k, v in arrays.items()}


# -- --seed -----------------------------------------------------------------------------------

def test_train_seed_gives_the_same_model_bit_for_bit_on_one_thread(files, tmp_path):
    """Two processes running `nets train --seed 1` with NETS_NUM_THREADS=1 save identical
    arrays; `--seed 2` gives other weights (the seed is what made them equal)."""
    models = []
    for k, seed in enumerate((1, 1, 2)):
        path = tmp_path / f"m{k}.npz"
        run = _nets("train", files / "train.libsvm", "--model", "mlp:8", "--epochs", 2,
                    "--batch-size", 32, "--seed", seed, "--save", path, NETS_NUM_THREADS="1")
        assert run.returncode == 0, run.stderr
        models.append(_arrays(path))
    assert models[0].keys() == models[1].keys() and len(models[0]) == 4
    for name in models[0]:
        assert models[0][name].dtype == models[1][name].dtype
        np.testing.assert_array_equal(models[0][name], models[1][name])
    assert not np.array_equal(models[0]["0.weight"], models[2]["0.weight"])


def test_demo_seed_repeats_the_run_on_one_thread(capsys, monkeypatch):
    """The same `nets demo --seed` twice in one process (its random state moved on in
    between) prints the same losses."""
    monkeypatch.setattr(parallel, "_setting", None)  # restored afterwards
    nets.set_num_threads(1)
    runs = []
    for _ in range(2):
        nets.nd.random.uniform(shape=(7,))  # (moves nets' random state)
        assert main(["demo", "--samples", "200", "--features", "500", "--batch-size", "20",
                     "--epochs", "2", "--seed", "4"]) == 0
        runs.append([ln.rsplit("(", 1)[0] for ln in capsys.readouterr().out.splitlines()
                     if ln.startswith("  epoch")])
    assert len(runs[0]) == 6 and runs[0] == runs[1]


# -- train --help ---------------------------------------------------------------------------

def _train_help():
    return cli.build_parser()._subparsers._group_actions[0].choices["train"]


def test_train_help_shows_defaults_choices_and_an_example():
    train = _train_help()
    text = " ".join(train.format_help().split())  # (argparse wraps lines)
    entries = {}
    for action in train._actions:
        if action.option_strings and action.dest != "help":
            entry = train.formatter_class(prog="nets train")._format_action(action)
            entries[action.dest] = " ".join(entry.split())
            assert "default" in entry, entry
    assert "(default: adam)" in text and "(default: 3)" in text and "(default: lazy)" in text
    for name in ("adagrad", "adam", "ftrl", "rmsprop", "sgd", "rowwise_adagrad"):
        assert f" {name}," in entries["optimizer"] or f" {name} (" in entries["optimizer"]
    assert "'linear', or 'mlp:UNITS[,UNITS...]'" in text
    lines = train.format_help().rstrip().splitlines()
    assert lines[-3] == "example:"
    example = " ".join(ln.strip().rstrip("\\") for ln in lines[-2:]).split()
    assert example[:2] == ["nets", "train"]
    args = cli.build_parser().parse_args(example[1:])  # (the example parses)
    assert args.optimizer == "adagrad" and args.seed == 1


def test_a_misspelled_optimizer_fails_before_the_data_is_read(tmp_path, capsys):
    """The optimizer is checked when the arguments are parsed: a missing data file, or a
    FIFO that nobody writes to (reading it would wait forever), is never opened."""
    with pytest.raises(SystemExit) as e:
        main(["train", str(tmp_path / "missing.libsvm"), "--optimizer", "adamm"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "argument --optimizer: invalid choice: 'adamm'" in err and "'sgd'" in err
    fifo = tmp_path / "never_written.fifo"
    os.mkfifo(fifo)
    run = _nets("train", fifo, "--optimizer", "sgdd")
    assert run.returncode == 2 and "invalid choice: 'sgdd'" in run.stderr
    assert cli.build_parser().parse_args(["train", "x", "--optimizer", "AdaGrad"]).optimizer \
        == "adagrad"


# -- predict's line ---------------------------------------------------------------------------

def _labels(path):
    with open(path) as f:
        return np.array([float(line.split()[0]) for line in f if line.strip()])


def test_predict_prints_one_line_with_rows_output_and_metrics(files, tmp_path, capsys):
    model, out = tmp_path / "m.npz", tmp_path / "preds.txt"
    assert main(["train", str(files / "train.libsvm"), "--epochs", "2", "--seed", "0",
                 "--save", str(model)]) == 0
    capsys.readouterr()
    assert main(["predict", str(model), str(files / "val.libsvm"), "--output", str(out),
                 "--batch-size", "30"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1
    preds, labels = np.loadtxt(out), _labels(files / "val.libsvm") > 0
    accuracy = np.mean((preds > 0.5) == labels)
    pos, neg = preds[labels], preds[~labels]
    auc = ((pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()) \
        / (pos.size * neg.size)
    head, acc_text, auc_text = lines[0].split("  ")
    assert head == f"predicted 100 rows to {out}"
    assert acc_text.startswith("accuracy ") and auc_text.startswith("auc ")
    assert abs(float(acc_text.split()[1]) - accuracy) < 1e-4
    assert abs(float(auc_text.split()[1]) - auc) < 2e-4
    # to standard output: the predictions there, the line on stderr
    assert main(["predict", str(model), str(files / "val.libsvm")]) == 0
    captured = capsys.readouterr()
    np.testing.assert_allclose(np.array(captured.out.split(), float), preds)
    assert captured.err.strip().splitlines()[-1].startswith(
        "predicted 100 rows to standard output  accuracy ")


def test_predict_prints_no_metrics_for_labels_that_are_not_class_ids(files, tmp_path, capsys):
    model, out = tmp_path / "softmax.npz", tmp_path / "preds.txt"
    assert main(["train", str(files / "train.libsvm"), "--loss", "softmax", "--classes", "2",
                 "--epochs", "1", "--save", str(model)]) == 0
    unlabelled = tmp_path / "unlabelled.libsvm"
    text = (files / "val.libsvm").read_text().splitlines()
    unlabelled.write_text("".join("7 " + line.split(" ", 1)[1] + "\n" for line in text))
    capsys.readouterr()
    assert main(["predict", str(model), str(unlabelled), "--output", str(out)]) == 0
    assert capsys.readouterr().out == f"predicted 100 rows to {out}\n"
    assert np.loadtxt(out).shape == (100, 2)


# -- demo's epochs ------------------------------------------------------------------------------

def test_demo_prints_each_epochs_training_and_held_out_loss(capsys):
    """An epoch line per variant and epoch, whose last values are the table's; the loss
    falls from the first epoch to the last."""
    assert main(["demo", "--samples", "2000", "--features", "2000", "--batch-size", "50",
                 "--epochs", "3", "--seed", "0"]) == 0
    out = capsys.readouterr().out.splitlines()
    epochs = [ln for ln in out if ln.startswith("  epoch")]
    assert len(epochs) == 9
    table = {ln[:40].strip(): ln[40:].split() for ln in out
             if ln.startswith(("Dense", "FullyConnectedSparse"))}
    for name, cols in table.items():
        mine = [ln for ln in epochs if f"  {name}: " in ln]
        assert [ln.split()[1] for ln in mine] == ["1/3", "2/3", "3/3"]
        train = [float(ln.split("train loss ")[1].split()[0]) for ln in mine]
        held_out = [float(ln.split("held-out loss ")[1].split()[0]) for ln in mine]
        assert train[-1] < train[0] and held_out[-1] < held_out[0]
        assert (f"{train[-1]:.4f}", f"{held_out[-1]:.4f}") == (cols[3], cols[4])
