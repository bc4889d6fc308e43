"""Recording state, leaves and graph nodes.

The state lives in two ``contextvars`` of the op registry (so threads and async
tasks each see their own): ``RECORDER`` holds ``record_node`` inside
``record()`` and None elsewhere, so an op call outside ``record()`` costs one
``ContextVar.get``; ``TRAINING`` holds the train/predict flag.

The tape is the graph itself: ``record_node`` links each output array to its
``Node`` (``array._node = (node, k)``) and each node to where its inputs came
from. A graph lives exactly as long as the arrays that reach it, and nodes never
point back at the output objects (they keep views of the values), so dropping
the last output frees its graph at once, without waiting for the cycle collector.
"""
import itertools

from ..base import RECORDER, TRAINING, NetsError
from ..arrays.dense import WRITES
from ..ops.registry import DENSE_EXPECTED, SAVED, Op, take_saved

__all__ = ["record", "pause", "train_mode", "predict_mode", "is_recording", "is_training",
           "set_recording", "set_training", "in_graph"]

_SEQ = itertools.count()


class Node:
    """One recorded operator application (see the contract in ``nets.autograd``).

    ``parents[i]`` says where the gradient of ``inputs[i]`` goes: ``(node, k)`` for
    output ``k`` of a recorded node, the array itself for a leaf, None for a
    constant. ``seq`` increases with creation, so it orders nodes topologically.
    ``writes`` is the count of writes to all arrays (``WRITES``) when the node was
    recorded: the vjp reads the values of the inputs and outputs, so the engine refuses to
    run it once one of them was written since (its ``last_write`` is above ``writes``,
    ``check_versions``). ``saved`` holds what the operator's implementation kept for the
    vjp (``ops.registry.save_for_backward``; None when it kept nothing): per-call state lives
    on the node, and goes with it. ``free()`` drops everything; a freed node has ``parents
    is None``.
    """

    __slots__ = ("op", "inputs", "attrs", "outputs", "parents", "seq", "writes", "saved")

    def __init__(self, op, inputs, attrs, outputs, parents, writes, saved=None):
        self.op, self.inputs, self.attrs = op, inputs, attrs
        self.outputs, self.parents, self.seq = outputs, parents, next(_SEQ)
        self.writes, self.saved = writes, saved

    def check_versions(self):
        """Raise when an input or output was written in place since this node was recorded
        (its gradient would be computed from the new values, silently wrong)."""
        writes = self.writes
        if WRITES[0] == writes:  # (no write to any array since: the engine checks this first)
            return
        arrays = self.inputs + self.outputs
        i = next((i for i, a in enumerate(arrays) if a is not None and a.last_write > writes),
                 None)
        if i is None:
            return
        n = len(self.inputs)
        what = f"input {i}" if i < n else f"output {i - n}"
        op = self.op
        names = getattr(op, "inputs", None)
        if i < n and names and self.op.__class__ is Op:
            what += f" ({(names[0] if op.variadic else names[i])!r})"
        raise NetsError(f"{what} of op {getattr(op, 'name', op)!r} was modified in place after "
                        f"the op was recorded (its version is now {arrays[i].version}), so its "
                        f"gradient would be computed from the new values; write into a copy, "
                        f"or compute a new array "
                        f"(y = x * 2 rather than x[:] = ...), or call backward() before "
                        f"modifying it")

    def output(self, k=0):
        """Output ``k`` for a vjp formula written with it (``exp``: ``g * y``). While
        recording (``grad(create_graph=True)``) it leads back to this node, so second
        derivatives flow through it; otherwise it is the saved value itself."""
        y = self.outputs[k]
        if RECORDER.get() is not None:
            y = y.detach()
            y._node = (self, k)
        return y

    def leaf_grad_stype(self, i):
        """The storage type of the gradient slot of input ``i`` when that input is a leaf,
        else None. A vjp may produce a CSR leaf's gradient directly in the form the leaf
        receives it (the gradient w.r.t. its stored values, ``engine.deliver``'s rule)
        instead of a dense one the engine would then sample."""
        p = self.parents[i]
        slot = None if p is None or type(p) is tuple else p._grad_slot
        return None if slot is None else slot.stype  # (None too: a slot released since)

    def free(self):
        """Release the saved arrays (after a ``backward`` without ``retain_graph``)."""
        if self.op.__class__ is not Op:  # custom Functions drop saved_tensors
            release = getattr(self.op, "release", None)
            if release is not None:
                release()
        self.op = self.inputs = self.attrs = self.outputs = self.parents = self.saved = None

    def __repr__(self):
        name = "freed" if self.parents is None else getattr(self.op, "name", self.op)
        return f"<autograd node {name} #{self.seq}>"


