"""Files that would exhaust memory or hang a loader: an endless or non-regular file given
where an archive is required, and an archive whose member inflates far past the model it
claims to fit. Each loader refuses them with a one-line ``NetsError`` before reading
values; the bombs run in a child process with a memory cap and a timeout
(``tests/limits.py``)."""
import json
import os
import zipfile

import numpy as np
import pytest

import nets
from nets import layers, nd
from tests.limits import run_limited

LOADERS = {
    "load_parameters": "net = nets.layers.Dense(4, in_units=3); net.initialize()\n"
                       "net.load_parameters({path!r})",
    "nd.load": "nets.nd.load({path!r})",
    "Block.read_extra": "nets.layers.Dense(4, in_units=3).read_extra({path!r})",
    "Trainer.load_states": "net = nets.layers.Dense(4, in_units=3); net.initialize()\n"
                           "t = nets.Trainer(net.collect_params(), 'sgd')\n"
                           "t.load_states({path!r})",
    "load_checkpoint": "nets.model.load_checkpoint({path!r}[:-len('-0001.params.npz')], 1)",
}


def _run(code, **kwargs):
    proc = run_limited("try:\n" + "".join(f"    {line}\n" for line in code.splitlines())
                       + "except nets.NetsError as e:\n    print('NetsError:', e)\n",
                       **kwargs)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


@pytest.mark.parametrize("loader", sorted(set(LOADERS) - {"load_checkpoint"}))
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_an_endless_device_is_refused_before_it_is_read(loader, device):
    out = _run(LOADERS[loader].format(path=device), timeout=60)
    assert out == f"NetsError: {device}: not a regular file (a character device); nets " \
                  f"reads arrays from .npz files only"


def test_a_checkpoint_that_is_a_device_is_refused(tmp_path):
    link = tmp_path / "model-0001.params.npz"  # (the name save_checkpoint gives)
    os.symlink("/dev/zero", link)
    nets.sym.var("data").save(str(tmp_path / "model-symbol.json"))
    out = _run(LOADERS["load_checkpoint"].format(path=str(link)), timeout=60)
    assert out == f"NetsError: {link}: not a regular file (a character device); nets reads " \
                  f"arrays from .npz files only"


def test_a_pipe_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = str(tmp_path / "params.fifo")
    os.mkfifo(fifo)
    out = _run(LOADERS["load_parameters"].format(path=fifo), timeout=60)
    assert out == f"NetsError: {fifo}: not a regular file (a pipe); nets reads arrays from " \
                  f".npz files only"


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(nets.NetsError, match=r"not a regular file \(a directory\)"):
        nd.load(str(tmp_path))


def test_nets_predict_refuses_an_endless_model_file(tmp_path):
    data = tmp_path / "rows.libsvm"
    data.write_text("1 0:1\n")
    proc = run_limited("import sys\nfrom nets.cli import main\n"
                       f"sys.exit(main(['predict', '/dev/zero', {str(data)!r}]))", timeout=60)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "/dev/zero: not a regular file" in proc.stderr
    assert "Traceback" not in proc.stderr


def _bomb(path, name, shape, dtype=np.float32, chunk=16 << 20, config=None):
    """A nets archive (with ``config``) declaring one array ``name`` of ``shape`` whose
    member really holds that many zero bytes, deflated (about a thousandth of their size on
    disk)."""
    dtype = np.dtype(dtype)
    header = {"format": "nets-npz-1", "config": config or {},
              "arrays": {name: {"stype": "default", "shape": list(shape),
                                "dtype": dtype.str.lstrip("<=|")}}}
    config = np.frombuffer(json.dumps(header).encode(), np.uint8)
    total = int(np.prod(shape)) * dtype.itemsize
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        with z.open("__nets_config__.npy", "w") as f:
            np.lib.format.write_array(f, config)
        with z.open(name + ".npy", "w", force_zip64=True) as f:
            np.lib.format.write_array_header_1_0(
                f, {"descr": dtype.str, "fortran_order": False, "shape": tuple(shape)})
            zeros = bytes(chunk)
            for start in range(0, total, chunk):
                f.write(zeros[:min(chunk, total - start)])
    return os.path.getsize(path), total


