"""`import nets` must stay cheap: no numba import, no compilation (DESIGN §7)."""
import subprocess
import sys


def _run(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)


def test_import_does_not_load_numba():
    proc = _run("import sys, nets; import nets.nd; print('numba' in sys.modules)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_public_names():
    import nets
    for name in ("nd", "cpu", "gpu", "Context", "NetsError", "StorageFallbackWarning",
                 "__version__", "random", "test_utils"):
        assert hasattr(nets, name), name
    assert nets.nd.sparse.csr_matrix is not None
