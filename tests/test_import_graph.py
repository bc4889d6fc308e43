"""The import graph of ``nets``, read from the source with ``ast`` (nothing is imported).

Four rules (docs/architecture.md, "The floors"):

- no import cycles between the modules of the package;
- every import points down the floors of ``FLOORS`` or stays on its own floor; a module's
  floor is that of the longest entry naming it or a package holding it, and every module
  must have one (a new top-level module or package is placed here and in the docs);
- no module imports a private name (``_name``, dunders aside) or a private module from
  another package (``from ..ops.nn import _x`` is one);
- no module reads, writes or deletes another package's private attribute: ``obj._name``, or
  ``getattr(obj, "_name")`` and its kin, where ``_name`` is a private name of nets that
  the module's own package does not define (``private_accesses`` says what counts).

An import anywhere in a file counts, inside a function too: a lazy import is still an
arrow. Arrows are resolved as ``../shared/tools/importgraph.py`` resolves them (a
``from M import n`` is an arrow to ``M`` and, when ``M.n`` is a module, to ``M.n``;
imports of a module's own ancestor packages are not arrows), plus one: a module below the
top floor that imports the root package ``nets`` itself (``import nets``, ``from nets import
Trainer``) points up at the public face.
"""
import ast
import os
import re
import sys
import textwrap

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "nets")
DOCS = os.path.join(os.path.dirname(ROOT), "docs", "architecture.md")

# The floors, lowest first: (label, files and packages of ``nets``). ``__init__.py`` is the
# root package ``nets`` (the public face, importing everything).
FLOORS = (
    ("bottom", ("base.py", "batch.py", "name.py", "random.py", "parallel.py", "kernels/")),
    ("arrays", ("arrays/",)),
    ("operators", ("ops/", "serialization.py")),
    ("autograd", ("autograd/", "nd/", "operator.py")),
    ("optimization", ("optim/", "kv/")),
    ("models", ("layers/", "symbol/", "module/", "loss.py", "init.py", "metric.py", "utils.py")),
    ("training", ("trainer.py", "model.py", "callback.py")),
    ("programs", ("data/", "gluon/", "cli.py", "__main__.py", "test_utils.py", "__init__.py")),
)

# Private attributes any package may use, each with its reason. MXNet's documented extension
# points (an optimizer subclass calling its own ``_get_lr``, ``_get_wd``, ``_update_count``)
# are used on ``self`` and need no entry; none is needed today: the packages of nets use only
# each other's public names.
ALLOWED_ATTRIBUTES = {}


# -- the graph -----------------------------------------------------------------------------

def modules(root):
    """``{dotted name: path}`` of every ``.py`` file under the package directory ``root``."""
    base = os.path.dirname(os.path.abspath(root))
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(".py"):
                p = os.path.join(d, f)
                name = os.path.relpath(p, base)[:-3].replace(os.sep, ".")
                out[name[: -len(".__init__")] if name.endswith(".__init__") else name] = p
    return out


def _known_prefix(name, known):
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name


def imports(name, path, known):
    """Every import in module ``name``: ``(line, resolved module, imported names, target)``
    tuples, one per target module, ``target`` trimmed to a module of ``known``."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    pkg = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out.append((node.lineno, a.name, (), _known_prefix(a.name, known)))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = pkg.split(".")
                mod = ".".join(parts[: len(parts) - node.level + 1]
                               + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            names = tuple(a.name for a in node.names)
            for t in {mod} | {f"{mod}.{n}" for n in names}:
                out.append((node.lineno, mod, names, _known_prefix(t, known)))
    return [i for i in out if i[3]]


def arrows(name, path, known):
    """The modules ``name`` imports, other than itself and its own ancestor packages."""
    return {t for _, _, _, t in imports(name, path, known)
            if t != name and not name.startswith(t + ".")}


def cycles(graph):
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return sorted(out)


def floor_of(name, root_name, floors):
    """The floor number of module ``name`` (None when no entry of ``floors`` places it)."""
    rel = name[len(root_name) + 1:] if name != root_name else "__init__"
    best = None
    for level, (_, entries) in enumerate(floors):
        for e in entries:
            e = e[:-1] if e.endswith("/") else e[:-3]
            if (rel == e or rel.startswith(e + ".")) and (best is None or len(e) > best[1]):
                best = (level, len(e))
    return None if best is None else best[0]


def _package(name, root_name):
    """The top-level package or module of ``root_name`` holding ``name``."""
    return ".".join(name.split(".")[:2]) if name != root_name else root_name


def _private(part):
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


# -- private attributes ----------------------------------------------------------------------

_ATTRIBUTE_FUNCTIONS = {"getattr": "reads", "hasattr": "reads", "setattr": "writes",
                        "delattr": "deletes"}


def _is_self(node):
    """Whether ``node`` is ``self``, ``cls`` or ``super()``: an object's own attributes."""
    return ((isinstance(node, ast.Name) and node.id in ("self", "cls"))
            or (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "super"))