def in_graph(x):
    """Whether the array ``x`` is part of an autograd graph: a leaf (``attach_grad``) or an
    operator's recorded result, so that ``backward`` can start from it."""
    return x._node is not None or x._grad_slot is not None


def record_node(op, inputs, attrs, outputs):
    """The recorder: link ``outputs`` to a new node; returns it (None when no input has a
    gradient to receive, e.g. all constants: then nothing is recorded). The outputs are
    new arrays, never input objects: every operator's results are
    (``tests/symbol/test_storage_table.py`` checks each; ``Custom`` writes arrays it
    allocates), and a ``Function`` gives an input it returns an array of its own."""
    # (taken even when nothing is recorded: it belongs to this call)
    saved = None if SAVED.get() is None else take_saved(op)
    parents, wanted = [], False
    for x in inputs:  # where the gradient of each goes: (node, k), the leaf itself, or None
        if x is None:
            parents.append(None)
            continue
        node = x._node
        if node is not None and node[0].parents is not None:
            parents.append(node)
            wanted = True
        elif x._grad_slot is not None:
            parents.append(x)
            wanted = True
        else:
            parents.append(None)
    if not wanted:
        return None
    node = Node(op, inputs, attrs, tuple([o.detach() for o in outputs]), tuple(parents),
                WRITES[0], saved)
    for k, o in enumerate(outputs):
        o._node = (node, k)
    return node


class _Scope:
    """A ``with`` block setting recording and/or training (None leaves one unchanged);
    ``engine``: the autograd engine's propagation (``DENSE_EXPECTED``)."""

    __slots__ = ("_recording", "_training", "_engine", "_tokens")

    def __init__(self, recording, training, engine=False):
        self._recording, self._training, self._engine = recording, training, engine

    def __enter__(self):
        self._tokens = (
            None if self._recording is None else RECORDER.set(
                record_node if self._recording else None),
            None if self._training is None else TRAINING.set(bool(self._training)),
            DENSE_EXPECTED.set(True) if self._engine else None)
        return self

    def __exit__(self, *exc):
        recording, training, engine = self._tokens
        if recording is not None:
            RECORDER.reset(recording)
        if training is not None:
            TRAINING.reset(training)
        if engine is not None:
            DENSE_EXPECTED.reset(engine)


def record(train_mode=True):
    """``with autograd.record():`` records operations for ``backward``; ``train_mode``
    also sets ``is_training()`` (Dropout, BatchNorm) inside the block."""
    return _Scope(True, train_mode)


def pause(train_mode=False):
    """``with autograd.pause():`` stops recording inside the block (e.g. for metrics)."""
    return _Scope(False, train_mode)


def train_mode():
    """``with autograd.train_mode():`` makes ``is_training()`` True; recording is unchanged."""
    return _Scope(None, True)


def predict_mode():
    """``with autograd.predict_mode():`` makes ``is_training()`` False; recording is unchanged."""
    return _Scope(None, False)


def is_recording():
    """True inside ``record()`` (and not inside a nested ``pause()``)."""
    return RECORDER.get() is not None


def is_training():
    """True in train mode (``record()`` by default, ``train_mode()``)."""
    return TRAINING.get()


def set_recording(is_recording):
    """Turn recording on or off in the current context; returns the previous state."""
    prev = RECORDER.get() is not None
    RECORDER.set(record_node if is_recording else None)
    return prev


def set_training(train_mode):
    """Set train (True) or predict (False) mode in the current context; returns the previous."""
    prev = TRAINING.get()
    TRAINING.set(bool(train_mode))
    return prev

