"""The progress bar (ProgbarLogger) output, captured with capsys."""
import re

import pytest

from cb_fakes import FakeModel, fake_evaluate, fake_fit, fake_predict
from tnp_train.callbacks import Callback, CallbackList, ProgbarLogger
from tnp_train.callbacks import progbar as progbar_mod

tqdm = pytest.importorskip("tqdm")


def _logs(e, s):
    return {"loss": 1.0 / (s + 1) + e, "acc": 0.0001}


def _final_states(text):
    """The last rendering of each tqdm bar (a bar's final state is followed by a newline)."""
    return [line.split("\r")[-1] for line in text.split("\n") if line]


def test_verbose_1_one_bar_per_epoch_with_running_logs(capsys):
    fake_fit(FakeModel(), [], epochs=2, steps=3, verbose=1, train_logs=_logs,
             val_logs=lambda e: {"loss": 2.0 + e})
    out = capsys.readouterr()
    assert out.err == ""
    bars = _final_states(out.out)
    assert len(bars) == 2
    for epoch, bar in enumerate(bars):
        assert bar.startswith(f"Epoch {epoch + 1}/2: 100%")
        assert "3/3" in bar
        # the epoch's last running values, then the validation values; tiny values as Keras
        assert bar.endswith(f"loss: {1 / 3 + epoch:.4f} - acc: 1.0000e-04 - "
                            f"val_loss: {2.0 + epoch:.4f}]")


def _drawn_steps(monkeypatch, seconds_per_batch, steps=3):
    """(step count, postfix) at each redraw of the bar during an epoch, with a clock that
    advances ``seconds_per_batch`` per batch."""
    seen = []
    real = progbar_mod._tqdm

    class Spy(real):
        def refresh(self, *args, **kwargs):
            if self.n:              # not the empty bar tqdm draws when it starts
                seen.append((self.n, self.postfix))
            return super().refresh(*args, **kwargs)

    monkeypatch.setattr(progbar_mod, "_tqdm", Spy)
    ticks = iter(range(100))
    monkeypatch.setattr(progbar_mod, "_clock", lambda: next(ticks) * seconds_per_batch)
    fake_fit(FakeModel(), [], epochs=1, steps=steps, verbose=1,
             train_logs=lambda e, s: {"loss": float(s)})
    return seen


def test_verbose_1_bar_shows_running_loss_while_running(capsys, monkeypatch):
    assert _drawn_steps(monkeypatch, 1.0) == [(1, "loss: 0.0000"), (2, "loss: 1.0000"),
                                              (3, "loss: 2.0000")]


def test_verbose_1_bar_redraws_at_most_every_refresh_interval(capsys, monkeypatch):
    # batches 0.1 s apart, a 0.25 s interval: the first batch (t=0), then the 4th (t=0.3)
    monkeypatch.setattr(progbar_mod, "_REFRESH_INTERVAL", 0.25)
    assert _drawn_steps(monkeypatch, 0.1, steps=6) == [(1, "loss: 0.0000"), (4, "loss: 3.0000")]
    # the epoch's end still shows the epoch's last values and count
    bar, = _final_states(capsys.readouterr().out)
    assert "6/6" in bar and bar.endswith("loss: 5.0000]")


def test_verbose_2_one_line_per_epoch(capsys):
    fake_fit(FakeModel(), [], epochs=3, steps=4, verbose=2, train_logs=_logs,
             val_logs=lambda e: {"loss": 2.0})
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    for epoch, line in enumerate(lines):
        assert re.fullmatch(
            rf"Epoch {epoch + 1}/3 - 4/4 - \d+s - \d+(us|ms|s)/step - loss: "
            rf"{1 / 4 + epoch:.4f} - acc: 1\.0000e-04 - val_loss: 2\.0000", line), line