def defined_names(tree):
    """The names a module defines: its functions, methods and classes, every name it
    assigns (module, class or local), its arguments and import names, and every attribute
    it assigns on any object (a package that sets ``x._name`` on another package's object,
    as autograd sets an array's ``_node``, makes ``_name`` part of its own protocol)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def attribute_uses(tree):
    """``(line, verb, object source, attribute)`` for every private attribute ``tree``
    uses on an object other than ``self``/``cls``/``super()``: ``obj._name`` (read,
    written or deleted) and ``getattr``/``hasattr``/``setattr``/``delattr`` with the
    name spelled as a string."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            obj, name = node.value, node.attr
            verb = {ast.Store: "writes", ast.Del: "deletes"}.get(type(node.ctx), "reads")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in _ATTRIBUTE_FUNCTIONS and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            obj, name = node.args[0], node.args[1].value
            verb = _ATTRIBUTE_FUNCTIONS[node.func.id]
        else:
            continue
        if _private(name) and not _is_self(obj):
            out.append((node.lineno, verb, ast.unparse(obj), name))
    return out


def private_accesses(root, allowed=()):
    """Every use of another package's private attribute in the package directory ``root``.

    A package is a top-level subpackage or module of ``root`` (``nets.ops``,
    ``nets.trainer``). A module in package P uses another package's private attribute when
    it reads, writes or deletes ``obj._name`` on an object other than ``self``/``cls``/
    ``super()`` (or names it in ``getattr`` and its kin), P defines no ``_name``
    (``defined_names``), and another package of ``root`` does: ``value._np`` in
    ``nets.kv`` is one, ``sys._getframe`` is not (no package of nets defines
    ``_getframe``: another library's private names are that library's business; the
    kernels' use of numba's is confined to one module with its own check). The rule goes
    by name, without types: a use of a name both packages define passes, and a library
    object's private attribute spelled as one of nets' would count (none does).
    ``allowed`` names private attributes any package may use."""
    mods = modules(root)
    root_name = os.path.basename(os.path.abspath(root))
    trees = {m: ast.parse(open(p, encoding="utf-8").read(), p) for m, p in mods.items()}
    own = {}
    for m, tree in trees.items():
        own.setdefault(_package(m, root_name), set()).update(defined_names(tree))
    found = []
    for m, tree in sorted(trees.items()):
        pkg = _package(m, root_name)
        for line, verb, obj, name in attribute_uses(tree):
            if name in own[pkg] or name in allowed:
                continue
            owners = sorted(p for p, names in own.items() if p != pkg and name in names)
            if owners:
                path = os.path.relpath(mods[m], os.path.dirname(root))
                found.append((path, line, f"{path}:{line}: {m} {verb} {obj}.{name} (private "
                                          f"to {', '.join(owners)})"))
    return [text for _, _, text in sorted(set(found))]


