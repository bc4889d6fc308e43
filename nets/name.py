"""Automatic names of symbols (MXNet's ``mx.name``): ``NameManager`` and ``Prefix``.

A symbol built without ``name=`` is named ``<hint><n>`` by the current manager, ``hint``
the operator's name in lower case and ``n`` a counter per hint (``fullyconnected0``,
``fullyconnected1``...). ``with NameManager():`` counts afresh inside the block;
``with Prefix('net_'):`` also puts ``net_`` before every automatic name.
"""
import collections
import contextvars
import itertools

__all__ = ["NameManager", "Prefix", "current"]


class NameManager:
    """Names symbols: ``get(name, hint)`` is ``name`` when given, else ``hint`` followed by
    the next number of this manager's counter for ``hint``. A ``with`` block makes it the
    current manager (nested blocks restore the outer one)."""

    def __init__(self):
        self._counters = collections.defaultdict(itertools.count)
        self._tokens = []

    def get(self, name, hint):
        """``name``, or a new automatic name from ``hint``."""
        if name:
            return name
        return f"{hint}{next(self._counters[hint])}"

    def __enter__(self):
        self._tokens.append(_CURRENT.set(self))
        return self

    def __exit__(self, *exc):
        _CURRENT.reset(self._tokens.pop())


class Prefix(NameManager):
    """A ``NameManager`` putting ``prefix`` before every automatic name."""

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        return name if name else self._prefix + super().get(None, hint)


# outside any ``with`` block: one process-wide manager (MXNet's), whose counters every
# context shares
_DEFAULT = NameManager()
_CURRENT = contextvars.ContextVar("nets_name_manager", default=None)


def current():
    """The manager that names symbols now (the innermost ``with`` block's)."""
    manager = _CURRENT.get()
    return _DEFAULT if manager is None else manager
