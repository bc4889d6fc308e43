"""``nets.sym.contrib`` (MXNet's ``mx.sym.contrib``): graph nodes of the contrib operators
(``quadratic``, ``getnnz``) and ``SparseEmbedding`` (an ``Embedding`` node with a row_sparse
weight gradient)."""
from ..ops.contrib import CONTRIB_NAMES
from .symbol import namespace

_OPERATORS = namespace()
globals().update({name: _OPERATORS[op] for name, op in CONTRIB_NAMES.items()})

__all__ = sorted(CONTRIB_NAMES) + ["SparseEmbedding"]


def SparseEmbedding(data=None, weight=None, input_dim=None, output_dim=None, dtype="float32",
                    deterministic=False, name=None, **kwargs):
    """MXNet's ``sym.contrib.SparseEmbedding``: ``Embedding(..., sparse_grad=True)``, whose
    weight gradient is row_sparse (``deterministic`` is accepted: nets' is always)."""
    return _OPERATORS["Embedding"](data=data, weight=weight, input_dim=input_dim,
                                   output_dim=output_dim, dtype=dtype, sparse_grad=True,
                                   name=name, **kwargs)
