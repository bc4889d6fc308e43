"""Writing an array after an operator recorded it and before ``backward`` is refused
(issue 24, item 5): the gradient would silently come from the new values."""
import numpy as np
import pytest

from nets import autograd, nd
from nets.base import NetsError


def _leaf(values):
    x = nd.array(np.array(values, dtype=np.float32))
    x.attach_grad()
    return x


def test_write_after_record_is_refused_naming_the_op():
    x = _leaf([1.0, 1.0])
    with autograd.record():
        y = (x * x).sum()
    x[:] = 10  # d(x*x).sum()/dx would be [20, 20] from the new values instead of [2, 2]
    with pytest.raises(NetsError, match=r"'broadcast_mul'.*modified in place"):
        y.backward()


def test_unmodified_graph_differentiates_as_before():
    x = _leaf([1.0, 3.0])
    with autograd.record():
        y = (x * x).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [2.0, 6.0])


@pytest.mark.parametrize("write", [
    lambda x: x.__setitem__(slice(None), 10),
    lambda x: x.__setitem__(0, 10),
    lambda x: x[0:1].__setitem__(slice(None), 10),  # through a view made after recording
    lambda x: x.__iadd__(1),
    lambda x: nd.ones(x.shape).copyto(x),
    lambda x: nd.exp(nd.ones(x.shape), out=x),
])
def test_every_kind_of_write_is_seen(write):
    x = _leaf([1.0, 2.0])
    with autograd.record():
        y = (x * x).sum()
    write(x)
    with pytest.raises(NetsError, match="modified in place"):
        y.backward()


def test_write_through_a_view_made_before_recording():
    x = _leaf([1.0, 2.0, 3.0])
    head = x[:2]
    with autograd.record():
        y = (x * x).sum()
    head[:] = 0
    with pytest.raises(NetsError, match="modified in place"):
        y.backward()


def test_writing_a_saved_output_is_refused():
    x = _leaf([0.5, 1.0])
    with autograd.record():
        e = nd.exp(x)  # exp's gradient reads its output
        s = e.sum()
    e[:] = 0
    with pytest.raises(NetsError, match="modified in place"):
        s.backward()


def test_writing_a_constant_input_is_refused():
    w = _leaf([[1.0], [2.0]])
    data = nd.array(np.array([[1.0, 1.0]], dtype=np.float32))
    with autograd.record():
        y = nd.dot(data, w).sum()
    data[:] = 5  # dot's gradient w.r.t. w is data.T . g
    with pytest.raises(NetsError, match="'dot'"):
        y.backward()


def test_row_sparse_leaf_reassigned_is_refused():
    w = nd.sparse.row_sparse_array((np.ones((1, 2), np.float32), [1]), shape=(3, 2))
    w.attach_grad()
    with autograd.record():
        y = (w * 2).sum()
    w[:] = nd.sparse.row_sparse_array((np.full((1, 2), 7, np.float32), [0]), shape=(3, 2))
    with pytest.raises(NetsError, match="modified in place"):
        y.backward()


def test_writes_that_do_not_touch_the_graph_are_allowed():
    x = _leaf([1.0, 2.0])
    x[:] = np.array([3.0, 4.0], np.float32)  # before recording
    with autograd.record():
        y = (x * x).sum()
    x.copy()[:] = 0  # a copy
    picked = x[np.array([0, 1])]  # advanced indexing copies
    picked[:] = 0
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [6.0, 8.0])
    x[:] = 0  # after backward: the graph is gone


def test_retained_graph_after_a_write_is_refused():
    x = _leaf([1.0, 2.0])
    with autograd.record():
        y = (x * x).sum()
    y.backward(retain_graph=True)
    np.testing.assert_allclose(x.grad.asnumpy(), [2.0, 4.0])
    x += 1
    with pytest.raises(NetsError, match="modified in place"):
        y.backward()


def test_version_counts_writes_shared_with_views():
    x = nd.zeros((3,))
    assert x.version == 0
    v = x[1:]
    v[:] = 1
    x[0] = 2
    assert x.version == v.version == 2
    c = x[np.array([0])]
    c[:] = 5
    assert x.version == 2 and c.version == 1


def test_last_write_is_the_write_count_of_the_latest_write_shared_with_views():
    from nets.arrays.dense import WRITES
    x, other = nd.zeros((3,)), nd.zeros((3,))
    assert x.last_write == 0
    v = x[1:]
    v[:] = 1
    first = x.last_write
    assert first == WRITES[0] and v.last_write == first
    other[:] = 2  # another array's write counts, and leaves x's mark
    assert WRITES[0] > first and x.last_write == first
    x[0] = 3
    assert x.last_write == v.last_write == WRITES[0] > first


def test_writes_to_other_arrays_between_record_and_backward_are_allowed():
    x = _leaf([1.0, 2.0])
    z = nd.zeros((2,))
    x[:] = np.array([2.0, 3.0], np.float32)  # before recording: the node sees these values
    with autograd.record():
        y = (x * x).sum()
    z[:] = 5  # every node's vjp then looks at its own arrays' latest writes
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [4.0, 6.0])
