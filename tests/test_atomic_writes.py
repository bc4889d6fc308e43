"""Saving never destroys the previous file: ``Block.save_parameters``,
``Trainer.save_states``, ``nets train --save``, ``save_libsvm`` and the ``load_libsvm``
cache write a temporary file beside the target and rename it over the target at the end
(``nets.serialization.write_atomically``).

Each writer is tested by a subprocess that saves a large object over a good file and is
killed with SIGKILL mid-save (once its temporary file appears, or once the target changes:
a writer that opened the target itself truncated it), and by a subprocess whose writes fail
part-way (``RLIMIT_FSIZE``: "file too large", as a full disk fails them). The target must
then hold the good file byte for byte; a completed save replaces it.
"""
import glob
import gzip
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from nets import data, layers
from nets.base import NetsError
from nets.cli import main
from nets.serialization import load_arrays, write_atomically

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# child-program pieces: `make(n)` builds the object of size n and `save(target, obj)` saves
# it; the good file is the same code run here with a small n
NET = """
import numpy as np, nets
from nets import autograd, layers
def make(n):
    net = layers.Dense(1, in_units=n, use_bias=False)
    net.initialize(nets.init.Constant(float(n % 7)))
    return net
def save(target, net):
    net.save_parameters(target)
"""
TRAINER = """
import numpy as np, nets
from nets import autograd, layers
def make(n):
    net = layers.Dense(1, in_units=n, use_bias=False)
    net.initialize(nets.init.Zero())
    trainer = nets.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5,
                                                         "momentum": 0.9})
    x = nets.nd.sparse.csr_matrix((np.ones(1, np.float32), np.array([n - 1]),
                                   np.array([0, 1])), shape=(1, n))
    with autograd.record():
        loss = net(x).sum()
    loss.backward()
    trainer.step(1)
    return trainer
def save(target, trainer):
    trainer.save_states(target)
"""
LIBSVM = """
import numpy as np, nets
from nets import data
def make(n):
    per_row = 50
    rows = max(1, n // per_row)
    indices = np.tile(np.arange(0, 10 * per_row, 10), rows)
    X = nets.nd.sparse.csr_matrix((np.full(rows * per_row, 1.5, np.float32), indices,
                                   np.arange(0, rows * per_row + 1, per_row)),
                                  shape=(rows, 10 * per_row))
    return X, nets.nd.array(np.arange(rows) % 3)
def save(target, Xy):
    data.save_libsvm(target, *Xy)
"""
RUN = """
import sys
target, n, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
obj = make(n)
save(target + '.warm', make(8))  # kernels compiled (and cached) before any limit
if limit:
    import resource, signal
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    try:
        save(target, obj)
    except nets.NetsError as e:
        print('write failed:', e)
        sys.exit(3)
    sys.exit(0)
print('saving', flush=True)
save(target, obj)
"""
WRITERS = {"save_parameters": NET, "save_states": TRAINER, "save_libsvm": LIBSVM}
BIG = {"save_parameters": 48 << 20, "save_states": 16 << 20, "save_libsvm": 4 << 20}


def _good_file(kind, target, n=40):
    """Save the small object of ``kind`` here (the code the child runs)."""
    scope = {}
    exec(WRITERS[kind], scope)
    scope["save"](target, scope["make"](n))
    with open(target, "rb") as f:
        return f.read()


def _child(argv, **kw):
    return subprocess.Popen([sys.executable, "-c"] + argv, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, **kw)


def kill_mid_save(proc, target, timeout=240):
    """SIGKILL ``proc`` as soon as a temporary file appears beside ``target`` or
    ``target`` changes; asserts that it was still running then."""
    folder, before = os.path.dirname(target), os.stat(target)
    deadline = time.monotonic() + timeout
    while True:
        st = os.stat(target) if os.path.exists(target) else None
        if glob.glob(os.path.join(folder, glob.escape("." + os.path.basename(target))
                                  + ".[0-9]*.tmp")) or st is None or (
                st.st_size, st.st_mtime_ns, st.st_ino) != (before.st_size, before.st_mtime_ns,
                                                           before.st_ino):
            break
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the save ended before it was caught mid-way: rc {proc.returncode}"
                        f"\n{out.decode()}\n{err.decode()}")
        assert time.monotonic() < deadline, "the save did not start"
        time.sleep(0.0005)
    proc.kill()
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL


