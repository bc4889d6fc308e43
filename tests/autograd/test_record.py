"""Recording and training state: record/pause/train_mode/predict_mode scopes."""
import numpy as np
import pytest

import nets

from nets import autograd
from nets.ops.registry import RECORDER, TRAINING


def _state():
    return autograd.is_recording(), autograd.is_training()


def test_default_state():
    assert _state() == (False, False)
    assert RECORDER.get() is None and TRAINING.get() is False


@pytest.mark.parametrize("scope, inside", [
    (autograd.record, (True, True)),
    (lambda: autograd.record(train_mode=False), (True, False)),
    (autograd.pause, (False, False)),
    (lambda: autograd.pause(train_mode=True), (False, True)),
    (autograd.train_mode, (False, True)),
    (autograd.predict_mode, (False, False)),
])
def test_scopes_set_and_restore(scope, inside):
    with scope():
        assert _state() == inside
    assert _state() == (False, False)


def test_nesting():
    with autograd.record():
        with autograd.predict_mode():
            assert _state() == (True, False)
        with autograd.pause():
            assert _state() == (False, False)
            with autograd.record(train_mode=False):
                assert _state() == (True, False)
                with autograd.train_mode():
                    assert _state() == (True, True)
            assert _state() == (False, False)
        assert _state() == (True, True)
    assert _state() == (False, False)


def test_state_restored_after_an_exception():
    with pytest.raises(RuntimeError):
        with autograd.record():
            with autograd.pause(train_mode=True):
                raise RuntimeError("boom")
    assert _state() == (False, False)


def test_set_recording_and_set_training_return_the_previous_state():
    with autograd.pause():
        assert autograd.set_recording(True) is False
        assert autograd.set_training(True) is False
        assert _state() == (True, True)
        assert autograd.set_recording(False) is True
        assert autograd.set_training(False) is True
    assert _state() == (False, False)


def test_inplace_write_inside_record_is_refused_for_graph_arrays():
    x = nets.nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        with pytest.raises(nets.NetsError, match="in-place write"):
            x += 1
        with pytest.raises(nets.NetsError, match="in-place write"):
            x[0] = 5
        y = x * 2
        with pytest.raises(nets.NetsError, match="in-place write"):
            y[:] = 0
        z = nets.nd.ones((2,))  # a constant: writing it is harmless
        z[:] = 3


def test_inplace_op_on_constant_inside_record_works_in_place():
    c = nets.nd.array([1.0, 2.0])
    alias = c
    with autograd.record():
        c += 1
    assert alias is c and np.array_equal(c.asnumpy(), [2.0, 3.0])


def test_out_argument_inside_record_carries_the_node():
    x = nets.nd.array([1.0, 2.0])
    x.attach_grad()
    buf = nets.nd.zeros((2,))
    with autograd.record():
        nets.nd.broadcast_mul(x, x, out=buf)
        loss = buf * 3
    loss.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 6 * np.array([1.0, 2.0]))
