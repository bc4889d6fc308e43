"""The public API explains itself at the call site: type hints and numpy-style docstrings.

For every name below - the ``nets.nd`` array constructors (``nd``, ``nd.sparse``,
``nd.random``), ``nets.layers``, ``Parameter``, ``nets.Trainer``, the optimizers and
learning-rate schedulers of ``nets.optim``, the ``nets.data`` readers and iterators,
``nets.kv.create`` and the ``nets.sym``/``nets.mod`` entry points - each function, each
class's constructor and each public method of a class:

- annotates every argument (``self``/``cls``, ``*args`` and ``**kwargs`` aside);
- annotates its return (constructors aside);
- has a docstring whose numpy ``Parameters`` section (``name : type`` lines under a
  ``Parameters`` / ``----------`` header) has an entry for every such argument. A
  constructor's arguments may be documented in the class docstring or in ``__init__``'s.

One test per function, constructor and method, so a failure names it and the arguments
it lacks. The operators (``nd.dot``, ``nd.sparse.retain``, ...) are declared in the op
table with docstrings of their own and are not checked here.
"""
from __future__ import annotations

import inspect

import pytest

import nets
import nets.data
import nets.kv
import nets.layers
import nets.mod
import nets.optim
import nets.sym
from nets.arrays import creation as _creation

_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)

# -- what is checked -------------------------------------------------------------------------


def _functions():
    """``(public name, function)`` of the checked module-level functions."""
    nd = nets.nd
    out = [(f"nets.nd.{n}", getattr(nd, n)) for n in
           ("array", "zeros", "ones", "full", "empty", "arange", "from_numpy", "waitall",
            "concatenate")]
    out += [(f"nets.nd.random.{n}", getattr(nd.random, n)) for n in
            ("uniform", "normal", "randint")]
    out += [(f"nets.nd.sparse.{n}", getattr(nd.sparse, n)) for n in
            ("csr_matrix", "row_sparse_array", "zeros", "empty", "array")]
    out += [(f"nets.optim.{n}", getattr(nets.optim, n)) for n in ("create", "register")]
    if hasattr(nets.optim, "get_updater"):
        out.append(("nets.optim.get_updater", nets.optim.get_updater))
    out += [(f"nets.data.{n}", getattr(nets.data, n)) for n in ("load_libsvm", "save_libsvm")]
    out.append(("nets.kv.create", nets.kv.create))
    out += [(f"nets.sym.{n}", getattr(nets.sym, n)) for n in
            ("var", "Variable", "Group", "load", "load_json")]
    return out


def _classes():
    """``(public name, class, method names or None for every public method)``."""
    out = [(f"nets.layers.{n}", getattr(nets.layers, n), None) for n in nets.layers.__all__]
    out.append(("nets.Trainer", nets.Trainer, None))
    optimizers = [n for n in nets.optim.__all__ if isinstance(getattr(nets.optim, n), type)
                  and issubclass(getattr(nets.optim, n), nets.optim.Optimizer)]
    out += [(f"nets.optim.{n}", getattr(nets.optim, n), None) for n in optimizers]
    out += [(f"nets.optim.lr_scheduler.{n}", getattr(nets.optim.lr_scheduler, n), None)
            for n in nets.optim.lr_scheduler.__all__]
    out += [(f"nets.data.{n}", getattr(nets.data, n), None) for n in
            ("LibSVMIter", "NDArrayIter", "Dataset", "ArrayDataset", "DataLoader")]
    out.append(("nets.sym.Symbol", nets.sym.Symbol,
                ("bind", "simple_bind", "infer_shape", "infer_shape_partial", "infer_type",
                 "infer_storage_type", "infer_grad_storage_type", "list_arguments",
                 "list_outputs", "list_auxiliary_states", "eval", "tojson", "save")))
    out.append(("nets.sym.Executor", nets.sym.Executor,
                ("forward", "backward", "copy_params_from", "reshape")))
    out.append(("nets.mod.Module", nets.mod.Module, None))
    return out


def _defining_class(cls, name):
    for klass in cls.__mro__:
        if name in vars(klass):
            return klass, vars(klass)[name]
    return None, None


def _is_nets(obj):
    return (getattr(obj, "__module__", None) or "").split(".")[0] == "nets"


def _targets():
    """``(test id, callable, docstrings holding its Parameters, first argument bound)``."""
    targets, seen = [], {}
    for name, func in _functions():
        targets.append((name, func, [func.__doc__], False))
    classes = _classes()
    public = {}
    for name, cls, _ in classes:
        public.setdefault(cls, name)
    for name, cls, methods in classes:
        init = vars(cls).get("__init__") or _defining_class(cls, "__init__")[1]
        if _is_nets(init):
            targets.append((name, init, [cls.__doc__, init.__doc__], True))
        else:  # (a constructor of Python's own: nothing to annotate)
            targets.append((name, None, [cls.__doc__], True))
        names = methods if methods is not None else [n for n in dir(cls)
                                                     if not n.startswith("_")]
        for m in names:
            owner, raw = _defining_class(cls, m)
            bound = not isinstance(raw, staticmethod)
            func = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
            if not inspect.isfunction(func) or not _is_nets(func):
                continue  # a property, an attribute, or a method of Python's own
            if _overrides_nets_method(owner, m):
                continue  # an implementation of a base's method: its contract is checked there
            key = id(func)
            label = f"{public.get(owner, name)}.{m}"
            if key in seen:
                continue
            seen[key] = label
            targets.append((label, func, [func.__doc__], bound))
    return targets