def assert_only_target(folder, target, allow_stale_tmp):
    """The folder holds ``target`` (and, after a SIGKILL, maybe the killed writer's stale
    temporary file, hidden: ``.<name>.<pid>.<hex>.tmp``; nothing could remove it)."""
    left = sorted(f for f in os.listdir(folder) if not f.endswith(".warm"))
    tmps = [f for f in left if f.endswith(".tmp")]
    assert os.path.basename(target) in left
    assert not tmps or (allow_stale_tmp and all(
        re.fullmatch(re.escape("." + os.path.basename(target)) + r"\.\d+\.[0-9a-f]{8}\.tmp", f)
        for f in tmps)), left


@pytest.mark.parametrize("kind", sorted(WRITERS))
def test_killed_mid_save_leaves_the_previous_file(tmp_path, kind):
    target = str(tmp_path / f"{kind}.out")
    good = _good_file(kind, target)
    proc = _child([WRITERS[kind] + RUN, target, str(BIG[kind]), "0"])
    kill_mid_save(proc, target)
    with open(target, "rb") as f:
        assert f.read() == good
    assert_only_target(str(tmp_path), target, allow_stale_tmp=True)
    _check_loads(kind, target, 40)
    _good_file(kind, target, n=50)  # a completed save replaces it
    _check_loads(kind, target, 50)


