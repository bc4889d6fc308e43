"""Each MXNet-style compat program, renamed to nets by ``rename.py`` (no other edit),
runs on data in its original format and reaches MXNet 1.9.1's metric on the same
data within noise.

Reference: ``mxnet_reference.json`` (``reference.py``), the metric of each program
under MXNet 1.9.1 with initialization seeds 1, 2, 3 on data seed 0. nets draws
its initial weights and shuffles from other random streams than MXNet, so the same
seed does not give the same run: the allowed difference is the spread between MXNet
runs that differ only in seed. With three seeds the sample standard deviation ``s``
is a rough estimate, so the test allows ``K_STD`` = 4 such deviations either side of
MXNet's mean (still 3 sigma if ``s`` underestimates sigma by a quarter), and never less than
``MIN_REL`` of the mean, so a program whose three MXNet runs happened to agree
closely (the inference program evaluates a checkpoint of a seeded training run)
still gets a band that one other random stream can meet.
"""
import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from compat_runner import PROGRAMS, run_program
from make_data import make_all

with open(os.path.join(HERE, "mxnet_reference.json")) as _f:
    REFERENCE = json.load(_f)

#: Smallest band, relative to MXNet's mean metric.
MIN_REL = 0.02
#: Band width in MXNet seed-to-seed standard deviations.
K_STD = 4.0


def tolerance(ref):
    """Allowed |nets - MXNet mean| for one program's reference entry."""
    return max(K_STD * ref["std"], MIN_REL * abs(ref["mean"]))


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("compat_data")
    make_all(str(path), REFERENCE["data_seed"])
    return str(path)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    # shared, so wide_deep_inference loads the checkpoint wide_deep wrote
    return str(tmp_path_factory.mktemp("compat_nets"))


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_renamed_program_matches_mxnet(name, data_dir, workdir):
    if name == "wide_deep_inference" and not os.path.exists(
            os.path.join(workdir, "checkpoint-symbol.json")):
        # the inference program needs wide_deep's checkpoint: train first
        run_program("wide_deep", data_dir, nets=True, workdir=workdir,
                    seed=REFERENCE["init_seeds"][0])
    out = run_program(name, data_dir, nets=True, workdir=workdir,
                      seed=REFERENCE["init_seeds"][0])
    assert out["rc"] == 0 and out["result"] is not None, \
        "%s stopped under nets:\n%s" % (name, out["output"][-3000:])
    ref = REFERENCE["programs"][name]
    got = out["result"]
    assert got["metric"] == ref["metric"], (got["metric"], ref["metric"])
    assert abs(got["value"] - ref["mean"]) <= tolerance(ref), \
        "%s: nets %s = %.5f, MXNet 1.9.1 %.5f +- %.5f" % (
            name, ref["metric"], got["value"], ref["mean"], tolerance(ref))
