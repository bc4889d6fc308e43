"""``nets.sym``: symbolic graphs (MXNet's ``mx.sym``), executors and sparse symbols.

Every operator of ``nets.nd`` is here under the same name and arguments, built from the
same declarations (``nets.ops.registry.OPS``): called on ``Symbol``s it adds a graph node
instead of computing. ``Variable``/``var`` declare the arguments (with ``stype`` for
sparse ones), ``Group`` joins outputs, ``simple_bind``/``bind`` give an ``Executor``, and
``load``/``load_json`` read graphs saved as JSON. ``nets.sym.sparse`` holds the same
operators (MXNet's ``mx.sym.sparse``).
"""
from . import contrib, sparse
from ..nd import internal_namespace
from .executor import Executor
from .symbol import Group, Symbol, Variable, get_op, load, load_json, namespace, var

_OPERATORS = namespace()
globals().update(_OPERATORS)
_internal = internal_namespace(_OPERATORS, "MXNet's ``mx.sym._internal``: the operators of "
                               "nets.sym under their internal names (``_square_sum``, ...).")

__all__ = ["Symbol", "Variable", "var", "Group", "Executor", "load", "load_json",
           "sparse", "contrib"] + sorted(_OPERATORS)


def __getattr__(name):
    """Operators declared after this module was imported."""
    op = get_op(name)
    if op is None:
        raise AttributeError(f"module 'nets.symbol' has no attribute {name!r}")
    return namespace()[name]
