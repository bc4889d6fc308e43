"""Kernels trust their inputs, so an out-of-bounds index would silently corrupt memory.
This re-runs every kernel test with NUMBA_BOUNDSCHECK=1, where numba raises IndexError
instead: a kernel that passes here never reads or writes outside its arrays. No kernel uses
``prange`` (which numba does not bounds-check): parallel calls split a row range between
threads in ``nets.parallel``, so every kernel runs checked."""
import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve()


def test_kernel_tests_pass_with_boundscheck():
    root = HERE.parents[2]
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1",
               # boundschecked machine code must not mix with the normal cache
               NUMBA_CACHE_DIR=str(root / ".numba_cache" / "boundscheck"))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(HERE.parent),
         f"--deselect={HERE.relative_to(root)}::test_kernel_tests_pass_with_boundscheck"],
        cwd=root, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout
