"""EarlyStopping: the stopping epoch and the restored weights against hand-written rules."""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from cb_fakes import FakeModel, fake_fit, val_sequence
from tnp_train.callbacks import EarlyStopping

STEPS = 2


def _weights_of(epoch):
    """The fake model's weights at the end of ``epoch``."""
    return 100 * epoch + STEPS - 1


def reference(values, patience, min_delta, baseline, start, mode="min"):
    """(epoch at which training stops or None, best epoch), by counting epochs since the last
    epoch that beat both the best so far and the baseline."""
    sign = 1 if mode == "min" else -1
    best, best_epoch, last_reset = math.inf, None, start - 1
    for e, v in enumerate(values):
        if e < start:
            continue
        v = sign * v
        reset = False
        if v + min_delta < best:
            best, best_epoch = v, e
            reset = baseline is None or v + min_delta < sign * baseline
        if reset:
            last_reset = e
        elif e - last_reset >= max(patience, 1):
            return e, best_epoch
    return None, best_epoch


def _run(values, **kw):
    model = FakeModel()
    cb = EarlyStopping(**kw)
    hist, ran = fake_fit(model, [cb], epochs=len(values), steps=STEPS,
                         val_logs=val_sequence(values, kw.get("monitor", "val_loss")[4:]))
    return model, cb, ran


def test_stops_at_the_right_epoch_and_restores_best_weights():
    values = [1.0, 0.8, 0.9, 0.85, 0.95, 0.7]
    model, cb, ran = _run(values, patience=2, restore_best_weights=True)
    assert ran == [0, 1, 2, 3]                  # best at 1, no improvement at 2 and 3: stop
    assert model.stop_training and cb.stopped_epoch == 3 and cb.best_epoch == 1
    assert cb.best == 0.8
    np.testing.assert_array_equal(model.w, _weights_of(1))


def test_without_restore_keeps_last_weights():
    model, cb, ran = _run([1.0, 0.8, 0.9, 0.85, 0.95, 0.7], patience=2)
    assert ran == [0, 1, 2, 3]
    np.testing.assert_array_equal(model.w, _weights_of(3))
    assert cb.best_weights is None


def test_best_weights_are_a_copy():
    # the fake model hands out its live array; the snapshot must not follow later batches
    model, cb, _ = _run([1.0, 2.0, 3.0], patience=1, restore_best_weights=True)
    np.testing.assert_array_equal(model.w, _weights_of(0))


def test_patience_zero_stops_at_first_non_improvement():
    _, cb, ran = _run([3.0, 2.0, 2.0, 1.0], patience=0)
    assert ran == [0, 1, 2] and cb.stopped_epoch == 2


def test_min_delta():
    # improvements of 0.05 do not count with min_delta=0.1 (nor does its sign)
    _, cb, ran = _run([1.0, 0.95, 0.9, 0.5], patience=2, min_delta=-0.1)
    assert ran == [0, 1, 2] and cb.min_delta == 0.1


def test_mode_max_auto_for_accuracy():
    model, cb, ran = _run([0.5, 0.7, 0.6, 0.65, 0.9], monitor="val_accuracy", patience=2,
                          restore_best_weights=True)
    assert cb.mode == "max" and ran == [0, 1, 2, 3]
    np.testing.assert_array_equal(model.w, _weights_of(1))


def test_baseline_never_beaten_stops_after_patience():
    model, cb, ran = _run([0.9, 0.8, 0.7, 0.6, 0.1], baseline=0.5, patience=3,
                          restore_best_weights=True)
    assert ran == [0, 1, 2]
    # the best epoch is still tracked, so there are weights to restore
    np.testing.assert_array_equal(model.w, _weights_of(2))


def test_start_from_epoch_ignores_warmup():
    _, cb, ran = _run([1.0, 2.0, 3.0, 4.0, 3.5, 3.6, 3.7], patience=1, start_from_epoch=3)
    assert ran == [0, 1, 2, 3, 4, 5]
    assert cb.best_epoch == 4


def test_runs_to_the_end_without_stopping():
    model, cb, ran = _run([3.0, 2.0, 1.0], patience=1, restore_best_weights=True)
    assert ran == [0, 1, 2] and cb.stopped_epoch == 0 and not model.stop_training


def test_missing_monitor_warns_and_never_stops():
    model = FakeModel()
    with pytest.warns(UserWarning, match="`val_loss` which is not available"):
        _, ran = fake_fit(model, [EarlyStopping(patience=0)], epochs=3, steps=1)
    assert ran == [0, 1, 2]


def test_verbose_messages(capsys):
    _run([1.0, 2.0, 3.0], patience=1, restore_best_weights=True, verbose=1)
    out = capsys.readouterr().out
    assert "Restoring model weights from the end of the best epoch: 1." in out
    assert "Epoch 00002: early stopping" in out


def test_state_reset_between_fits():
    model = FakeModel()
    cb = EarlyStopping(patience=1)
    fake_fit(model, [cb], epochs=3, steps=1, val_logs=val_sequence([1.0, 2.0, 3.0]))
    assert cb.stopped_epoch == 1
    _, ran = fake_fit(model, [cb], epochs=3, steps=1, val_logs=val_sequence([3.0, 2.0, 1.0]))
    assert ran == [0, 1, 2] and cb.stopped_epoch == 0 and cb.best == 1.0


@given(values=st.lists(st.integers(0, 6).map(float), min_size=1, max_size=9),
       patience=st.integers(0, 3), min_delta=st.sampled_from([0.0, 0.5, 1.0]),
       baseline=st.one_of(st.none(), st.integers(0, 6).map(lambda b: b + 0.25)),
       start=st.integers(0, 2), mode=st.sampled_from(["min", "max"]))
def test_matches_reference(values, patience, min_delta, baseline, start, mode):
    model, cb, ran = _run(values, patience=patience, min_delta=min_delta, baseline=baseline,
                          start_from_epoch=start, mode=mode, restore_best_weights=True)
    stop, best_epoch = reference(values, patience, min_delta, baseline, start, mode)
    expected_ran = list(range(len(values) if stop is None else stop + 1))
    assert ran == expected_ran
    assert model.stop_training == (stop is not None)
    if stop is not None:
        np.testing.assert_array_equal(model.w, _weights_of(best_epoch))
    else:
        np.testing.assert_array_equal(model.w, _weights_of(len(values) - 1))
