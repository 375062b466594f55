"""CSVLogger, TerminateOnNaN, LambdaCallback and TensorBoard (with a fake event writer)."""
import math
import os

import numpy as np
import pytest

from cb_fakes import FakeModel, fake_evaluate, fake_fit, val_sequence
from tnp_train.callbacks import (Callback, CSVLogger, LambdaCallback, TensorBoard,
                                 TerminateOnNaN)
from tnp_train.callbacks import tensorboard as tb_mod


# ---------------------------------------------------------------------------- CSVLogger
def test_csv_contents(tmp_path):
    path = tmp_path / "log.csv"
    fake_fit(FakeModel(), [CSVLogger(path)], epochs=3, steps=2,
             train_logs=lambda e, s: {"loss": 0.5 * e + s, "acc": 0.25},
             val_logs=val_sequence([1.5, 1.25, 1.0]))
    assert path.read_bytes() == (b"epoch,acc,loss,val_loss\r\n"
                                 b"0,0.25,1.0,1.5\r\n"
                                 b"1,0.25,1.5,1.25\r\n"
                                 b"2,0.25,2.0,1.0\r\n")


def test_csv_separator_append_and_missing_keys(tmp_path):
    path = tmp_path / "log.tsv"
    fake_fit(FakeModel(), [CSVLogger(str(path), separator="\t")], epochs=1, steps=1,
             val_logs=val_sequence([2.0]))
    # appended run: no second header; a key missing from the logs is NA, a new one is left out
    fake_fit(FakeModel(), [CSVLogger(str(path), separator="\t", append=True)], epochs=2,
             steps=1, train_logs=lambda e, s: {"loss": 3.0, "new": 1.0} if e else {"loss": 3.0})
    assert path.read_bytes().decode() == ("epoch\tloss\tval_loss\n0\t1.0\t2.0\n"
                                "0\t3.0\n1\t3.0\n").replace("\n", "\r\n")


