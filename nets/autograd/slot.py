"""Gradient slots: what a leaf declares about the gradient ``backward`` delivers to it.

A leaf is an array with a ``GradSlot`` (``attach_grad``, ``mark_variables``, or a
``Parameter`` through them). The slot is the one contract between the three parties
that touch a gradient:

- the engine reads ``req`` and ``buffer`` when it delivers, and sets ``fresh``;
- the Trainer reads ``fresh`` (MXNet's stale-gradient check) and clears it after
  updating with the gradient;
- the user reads ``x.grad``, which is ``buffer``, the same object for the slot's life.

Ownership of memory is declared, never inferred: the buffer is created with the slot
(zeros from ``attach_grad``) or handed in by the caller (``mark_variables``, e.g. an
executor's gradient arrays), and in both cases it may be held and viewed by anyone, so
delivery writes into it and never swaps its memory for another array's. Of the
gradients it delivers, the engine reuses the memory of only those it created itself
(see ``engine._deliver``).
"""
from ..base import NetsError, ShapeError, check_stype
from ..arrays.creation import zeros
from ..arrays.dense import NDArray

__all__ = ["GradSlot", "GRAD_REQS", "attach_grad", "mark_variables", "grad_slot",
           "release_grad"]

GRAD_REQS = ("write", "add", "null")


class GradSlot:
    """A leaf's declared gradient.

    ``buffer``: the array ``backward`` delivers into (``x.grad``); its storage type is
    the declared gradient storage type, kept by every delivery. ``req``: ``'write'``
    (overwrite; zeros when no gradient reaches a leaf the heads depend on), ``'add'``
    (accumulate; row_sparse by the union of rows) or ``'null'`` (never delivered).
    ``fresh``: True once ``backward`` delivered into the buffer since the consumer last
    cleared it (the Trainer clears it when it updates with the gradient).
    """

    __slots__ = ("buffer", "req", "fresh")

    def __init__(self, buffer, req):
        if req not in GRAD_REQS:
            raise NetsError(f"grad_req={req!r} is not one of {GRAD_REQS}")
        self.buffer, self.req, self.fresh = buffer, req, False

    @property
    def stype(self):
        """The declared gradient storage type (the buffer's, which delivery keeps)."""
        return self.buffer.stype

    def __repr__(self):
        return (f"<GradSlot req={self.req} stype={self.stype} shape={self.buffer.shape} "
                f"fresh={self.fresh}>")


def attach_grad(x, grad_req="write", stype=None):
    """Make ``x`` a leaf: a new gradient slot whose buffer ``x.grad`` is zeros of storage
    type ``stype`` (default ``x.stype``; an empty array when sparse), which ``backward``
    overwrites (``'write'``), adds to (``'add'``) or leaves alone (``'null'``). Cuts
    ``x`` from any earlier graph.

    A csr ``x`` with a csr gradient (the default) receives the gradient with respect to
    its stored values: ``x``'s pattern, holding the full gradient's values there (as
    ``torch.sparse.mm``); ``stype='default'`` receives the full dense gradient (what
    MXNet's ``simple_bind`` allocates for a csr variable)."""
    stype = x.stype if stype is None else check_stype(stype)
    mark_variables([x], [zeros(x.shape, x.context, x.dtype, stype)], grad_req)


def mark_variables(variables, gradients, grad_reqs="write"):
    """Make each of ``variables`` a leaf whose gradient buffer is the matching array of
    ``gradients`` (the caller's array: ``backward`` writes into it, in its storage type)."""
    if isinstance(variables, NDArray):
        variables, gradients = [variables], [gradients]
    if isinstance(grad_reqs, str):
        grad_reqs = [grad_reqs] * len(variables)
    if not len(variables) == len(gradients) == len(grad_reqs):
        raise NetsError(f"mark_variables: got {len(variables)} variables, {len(gradients)} "
                        f"gradients and {len(grad_reqs)} grad_reqs; they must match")
    for i, (x, g, req) in enumerate(zip(variables, gradients, grad_reqs)):
        if not isinstance(g, NDArray) or tuple(g.shape) != tuple(x.shape):
            raise ShapeError(f"gradients[{i}] must be an array of shape {tuple(x.shape)} like "
                             f"variables[{i}], got {getattr(g, 'shape', type(g).__name__)}")
        x._grad_slot, x._node = GradSlot(g, req), None


def grad_slot(x):
    """The ``GradSlot`` of leaf ``x``, or None when ``x`` is not a leaf."""
    return x._grad_slot


def release_grad(x):
    """Make ``x`` an ordinary array again: drop its gradient slot (``x.grad`` is None and
    ``backward`` no longer delivers to it)."""
    x._grad_slot = None

