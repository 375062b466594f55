"""ReduceLROnPlateau and LearningRateScheduler against hand-traced expectations."""
import numpy as np
import pytest

from cb_fakes import FakeModel, fake_fit, val_sequence
from tnp_train.callbacks import LearningRateScheduler, ReduceLROnPlateau

PLATEAU = [5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 4.0, 4.0, 4.0, 4.0]


def _lr_trace(values, lr=1.0, **kw):
    model = FakeModel(learning_rate=lr)
    cb = ReduceLROnPlateau(**kw)
    hist, _ = fake_fit(model, [cb], epochs=len(values), steps=1, val_logs=val_sequence(values))
    return hist.history["lr"], model.optimizer.learning_rate


@pytest.mark.parametrize("cooldown,lrs", [
    # no cooldown: reductions after 2 flat epochs (epochs 2, 4 and 8)
    (0, [1, 1, 1, 0.5, 0.5, 1 / 4, 1 / 4, 1 / 4, 1 / 4, 1 / 8]),
    # cooldown 1 changes nothing (Keras's rule: the counter is decreased before the epoch is
    # considered, so only the following cooldown - 1 epochs go uncounted)
    (1, [1, 1, 1, 0.5, 0.5, 1 / 4, 1 / 4, 1 / 4, 1 / 4, 1 / 8]),
    # cooldown 2: one epoch is not counted; reductions at epochs 2, 5 and 8
    (2, [1, 1, 1, 0.5, 0.5, 0.5, 1 / 4, 1 / 4, 1 / 4, 1 / 8]),
])
def test_reduces_at_the_right_epochs_with_cooldown(cooldown, lrs):
    # "lr" in the logs is the rate used during the epoch (read before any reduction)
    trace, final = _lr_trace(PLATEAU, patience=2, factor=0.5, min_delta=0, cooldown=cooldown)
    assert trace == lrs
    assert final == lrs[-1]        # no reduction at the last epoch


def test_min_delta_and_mode_max():
    # gains of 0.05 are below min_delta=0.1: a plateau for mode "max" (auto for val_acc)
    model = FakeModel(learning_rate=1.0)
    cb = ReduceLROnPlateau(monitor="val_acc", patience=1, factor=0.5, min_delta=0.1)
    hist, _ = fake_fit(model, [cb], epochs=4, steps=1,
                       val_logs=val_sequence([0.5, 0.55, 0.8, 0.85], "acc"))
    assert cb.mode == "max"
    assert hist.history["lr"] == [1.0, 1.0, 0.5, 0.5]
    assert model.optimizer.learning_rate == 0.25


def test_min_lr_floor():
    trace, final = _lr_trace([1.0] * 5, patience=1, factor=0.1, min_lr=0.05)
    assert trace == [1.0, 1.0, 0.1, 0.05, 0.05]
    assert final == 0.05


def test_factor_must_be_below_one():
    with pytest.raises(ValueError, match="factor >= 1.0"):
        ReduceLROnPlateau(factor=1.0)


def test_epsilon_is_min_delta():
    assert ReduceLROnPlateau(epsilon=0.5).min_delta == 0.5
    with pytest.raises(TypeError, match="bogus"):
        ReduceLROnPlateau(bogus=1)


def test_missing_monitor_warns():
    model = FakeModel(learning_rate=1.0)
    with pytest.warns(UserWarning, match="`val_loss` which is not available"):
        hist, _ = fake_fit(model, [ReduceLROnPlateau(patience=0)], epochs=3, steps=1)
    assert hist.history["lr"] == [1.0, 1.0, 1.0]


def test_verbose_message(capsys):
    model = FakeModel(learning_rate=1.0)
    fake_fit(model, [ReduceLROnPlateau(patience=1, factor=0.5, verbose=1)], epochs=2, steps=1,
             val_logs=val_sequence([1.0, 1.0]))
    out = capsys.readouterr().out
    assert "Epoch 00002: ReduceLROnPlateau reducing learning rate to 0.5." in out


def test_schedule_learning_rate_is_type_error():
    model = FakeModel()
    model.optimizer.learning_rate = lambda step: 0.1
    with pytest.raises(TypeError, match="schedule"):
        fake_fit(model, [ReduceLROnPlateau()], epochs=1, steps=1,
                 val_logs=val_sequence([1.0]))


def test_scheduler_one_argument():
    model = FakeModel(learning_rate=1.0)
    seen = []
    cb = LearningRateScheduler(lambda epoch: 0.1 * (epoch + 1))
    fake_fit(model, [cb], epochs=3, steps=1,
             train_logs=lambda e, s: seen.append(model.optimizer.learning_rate) or {"loss": 1})
    assert seen == [0.1, 0.2, pytest.approx(0.3)]
    assert model.history.history["lr"] == seen


def test_scheduler_two_arguments_receives_current_rate():
    model = FakeModel(learning_rate=1.0)
    calls = []

    def schedule(epoch, lr):
        calls.append((epoch, lr))
        return lr * 0.5 if epoch >= 1 else lr

    hist, _ = fake_fit(model, [LearningRateScheduler(schedule)], epochs=4, steps=1)
    assert calls == [(0, 1.0), (1, 1.0), (2, 0.5), (3, 0.25)]
    assert hist.history["lr"] == [1.0, 0.5, 0.25, 0.125]


def test_scheduler_accepts_numpy_scalars_and_rejects_non_numbers():
    model = FakeModel(learning_rate=1.0)
    fake_fit(model, [LearningRateScheduler(lambda e: np.float32(0.5))], epochs=1, steps=1)
    assert model.optimizer.learning_rate == 0.5 and type(model.optimizer.learning_rate) is float
    with pytest.raises(ValueError, match="should be a float"):
        fake_fit(model, [LearningRateScheduler(lambda e: "0.1")], epochs=1, steps=1)
    with pytest.raises(TypeError, match="callable"):
        LearningRateScheduler(0.1)


def test_scheduler_type_error_inside_schedule_is_not_swallowed():
    def schedule(epoch, lr):
        raise TypeError("bug in my schedule")

    with pytest.raises(TypeError, match="bug in my schedule"):
        fake_fit(FakeModel(), [LearningRateScheduler(schedule)], epochs=1, steps=1)


def test_scheduler_verbose(capsys):
    fake_fit(FakeModel(), [LearningRateScheduler(lambda e: 0.25, verbose=1)], epochs=1, steps=1)
    assert "Epoch 00001: LearningRateScheduler setting learning rate to 0.25." in \
        capsys.readouterr().out
