"""Layers for sparse inputs and sparse gradients: ``FullyConnectedSparse``, ``SparseEmbedding``."""
from ..ops.nn import dot_bias as _dot_bias
from .block import HybridBlock, op_in

__all__ = ["FullyConnectedSparse", "SparseEmbedding"]


class FullyConnectedSparse(HybridBlock):
    """``y = x . W + b`` with W of shape ``(in_units, units)`` — the layout whose gradient
    for a CSR batch ``x`` is ``x^T . dy``: non-zero only in the rows of the features the
    batch touches. ``weight_grad_stype='row_sparse'`` delivers exactly those rows (a batch
    of 10 rows x 10 features over 10^6 x 128 gives a ~50 KB gradient instead of 512 MB).
    The weight itself stays dense: sparse gradients do not need sparse weights. The layer
    is one operator (``_dot_bias``): the bias fills the output the sparse kernel adds into.
    """

    def __init__(self, in_units, units, weight_grad_stype="default", use_bias=True,
                 dtype="float32", weight_initializer=None, bias_initializer="zeros", prefix=None,
                 params=None):
        super().__init__(prefix=prefix, params=params)
        self._units = units
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(in_units, units), dtype=dtype,
                                          init=weight_initializer, allow_deferred_init=True,
                                          grad_stype=weight_grad_stype)
            self.bias = (self.params.get("bias", shape=(units,), dtype=dtype,
                                         init=bias_initializer, allow_deferred_init=True)
                         if use_bias else None)

    def infer_shape(self, x, *args):
        self.weight.shape = (x.shape[1], self._units)

    def hybrid_forward(self, F, x, weight, bias=None):
        # dot(x, weight) + bias as one operator: for a csr batch the bias fills the output
        # the sparse kernel adds into (one op, one tape node, one vjp instead of two)
        return op_in(F, _dot_bias)(x, weight, bias)

    def __repr__(self):
        return (f"FullyConnectedSparse({self.weight.shape[0]} -> {self._units}, "
                f"grad_stype={self.weight.grad_stype})")


class SparseEmbedding(HybridBlock):
    """Embedding whose weight AND gradient are row_sparse: only looked-up rows are stored
    in the gradient, and an optimizer touches only those rows."""

    def __init__(self, input_dim, output_dim, dtype="float32", weight_initializer=None,
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._input_dim, self._output_dim = input_dim, output_dim
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(input_dim, output_dim), dtype=dtype,
                                          init=weight_initializer, stype="row_sparse",
                                          grad_stype="row_sparse")

    def hybrid_forward(self, F, x, weight):
        return F.Embedding(x, weight, input_dim=self._input_dim, output_dim=self._output_dim,
                           sparse_grad=True)

    def __repr__(self):
        return f"SparseEmbedding({self._input_dim} -> {self._output_dim})"
