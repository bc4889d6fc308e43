"""Fixtures shared by the operator tests."""
import numpy as np
import pytest

from nets.arrays import CSRNDArray, RowSparseNDArray


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