def test_csv_append_to_missing_or_empty_file_writes_header(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("")
    fake_fit(FakeModel(), [CSVLogger(path, append=True)], epochs=1, steps=1)
    assert path.read_bytes().decode() == "epoch,loss\r\n0,1.0\r\n"
    fake_fit(FakeModel(), [CSVLogger(tmp_path / "new.csv", append=True)], epochs=1, steps=1)
    assert (tmp_path / "new.csv").read_bytes().decode() == "epoch,loss\r\n0,1.0\r\n"


def test_csv_na_and_list_values_and_file_closed(tmp_path):
    path = tmp_path / "log.csv"
    cb = CSVLogger(path)
    logs = [{"loss": 1.0, "val_loss": 2.0}, {"loss": 0.5}]
    cbs_model = FakeModel()
    cb.set_model(cbs_model)
    cb.on_train_begin()
    cb.on_epoch_end(0, logs[0])
    cb.on_epoch_end(1, logs[1])
    cb.on_epoch_end(2, {"loss": [1, 2], "val_loss": np.float64(3.0)})
    cb.on_train_end()
    assert cb.csv_file is None
    assert path.read_bytes().decode() == ('epoch,loss,val_loss\r\n0,1.0,2.0\r\n1,0.5,NA\r\n'
                                '2,"[1, 2]",3.0\r\n')


# ---------------------------------------------------------------------------- TerminateOnNaN
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_terminate_on_nan(bad, capsys):
    model = FakeModel()
    _, ran = fake_fit(model, [TerminateOnNaN()], epochs=3, steps=4,
                      train_logs=lambda e, s: {"loss": bad if (e, s) == (1, 2) else 1.0})
    assert ran == [0, 1] and model.stop_training
    assert model.w[0] == 102          # the loop ended after the bad batch
    assert "Batch 2: Invalid loss, terminating training" in capsys.readouterr().out


def test_terminate_on_nan_ignores_finite_and_missing_loss():
    model = FakeModel()
    _, ran = fake_fit(model, [TerminateOnNaN()], epochs=2, steps=2,
                      train_logs=lambda e, s: {"acc": math.nan})
    assert ran == [0, 1] and not model.stop_training


# ---------------------------------------------------------------------------- LambdaCallback
def test_lambda_callback_calls():
    calls = []
    cb = LambdaCallback(
        on_epoch_begin=lambda epoch, logs: calls.append(("eb", epoch)),
        on_epoch_end=lambda epoch, logs: calls.append(("ee", epoch, logs["loss"])),
        on_batch_begin=lambda batch, logs: calls.append(("bb", batch)),
        on_batch_end=lambda batch, logs: calls.append(("be", batch, logs["loss"])),
        on_train_begin=lambda logs: calls.append(("tb",)),
        on_train_end=lambda logs: calls.append(("te", logs["loss"])),
        on_test_end=lambda logs: calls.append(("test", logs["loss"])))
    fake_fit(FakeModel(), [cb], epochs=1, steps=2, train_logs=lambda e, s: {"loss": float(s)},
             val_logs=val_sequence([9.0]))
    assert calls == [("tb",), ("eb", 0), ("bb", 0), ("be", 0, 0.0), ("bb", 1), ("be", 1, 1.0),
                     ("test", 9.0), ("ee", 0, 1.0), ("te", 1.0)]
    assert isinstance(cb, Callback)


def test_lambda_callback_defaults_and_errors():
    cb = LambdaCallback()
    fake_fit(FakeModel(), [cb], epochs=1, steps=1)     # all hooks are no-ops
    with pytest.raises(TypeError, match="unknown hook 'on_epoch_middle'"):
        LambdaCallback(on_epoch_middle=print)
    with pytest.raises(TypeError, match="on_epoch_end must be callable"):
        LambdaCallback(on_epoch_end=3)


# ---------------------------------------------------------------------------- TensorBoard
class FakeWriter:
    instances = []

    def __init__(self, log_dir):
        self.log_dir = log_dir
        self.scalars = []
        self.histograms = []
        self.closed = False
        self.flushes = 0
        FakeWriter.instances.append(self)

    def add_scalar(self, tag, value, step):
        assert type(value) is float and type(step) is int
        self.scalars.append((tag, value, step))

    def add_histogram(self, tag, values, step):
        self.histograms.append((tag, np.array(values), step))

    def flush(self):
        self.flushes += 1

    def close(self):
        self.closed = True


@pytest.fixture
def fake_writer(monkeypatch):
    FakeWriter.instances = []
    monkeypatch.setattr(tb_mod, "_summary_writer_class", lambda: FakeWriter)
    return FakeWriter


def _writers(log_dir):
    return {os.path.relpath(w.log_dir, log_dir): w for w in FakeWriter.instances}


def test_tensorboard_missing_writer_is_import_error_with_hint(monkeypatch):
    monkeypatch.setattr(tb_mod, "_find_spec", lambda name: None)
    with pytest.raises(ImportError, match=r"pip install tnp\[tensorboard\]"):
        TensorBoard()


def test_tensorboard_epoch_scalars(fake_writer, tmp_path):
    cb = TensorBoard(log_dir=tmp_path)
    fake_fit(FakeModel(), [cb], epochs=2, steps=3,
             train_logs=lambda e, s: {"loss": float(e), "acc": 0.5},
             val_logs=val_sequence([3.0, 4.0]))
    w = _writers(tmp_path)
    assert set(w) == {"train", "validation"}
    assert w["train"].scalars == [("epoch_loss", 0.0, 0), ("epoch_acc", 0.5, 0),
                                  ("epoch_loss", 1.0, 1), ("epoch_acc", 0.5, 1)]
    assert w["validation"].scalars == [("epoch_loss", 3.0, 0), ("epoch_loss", 4.0, 1)]
    assert all(x.closed for x in w.values()) and w["train"].flushes == 2
    assert w["train"].histograms == []


def test_tensorboard_batch_scalars_and_histograms(fake_writer, tmp_path):
    cb = TensorBoard(log_dir=str(tmp_path), update_freq=2, histogram_freq=2)
    fake_fit(FakeModel(), [cb], epochs=3, steps=3, train_logs=lambda e, s: {"loss": 10.0 * e + s})
    train = _writers(tmp_path)["train"]
    batch = [s for s in train.scalars if s[0].startswith("batch_")]
    # the 2nd, 4th, 6th and 8th training batches overall
    assert batch == [("batch_loss", 1.0, 2), ("batch_loss", 10.0, 4), ("batch_loss", 12.0, 6),
                     ("batch_loss", 21.0, 8)]
    assert [(t, h.tolist(), s) for t, h, s in train.histograms] == [
        ("weight_0", [2.0, 2.0], 0), ("weight_0", [202.0, 202.0], 2)]
    assert TensorBoard(log_dir=str(tmp_path), update_freq="batch").update_freq == 1


def test_tensorboard_standalone_evaluate(fake_writer, tmp_path):
    model = FakeModel()
    model.optimizer.iterations = 7
    fake_evaluate(model, [TensorBoard(log_dir=tmp_path)], steps=2, verbose=0)
    val = _writers(tmp_path)["validation"]
    assert val.scalars == [("evaluation_loss_vs_iterations", 1.5, 7),
                           ("evaluation_accuracy_vs_iterations", 0.25, 7)]
    assert val.closed


def test_tensorboard_arguments(fake_writer, tmp_path):
    with pytest.raises(ValueError, match="update_freq"):
        TensorBoard(update_freq="step")
    with pytest.raises(TypeError, match="unrecognized"):
        TensorBoard(bogus=1)
    with pytest.warns(UserWarning, match="write_grads"):
        TensorBoard(log_dir=tmp_path, write_grads=True)
