"""``Embedding``: a lookup table of ``input_dim`` rows of size ``output_dim``."""
from .block import HybridBlock

__all__ = ["Embedding"]


class Embedding(HybridBlock):
    """Maps integer ids (or whole-number floats) to rows of a dense weight.

    ``sparse_grad=True`` makes the weight's gradient row_sparse: it holds just the
    batch's unique ids (duplicates summed). Do sparse gradients require sparse
    weights? No: the weight stays dense and an optimizer with ``lazy_update``
    updates only the gradient's rows. An id outside ``[0, input_dim)`` raises.
    """

    def __init__(self, input_dim, output_dim, dtype="float32", weight_initializer=None,
                 sparse_grad=False, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._input_dim, self._output_dim = input_dim, output_dim
        self._sparse_grad = sparse_grad
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(input_dim, output_dim), dtype=dtype,
                                          init=weight_initializer,
                                          grad_stype="row_sparse" if sparse_grad else "default")

    def hybrid_forward(self, F, x, weight):
        return F.Embedding(x, weight, input_dim=self._input_dim, output_dim=self._output_dim,
                           sparse_grad=self._sparse_grad)

    def __repr__(self):
        return (f"Embedding({self._input_dim} -> {self._output_dim}, "
                f"sparse_grad={self._sparse_grad})")
