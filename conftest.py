"""Test-session set-up shared by every test: a writable numba cache and seeded randomness."""
import os
import pathlib

os.environ.setdefault("NUMBA_CACHE_DIR", str(pathlib.Path(__file__).parent / ".numba_cache"))

import pytest

import nets


@pytest.fixture(autouse=True)
def _seed():
    """Every test starts from the same random state, so failures reproduce."""
    nets.random.seed(1234)


@pytest.fixture(autouse=True)
def _strict_tolerances():
    """Comparisons default to nets' strict tolerances, not MXNet's looser ones (which
    nets.test_utils keeps for programs written against MXNet's test_utils)."""
    from nets.test_utils import default_tolerances
    with default_tolerances("strict"):
        yield


@pytest.fixture
def shared_kernels(monkeypatch):
    """Split every parallel kernel call between 3 threads in chunks of ~1/24 of its range,
    however small its work (so chunk boundaries are tested on small inputs, on any
    machine)."""
    from nets import parallel
    monkeypatch.setattr(parallel, "_setting", (3, "set_num_threads"))
    monkeypatch.setattr(parallel, "GRAIN", 1)
    monkeypatch.setattr(parallel, "CHUNKS", 8)