def _check_loads(kind, target, n):
    """``target`` reads back as the small object of size ``n``."""
    if kind == "save_parameters":
        net = layers.Dense(1, in_units=n, use_bias=False)
        net.load_parameters(target)
        np.testing.assert_array_equal(net.weight.data().asnumpy(), np.full((1, n), n % 7))
    elif kind == "save_states":
        arrays, _ = load_arrays(target)
        (state,) = [a for a in arrays.values() if a.size == n]
        expected = np.zeros(n)  # one momentum step from zero: -lr * grad, grad 1 at n - 1
        expected[n - 1] = -0.5
        np.testing.assert_allclose(np.ravel(state.asnumpy()), expected)
    else:
        X, y = data.load_libsvm(target)
        assert X.shape == (n // 50 or 1, 491) and np.all(X.asnumpy()[:, ::10] == 1.5)


@pytest.mark.parametrize("kind", sorted(WRITERS))
def test_a_write_failing_part_way_leaves_the_previous_file(tmp_path, kind):
    """A write that fails mid-way (here: past RLIMIT_FSIZE, as on a full disk) raises and
    leaves the good file and no temporary file."""
    target = str(tmp_path / f"{kind}.out")
    good = _good_file(kind, target)
    proc = _child([WRITERS[kind] + RUN, target, str(1 << 20), str(256 << 10)])
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 3, out.decode() + err.decode()
    # a one-line NetsError naming the file and the system's reason, not a raw OSError
    assert f"write failed: {target}: cannot write (File too large)" in out.decode()
    with open(target, "rb") as f:
        assert f.read() == good
    assert_only_target(str(tmp_path), target, allow_stale_tmp=False)


def test_write_atomically_on_an_exception(tmp_path):
    target = tmp_path / "file.bin"
    target.write_bytes(b"good")

    def fails(f):
        f.write(b"partial")
        raise ValueError("not serialisable")

    with pytest.raises(ValueError, match="not serialisable"):
        write_atomically(str(target), fails)
    assert target.read_bytes() == b"good" and os.listdir(tmp_path) == ["file.bin"]
    write_atomically(str(target), lambda f: f.write(b"new"))
    assert target.read_bytes() == b"new" and os.listdir(tmp_path) == ["file.bin"]
    with pytest.raises(NetsError, match="missing.*cannot write"):
        write_atomically(str(tmp_path / "missing" / "file.bin"), lambda f: None)


def test_save_parameters_with_a_bad_extra_keeps_the_previous_file(tmp_path):
    target = str(tmp_path / "net.npz")
    good = _good_file("save_parameters", target)
    net = layers.Dense(1, in_units=3)
    net.initialize()
    with pytest.raises(TypeError):
        net.save_parameters(target, extra={"x": object()})  # not JSON-able
    with open(target, "rb") as f:
        assert f.read() == good
    assert os.listdir(tmp_path) == ["net.npz"]


def test_cli_train_save_killed_mid_save(tmp_path, capsys):
    train = str(tmp_path / "train.svm")
    with open(train, "w") as f:
        f.write("1 0:1 3:1\n0 1:1 2:1\n1 0:1\n0 2:1\n")
    model = str(tmp_path / "model.npz")
    argv = ["train", train, "--epochs", "1", "--batch-size", "2", "--optimizer", "sgd",
            "--save", model]
    assert main(argv + ["--features", "5"]) == 0
    with open(model, "rb") as f:
        good = f.read()
    proc = _child(["import sys; from nets.cli import main; sys.exit(main())"] + argv
                  + ["--features", str(24 << 20)])
    kill_mid_save(proc, model)
    with open(model, "rb") as f:
        assert f.read() == good
    assert layers.Block.read_extra(model)["nets_cli_model"]["features"] == 5
    assert main(argv + ["--features", "6"]) == 0  # a completed save replaces it
    assert layers.Block.read_extra(model)["nets_cli_model"]["features"] == 6
    capsys.readouterr()


def test_libsvm_cache_killed_mid_write(tmp_path):
    """The cache of a large file is being written when the process is killed: the previous
    cache stays whole (and is not used for the new file); a completed load replaces it."""
    src = str(tmp_path / "data.svm.gz")
    cache = src + ".nets.npz"
    with open(src, "wb") as f:
        f.write(gzip.compress(b"1 0:2 4:3\n0 1:1\n"))
    data.load_libsvm(src, cache=True)
    with open(cache, "rb") as f:
        good = f.read()
    line = b"1 " + b" ".join(b"%d:1" % k for k in range(100)) + b"\n"
    member = gzip.compress(line * 2000)
    with open(src, "wb") as f:  # 60,000 lines of 100 values, as concatenated gzip members
        f.write(member * 30)
    proc = _child(["import sys; from nets import data; "
                   "data.load_libsvm(sys.argv[1], cache=True)", src])
    kill_mid_save(proc, cache)
    with open(cache, "rb") as f:
        assert f.read() == good
    assert_only_target(str(tmp_path), cache, allow_stale_tmp=True)
    with open(src, "wb") as f:
        f.write(gzip.compress(b"0 2:5\n"))
    X, y = data.load_libsvm(src, cache=True)
    np.testing.assert_array_equal(X.asnumpy(), [[0, 5]])
    arrays, _ = load_arrays(cache)
    np.testing.assert_array_equal(arrays["X"].asnumpy(), [[0, 5]])


def test_libsvm_cache_sees_a_rewrite_with_the_same_size_and_mtime(tmp_path):
    """``cp -p``, ``rsync -t`` and ``tar`` restore a file's mtime: a rewrite of the same
    size used to return the stale cached arrays."""
    path = str(tmp_path / "data.svm")
    with open(path, "w") as f:
        f.write("1 0:1.5 2:2\n0 1:3\n")
    X, _ = data.load_libsvm(path, cache=True)
    np.testing.assert_array_equal(X.asnumpy(), [[1.5, 0, 2], [0, 3, 0]])
    st = os.stat(path)
    with open(path, "w") as f:
        f.write("0 0:7.5 2:2\n1 1:9\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_size == st.st_size and os.stat(path).st_mtime_ns == st.st_mtime_ns
    X, y = data.load_libsvm(path, cache=True)
    np.testing.assert_array_equal(X.asnumpy(), [[7.5, 0, 2], [0, 9, 0]])
    np.testing.assert_array_equal(y.asnumpy(), [0, 1])
