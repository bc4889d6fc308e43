"""``nets.sym.sparse`` (MXNet's ``mx.sym.sparse``): the operators of ``nets.sym``, whose
storage inference gives sparse outputs where the inputs allow (``dot(csr, rsp)``,
``elemwise_add(rsp, rsp)``, ...)."""
from .symbol import namespace

_OPERATORS = namespace()
globals().update(_OPERATORS)

__all__ = sorted(_OPERATORS)
