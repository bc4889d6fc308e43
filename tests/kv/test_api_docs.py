"""``help(nets.kv.create)`` and ``help`` of the store's public methods explain each argument:
every argument is annotated and has an entry (``name : type``) in the numpy ``Parameters``
section of the docstring, and the return is annotated. The docstrings live on
``KVStore``; a backend's override without a docstring of its own shows them (``help``
reads the docstring through ``inspect.getdoc``, which looks up the class's bases)."""
import inspect
import pydoc
import re

import pytest

import nets
from nets.kv import KVStore

METHODS = ["init", "broadcast", "push", "pull", "pushpull", "row_sparse_pull", "set_optimizer",
           "set_gradient_compression", "save_optimizer_states", "load_optimizer_states",
           "barrier", "is_capable"]
TARGETS = [("nets.kv.create", nets.kv.create)] + [(f"KVStore.{m}", getattr(KVStore, m))
                                                   for m in METHODS]


def _documented(doc):
    """The argument names of the docstring's ``Parameters`` section."""
    m = re.search(r"^\s*Parameters\n\s*-{10,}\n(.*?)(?:^\s*\n\s*\w+\n\s*-{3,}\n|\Z)", doc,
                  re.S | re.M)
    if m is None:
        return set()
    return set(re.findall(r"^\s*(\w+) : ", m.group(1), re.M))


@pytest.mark.parametrize("name,func", TARGETS, ids=[n for n, _ in TARGETS])
def test_every_argument_is_annotated_and_documented(name, func):
    sig = inspect.signature(func)
    args = [p for p in sig.parameters.values() if p.name != "self"]
    assert [p.name for p in args if p.annotation is inspect.Parameter.empty] == [], name
    assert sig.return_annotation is not inspect.Signature.empty, name
    missing = {p.name for p in args} - _documented(inspect.getdoc(func) or "")
    assert not missing, f"{name}: no Parameters entry for {sorted(missing)}"


def test_the_parameters_parser_reads_only_that_section():
    doc = ("Summary.\n\nParameters\n----------\nkey : int\n    A key.\nvalue : NDArray\n"
           "    A value.\n\nRaises\n------\nother : x\n")
    assert _documented(doc) == {"key", "value"}
    assert _documented("Summary without sections.\n\nkey : int\n") == set()


def test_help_of_create_and_of_a_local_stores_methods_explains_the_arguments():
    text = pydoc.render_doc(nets.kv.create, renderer=pydoc.plaintext)
    for phrase in ("name : str", "'dist_sync'", "python -m nets.kv.launch", "Raises"):
        assert phrase in text, phrase
    kv = nets.kv.create("local")
    # the local store's own set_optimizer has no docstring: help shows KVStore's
    text = pydoc.render_doc(kv.set_optimizer, renderer=pydoc.plaintext)
    assert "optimizer : nets.optim.Optimizer" in text, text
    text = pydoc.render_doc(kv.row_sparse_pull, renderer=pydoc.plaintext)
    assert "row_ids : NDArray" in text, text