def problems(root, floors, allowed=()):
    """``{'unplaced': [...], 'cycles': [...], 'upward': [...], 'private': [...],
    'attributes': [...]}`` for the package directory ``root`` (``allowed``: the private
    attributes ``private_accesses`` lets any package use)."""
    mods = modules(root)
    root_name = os.path.basename(os.path.abspath(root))
    top = len(floors) - 1
    found = {"unplaced": sorted(m for m in mods if floor_of(m, root_name, floors) is None),
             "cycles": cycles({m: arrows(m, p, mods) for m, p in mods.items()}),
             "upward": [], "private": [], "attributes": private_accesses(root, allowed)}
    for m, p in sorted(mods.items()):
        mine = floor_of(m, root_name, floors)
        for line, mod, names, t in imports(m, p, mods):
            where = f"{os.path.relpath(p, os.path.dirname(root))}:{line}"
            root_face = (t == root_name and mine is not None and mine < top
                         and any(f"{mod}.{n}" not in mods for n in names or (None,)))
            theirs = floor_of(t, root_name, floors)
            if root_face or (t != m and not m.startswith(t + ".") and None not in (mine, theirs)
                             and theirs > mine):
                found["upward"].append(f"{where}: {m} (floor {mine}) imports {t} "
                                       f"(floor {top if root_face else theirs})")
            inside = mod == root_name or mod.startswith(root_name + ".")
            if not inside or _package(t, root_name) == _package(m, root_name):
                continue
            bad = [n for n in names if _private(n)] + [
                part for part in mod.split(".") if _private(part)]
            if bad:
                found["private"].append(f"{where}: {m} imports private {bad} from {mod}")
    found["upward"] = sorted(set(found["upward"]))
    found["private"] = sorted(set(found["private"]))
    return found


# -- the rules, on nets ------------------------------------------------------------------

@pytest.fixture(scope="module")
def found():
    return problems(ROOT, FLOORS, ALLOWED_ATTRIBUTES)


def test_every_module_has_a_floor(found):
    assert found["unplaced"] == [], "place these modules in FLOORS and docs/architecture.md"


def test_no_import_cycles(found):
    assert found["cycles"] == []


def test_imports_point_down_the_floors(found):
    assert found["upward"] == []


def test_no_private_names_across_packages(found):
    assert found["private"] == []


def test_no_private_attributes_across_packages(found):
    """What another package needs of an object is public there (arrays: ``values``,
    ``index_array``, ``indptr_array``, ``assign_result``, ...)."""
    assert found["attributes"] == []


def test_the_docs_show_these_floors():
    """docs/architecture.md draws the same floors, top floor first, one line each."""
    text = open(DOCS, encoding="utf-8").read()
    for level, (label, entries) in enumerate(FLOORS):
        line = re.compile(rf"^{level} {label}: +" + " +".join(map(re.escape, entries)) + " *$",
                          re.M)
        assert line.search(text), f"docs/architecture.md lacks the floor line for {label!r}"


# -- the checker, on a package made up for it ----------------------------------------------

def _package_tree(tmp_path, files):
    for rel, source in files.items():
        path = tmp_path / "pkg" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    return str(tmp_path / "pkg")


TOY_FLOORS = (("low", ("base.py", "arrays/")), ("high", ("ops.py", "__init__.py")))


def test_checker_finds_a_lazy_upward_import_and_the_cycle_it_closes(tmp_path):
    root = _package_tree(tmp_path, {
        "__init__.py": "from . import arrays, ops\n",
        "base.py": "",
        "arrays/__init__.py": "from .dense import Array\n",
        "arrays/dense.py": """\
            from ..base import *
            class Array:
                def __add__(self, other):
                    from ..ops import add   # lazy, still an arrow
                    return add(self, other)
            """,
        "ops.py": "from .arrays.dense import Array\ndef add(a, b): pass\n",
    })
    found = problems(root, TOY_FLOORS)
    assert found["cycles"] == [["pkg.arrays.dense", "pkg.ops"]]
    assert found["upward"] == ["pkg/arrays/dense.py:4: pkg.arrays.dense (floor 0) imports "
                               "pkg.ops (floor 1)"]
    assert found["unplaced"] == [] and found["private"] == [] and found["attributes"] == []


