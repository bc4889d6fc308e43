"""The operator registry's own behaviour: storage logging and the fallback warning's content."""
import logging

import pytest

import nets
from nets import nd
from nets.ops import registry


def test_storage_verbose_logs_every_op(monkeypatch, caplog):
    # NETS_STORAGE_VERBOSE=1 is read once at import; this flips the flag it sets
    monkeypatch.setattr(registry, "_VERBOSE", True)
    x = nd.array([[1.0, 0.0], [0.0, 2.0]]).tostype("csr")
    with caplog.at_level(logging.INFO, logger="nets.storage"):
        y = x * 2
        nd.dot(x, nd.ones((2, 3)))
    assert y.stype == "csr"
    lines = [r.getMessage() for r in caplog.records if r.name == "nets.storage"]
    assert "_mul_scalar: inputs ('csr',) -> outputs ('csr',)" in lines
    assert "dot: inputs ('csr', 'default') -> outputs ('default',)" in lines


def test_quiet_by_default(caplog):
    assert registry._VERBOSE is False  # the test environment does not set the variable
    with caplog.at_level(logging.INFO, logger="nets.storage"):
        nd.ones((2, 2)) * 2
    assert not [r for r in caplog.records if r.name == "nets.storage"]


def test_fallback_warning_names_op_stypes_and_bytes():
    x = nd.array([[1.0, 0.0], [0.0, 2.0]], dtype="float64").tostype("row_sparse")
    with pytest.warns(nets.StorageFallbackWarning,
                      match=r"log: .*\('row_sparse',\).*densified 32 bytes") as rec:
        out = nd.log(x)
    assert out.stype == "default" and len(rec) == 1
