"""The `nets` command fails cleanly (issue 24, items 8 and 10): bad numbers, unwritable
outputs, oversized batches, files that are not models and Ctrl-C each end in one line on
stderr and a documented exit code - never a traceback, never after the work was done -
while a bug in nets keeps its traceback."""
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import nets
from nets import cli
from nets.cli import main
from nets.serialization import load_arrays


def _run(*argv, timeout=300):
    """``nets argv...`` in a subprocess, without progress bars (on a pipe, tqdm draws and
    clears them with newlines: they are not the command's messages)."""
    return subprocess.run([sys.executable, "-m", "nets.cli", *map(str, argv)],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "TQDM_DISABLE": "1"})


def _shown(text):
    """The non-blank lines a terminal shows for ``text``: a progress bar redraws its line
    after carriage returns and blanks it when it closes."""
    lines = (line.rsplit("\r", 1)[-1] for line in text.split("\n"))
    return [line for line in lines if line.strip()]


def _one_line_error(proc, code):
    """The single line ``proc`` showed on stderr, checked: exit code ``code``, no
    traceback."""
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = _shown(proc.stderr)
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from nets.data import save_libsvm
    d = tmp_path_factory.mktemp("cli_boundary")
    X, y, _ = nets.test_utils.make_sparse_dataset(300, 50, 5, task="binary", seed=7)
    save_libsvm(str(d / "train.libsvm"), X, y)
    model = d / "model.npz"
    assert main(["train", str(d / "train.libsvm"), "--epochs", "1", "--save",
                 str(model)]) == 0
    (d / "text.txt").write_text("this is a text file, not a model\n" * 4)
    (d / "random.bin").write_bytes(np.random.default_rng(0).bytes(300))
    return d


# -- item 8: numbers ---------------------------------------------------------------------

@pytest.mark.parametrize("argv, message", [
    (["train", "{train}", "--lr", "nan"], "--lr=nan: must be a finite number > 0"),
    (["train", "{train}", "--lr", "1e400"], "--lr=inf: must be a finite number > 0"),
    (["train", "{train}", "--lr", "-0.1"], "--lr=-0.1: must be a finite number > 0"),
    (["train", "{train}", "--wd", "-1"], "--wd=-1.0: must be a finite number >= 0"),
    (["train", "{train}", "--wd", "nan"], "--wd=nan: must be a finite number >= 0"),
    (["train", "{train}", "--wd", "inf"], "--wd=inf: must be a finite number >= 0"),
    (["train", "{train}", "--epochs", "0"], "--epochs=0: must be a finite number > 0"),
    (["train", "{train}", "--batch-size", "-5"], "--batch-size=-5: must be a finite number > 0"),
    (["train", "{train}", "--features", "0"], "--features=0: must be a finite number > 0"),
    (["train", "{train}", "--classes", "-2"], "--classes=-2: must be a finite number > 0"),
    (["predict", "{model}", "{train}", "--batch-size", "0"],
     "--batch-size=0: must be a finite number > 0"),
    (["demo", "--samples", "0"], "--samples=0: must be a finite number > 0"),
])
def test_bad_numbers_are_one_line_errors_before_any_data_is_read(files, argv, message):
    argv = [a.format(train=files / "train.libsvm", model=files / "model.npz") for a in argv]
    proc = _run(*argv)
    # (one line: not even `train`'s "--features not given: scanned ..." note)
    assert _one_line_error(proc, 2) == f"nets {argv[0]}: error: {message}"
    assert proc.stdout == ""


# -- item 10: outputs checked before the work ------------------------------------------------

@pytest.mark.parametrize("where, message", [
    ("{d}/no/such/folder/model.npz", "no such directory"),
    ("{d}", "is a directory"),
    ("{d}/train.libsvm/model.npz", "no such directory"),  # (under a regular file)
])
def test_an_unwritable_save_path_is_refused_before_training(files, where, message):
    path = where.format(d=files)
    proc = _run("train", files / "train.libsvm", "--features", 50, "--save", path)
    line = _one_line_error(proc, 2)
    assert line.startswith(f"nets train: error: --save {path}: ") and message in line
    assert proc.stdout == ""  # no epoch was trained


def test_an_unwritable_output_path_is_refused_before_predicting(files):
    path = files / "missing" / "preds.txt"
    proc = _run("predict", files / "model.npz", files / "train.libsvm", "--output", path)
    assert "--output" in _one_line_error(proc, 2) and not path.parent.exists()


def test_predict_output_is_written_atomically(files, monkeypatch):
    """A failure while predicting leaves the previous output file as it was, and no
    temporary file beside it; a complete run replaces it."""
    out = files / "preds_atomic.txt"
    out.write_text("previous\n")

    def failing(cfg, raw):
        raise MemoryError("simulated")
    monkeypatch.setattr(cli, "_to_output", failing)
    assert main(["predict", str(files / "model.npz"), str(files / "train.libsvm"),
                 "--output", str(out), "--batch-size", "7"]) == 1
    assert out.read_text() == "previous\n"
    assert [p.name for p in files.iterdir() if p.name.startswith(out.name)] == [out.name]
    monkeypatch.undo()
    assert main(["predict", str(files / "model.npz"), str(files / "train.libsvm"),
                 "--output", str(out)]) == 0
    values = np.loadtxt(out)
    assert values.shape == (300,) and np.all((values > 0) & (values < 1))


# -- item 10: oversized batches ----------------------------------------------------------------

