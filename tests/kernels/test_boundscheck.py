"""Kernels trust their inputs, so an out-of-bounds index would silently corrupt memory.
This re-runs every kernel test with NUMBA_BOUNDSCHECK=1, where numba raises IndexError
instead: a kernel that passes here never reads or writes outside its arrays. Parallel
kernels are compiled serially for this run (NETS_SERIAL_KERNELS=1), since numba does not
bounds-check inside prange loops."""
import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve()


def test_kernel_tests_pass_with_boundscheck():
    root = HERE.parents[2]
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NETS_SERIAL_KERNELS="1",
               # boundschecked machine code must not mix with the normal cache
               NUMBA_CACHE_DIR=str(root / ".numba_cache" / "boundscheck"))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(HERE.parent),
         f"--deselect={HERE.relative_to(root)}::test_kernel_tests_pass_with_boundscheck"],
        cwd=root, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout
