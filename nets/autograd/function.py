"""Custom differentiable functions (MXNet's ``autograd.Function``)."""
from ..base import NetsError
from ..arrays.dense import NDArray
from ..base import RECORDER
from .tape import Node, _Scope

__all__ = ["Function"]


class Function:
    """A differentiable function with a hand-written gradient.

    Subclass it and define ``forward(self, *inputs)`` (returns an array or a tuple
    of arrays; runs with recording paused) and ``backward(self, *output_grads)``
    (returns one gradient per input, None where there is none). ``forward`` keeps
    what ``backward`` needs with ``save_for_backward``; ``backward`` reads it from
    ``self.saved_tensors``. Each instance is called once::

        class Sigmoid(autograd.Function):
            def forward(self, x):
                y = 1 / (1 + nd.exp(-x))
                self.save_for_backward(y)
                return y

            def backward(self, dy):
                y, = self.saved_tensors
                return dy * y * (1 - y)

        with autograd.record():
            z = Sigmoid()(x)
    """

    def __init__(self):
        self._used = False
        self.saved_tensors = ()

    def save_for_backward(self, *args):
        """Keep ``args`` for ``backward`` as ``self.saved_tensors``."""
        self.saved_tensors = args

    def forward(self, *inputs):
        """Compute the outputs from the input arrays."""
        raise NotImplementedError(f"{type(self).__name__} must define forward(self, *inputs)")

    def backward(self, *output_grads):
        """Return the gradients of the inputs from those of the outputs."""
        raise NotImplementedError(f"{type(self).__name__} must define backward(self, "
                                  f"*output_grads)")

    def __call__(self, *inputs):
        if self._used:
            raise NetsError(f"each {type(self).__name__} instance (an autograd.Function) can be "
                            f"called only once; create a new instance for each call")
        self._used = True
        for i, x in enumerate(inputs):
            if not isinstance(x, NDArray):
                raise TypeError(f"{type(self).__name__}: inputs[{i}] must be an NDArray, got "
                                f"{type(x).__name__}")
        recorder = RECORDER.get()
        with _Scope(False, None):
            outputs = self.forward(*inputs)
        if recorder is None:
            return outputs
        single = isinstance(outputs, NDArray)
        outs = (outputs,) if single else tuple(outputs)
        for i, o in enumerate(outs):
            if not isinstance(o, NDArray):
                raise TypeError(f"{type(self).__name__}.forward must return NDArrays, output "
                                f"{i} is a {type(o).__name__}")
        # An output that is an input or already in a graph gets its own array object.
        outs = tuple(o.detach() if o._node is not None or o._grad_slot is not None
                     or any(o is x for x in inputs) else o for o in outs)
        node = recorder(_FunctionOp(self), inputs, {}, outs)
        if isinstance(node, Node):
            # Saved outputs become the node's views of them: no cycle output -> node -> output.
            views = {id(o): v for o, v in zip(outs, node.outputs)}
            self.saved_tensors = tuple(views.get(id(t), t) for t in self.saved_tensors)
        if single:
            return outs[0]
        return list(outs) if isinstance(outputs, list) else outs


class _FunctionOp:
    """What a node records for a ``Function`` call: its name and its vjp."""

    __slots__ = ("fn", "name")

    def __init__(self, fn):
        self.fn, self.name = fn, type(fn).__name__

    def _vjp_fn(self, node, *out_grads):
        return self.fn.backward(*out_grads)

    def release(self):
        self.fn.saved_tensors = ()
