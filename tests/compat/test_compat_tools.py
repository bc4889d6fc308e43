"""The compat tooling: the renamer's rules and the data generator's determinism and
formats (the programs themselves are checked by test_compat_programs.py)."""
import ast
import filecmp
import os
import re
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from compat_runner import HELPERS, PROGRAMS
from make_data import SIZES, make_all
from rename import rename


@pytest.mark.parametrize("src, want", [
    ("import mxnet as mx\n", "import nets\n"),
    ("from mxnet.test_utils import *", "from nets.test_utils import *"),
    ("import mxnet\n", "import nets\n"),
    ("mx.io.LibSVMIter(x)", "nets.io.LibSVMIter(x)"),
    ("mxnet.io.NDArrayIter", "nets.io.NDArrayIter"),
    ("mx.gluon.nn.Dense(2)", "nets.gluon.nn.Dense(2)"),
    ("mx.gluon.Trainer(p)", "nets.gluon.Trainer(p)"),
    ("mx.optimizer.create('sgd')", "nets.optimizer.create('sgd')"),
    ("mx.kvstore.create('local')", "nets.kvstore.create('local')"),
    ("mx.nd.sparse.csr_matrix", "nets.nd.sparse.csr_matrix"),
    ("max_user = mxu.mx_id + max.x", "max_user = mxu.mx_id + max.x"),
])
def test_rename_rules(src, want):
    assert rename(src) == want


def test_the_renamed_module_names_are_nets_own_modules():
    import nets
    import nets.io
    import nets.optimizer
    from nets import gluon
    assert nets.io is nets.data and nets.optimizer is nets.optim
    assert gluon.nn.Dense is nets.layers.Dense and gluon.Trainer is nets.Trainer


@pytest.mark.parametrize("name", list(PROGRAMS) + [h[:-3] for h in HELPERS])
def test_renamed_programs_are_valid_python_with_no_mxnet_name_left(name):
    with open(os.path.join(HERE, name + ".py")) as f:
        text = f.read()
    assert "import mxnet as mx" in text          # written against MXNet's API
    out = rename(text)
    ast.parse(out)
    assert not re.search(r"\bmx\.|\bmxnet\b", out)
    assert "import nets" in out


def test_make_data_is_deterministic_and_seed_dependent(tmp_path, data0):
    make_all(str(tmp_path / "a"), seed=0)
    make_all(str(tmp_path / "c"), seed=6)
    names = sorted(os.listdir(data0))
    assert names == sorted(os.listdir(tmp_path / "a"))
    match, mismatch, errors = filecmp.cmpfiles(data0, tmp_path / "a", names, shallow=False)
    assert mismatch == [] and errors == []
    for name in names:
        if name != "manifest.json":
            assert not filecmp.cmp(data0 / name, tmp_path / "c" / name, shallow=False), name


@pytest.fixture(scope="module")
def data0(tmp_path_factory):
    """The data files of seed 0 (the seed the references use), written once."""
    path = tmp_path_factory.mktemp("compat_data0")
    make_all(str(path), seed=0)
    return path


def _libsvm_rows(path):
    with open(path) as f:
        for line in f:
            label, *feats = line.split()
            ids = [int(t.split(":")[0]) for t in feats]
            vals = [float(t.split(":")[1]) for t in feats]
            yield int(label), ids, vals


def test_generated_files_have_the_original_formats(data0):
    tmp_path = data0
    for name, size in (("linear", SIZES["linear"]), ("fm", SIZES["fm"])):
        rows = list(_libsvm_rows(tmp_path / (name + ".train")))
        assert len(rows) == size["train"]
        for label, ids, vals in rows:
            assert label in (0, 1)
            assert len(ids) == size["nnz"] and ids == sorted(set(ids))
            assert 1 <= ids[0] and ids[-1] <= size["num_features"]   # 1-based ids
            assert all(v > 0 for v in vals)
    with open(tmp_path / "ratings.test") as f:
        fields = [line.rstrip("\n").split("::") for line in f]
    assert len(fields) == SIZES["ratings"]["test"] and {len(x) for x in fields} == {4}
    users = np.array([int(x[0]) for x in fields])
    ratings = np.array([float(x[2]) for x in fields])
    assert 1 <= users.min() and users.max() < SIZES["ratings"]["max_user"]
    assert 1.0 <= ratings.min() and ratings.max() <= 5.0
    with open(tmp_path / "adult.test") as f:
        lines = f.read().splitlines()
    assert len(lines) == SIZES["adult"]["test"]
    assert all(len(ln.split(", ")) == 15 for ln in lines)
    assert {ln.rsplit(", ", 1)[1] for ln in lines} == {"<=50K.", ">50K."}


def _csr(rows, num_features):
    import scipy.sparse as sp
    ids = [i for _, r, _ in rows for i in r]
    vals = [v for _, _, vs in rows for v in vs]
    indptr = np.cumsum([0] + [len(r) for _, r, _ in rows])
    return sp.csr_matrix((vals, ids, indptr), shape=(len(rows), num_features + 1))


def test_linear_labels_are_learnable_from_the_features(data0):
    """Logistic regression fitted by plain gradient descent on the training file beats
    the constant predictor on the test file: the labels carry signal to learn."""
    tmp_path = data0
    nf = SIZES["linear"]["num_features"]
    train = list(_libsvm_rows(tmp_path / "linear.train"))
    test = list(_libsvm_rows(tmp_path / "linear.test"))
    x, y = _csr(train, nf), np.array([lab for lab, _, _ in train], dtype=float)
    xt, yt = _csr(test, nf), np.array([lab for lab, _, _ in test], dtype=float)
    w, b = np.zeros(nf + 1), 0.0
    for _ in range(300):
        p = 1 / (1 + np.exp(-(x @ w + b)))
        w -= 2.0 * (x.T @ (p - y) / len(y) + 1e-4 * w)
        b -= 2.0 * float(np.mean(p - y))
    pt = np.clip(1 / (1 + np.exp(-(xt @ w + b))), 1e-9, 1 - 1e-9)
    base = y.mean()
    model_nll = -np.mean(yt * np.log(pt) + (1 - yt) * np.log(1 - pt))
    const_nll = -np.mean(yt * np.log(base) + (1 - yt) * np.log(1 - base))
    assert model_nll < const_nll - 0.02


def test_mxnet_reference_matches_the_data_generator_and_programs():
    """mxnet_reference.json was recorded on the data make_data.py writes now, for every
    program, and its mean/std are those of its per-seed values (a change of sizes or
    programs needs `reference.py` rerun)."""
    import json
    with open(os.path.join(HERE, "mxnet_reference.json")) as f:
        ref = json.load(f)
    assert ref["mxnet_version"] == "1.9.1"
    assert ref["sizes"] == SIZES
    assert sorted(ref["programs"]) == sorted(PROGRAMS)
    for name, entry in ref["programs"].items():
        values = np.array(entry["values"])
        assert len(values) == len(ref["init_seeds"]) >= 3, name
        assert entry["value"] == values[0]
        assert entry["mean"] == pytest.approx(values.mean())
        assert entry["std"] == pytest.approx(values.std(ddof=1))
