"""A Parameter initialized on several contexts (MXNet's copy per device): nets keeps one
array, listed once per context, and hands rows out on the context of the ids asked for."""
import numpy as np
import pytest

import nets
from nets import nd
from nets.base import NetsError
from nets.layers import Parameter


def test_one_array_listed_once_per_context():
    p = Parameter("w", shape=(4, 2), stype="row_sparse")
    p.initialize(init="ones", ctx=[nets.cpu(0), nets.cpu(1)])
    assert p.list_ctx() == [nets.cpu(0), nets.cpu(1)]
    for listed in (p.list_data(), p.list_grad(), p._data):
        assert len(listed) == 2 and listed[0] is listed[1]
    assert p.list_data()[0] is p.data() and p._data[0] is p.data()
    assert p.list_grad()[0] is p.grad() and p.grad().stype == "row_sparse"
    p.reset_ctx([nets.cpu(1), nets.cpu(2), nets.cpu(3)])
    assert p.list_ctx() == [nets.cpu(1), nets.cpu(2), nets.cpu(3)]
    assert len(p.list_data()) == 3
    with pytest.raises(NetsError, match=r"ctx=\[\]"):
        p.reset_ctx([])


def test_private_data_is_none_before_initialization_and_read_only():
    p = Parameter("w", shape=(2, 2))
    assert p._data is None
    p.initialize(ctx=nets.cpu(0))
    assert p._data == [p.data()] and p.list_ctx() == [nets.cpu(0)]
    with pytest.raises(AttributeError):
        p._data = None


def test_rows_come_on_the_context_of_the_ids():
    p = Parameter("w", shape=(4, 2), stype="row_sparse")
    p.initialize(init="ones", ctx=[nets.cpu(1), nets.cpu(2)])
    value = np.arange(8, dtype=np.float32).reshape(4, 2)
    p.set_data(nd.array(value).tostype("row_sparse"))
    for ctx in (nets.cpu(1), nets.cpu(2)):
        rows = p.row_sparse_data(nd.array([0, 2], ctx=ctx))
        assert rows.context == ctx and rows.stype == "row_sparse"
        np.testing.assert_array_equal(rows.asnumpy(), value * np.array([[1], [0], [1], [0]]))
    listed = p.list_row_sparse_data(nd.array([1]))
    assert len(listed) == 2
    np.testing.assert_array_equal(listed[1].asnumpy()[1], value[1])
