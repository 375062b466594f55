"""A fake model and a fit loop that follows fit's callback contract, so the callbacks can be
tested against hand-written metric sequences (the real ``Model.fit`` is tested separately)."""
import os

import numpy as np

from tnp_train.callbacks import CallbackList


class FakeOptimizer:
    def __init__(self, learning_rate=0.1):
        self.learning_rate = learning_rate
        self.iterations = 0


class FakeModel:
    """Weights are one array whose value is set to ``100 * epoch + step`` after each training
    batch, so a restored weight tells which batch produced it; ``save``/``save_weights`` write
    a small file and record the call."""

    def __init__(self, learning_rate=0.1):
        self.w = np.zeros(2)
        self.stop_training = False
        self.history = None
        self.optimizer = FakeOptimizer(learning_rate)
        self.saved = []          # (method, path)
        self.weights = [self.w]

    def get_weights(self):
        return [self.w]          # the live array: callbacks must copy it themselves

    def set_weights(self, weights):
        self.w[...] = weights[0]

    def save(self, filepath, overwrite=True):
        self._write("save", filepath, overwrite)

    def save_weights(self, filepath, overwrite=True):
        self._write("save_weights", filepath, overwrite)

    def _write(self, method, filepath, overwrite):
        assert overwrite is True
        with open(filepath, "w") as f:
            f.write(f"{method} {self.w[0]}")
        self.saved.append((method, os.fspath(filepath)))


def fake_fit(model, callbacks, epochs, steps=3, train_logs=None, val_logs=None, verbose=0,
             initial_epoch=0):
    """Model.fit's loop from the contract. ``train_logs(epoch, step)`` and ``val_logs(epoch)``
    give the logs (default: ``loss = 1/(epoch+1)`` and nothing for validation). Returns the
    History and the list of epochs that ran."""
    train_logs = train_logs or (lambda e, s: {"loss": 1.0 / (e + 1)})
    cbs = CallbackList(callbacks, add_history=True, add_progbar=verbose != 0, model=model,
                       verbose=verbose, epochs=epochs, steps=steps)
    model.stop_training = False
    model._initial_epoch_from_backup = None
    cbs.on_train_begin()
    start = model._initial_epoch_from_backup
    start = initial_epoch if start is None else start
    epoch_logs = {}
    ran = []
    for epoch in range(start, epochs):
        ran.append(epoch)
        cbs.on_epoch_begin(epoch)
        logs = {}
        for step in range(steps):
            cbs.on_train_batch_begin(step)
            model.w[...] = 100 * epoch + step
            model.optimizer.iterations += 1
            logs = {k: float(v) for k, v in train_logs(epoch, step).items()}
            cbs.on_train_batch_end(step, logs)
            if model.stop_training:
                break
        epoch_logs = dict(logs)
        if val_logs is not None:
            vl = val_logs(epoch)
            cbs.on_test_begin()
            for step in range(2):
                cbs.on_test_batch_begin(step)
                cbs.on_test_batch_end(step, vl)
            cbs.on_test_end(vl)
            epoch_logs.update({"val_" + k: float(v) for k, v in vl.items()})
        cbs.on_epoch_end(epoch, epoch_logs)
        if model.stop_training:
            break
    cbs.on_train_end(epoch_logs)
    return model.history, ran


def fake_evaluate(model, callbacks, steps=4, logs_fn=None, verbose=1):
    logs_fn = logs_fn or (lambda s: {"loss": 0.5 + s, "accuracy": 0.25})
    cbs = CallbackList(callbacks, add_progbar=verbose != 0, model=model, verbose=verbose,
                       epochs=1, steps=steps)
    cbs.on_test_begin()
    logs = {}
    for step in range(steps):
        cbs.on_test_batch_begin(step)
        logs = logs_fn(step)
        cbs.on_test_batch_end(step, logs)
    cbs.on_test_end(logs)
    return logs


def fake_predict(model, callbacks, steps=3, verbose=1):
    cbs = CallbackList(callbacks, add_progbar=verbose != 0, model=model, verbose=verbose,
                       epochs=1, steps=steps)
    cbs.on_predict_begin()
    for step in range(steps):
        cbs.on_predict_batch_begin(step)
        cbs.on_predict_batch_end(step, {"outputs": np.arange(7.0)})
    cbs.on_predict_end()


def val_sequence(values, key="loss"):
    """val_logs function giving ``values[epoch]`` under ``key``."""
    return lambda epoch: {key: values[epoch]}
