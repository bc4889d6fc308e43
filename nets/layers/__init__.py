"""``nets.layers`` (MXNet's ``gluon.nn``): blocks, parameters and layers."""
from .basic import Activation, Dense, Dropout, Flatten
from .block import Block, HybridBlock
from .containers import HybridLambda, HybridSequential, Lambda, Sequential
from .embedding import Embedding
from .parameter import DeferredInitializationError, Parameter, ParameterDict
from .sparse import FullyConnectedSparse, SparseEmbedding
from .symbol_block import SymbolBlock

__all__ = ["Activation", "Block", "DeferredInitializationError", "Dense", "Dropout",
           "Embedding", "Flatten", "FullyConnectedSparse", "HybridBlock", "HybridLambda",
           "HybridSequential", "Lambda", "Parameter", "ParameterDict", "Sequential",
           "SparseEmbedding", "SymbolBlock"]