def test_an_inflation_bomb_is_refused_by_the_models_shapes_before_inflating(tmp_path):
    net = layers.Dense(4, in_units=3)
    net.initialize()
    good = tmp_path / "good.params"
    net.save_parameters(str(good))
    name = "weight" if "weight" in nd.load(str(good)) else sorted(nd.load(str(good)))[0]
    expected = tuple(nd.load(str(good))[name].shape)
    bomb = str(tmp_path / "bomb.params")
    stored, inflated = _bomb(bomb, name, (1 << 14, 1 << 14))  # 1 GiB of float32 zeros
    assert inflated > 200 * stored
    out = _run("net = nets.layers.Dense(4, in_units=3); net.initialize()\n"
               f"net.load_parameters({bomb!r}, allow_missing=True)", headroom=256 << 20,
               timeout=120)
    # the model's shape is compared before any value is inflated: with 256 MiB to spare,
    # inflating the GiB first would end in "not enough memory" instead
    assert out.startswith(f"NetsError: {bomb}: parameter {name!r}: the stored value has shape "
                          f"(16384, 16384)"), out
    assert str(expected).replace(" ", "") in out.replace(" ", "")


def test_load_arrays_check_sees_every_declared_array_before_any_value(tmp_path):
    path = str(tmp_path / "a.npz")
    nd.save(path, {"w": nd.ones((2, 3)), "r": nd.ones((5, 2)).tostype("row_sparse")})
    from nets.serialization import load_arrays
    seen = []

    def check(config, declared):
        seen.append({k: (d.stype, d.shape, str(d.dtype)) for k, d in declared.items()})
        raise nets.NetsError("refused")

    with pytest.raises(nets.NetsError, match="refused"):
        load_arrays(path, check=check)
    assert seen == [{"a0": ("default", (2, 3), "float32"),
                     "a1": ("row_sparse", (5, 2), "float32")}]


@pytest.mark.parametrize("saver", ["save_parameters", "nd.save", "save_states"])
def test_saving_to_a_directory_is_one_line_naming_it(tmp_path, saver):
    net = layers.Dense(2, in_units=2)
    net.initialize()
    target = tmp_path / "out"
    target.mkdir()
    with pytest.raises(nets.NetsError) as info:
        if saver == "save_parameters":
            net.save_parameters(str(target))
        elif saver == "nd.save":
            nd.save(str(target), [nd.ones(2)])
        else:
            nets.Trainer(net.collect_params(), "sgd").save_states(str(target))
    assert str(info.value) == f"{target}: is a directory; give a file name to write"
    assert os.listdir(tmp_path) == ["out"] and os.listdir(target) == []


def test_a_planted_libsvm_cache_that_inflates_past_its_source_is_refused(tmp_path):
    """A cache whose config names the source file exactly (its identity and hash) but whose
    array inflates to 1 GiB is refused from the zip directory before anything inflates,
    and the file is parsed again: the child's peak memory stays far below the bomb's."""
    src = tmp_path / "small.libsvm"
    src.write_text("1 0:1 3:2\n0 1:1\n")
    nets.data.load_libsvm(str(src), cache=True)
    cache = str(src) + ".nets.npz"
    from nets.serialization import load_arrays
    _, config = load_arrays(cache)  # the real key, so only the size bound can refuse it
    os.remove(cache)
    _bomb(cache, "X", (1 << 28,), config=config)
    out = _run("import resource\n"
               "def peak():\n"
               "    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10\n"
               f"nets.data.load_libsvm({str(src)!r})  # (kernels compiled, parse buffers)\n"
               "before = peak()\n"
               f"X, y = nets.data.load_libsvm({str(src)!r}, cache=True)\n"
               "print('loaded', X.shape, y.asnumpy().tolist(), peak() - before < (256 << 20))",
               headroom=3 << 30, timeout=120)
    assert out == "loaded (2, 4) [1.0, 0.0] True", out
