"""Basic layers: ``Dense``, ``Activation``, ``Dropout``, ``Flatten``."""
import numpy as np

from .block import HybridBlock

__all__ = ["Dense", "Activation", "Dropout", "Flatten"]


class Dense(HybridBlock):
    """Fully connected layer ``y = act(x . W^T + b)`` with W of shape ``(units, in_units)``.

    A CSR input runs the sparse kernel (never densified). Its weight gradient is
    dense: with this layout the touched entries are columns of W. For row_sparse
    weight gradients use ``FullyConnectedSparse`` (weight ``(in_units, units)``).
    ``in_units=0`` defers the weight's shape to the first forward pass.
    """

    def __init__(self, units, activation=None, use_bias=True, flatten=True, dtype="float32",
                 weight_initializer=None, bias_initializer="zeros", in_units=0, prefix=None,
                 params=None):
        super().__init__(prefix=prefix, params=params)
        self._units, self._flatten, self._act = units, flatten, activation
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(units, in_units), dtype=dtype,
                                          init=weight_initializer, allow_deferred_init=True)
            self.bias = (self.params.get("bias", shape=(units,), dtype=dtype,
                                         init=bias_initializer, allow_deferred_init=True)
                         if use_bias else None)

    def infer_shape(self, x, *args):
        in_units = int(np.prod(x.shape[1:])) if self._flatten else x.shape[-1]
        self.weight.shape = (self._units, in_units)

    def hybrid_forward(self, F, x, weight, bias=None):
        out = F.FullyConnected(x, weight, bias, num_hidden=self._units, no_bias=bias is None,
                               flatten=self._flatten)
        return out if self._act is None else F.Activation(out, act_type=self._act)

    def __repr__(self):
        shape = self.weight.shape
        return f"Dense({shape[1] or None} -> {shape[0]}, {self._act or 'linear'})"


class Activation(HybridBlock):
    """Applies ``act_type``: 'relu', 'sigmoid', 'tanh', 'softrelu' or 'softsign'."""

    def __init__(self, activation, prefix=None):
        super().__init__(prefix=prefix)
        self._act = activation

    def hybrid_forward(self, F, x):
        return F.Activation(x, act_type=self._act)

    def __repr__(self):
        return f"Activation({self._act})"


class Dropout(HybridBlock):
    """Zeroes each element with probability ``rate`` while training (inverted scaling)."""

    def __init__(self, rate, axes=(), prefix=None):
        super().__init__(prefix=prefix)
        self._rate, self._axes = rate, axes

    def hybrid_forward(self, F, x):
        return F.Dropout(x, p=self._rate, axes=self._axes)

    def __repr__(self):
        return f"Dropout(p={self._rate})"


class Flatten(HybridBlock):
    """Reshapes ``(batch, ...)`` to ``(batch, -1)``."""

    def hybrid_forward(self, F, x):
        return F.flatten(x)
