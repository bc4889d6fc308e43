"""The `nets` command: --version, info, demo, train, predict and its error handling."""
import subprocess
import sys

import numpy as np
import pytest

import nets
from nets.cli import main


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"nets {nets.__version__}"


def test_info_lists_versions_threading_and_cache(tmp_path):
    import os
    # (a new process: numba reads NUMBA_CACHE_DIR once, when it is imported)
    proc = subprocess.run([sys.executable, "-m", "nets.cli", "info"], capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for key in ("nets", "numpy", "scipy", "numba", "threads", "numba cache dir", "kernels"):
        assert any(line.startswith(key + " ") for line in out.splitlines()), key
    assert str(tmp_path / "cache") in out


def _info_threads_line(value):
    """``nets info``'s thread line after the thread count, run with NETS_NUM_THREADS=value."""
    import os
    proc = subprocess.run([sys.executable, "-m", "nets.cli", "info"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "NETS_NUM_THREADS": value})
    assert proc.returncode == 0, proc.stderr
    return next(x for x in proc.stdout.splitlines() if x.startswith("threads ")).split(None, 1)[1]


def test_info_shows_the_thread_count_from_the_environment():
    assert _info_threads_line("3") == "3 (from NETS_NUM_THREADS)"


def test_info_shows_the_detected_thread_count_and_its_source():
    count, source = _info_threads_line("").split(None, 1)
    assert int(count) >= 1
    assert source == "(from affinity mask)" or source.startswith("(from cgroup CPU quota (")


def test_info_after_set_num_threads(capsys, monkeypatch):
    from nets import parallel
    monkeypatch.setattr(parallel, "_setting", None)  # restored afterwards
    nets.set_num_threads(2)
    assert main(["info"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("threads "))
    assert line.split(None, 1)[1] == "2 (from set_num_threads)"


def test_info_reports_a_bad_thread_count(capsys, monkeypatch):
    from nets import parallel
    monkeypatch.setattr(parallel, "_setting", None)
    monkeypatch.setenv("NETS_NUM_THREADS", "many")
    assert main(["info"]) == 2
    assert "NETS_NUM_THREADS='many': expected an integer >= 1" in capsys.readouterr().err


def test_no_command_prints_help_and_fails(capsys):
    assert main([]) == 2
    assert "usage: nets" in capsys.readouterr().out


def test_console_entry_point_runs():
    proc = subprocess.run([sys.executable, "-m", "nets.cli", "--version"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("nets ")


# -- demo / train / predict ----------------------------------------------------------------

def _run(*argv):
    return subprocess.run([sys.executable, "-m", "nets.cli", *argv], capture_output=True,
                          text=True, timeout=300)


def _demo_rows(out):
    """``{variant: [epoch s, weight MB, grad MB, train loss, test loss, test AUC]}``."""
    return {line.split("  ")[0].strip(): [float(v) for v in line.split()[-6:]]
            for line in out.splitlines() if line.startswith(("Dense", "FullyConnectedSparse"))}


def test_demo_prints_the_three_variant_table(capsys):
    assert main(["demo", "--samples", "50", "--features", "3000", "--batch-size", "10",
                 "--epochs", "1"]) == 0
    rows = _demo_rows(capsys.readouterr().out)
    assert set(rows) == {"Dense", "FullyConnectedSparse, dense grad",
                         "FullyConnectedSparse, row_sparse grad"}
    weight_mb = 3000 * 128 * 4 / 1e6
    for cols in rows.values():
        assert cols[1] == pytest.approx(weight_mb, abs=0.01)  # weight MB
    dense_grad = rows["Dense"][2]
    sparse_grad = rows["FullyConnectedSparse, row_sparse grad"][2]
    assert dense_grad == pytest.approx(weight_mb, abs=1e-3) and sparse_grad < dense_grad / 10


def test_demo_visibly_learns_and_plots(tmp_path):
    """The default demo: labels from a sparse ground truth over power-law features, so
    every variant's loss falls well below ln 2 (what random labels give) and the row-sparse
    variant's held-out log-loss is below 0.6; ``--plot`` saves a PNG chart."""
    chart = tmp_path / "demo.png"
    run = _run("demo", "--plot", str(chart))
    assert run.returncode == 0, run.stderr
    rows = _demo_rows(run.stdout)
    assert len(rows) == 3
    for train_loss, test_loss, auc in (cols[3:] for cols in rows.values()):
        assert train_loss < 0.6 and test_loss < 0.65 and auc > 0.7
    assert rows["FullyConnectedSparse, row_sparse grad"][4] < 0.6
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def libsvm_files(tmp_path_factory):
    from nets.data import save_libsvm
    d = tmp_path_factory.mktemp("cli")
    X, y, _ = nets.test_utils.make_sparse_dataset(600, 400, 8, task="binary", seed=3)
    save_libsvm(str(d / "train.libsvm"), X[:500], y[:500])
    save_libsvm(str(d / "val.libsvm"), X[500:], y[500:])
    return d


def test_train_save_predict_round_trip(libsvm_files, capsys):
    d = libsvm_files
    model = str(d / "model.npz")
    assert main(["train", str(d / "train.libsvm"), "--val", str(d / "val.libsvm"), "--model",
                 "mlp:16", "--epochs", "3", "--batch-size", "50", "--lr", "0.05",
                 "--save", model]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("epoch")]
    assert len(lines) == 3 and all("val auc" in ln and "train accuracy" in ln for ln in lines)
    first, last = (float(ln.split("train loss ")[1].split()[0]) for ln in (lines[0], lines[-1]))
    assert last < first
    preds = str(d / "preds.txt")
    assert main(["predict", model, str(d / "val.libsvm"), "--output", preds]) == 0
    values = np.loadtxt(preds)
    assert values.shape == (100,) and np.all((values > 0) & (values < 1))


def test_train_regression_and_softmax(libsvm_files, capsys):
    d = libsvm_files
    assert main(["train", str(d / "train.libsvm"), "--loss", "l2", "--epochs", "1",
                 "--features", "400"]) == 0
    assert "train rmse" in capsys.readouterr().out
    assert main(["train", str(d / "train.libsvm"), "--loss", "softmax", "--classes", "2",
                 "--epochs", "1"]) == 0
    assert "train accuracy" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["train", "/no/such/file.libsvm"], "no such file"),
    (["train", "{train}", "--model", "mlp:x"], "--model 'mlp:x'"),
    (["train", "{train}", "--epochs", "0"], "--epochs=0: must be a finite number > 0"),
    (["train", "{train}", "--features", "5"], "out of range for n_features=5"),
    (["train", "{train}", "--loss", "softmax"], "--classes"),
    (["predict", "{train}", "{train}"], "not a readable nets .npz file"),
])
def test_errors_are_one_line_with_exit_code_2(libsvm_files, argv, message):
    argv = [a.format(train=libsvm_files / "train.libsvm") for a in argv]
    proc = _run(*argv)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert message in last and "error:" in last
