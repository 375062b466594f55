"""ProgbarLogger prints what TF 2.4's tf.keras.callbacks.ProgbarLogger prints.

Keras's logger (tensorflow/python/keras/callbacks.py in the tensorflow-cpu 2.4.4 wheel) prints
``Epoch i/n`` (only when ``epochs > 1``) and hands the epoch's logs to a ``Progbar``; the bar's
own text is checked against TF 2.4.4's in tests/tnp_train/utils/test_utils_progbar.py. The
clock here advances 0.1 s per reading: one when an epoch's bar starts, one per batch, one at the
end, so an epoch of 3 steps shows ``0s 150ms/step`` ((0.4 - 0.1) / 2 s: Keras leaves the first
step out of the time per step), and verbose=2 (no batch readings) ``0s``.
"""
import io
import sys

import pytest

from cb_fakes import FakeModel, fake_evaluate, fake_fit, fake_predict
from tnp_train.callbacks import Callback, CallbackList, ProgbarLogger
from tnp_train.callbacks import progbar as progbar_mod
from tnp_train.utils import progbar as progbar_utils

FULL = "[==============================]"
B = "\b"


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    ticks = iter(range(10**6))
    monkeypatch.setattr(progbar_utils, "clock", lambda: next(ticks) * 0.1)


def _logs(e, s):
    return {"loss": 1.0 / (s + 1) + e, "acc": 0.0001}


def test_verbose_1_in_a_file_one_final_line_per_epoch(capsys):
    fake_fit(FakeModel(), [], epochs=2, steps=3, verbose=1, train_logs=_logs,
             val_logs=lambda e: {"loss": 2.0 + e})
    out = capsys.readouterr()
    assert out.err == ""
    # the epoch's last running values, then the validation values; tiny values as Keras
    assert out.out == (
        "Epoch 1/2\n"
        f"3/3 {FULL} - 0s 150ms/step - loss: 0.3333 - acc: 1.0000e-04 - val_loss: 2.0000\n"
        "Epoch 2/2\n"
        f"3/3 {FULL} - 0s 150ms/step - loss: 1.3333 - acc: 1.0000e-04 - val_loss: 3.0000\n")


def test_one_epoch_has_no_epoch_line(capsys):
    fake_fit(FakeModel(), [], epochs=1, steps=2, verbose=1)
    assert capsys.readouterr().out == f"2/2 {FULL} - 0s 200ms/step - loss: 1.0000\n"


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_verbose_1_on_a_terminal_redraws_throttled(monkeypatch):
    term = _Terminal()
    monkeypatch.setattr(sys, "stdout", term)
    # batches 0.1 s apart, a 0.25 s interval: the first batch (t=0.1), the 4th (t=0.4), then
    # the end (the 6th batch at t=0.6 is not due: 0.2 s after the 4th)
    monkeypatch.setattr(progbar_mod, "_REFRESH_INTERVAL", 0.25)
    fake_fit(FakeModel(), [], epochs=1, steps=6, verbose=1,
             train_logs=lambda e, s: {"loss": float(s)})
    frames = [f.strip(B) for f in term.getvalue().split("\r")]
    assert frames == [
        "",
        "1/6 [====>.........................] - ETA: 0s - loss: 0.0000e+00",
        # padded over the longer line before it, as Keras does
        "4/6 [===================>..........] - ETA: 0s - loss: 3.0000" + " " * 4,
        f"6/6 {FULL} - 1s 120ms/step - loss: 5.0000\n"]
    # each redraw first backs over the previous line (its text, not its padding)
    assert term.getvalue().count(B) == len(frames[1]) + len(frames[2].rstrip())


def test_verbose_2_one_line_per_epoch(capsys):
    fake_fit(FakeModel(), [], epochs=3, steps=4, verbose=2, train_logs=_logs,
             val_logs=lambda e: {"loss": 2.0})
    lines = capsys.readouterr().out.splitlines()
    assert lines == [x for e in range(3) for x in (
        f"Epoch {e + 1}/3",
        f"4/4 - 0s - loss: {1 / 4 + e:.4f} - acc: 1.0000e-04 - val_loss: 2.0000")]


