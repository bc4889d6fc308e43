"""The notebooks in ``tutorials/``: each runs top to bottom in a fresh Jupyter kernel at its
reduced size (``NETS_TUTORIAL_SMALL=1``), and each is committed without outputs.

``NETS_TUTORIAL_SMALL=0 python -m pytest tests/tutorials/test_notebooks.py -k
test_notebook_runs --durations=0`` runs them at full size instead, and times each (the
times in ``tutorials/README.md`` come from these two commands).

The kernel is this interpreter (``sys.executable``) started from a kernel spec written for the
test, with the repository root first on ``PYTHONPATH`` (so it imports this checkout's ``nets``),
the test session's ``NUMBA_CACHE_DIR`` (compiled kernels are shared with the rest of the suite),
matplotlib's non-interactive ``Agg`` backend, and an empty temporary working directory, which
must stay empty (a reader's working directory is ``tutorials/``). A notebook fails the test on
the first cell that raises, and its ``assert``s check the facts it states."""
import json
import os
import pathlib
import sys

import nbclient
import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "tutorials").glob("*.ipynb"))
KERNEL = "nets-tutorial-test"
SMALL = os.environ.get("NETS_TUTORIAL_SMALL", "1")  # "1": the reduced size; else the full
CELL_TIMEOUT = 300 if SMALL == "1" else 3600  # seconds one cell may run before it fails


@pytest.fixture(scope="module")
def kernel_env(tmp_path_factory):
    """The kernel's environment, with ``JUPYTER_PATH`` holding a kernel spec for this
    interpreter."""
    home = tmp_path_factory.mktemp("jupyter")
    spec = home / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "nets tutorial test", "language": "python"}))
    env = dict(os.environ)
    env["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(home),
                                                        env.get("JUPYTER_PATH")]))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["NETS_TUTORIAL_SMALL"] = SMALL
    env["MPLBACKEND"] = "Agg"
    env.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".numba_cache"))
    return env


def _execute(nb, env, cwd, monkeypatch):
    """Run every cell of ``nb`` in a fresh kernel; raises ``CellExecutionError`` naming the
    first failing cell."""
    monkeypatch.setenv("JUPYTER_PATH", env["JUPYTER_PATH"])  # where the client finds the spec
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name=KERNEL,
                                     resources={"metadata": {"path": str(cwd)}})
    return client.execute(env=env)


def test_the_kernel_imports_this_checkouts_nets(kernel_env, tmp_path, monkeypatch):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import os, nets; print(nets.__file__); print(os.environ['NETS_TUTORIAL_SMALL'])")])
    out = _execute(nb, kernel_env, tmp_path, monkeypatch).cells[0].outputs
    text = "".join(o.get("text", "") for o in out).split()
    assert pathlib.Path(text[0]).resolve() == ROOT / "nets" / "__init__.py", text
    assert text[1] == SMALL


def test_every_tutorial_is_listed():
    names = {p.name for p in NOTEBOOKS}
    assert {"csr.ipynb", "row_sparse.ipynb", "gluon_sparse.ipynb", "sparse_symbols.ipynb",
            "recommender.ipynb", "ctr.ipynb", "distributed.ipynb"} <= names, names
    readme = (ROOT / "tutorials" / "README.md").read_text()
    assert all(n in readme for n in names), "tutorials/README.md must name every notebook"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, \
                f"{path.name}: cell {i} holds outputs; clear them before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, kernel_env, tmp_path, monkeypatch):
    """Runs every cell; and the notebook writes nothing into its working directory (here an
    empty folder; ``tutorials/`` when a reader runs it): its files go to a temporary
    folder."""
    nb = nbformat.read(path, as_version=4)
    _execute(nb, kernel_env, tmp_path, monkeypatch)
    ran = [c for c in nb.cells if c.cell_type == "code"]
    assert ran and all(c.execution_count is not None for c in ran)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == [], f"{path.name} wrote {left} into its working directory"
