"""`import nets` must stay cheap: no numba import, no compilation (docs/architecture.md,
"What `import nets` loads"; numba loads at the first kernel call)."""
import subprocess
import sys


def _run(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)


def test_import_does_not_load_numba():
    proc = _run("import sys, nets; import nets.nd; print('numba' in sys.modules)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_subpackages_load_on_first_use_under_every_name():
    """``import nets`` leaves the symbols, modules, stores, downloads and ``Trainer`` out;
    each loads when named, as an attribute, by ``import`` or ``from``, under MXNet's alias
    too, and an alias is the module itself."""
    proc = _run("""
import sys, nets
later = ["nets.symbol", "nets.module", "nets.kv", "nets.trainer", "nets.data.datasets"]
print([m for m in later if m in sys.modules])
import nets.sym
from nets.kvstore import create
from nets.data import DataLoader, datasets
print(nets.sym is nets.symbol is sys.modules["nets.sym"], create is nets.kv.create,
      nets.mod.Module is nets.module.Module, nets.Trainer.__module__,
      DataLoader.__module__, datasets.__name__, "sym" in dir(nets), "Trainer" in dir(nets))
try:
    nets.no_such_name
except AttributeError as e:
    print(e)
""")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "[]", "True True True nets.trainer nets.data.dataloader nets.data.datasets True True",
        "module 'nets' has no attribute 'no_such_name'"]


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
        assert getattr(nets.nd, name) is getattr(nets.arrays, name), name
    assert nets.nd.sparse.csr_matrix is nets.arrays.sparse.csr_matrix
    assert nets.nd.random.uniform is nets.arrays.random.uniform
    assert set(nets.nd.__all__) >= set(nets.arrays.__all__) | set(nets.ops.__all__)


def test_ndarray_is_mxnets_long_name_of_nd():
    """MXNet programs write both ``mx.nd.X`` and ``mx.ndarray.X``: after renaming, both reach
    the face (operators included), also through ``import`` statements."""
    import nets
    import nets.ndarray.sparse
    from nets.ndarray import sparse
    assert nets.ndarray is nets.nd and sparse is nets.nd.sparse
    assert nets.ndarray.sparse is nets.nd.sparse and nets.ndarray.random is nets.nd.random
    assert nets.ndarray.dot is nets.nd.dot and nets.ndarray.sparse.retain is nets.nd.sparse.retain
    x = nets.ndarray.sparse.csr_matrix(([1.0], [2], [0, 1]), shape=(1, 3))
    assert nets.ndarray.dot(x, nets.ndarray.ones((3, 2))).shape == (1, 2)


def test_the_array_floor_has_no_operators():
    """``nets.arrays`` holds arrays only; the operators are installed from ``nets.ops``."""
    import nets
    assert not hasattr(nets.arrays, "dot") and not hasattr(nets.arrays.sparse, "retain")


def test_synthetic_data_is_public_in_data():
    import nets
    assert nets.data.make_sparse_dataset is nets.data.synthetic.make_sparse_dataset
    assert nets.test_utils.make_sparse_dataset is nets.data.make_sparse_dataset


def test_binding_an_executor_loads_the_kernel_runtime_before_the_first_forward():
    # The compat program wide_deep_inference times its passes from after `bind`, as
    # MXNet's engine is loaded at import: numba must be loaded by `bind`, not by the
    # first kernel call inside the timed loop.
    proc = _run(
        "import sys, nets\n"
        "x = nets.sym.Variable('x', stype='csr'); w = nets.sym.Variable('w')\n"
        "before = 'numba' in sys.modules\n"
        "exe = nets.sym.sparse.dot(x, w).simple_bind(nets.cpu(), x=(4, 3), w=(3, 2))\n"
        "print(before, 'numba' in sys.modules)\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True"]
