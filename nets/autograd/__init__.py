"""Automatic differentiation (MXNet's ``autograd`` API).

Usage::

    w.attach_grad()                          # or attach_grad(stype='row_sparse')
    with autograd.record():                  # record operations ...
        loss = ((nd.dot(x, w) - y) ** 2).sum()
    loss.backward()                          # ... and differentiate them: w.grad

Recording: inside ``record()`` every operator call (and every custom ``Function``
call) whose inputs include a leaf (an array with ``attach_grad``) or a recorded
output becomes a node of the graph; everything else is a constant. Outside
``record()`` nothing is recorded and nothing is paid. ``pause()`` suspends
recording; ``train_mode()``/``predict_mode()`` set ``is_training()``. The state is
held in ``contextvars``, so each thread and async task has its own.

Gradients: a leaf declares its gradient in a ``GradSlot`` (``slot.py``: the buffer
``leaf.grad``, its storage type, ``grad_req``, freshness). ``backward`` delivers each
leaf's gradient into that buffer in its storage type (a dense contribution to a
row_sparse gradient is cast to row_sparse) and marks the slot fresh, which the
Trainer's stale-gradient check reads; ``grad_req='add'`` accumulates. Several
contributions to one array
are summed by ``add_n``: row_sparse ones over the union of their rows (duplicates
coalesced, never densified), dense + row_sparse by a scatter-add of the stored
rows. ``grad`` returns gradients instead of writing ``.grad``, in
the storage type the computation produced. A CSR leaf whose gradient slot is csr
(its own stype, ``attach_grad()``'s default) receives, from ``backward`` and ``grad``
alike, the gradient with respect to its stored values: its pattern (explicit zeros
kept), each stored entry holding the full gradient there (docs/mxnet-compat.md,
"Gradient of a CSR input"); declared dense (``attach_grad(stype='default')``, an
executor's allocation) it receives the full one.
An operator that computes no gradient for a csr input (``grad_stype`` None there, not
None for a dense one, e.g. ``FullyConnected``'s data) raises ``NetsError`` when a
gradient must reach that input: never silent zeros. Unlike MXNet, ``grad_req='add'`` on a
row_sparse gradient is supported (row union).

The vjp contract, for operator authors
-------------------------------------
Register a vector-Jacobian product beside the operator::

    @op.vjp
    def _(node, *out_grads):
        lhs, rhs = node.inputs
        ...
        return grad_lhs, grad_rhs

- ``node.inputs``: the op's bound array inputs, in declaration order (an absent
  optional input is None; a variadic op has one entry per argument).
  ``node.attrs``: every attribute, defaults filled in. ``node.outputs``: the
  output values (arrays sharing the outputs' buffers, in the outputs' storage
  types). Do not modify any of them. A formula that uses an output reads it as
  ``node.output(k)``: linked to the node under ``create_graph``, so second
  derivatives see it as a function of the inputs. ``node.saved``: what the
  implementation kept for this call's vjp with ``ops.registry.save_for_backward``
  (None when it kept nothing), released with the node.
- ``out_grads``: one gradient per output, each of that output's shape and dtype.
  An output that no gradient reached gets zeros of its storage type (an empty
  sparse array when sparse), so a vjp never sees None. Gradients may arrive in any
  storage type (e.g. a row_sparse gradient of a dense output): a vjp needing
  one type converts explicitly or uses operators that accept it.
- Return one entry per input (a tuple; a single array is accepted for a
  one-input op): an array of that input's shape, or None where the input is not
  differentiable or the gradient is zero (integer indices, absent optional
  inputs; for CSR data, declare ``grad_stype`` None there: asking for it then
  raises). A wrong count or shape raises ``NetsError`` naming the op.
- Compute with nets operators called normally (``nd.dot(...)``): the engine
  turns recording off during ``backward`` (on with ``grad(create_graph=True)``,
  which then differentiates the vjp itself). Return row_sparse gradients where
  they are natural (e.g. ``dot(csr, W)`` w.r.t. ``W`` is ``dot(csr, g,
  transpose_a=True)``, row_sparse by the storage table), and never densify a
  sparse operand: the engine merges by stype and casts only at the leaf.
- ``is_training()`` during a vjp is ``backward(train_mode=...)``.
- An op without a vjp raises ``NetsError("no gradient for op 'name' ...")``
  only when a gradient has to flow through it to reach a leaf being
  differentiated; otherwise it is never called.
"""
from ..arrays.dense import NDArray
from .engine import backward, grad
from .function import Function
from .methods import install
from .slot import GradSlot, attach_grad, grad_slot, mark_variables, release_grad
from .tape import (in_graph, is_recording, is_training, pause, predict_mode, record,
                   set_recording, set_training, train_mode)

install(NDArray)

__all__ = ["record", "pause", "train_mode", "predict_mode", "is_recording", "is_training",
           "set_recording", "set_training", "attach_grad", "mark_variables", "backward", "grad",
           "Function", "GradSlot", "grad_slot", "release_grad", "in_graph"]