def test_verbose_0_prints_nothing(capsys):
    fake_fit(FakeModel(), [ProgbarLogger(count_mode="steps")], epochs=2, steps=2, verbose=0,
             val_logs=lambda e: {"loss": 1.0})
    fake_evaluate(FakeModel(), [ProgbarLogger()], verbose=0)
    assert capsys.readouterr().out == ""


def test_no_evaluation_bar_inside_fit(capsys):
    fake_fit(FakeModel(), [], epochs=1, steps=2, verbose=2, val_logs=lambda e: {"loss": 7.0})
    assert capsys.readouterr().out == "2/2 - 0s - loss: 1.0000 - val_loss: 7.0000\n"


def test_evaluate_bar_and_line(capsys):
    fake_evaluate(FakeModel(), [], steps=4, verbose=1)
    assert capsys.readouterr().out == \
        f"4/4 {FULL} - 0s 133ms/step - loss: 3.5000 - accuracy: 0.2500\n"
    fake_evaluate(FakeModel(), [], steps=4, verbose=2)
    assert capsys.readouterr().out == "4/4 - 0s - loss: 3.5000 - accuracy: 0.2500\n"


def test_predict_shows_progress_but_no_outputs(capsys):
    fake_predict(FakeModel(), [], steps=3, verbose=1)
    assert capsys.readouterr().out == f"3/3 {FULL} - 0s 150ms/step\n"
    fake_predict(FakeModel(), [], steps=3, verbose=2)
    assert capsys.readouterr().out == "3/3 - 0s\n"


def test_stopped_mid_epoch_shows_the_steps_run(capsys):
    class StopAfter2(Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 1:
                self.model.stop_training = True

    fake_fit(FakeModel(), [StopAfter2()], epochs=3, steps=5, verbose=1)
    assert capsys.readouterr().out == (
        "Epoch 1/3\n2/5 [===========>..................] - 0s 200ms/step - loss: 1.0000\n")


def test_unknown_steps_counts_up_then_knows(monkeypatch):
    term = _Terminal()
    monkeypatch.setattr(sys, "stdout", term)
    monkeypatch.setattr(progbar_mod, "_REFRESH_INTERVAL", 0.0)
    cbs = CallbackList([], add_progbar=True, model=FakeModel(), verbose=1, epochs=1, steps=None)
    cbs.on_train_begin()
    cbs.on_epoch_begin(0)
    for s in range(3):
        cbs.on_train_batch_end(s, {"loss": 1.0})
    cbs.on_epoch_end(0, {"loss": 1.0})
    cbs.on_train_end()
    frames = [f.strip(B) for f in term.getvalue().split("\r")]
    assert frames == ["", "      1/Unknown - 0s 100ms/step - loss: 1.0000",
                      "      2/Unknown - 0s 100ms/step - loss: 1.0000",
                      "      3/Unknown - 0s 100ms/step - loss: 1.0000",
                      f"3/3 {FULL} - 0s 150ms/step - loss: 1.0000\n"]


def test_count_mode_samples(capsys):
    cbs = CallbackList([ProgbarLogger()], model=FakeModel(), verbose=1, epochs=1, steps=2,
                       samples=10)
    cbs.on_train_begin()
    cbs.on_epoch_begin(0)
    cbs.on_train_batch_end(0, {"loss": 1.0, "size": 6})
    cbs.on_train_batch_end(1, {"loss": 1.0, "size": 4})
    cbs.on_epoch_end(0, {"loss": 1.0})
    # no sample count was 1: the time per sample is the whole epoch's, 0.3 s / 10
    assert capsys.readouterr().out == f"10/10 {FULL} - 0s 30ms/sample - loss: 1.0000\n"


def test_bad_count_mode():
    with pytest.raises(ValueError, match="count_mode"):
        ProgbarLogger(count_mode="batches")