def test_checker_allows_downward_and_same_floor_arrows(tmp_path):
    root = _package_tree(tmp_path, {
        "__init__.py": "from . import ops\nfrom .arrays import Array\n",
        "base.py": "",
        "arrays.py": "from . import base\nfrom .base import *\nArray = object\n",
        "ops.py": "from .arrays import Array\nimport pkg.base\n",
    })
    assert problems(root, TOY_FLOORS) == {"unplaced": [], "cycles": [], "upward": [],
                                          "private": [], "attributes": []}


def test_checker_finds_private_names_unplaced_modules_and_root_imports(tmp_path):
    root = _package_tree(tmp_path, {
        "__init__.py": "",
        "base.py": "import pkg\n_x = 1\n",
        "arrays.py": "from .base import _x, __doc__\nfrom . import _helpers\n",
        "_helpers.py": "",
        "ops.py": "from .base import _x\n",
        "extra/__init__.py": "",
    })
    found = problems(root, TOY_FLOORS)
    assert found["unplaced"] == ["pkg._helpers", "pkg.extra"]
    assert found["private"] == ["pkg/arrays.py:1: pkg.arrays imports private ['_x'] from pkg.base",
                                "pkg/arrays.py:2: pkg.arrays imports private ['_helpers'] "
                                "from pkg",
                                "pkg/ops.py:1: pkg.ops imports private ['_x'] from pkg.base"]
    assert found["upward"] == ["pkg/base.py:1: pkg.base (floor 0) imports pkg (floor 1)"]
    assert found["cycles"] == []


def test_checker_finds_private_attributes_of_other_packages(tmp_path):
    root = _package_tree(tmp_path, {
        "__init__.py": "",
        "arrays/__init__.py": "",
        "arrays/dense.py": """\
            class Array:
                _tag = None
                def __init__(self, values):
                    self._values = values
                def _adopt(self, other):
                    self._values = other._values  # its own package's name
            """,
        "ops.py": """\
            import sys
            def add(a, b):
                out = a._values + b._values       # two reads
                a._tag = "sum"                    # a write: ops makes _tag its own too
                frame = sys._getframe(0)          # not a name of pkg: another library's
                return getattr(b, "_values"), a._adopt(b)
            class Sum:
                def _total(self):
                    return self._values, super()._total()   # self and super(): own
            """,
        "kv.py": """\
            def push(x, y):
                del x._values
                setattr(y, "_adopt", None)
                return x._tag, x._total, y._hidden     # _total: of ops; _hidden: of no one
            """,
    })
    found = problems(root, (("all", ("arrays/", "ops.py", "kv.py", "__init__.py")),))
    assert found["attributes"] == [
        "pkg/kv.py:2: pkg.kv deletes x._values (private to pkg.arrays)",
        "pkg/kv.py:3: pkg.kv writes y._adopt (private to pkg.arrays)",
        "pkg/kv.py:4: pkg.kv reads x._tag (private to pkg.arrays, pkg.ops)",
        "pkg/kv.py:4: pkg.kv reads x._total (private to pkg.ops)",
        "pkg/ops.py:3: pkg.ops reads a._values (private to pkg.arrays)",
        "pkg/ops.py:3: pkg.ops reads b._values (private to pkg.arrays)",
        "pkg/ops.py:6: pkg.ops reads a._adopt (private to pkg.arrays)",
        "pkg/ops.py:6: pkg.ops reads b._values (private to pkg.arrays)"]
    assert private_accesses(root, allowed={"_values": "an extension point"}) == [
        "pkg/kv.py:3: pkg.kv writes y._adopt (private to pkg.arrays)",
        "pkg/kv.py:4: pkg.kv reads x._tag (private to pkg.arrays, pkg.ops)",
        "pkg/kv.py:4: pkg.kv reads x._total (private to pkg.ops)",
        "pkg/ops.py:6: pkg.ops reads a._adopt (private to pkg.arrays)"]


if __name__ == "__main__":  # a report without pytest: python tests/test_import_graph.py
    for kind, items in problems(ROOT, FLOORS).items():
        print(f"{kind}: {len(items)}")
        for item in items:
            print("   ", item)
    sys.exit(0)
