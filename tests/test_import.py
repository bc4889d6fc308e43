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


def test_nd_is_a_face_over_the_array_floor_and_the_operators():
    import nets
    import nets.nd
    import nets.nd.random
    import nets.nd.sparse
    from nets.nd import sparse
    assert sparse is nets.nd.sparse and nets.nd.random.__name__ == "nets.nd.random"
    for name in nets.ops.__all__:  # every operator, the same object in both namespaces
        assert getattr(nets.nd, name) is getattr(nets.ops, name), name
        assert getattr(nets.nd.sparse, name) is getattr(nets.ops, name), name
    for name in ("NDArray", "CSRNDArray", "RowSparseNDArray", "array", "zeros", "arange"):
        assert getattr(nets.nd, name) is getattr(nets.ndarray, name), name
    assert nets.nd.sparse.zeros is nets.ndarray.sparse.zeros  # the stype-taking constructor
    assert nets.nd.sparse.csr_matrix is nets.ndarray.sparse.csr_matrix
    assert nets.nd.random.uniform is nets.ndarray.random.uniform
    assert set(nets.nd.__all__) >= set(nets.ndarray.__all__) | set(nets.ops.__all__)


def test_ndarray_is_the_array_floor_without_operators():
    """MXNet's ``mx.ndarray.dot`` is ``nets.nd.dot``; ``nets.ndarray`` holds arrays only."""
    import nets
    assert not hasattr(nets.ndarray, "dot") and not hasattr(nets.ndarray.sparse, "retain")
    assert nets.ndarray.sparse.csr_matrix(([1.0], [2], [0, 1]), shape=(1, 3)).stype == "csr"


def test_synthetic_data_is_public_in_data():
    import nets
    assert nets.data.make_sparse_dataset is nets.data.synthetic.make_sparse_dataset
    assert nets.test_utils.make_sparse_dataset is nets.data.make_sparse_dataset
