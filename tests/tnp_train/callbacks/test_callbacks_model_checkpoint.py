"""ModelCheckpoint: file names, best-only, thresholds, batch-level saving."""
import os

import pytest

from cb_fakes import FakeModel, fake_fit, val_sequence
from tnp_train.callbacks import ModelCheckpoint


def _names(model, tmp_path):
    return [(m, os.path.relpath(p, tmp_path)) for m, p in model.saved]


def test_every_epoch_file_names_are_1_based_and_use_logs(tmp_path):
    model = FakeModel()
    cb = ModelCheckpoint(str(tmp_path / "w-{epoch:02d}-{val_loss:.2f}.h5"), save_weights_only=True)
    fake_fit(model, [cb], epochs=3, steps=2, val_logs=val_sequence([0.5, 0.25, 0.125]))
    assert _names(model, tmp_path) == [("save_weights", "w-01-0.50.h5"),
                                       ("save_weights", "w-02-0.25.h5"),
                                       ("save_weights", "w-03-0.12.h5")]
    # saved at the end of each epoch: the weights of the epoch's last batch (100*epoch + 1)
    assert (tmp_path / "w-03-0.12.h5").read_text() == "save_weights 201.0"


def test_full_model_save_and_parent_directory_created(tmp_path):
    model = FakeModel()
    fake_fit(model, [ModelCheckpoint(tmp_path / "sub" / "dir" / "m{epoch}")], epochs=2, steps=1)
    assert _names(model, tmp_path) == [("save", os.path.join("sub", "dir", "m1")),
                                       ("save", os.path.join("sub", "dir", "m2"))]


@pytest.mark.parametrize("mode,monitor,values,saved_epochs", [
    ("min", "val_loss", [3.0, 2.0, 2.5, 1.0, 1.0], [1, 2, 4]),
    ("auto", "val_loss", [3.0, 2.0, 2.5, 1.0, 1.0], [1, 2, 4]),
    ("max", "val_loss", [3.0, 2.0, 2.5, 4.0, 1.0], [1, 4]),
    ("auto", "val_acc", [0.1, 0.3, 0.2, 0.3, 0.9], [1, 2, 5]),
    ("auto", "val_AUC", [0.1, 0.3, 0.2, 0.3, 0.9], [1, 2, 5]),
    ("auto", "val_recall", [0.5, 0.4, 0.6, 0.6, 0.1], [1, 3]),
    ("auto", "val_precision", [0.5, 0.4, 0.6, 0.6, 0.1], [1, 3]),
])
def test_save_best_only(tmp_path, mode, monitor, values, saved_epochs):
    model = FakeModel()
    key = monitor[4:]
    cb = ModelCheckpoint(str(tmp_path / "m{epoch}"), monitor=monitor, mode=mode,
                         save_best_only=True)
    fake_fit(model, [cb], epochs=5, steps=1, val_logs=val_sequence(values, key))
    assert _names(model, tmp_path) == [("save", f"m{e}") for e in saved_epochs]


def test_save_best_only_single_file_keeps_best_weights(tmp_path):
    model = FakeModel()
    path = tmp_path / "best.h5"
    cb = ModelCheckpoint(path, save_best_only=True, save_weights_only=True)
    fake_fit(model, [cb], epochs=4, steps=2, val_logs=val_sequence([3.0, 1.0, 2.0, 1.5]))
    assert path.read_text() == "save_weights 101.0"      # end of epoch 1 (0-based)
    assert cb.best == 1.0


def test_initial_value_threshold(tmp_path):
    model = FakeModel()
    cb = ModelCheckpoint(str(tmp_path / "m{epoch}"), save_best_only=True,
                         initial_value_threshold=1.5)
    fake_fit(model, [cb], epochs=4, steps=1, val_logs=val_sequence([3.0, 2.0, 1.2, 1.4]))
    assert _names(model, tmp_path) == [("save", "m3")]


def test_missing_monitor_warns_and_skips(tmp_path):
    model = FakeModel()
    cb = ModelCheckpoint(str(tmp_path / "m{epoch}"), save_best_only=True)
    with pytest.warns(UserWarning, match="val_loss.*Available metrics are: loss"):
        fake_fit(model, [cb], epochs=2, steps=1)
    assert model.saved == []


def test_save_freq_batches_counted_across_epochs(tmp_path):
    model = FakeModel()
    cb = ModelCheckpoint(str(tmp_path / "e{epoch}-b{batch}-{loss:.1f}"), save_freq=2,
                         save_weights_only=True)
    fake_fit(model, [cb], epochs=2, steps=3, train_logs=lambda e, s: {"loss": 10 * e + s})
    # batches 2, 4, 6 overall: epoch 1 batch 2, epoch 2 batch 1, epoch 2 batch 3 (1-based)
    assert _names(model, tmp_path) == [("save_weights", "e1-b2-1.0"),
                                       ("save_weights", "e2-b1-10.0"),
                                       ("save_weights", "e2-b3-12.0")]


def test_save_freq_best_only_uses_batch_logs(tmp_path):
    model = FakeModel()
    cb = ModelCheckpoint(str(tmp_path / "b{batch}"), monitor="loss", save_freq=1,
                         save_best_only=True)
    fake_fit(model, [cb], epochs=1, steps=4, train_logs=lambda e, s: {"loss": [3, 1, 2, 0][s]})
    assert _names(model, tmp_path) == [("save", "b1"), ("save", "b2"), ("save", "b4")]


def test_verbose_messages(tmp_path, capsys):
    model = FakeModel()
    cb = ModelCheckpoint(str(tmp_path / "m"), save_best_only=True, verbose=1)
    fake_fit(model, [cb], epochs=2, steps=1, val_logs=val_sequence([0.5, 0.7]))
    out = capsys.readouterr().out
    assert ("Epoch 00001: val_loss improved from inf to 0.50000, saving model to "
            f"{tmp_path / 'm'}") in out
    assert "Epoch 00002: val_loss did not improve from 0.50000" in out
    cb = ModelCheckpoint(str(tmp_path / "n"), verbose=1)
    fake_fit(model, [cb], epochs=1, steps=1)
    assert f"Epoch 00001: saving model to {tmp_path / 'n'}" in capsys.readouterr().out


@pytest.mark.parametrize("bad", ["batch", 0, -3, 1.5, True])
def test_bad_save_freq(tmp_path, bad):
    with pytest.raises(ValueError, match="save_freq"):
        ModelCheckpoint(str(tmp_path / "m"), save_freq=bad)


def test_bad_mode_warns_and_uses_auto(tmp_path):
    with pytest.warns(UserWarning, match="mode 'best' is unknown"):
        cb = ModelCheckpoint(str(tmp_path / "m"), monitor="val_accuracy", mode="best")
    assert cb.mode == "max"


def test_unknown_format_key_is_key_error(tmp_path):
    cb = ModelCheckpoint(str(tmp_path / "m{val_accuracy}"))
    with pytest.raises(KeyError, match="val_accuracy"):
        fake_fit(FakeModel(), [cb], epochs=1, steps=1)
