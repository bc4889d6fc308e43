"""Containers: ``Sequential``, ``HybridSequential``, ``Lambda``, ``HybridLambda``."""
from .. import nd
from ..base import NetsError
from .block import Block, HybridBlock

__all__ = ["Sequential", "HybridSequential", "Lambda", "HybridLambda"]


class _SequentialMixin:
    def add(self, *blocks):
        """Append ``blocks`` in order."""
        for block in blocks:
            self.register_child(block)

    def forward(self, x, *args):
        for block in self._children.values():
            x = block(x, *args)
            args = ()
        return x

    def __getitem__(self, key):
        children = list(self._children.values())
        if isinstance(key, slice):
            out = type(self)(prefix=self._prefix)
            out.add(*children[key])
            return out
        return children[key]

    def __len__(self):
        return len(self._children)


class Sequential(_SequentialMixin, Block):
    """Blocks applied one after another: ``net.add(Dense(8), Activation('relu'))``."""


class HybridSequential(_SequentialMixin, HybridBlock):
    """``Sequential`` of hybrid blocks."""


def _resolve(function, name):
    if isinstance(function, str):
        if not hasattr(nd, function):
            raise NetsError(f"{name}: nets.nd has no function {function!r}")
        return getattr(nd, function)
    if not callable(function):
        raise NetsError(f"{name}: function={function!r} is neither callable nor an op name")
    return function


class Lambda(Block):
    """Wrap ``function(*inputs)`` (a callable or the name of an ``nd`` function) as a block."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        self._func = _resolve(function, "Lambda")

    def forward(self, *args):
        return self._func(*args)


class HybridLambda(HybridBlock):
    """Wrap ``function(F, *inputs)`` (or the name of an ``nd`` function) as a hybrid block."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            _resolve(function, "HybridLambda")  # validates the name
            self._func = lambda F, *args: getattr(F, function)(*args)  # nd or sym, as traced
        else:
            self._func = _resolve(function, "HybridLambda")

    def hybrid_forward(self, F, x, *args):
        return self._func(F, x, *args)
