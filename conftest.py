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


@pytest.fixture
def shared_kernels(monkeypatch):
    """Share every threaded kernel call between 3 threads in chunks of ~1/24 of its range,
    however small its work (so chunk boundaries are tested on small inputs, on any
    machine)."""
    from nets.kernels import threads
    pool, crew = threads.ThreadPoolExecutor(2), threads._Crew(2)
    monkeypatch.setattr(threads, "CORES", 3)
    monkeypatch.setattr(threads, "GRAIN", 1)
    monkeypatch.setattr(threads, "_POOL", pool)
    monkeypatch.setattr(threads, "_CREW", crew)
    yield
    pool.shutdown()
    crew.close()
