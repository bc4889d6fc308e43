"""Recording and training state: record/pause/train_mode/predict_mode scopes."""
import pytest

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
