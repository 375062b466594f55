"""The callbacks driven by the real Model.fit/evaluate/predict."""
import re

import numpy as np
import pytest

import tnp_train as tt
from tnp_train.callbacks import (Callback, CSVLogger, EarlyStopping, History,
                                 LearningRateScheduler, ModelCheckpoint, ReduceLROnPlateau)

X = (np.arange(24, dtype="float32").reshape(12, 2) - 12) / 10
Y = X @ np.array([[1.5], [-0.5]], "float32")


def _model(lr=0.1):
    model = tt.Sequential([tt.Input((2,)), tt.layers.Dense(1, kernel_initializer="zeros")])
    model.compile(optimizer=tt.optimizers.SGD(lr), loss="mse")
    return model


def test_fit_returns_history(capsys):
    model = _model()
    hist = model.fit(X, Y, batch_size=4, epochs=3, verbose=0, validation_data=(X, Y))
    assert isinstance(hist, History) and model.history is hist
    assert hist.epoch == [0, 1, 2] and sorted(hist.history) == ["loss", "val_loss"]
    assert hist.history["loss"][2] < hist.history["loss"][0]
    assert capsys.readouterr().out == ""


def test_progress_bar_and_lines(capsys):
    # Keras's format (TF 2.4's ProgbarLogger and Progbar); captured stdout is not a terminal,
    # so each epoch's bar is its final line alone
    model = _model()
    model.fit(X, Y, batch_size=4, epochs=2, verbose=1, validation_data=(X, Y))
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and lines[0] == "Epoch 1/2" and lines[2] == "Epoch 2/2"
    for line in lines[1::2]:
        assert re.fullmatch(r"3/3 \[={30}\] - \d+s \d+(us|ms|s)/step - loss: \d\.\d{4} - "
                            r"val_loss: \d\.\d{4}", line), line
    model.fit(X, Y, batch_size=4, epochs=2, verbose=2)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and lines[2] == "Epoch 2/2"
    assert re.fullmatch(r"3/3 - \d+s - loss: \d\.\d{4}", lines[3])
    model.evaluate(X, Y, batch_size=6, verbose=2)
    assert re.fullmatch(r"2/2 - \d+s - loss: \d\.\d{4}\n", capsys.readouterr().out)


def test_early_stopping_restores_best_weights():
    model = _model(lr=0.1)
    snapshots = []

    class Spy(Callback):
        def on_epoch_end(self, epoch, logs=None):
            snapshots.append([np.array(w) for w in self.model.get_weights()])

    # a monitor that improves until epoch 1 and then gets worse
    class FakeMetric(Callback):
        def on_epoch_end(self, epoch, logs=None):
            logs["score"] = [3.0, 1.0, 2.0, 2.5, 0.5, 0.1][epoch]

    es = EarlyStopping(monitor="score", patience=2, restore_best_weights=True)
    hist = model.fit(X, Y, batch_size=4, epochs=6, verbose=0, callbacks=[FakeMetric(), Spy(), es])
    assert hist.epoch == [0, 1, 2, 3] and es.stopped_epoch == 3
    for w, best in zip(model.get_weights(), snapshots[1]):
        np.testing.assert_array_equal(w, best)


def test_model_checkpoint_weights_load_back(tmp_path):
    model = _model()
    cb = ModelCheckpoint(str(tmp_path / "w-{epoch}"), monitor="loss", save_best_only=True,
                         save_weights_only=True)
    model.fit(X, Y, batch_size=4, epochs=2, verbose=0, callbacks=[cb])
    saved = sorted(p.name for p in tmp_path.iterdir())
    assert saved == ["checkpoint.json", "w-1", "w-2"]    # the latest-checkpoint record, as TF
    assert tt.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "w-2")
    other = _model()
    other.load_weights(str(tmp_path / "w-2"))
    for a, b in zip(other.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_learning_rate_scheduler_drives_sgd():
    # one batch per epoch; with the kernel at zero the first gradient is known
    model = _model(lr=0.1)
    model.fit(X, Y, batch_size=12, epochs=2, verbose=0, shuffle=False,
              callbacks=[LearningRateScheduler(lambda epoch: [0.0, 0.25][epoch])])
    assert float(model.optimizer.learning_rate) == 0.25
    assert model.history.history["lr"] == [0.0, 0.25]
    # epoch 0 used lr 0: weights unchanged; epoch 1 is one plain SGD step from zero
    ref = _model(lr=0.25)
    ref.fit(X, Y, batch_size=12, epochs=1, verbose=0, shuffle=False)
    for a, b in zip(model.get_weights(), ref.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_reduce_lr_on_plateau_sets_optimizer_rate():
    model = _model(lr=0.0)        # nothing changes: a plateau

    class Loss(Callback):
        def on_epoch_end(self, epoch, logs=None):
            logs["val_loss"] = 1.0

    model.optimizer.learning_rate = 0.5
    model.fit(X, Y, batch_size=6, epochs=4, verbose=0,
              callbacks=[Loss(), ReduceLROnPlateau(patience=1, factor=0.5, min_delta=0)])
    # reduced at the end of epochs 1, 2 and 3 ("lr" is the rate the epoch ran with)
    assert model.history.history["lr"] == [0.5, 0.5, 0.25, 0.125]
    assert float(model.optimizer.learning_rate) == 0.0625


def test_csv_logger_with_validation(tmp_path):
    model = _model()
    path = tmp_path / "log.csv"
    model.fit(X, Y, batch_size=4, epochs=2, verbose=0, validation_data=(X, Y),
              callbacks=[CSVLogger(path)])
    rows = path.read_bytes().decode().split("\r\n")
    assert rows[0] == "epoch,loss,val_loss" and rows[1].startswith("0,") and rows[3] == ""
    assert float(rows[2].split(",")[1]) == pytest.approx(model.history.history["loss"][1])


def test_evaluate_and_predict_hooks():
    events = []

    class Rec(Callback):
        def on_test_begin(self, logs=None):
            events.append("test_begin")

        def on_test_batch_end(self, batch, logs=None):
            events.append(("test_batch", batch, sorted(logs)))

        def on_test_end(self, logs=None):
            events.append(("test_end", sorted(logs)))

        def on_predict_batch_end(self, batch, logs=None):
            events.append(("predict_batch", batch))

        def on_predict_end(self, logs=None):
            events.append("predict_end")

    model = _model()
    model.evaluate(X, Y, batch_size=6, verbose=0, callbacks=[Rec()])
    model.predict(X, batch_size=6, callbacks=[Rec()])
    assert events == ["test_begin", ("test_batch", 0, ["loss"]), ("test_batch", 1, ["loss"]),
                      ("test_end", ["loss"]), ("predict_batch", 0), ("predict_batch", 1),
                      "predict_end"]
