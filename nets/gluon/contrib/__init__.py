"""``gluon.contrib``: ``gluon.contrib.nn`` (``SparseEmbedding``)."""
from . import nn

__all__ = ["nn"]