def test_without_tqdm_verbose_1_falls_back_to_lines(capsys, monkeypatch):
    monkeypatch.setattr(progbar_mod, "_tqdm", None)
    fake_fit(FakeModel(), [], epochs=2, steps=2, verbose=1, train_logs=_logs)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert lines[1].startswith("Epoch 2/2 - 2/2 - ") and lines[1].endswith("loss: 1.5000 - "
                                                                           "acc: 1.0000e-04")


def test_verbose_0_prints_nothing(capsys):
    fake_fit(FakeModel(), [ProgbarLogger(count_mode="steps")], epochs=2, steps=2, verbose=0,
             val_logs=lambda e: {"loss": 1.0})
    fake_evaluate(FakeModel(), [ProgbarLogger()], verbose=0)
    assert capsys.readouterr().out == ""


def test_no_evaluation_bar_inside_fit(capsys):
    fake_fit(FakeModel(), [], epochs=1, steps=2, verbose=2, val_logs=lambda e: {"loss": 7.0})
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].endswith("val_loss: 7.0000")


def test_evaluate_bar_and_line(capsys):
    fake_evaluate(FakeModel(), [], steps=4, verbose=1)
    bars = _final_states(capsys.readouterr().out)
    assert len(bars) == 1
    assert "4/4" in bars[0] and bars[0].endswith("loss: 3.5000 - accuracy: 0.2500]")
    fake_evaluate(FakeModel(), [], steps=4, verbose=2)
    line, = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"4/4 - \d+s - \d+(us|ms|s)/step - loss: 3\.5000 - accuracy: 0\.2500",
                        line)


def test_predict_shows_progress_but_no_outputs(capsys):
    fake_predict(FakeModel(), [], steps=3, verbose=1)
    bars = _final_states(capsys.readouterr().out)
    assert len(bars) == 1 and "3/3" in bars[0] and "outputs" not in bars[0]
    fake_predict(FakeModel(), [], steps=3, verbose=2)
    line, = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"3/3 - \d+s - \d+(us|ms|s)/step", line)


def test_stopped_mid_epoch_reports_steps_done(capsys, monkeypatch):
    monkeypatch.setattr(progbar_mod, "_tqdm", None)

    class StopAfter2(Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 1:
                self.model.stop_training = True

    fake_fit(FakeModel(), [StopAfter2()], epochs=3, steps=5, verbose=1)
    line, = capsys.readouterr().out.splitlines()
    assert line.startswith("Epoch 1/3 - 2/5 - ")


def test_unknown_steps_counts_up(capsys, monkeypatch):
    monkeypatch.setattr(progbar_mod, "_tqdm", None)
    cbs = CallbackList([], add_progbar=True, model=FakeModel(), verbose=1, epochs=1, steps=None)
    cbs.on_train_begin()
    cbs.on_epoch_begin(0)
    for s in range(3):
        cbs.on_train_batch_end(s, {"loss": 1.0})
    cbs.on_epoch_end(0, {"loss": 1.0})
    cbs.on_train_end()
    assert capsys.readouterr().out.startswith("Epoch 1/1 - 3/3 - ")


def test_count_mode_samples(capsys, monkeypatch):
    monkeypatch.setattr(progbar_mod, "_tqdm", None)
    cbs = CallbackList([ProgbarLogger()], model=FakeModel(), verbose=2, epochs=1, steps=2,
                       samples=10)
    cbs.on_train_begin()
    cbs.on_epoch_begin(0)
    cbs.on_train_batch_end(0, {"loss": 1.0, "size": 6})
    cbs.on_train_batch_end(1, {"loss": 1.0, "size": 4})
    cbs.on_epoch_end(0, {"loss": 1.0})
    assert re.match(r"Epoch 1/1 - 10/10 - \d+s - \d+(us|ms|s)/sample - loss: 1\.0000$",
                    capsys.readouterr().out)


def test_bad_count_mode():
    with pytest.raises(ValueError, match="count_mode"):
        ProgbarLogger(count_mode="batches")
