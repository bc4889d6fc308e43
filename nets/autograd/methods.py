"""NDArray's autograd methods, installed by ``nets.autograd`` when it is imported.

The array layer sits below autograd and never imports it (one direction, as Chainer's
``install_variable_arithmetics``): arrays carry only the state (``_grad_slot``,
``_node``), and the methods that reach the tape and the engine come from here.
"""
from .engine import backward
from .slot import attach_grad

__all__ = ["install"]


def _grad(self):
    """The gradient buffer attached by ``attach_grad`` (None if none)."""
    slot = self._grad_slot
    return None if slot is None else slot.buffer


def _backward(self, out_grad=None, retain_graph=False, train_mode=True):
    """Back-propagate from this array (``out_grad`` defaults to ones) into the gradients
    of the leaves it depends on; the graph is freed unless ``retain_graph``."""
    backward(self, None if out_grad is None else [out_grad], retain_graph=retain_graph,
             train_mode=train_mode)


_backward.__name__ = "backward"


def install(cls):
    """Give array class ``cls`` (``NDArray``, inherited by the sparse arrays) its
    ``attach_grad``, ``grad`` and ``backward``."""
    cls.attach_grad = attach_grad
    cls.grad = property(_grad)
    cls.backward = _backward
