"""``nets.gluon``: MXNet's ``mx.gluon`` namespace, so that ``from mxnet import gluon`` and
``mx.gluon.X`` port by renaming ``mxnet``/``mx`` to ``nets``.

Re-exports only; each name is defined once in its own module:

- ``gluon.nn`` is ``nets.layers`` (blocks, containers, ``Dense``, ``Embedding``, ...);
- ``gluon.Block``, ``HybridBlock``, ``SymbolBlock``, ``Parameter``, ``ParameterDict`` come from
  ``nets.layers``, ``gluon.Trainer`` from ``nets.trainer``;
- ``gluon.loss`` is ``nets.loss``'s names; ``gluon.data`` the Gluon part of ``nets.data``
  (``Dataset``, ``ArrayDataset``, ``DataLoader``, samplers); ``gluon.utils`` is
  ``nets.utils`` (``clip_global_norm``, ``split_data``, ``split_and_load``);
- ``gluon.contrib.nn.SparseEmbedding`` is ``nets.layers.SparseEmbedding``.
"""
from ..layers import Block, HybridBlock, Parameter, ParameterDict, SymbolBlock
from ..trainer import Trainer
from . import contrib, data, loss, nn, utils

__all__ = ["Block", "HybridBlock", "Parameter", "ParameterDict", "SymbolBlock", "Trainer",
           "contrib", "data", "loss", "nn", "utils"]
