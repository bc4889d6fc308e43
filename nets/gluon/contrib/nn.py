"""``gluon.contrib.nn``: ``SparseEmbedding``, the layer ``nets.layers`` defines."""
from ...layers import SparseEmbedding

__all__ = ["SparseEmbedding"]
