"""Test-session set-up shared by every test: a writable numba cache and seeded randomness."""
import os
import pathlib

os.environ.setdefault("NUMBA_CACHE_DIR", str(pathlib.Path(__file__).parent / ".numba_cache"))

import pytest  # noqa: E402

import nets  # noqa: E402


@pytest.fixture(autouse=True)
def _seed():
    """Every test starts from the same random state, so failures reproduce."""
    nets.random.seed(1234)