def _overrides_nets_method(owner, name):
    """Whether ``owner.name`` implements a method a nets base class of ``owner`` defines
    (``SGD.update_rows`` of ``Optimizer.update_rows``): ``help()`` shows the base's
    documented contract, and the base is checked."""
    return any(name in vars(base) and _is_nets(vars(base)[name])
               for base in owner.__mro__[1:] if base is not object)


# -- numpy docstrings --------------------------------------------------------------------------

def _is_rule(line):
    line = line.strip()
    return len(line) >= 3 and set(line) == {"-"}


def parameters_section(doc):
    """The names the numpy ``Parameters`` section of ``doc`` documents (None: no section)."""
    if not doc:
        return None
    lines = inspect.cleandoc(doc).splitlines()
    for i in range(len(lines) - 1):
        if lines[i].strip() == "Parameters" and _is_rule(lines[i + 1]):
            body = []
            for j in range(i + 2, len(lines)):
                if j + 1 < len(lines) and lines[j].strip() and _is_rule(lines[j + 1]):
                    break  # the next section's header
                body.append(lines[j])
            indents = [len(ln) - len(ln.lstrip()) for ln in body if ln.strip()]
            if not indents:
                return set()
            top = min(indents)
            names = set()
            for ln in body:
                if ln.strip() and len(ln) - len(ln.lstrip()) == top:
                    head = ln.split(" : ")[0] if " : " in ln else ln.rstrip(" :")
                    names.update(n.strip().lstrip("*") for n in head.split(","))
            return names
    return None


def test_parameters_section_parser():
    doc = """Summary.

    Parameters
    ----------
    x, y : int
        Coordinates; ``z : float`` in prose is not an entry.
    flag
        No type.
    **kwargs : dict
        More.

    Returns
    -------
    out : int
        Not a parameter.
    """
    assert parameters_section(doc) == {"x", "y", "flag", "kwargs"}
    assert parameters_section("No sections.") is None


# -- the check -------------------------------------------------------------------------------

_TARGETS = _targets()


@pytest.mark.parametrize("name,func,docs,bound", _TARGETS, ids=[t[0] for t in _TARGETS])
def test_documented_and_annotated(name, func, docs, bound):
    problems = []
    if not any(d and d.strip() for d in docs):
        problems.append("no docstring")
    if func is not None:
        sig = inspect.signature(func)
        params = list(sig.parameters.values())
        if bound and params:
            params = params[1:]  # self / cls
        args = [p.name for p in params if p.kind not in _VARIADIC]
        unannotated = [a for a in args if sig.parameters[a].annotation is inspect.Parameter.empty]
        if unannotated:
            problems.append(f"arguments without a type annotation: {unannotated}")
        is_init = func.__name__ == "__init__"
        if not is_init and sig.return_annotation is inspect.Signature.empty:
            problems.append("no return annotation")
        if args:
            sections = [parameters_section(d) for d in docs]
            if all(s is None for s in sections):
                problems.append(f"no numpy 'Parameters' section (arguments {args})")
            else:
                documented = set().union(*(s for s in sections if s is not None))
                missing = [a for a in args if a not in documented]
                if missing:
                    problems.append(f"arguments missing from the 'Parameters' section: "
                                    f"{missing}")
    assert not problems, f"{name}: " + "; ".join(problems)


def test_targets_cover_the_named_api():
    """The lists above reach what the docs promise (a renamed export would drop silently)."""
    names = {t[0] for t in _TARGETS}
    for expected in ("nets.nd.array", "nets.nd.sparse.csr_matrix", "nets.nd.random.uniform",
                     "nets.layers.Dense", "nets.layers.Block.collect_params",
                     "nets.layers.Parameter", "nets.layers.Parameter.initialize",
                     "nets.Trainer", "nets.Trainer.step", "nets.optim.SGD", "nets.optim.create",
                     "nets.data.LibSVMIter", "nets.data.load_libsvm", "nets.kv.create",
                     "nets.sym.var", "nets.sym.Symbol.bind", "nets.mod.Module",
                     "nets.mod.Module.fit", "nets.mod.Module.init_optimizer"):
        assert expected in names, expected
    assert _creation.sparse_array is nets.nd.sparse.array


def test_help_of_dense_explains_each_argument():
    """``help(nets.layers.Dense)`` shows every constructor argument with its explanation."""
    import pydoc
    text = pydoc.render_doc(nets.layers.Dense, renderer=pydoc.plaintext)
    for arg in inspect.signature(nets.layers.Dense).parameters:
        assert f" {arg} : " in text, arg
