"""Fixtures shared by the operator tests."""
import contextlib

import numpy as np
import pytest

from nets.arrays import CSRNDArray, RowSparseNDArray
from nets.base import DenseResultWarning


@pytest.fixture
def no_densify(monkeypatch):
    """Make any densification of a sparse array (what the fallback does) fail the test."""
    def refuse(self):
        raise AssertionError(f"a {self.stype} operand was densified")
    for cls in (CSRNDArray, RowSparseNDArray):
        monkeypatch.setattr(cls, "asnumpy", refuse)


def dense_values(x):
    """``x``'s values as numpy without ``asnumpy`` (which ``no_densify`` forbids)."""
    out = np.zeros(x.shape, x.dtype)
    x._scatter_into(out)
    return out


def dense_result(expected):
    """The context of a call the test means to give a dense result the full size of a
    sparse input (``exp(csr)``, ``csr + 1``): ``pytest.warns(DenseResultWarning)`` when
    ``expected``, else none (the suite fails on an unexpected one)."""
    return pytest.warns(DenseResultWarning) if expected else contextlib.nullcontext()