@pytest.mark.parametrize("read", ["memory", "stream"])
def test_a_model_too_large_for_memory_is_refused_before_it_is_allocated(files, read):
    """A model of 10**12 features cannot be allocated: its estimate is refused in one line
    naming the feature count, where it comes from, the bytes and the remedies (a batch
    larger than the file is the whole file, read either way)."""
    proc = _run("train", files / "train.libsvm", "--features", 10**12, "--read", read,
                "--batch-size", 10**12)
    line = _one_line_error(proc, 2)
    assert line.startswith("nets train: error: the model needs about ")
    assert "for 1000000000000 features (--features 1000000000000)" in line
    assert "is available. Give --features N" in line and "distributed store" in line


def test_a_batch_larger_than_the_dataset_is_the_whole_dataset(files, capsys):
    """The iterator pads its last batch with empty rows and zero labels; those must not be
    trained on (nor scale the gradient): one batch of 4000 over 300 rows trains exactly as
    one batch of the 300 rows."""
    models = []
    for batch_size in (300, 4000):
        path = files / f"whole_{batch_size}.npz"
        nets.random.seed(11)
        assert main(["train", str(files / "train.libsvm"), "--features", "50", "--epochs",
                     "3", "--lr", "0.5", "--batch-size", str(batch_size), "--save",
                     str(path)]) == 0
        models.append(load_arrays(str(path))[0])
    losses = [ln.split("train loss ")[1].split()[0] for ln in capsys.readouterr().out.splitlines()
              if ln.startswith("epoch")]
    assert losses[:3] == losses[3:]
    assert models[0].keys() == models[1].keys()
    for name in models[0]:
        np.testing.assert_allclose(models[1][name].asnumpy(), models[0][name].asnumpy(),
                                   rtol=1e-6, atol=1e-7)


# -- item 10: files that are not models ------------------------------------------------------

@pytest.mark.parametrize("name", ["text.txt", "random.bin"])
def test_a_file_that_is_not_a_model_is_a_one_line_error_never_suggesting_pickle(files, name):
    proc = _run("predict", files / name, files / "train.libsvm")
    line = _one_line_error(proc, 2)
    assert line.startswith("nets predict: error: ") and name in line
    assert "allow_pickle" not in proc.stderr and "unsafe" not in proc.stderr.lower()


# -- item 10: Ctrl-C, and bugs keep their traceback ------------------------------------------

def test_ctrl_c_while_training_prints_one_line_and_exits_130(files):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "nets.cli", "train",
                             str(files / "train.libsvm"), "--features", "50", "--epochs",
                             "100000", "--batch-size", "16"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            # (SIGINT's default action, also under a parent ignoring it)
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    stderr = []
    reader = threading.Thread(target=lambda: stderr.append(proc.stderr.read()))
    reader.start()
    try:
        line = proc.stdout.readline()  # the first epoch's summary: it is training
        assert line.startswith(b"epoch 1 "), line
        time.sleep(0.2)  # (well inside a later epoch)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=120) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        reader.join()
    err = stderr[0].decode()
    assert "Traceback" not in err
    # (on a pipe, a cleared bar may leave its blanks on the line)
    assert _shown(err)[-1].strip() == "nets: interrupted"


def test_an_interruption_anywhere_in_a_command_is_one_line(monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt
    monkeypatch.setattr(cli, "_info", interrupted)
    try:
        code = main(["info"])
    except KeyboardInterrupt:  # (not let through: it would stop the test session)
        pytest.fail("main() let KeyboardInterrupt through")
    assert code == 130
    assert capsys.readouterr().err == "nets: interrupted\n"


def _kernel_interrupted():
    """What a training step raises when Ctrl-C lands during a numba kernel call: numba's
    dispatcher turns the KeyboardInterrupt its result boxing met into a SystemError."""
    from nets.kernels.embedding import unique_slots
    ids = np.arange(2000, dtype=np.int64) % 50
    unique_slots(ids, 50)
    def ctrl_c(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, ctrl_c)
    try:
        for attempt in range(2000):
            try:
                signal.setitimer(signal.ITIMER_REAL, 1e-4 + (attempt % 37) * 1e-5)
                while True:
                    unique_slots(ids, 50)
            except SystemError as e:
                return e
            except KeyboardInterrupt:
                continue  # (landed between two calls)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    pytest.fail("no interruption inside a kernel call became a SystemError in 2000 attempts: "
                "if numba now lets KeyboardInterrupt through, cli._interrupted's SystemError "
                "case can go")


def test_an_interruption_inside_a_kernel_call_is_one_line(monkeypatch, capsys):
    error = _kernel_interrupted()

    def interrupted(args):
        raise error
    monkeypatch.setattr(cli, "_info", interrupted)
    assert main(["info"]) == 130
    assert capsys.readouterr().err == "nets: interrupted\n"

    def broken(args):  # a SystemError of another cause stays an error, traceback and all
        raise SystemError("something else")
    monkeypatch.setattr(cli, "_info", broken)
    with pytest.raises(SystemError, match="something else"):
        main(["info"])


def test_running_out_of_memory_names_the_sizes_to_reduce(monkeypatch, capsys):
    def exhausted(args):
        raise MemoryError
    monkeypatch.setattr(cli, "_demo", exhausted)
    assert main(["demo", "--samples", "10", "--features", "100"]) == 1
    assert capsys.readouterr().err == ("nets demo: error: out of memory (MemoryError); reduce "
                                       "--batch-size 100, --samples 10, --features 100\n")


def test_a_bug_keeps_its_traceback(monkeypatch):
    def buggy(args):
        raise ZeroDivisionError("a bug in nets")
    monkeypatch.setattr(cli, "_info", buggy)
    with pytest.raises(ZeroDivisionError, match="a bug in nets"):
        main(["info"])
