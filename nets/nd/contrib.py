"""``nets.nd.contrib`` (MXNet's ``mx.nd.contrib``): the contrib operators nets declares
(``quadratic``, ``getnnz``, ``group_adagrad_update``) and ``SparseEmbedding``
(``Embedding`` with a row_sparse weight gradient)."""
from ..ops import Embedding as _Embedding
from ..ops.contrib import getnnz, quadratic
from ..ops.update import group_adagrad_update

__all__ = ["quadratic", "getnnz", "SparseEmbedding", "group_adagrad_update"]


def SparseEmbedding(data, weight, input_dim, output_dim, dtype="float32", deterministic=False,
                    out=None):
    """MXNet's ``contrib.SparseEmbedding``: ``Embedding(..., sparse_grad=True)`` (the
    weight's gradient is row_sparse; ``deterministic`` is accepted, nets' gradient is always
    deterministic)."""
    return _Embedding(data, weight, input_dim=input_dim, output_dim=output_dim, dtype=dtype,
                      sparse_grad=True, out=out)
