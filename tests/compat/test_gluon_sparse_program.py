"""MXNet's Gluon sparse workflow (``gluon_sparse.py``, written as MXNet 1.x users write
it: ``mx.gluon``, ``mx.io``, ``mx.test_utils``, ``HybridBlock``s with ``params.get``)
runs after renaming ``mx.`` to ``nets.`` alone, learns, and its row_sparse gradient holds
only the rows a batch touches."""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from rename import rename


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    work = tmp_path_factory.mktemp("gluon_sparse")
    with open(os.path.join(HERE, "gluon_sparse.py")) as f:
        program = rename(f.read())
    assert "mxnet" not in program and "mx." not in program
    script = work / "program.py"
    script.write_text(program)
    proc = subprocess.run([sys.executable, str(script), str(work), "1000"],
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, NETS_NUM_THREADS="1"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_data_is_csr_and_far_smaller_than_dense(measured):
    assert measured["data_stype"] == "csr"
    assert measured["dense_bytes"] == 1000 * 1000 * 4
    # 8-byte indices and 4-byte values per stored value, plus 1001 row pointers
    assert measured["csr_bytes"] == measured["nnz"] * 12 + 1001 * 8


@pytest.mark.parametrize("variant", ["dense", "default", "row_sparse"])
def test_each_variant_trains(measured, variant):
    losses = measured[variant]["losses"]
    assert len(losses) == 3 and all(0 < v < 1 for v in losses)
    assert losses[-1] < losses[0]


def test_only_the_row_sparse_gradient_is_smaller_than_the_weight(measured):
    weight = 1000 * 128 * 4
    for variant in ("dense", "default"):
        assert measured[variant]["grad_stype"] == "default"
        assert measured[variant]["weight_bytes"] == measured[variant]["grad_bytes"] == weight
    rsp = measured["row_sparse"]
    assert rsp["grad_stype"] == "row_sparse"
    # the rows of the features the last batch (50 rows of ~10 values) touched, with 128
    # values and an index each: fewer than the 1000 rows of the weight
    rows = rsp["grad_bytes"] // (128 * 4 + 8)
    assert rsp["grad_bytes"] == rows * (128 * 4 + 8) and 0 < rows < 1000
