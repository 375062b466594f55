"""Built-in fit and evaluate, steered by callbacks.

Friedman's first regression problem (scikit-learn generates it: five relevant inputs, five
irrelevant ones, noise) is learnt by an MLP. fit runs with a generous epoch budget, and the
callbacks decide how much of it is used and what is kept.

Covers: fit with validation_split, EarlyStopping (restore_best_weights), ReduceLROnPlateau,
ModelCheckpoint (best only, weights only) read back with load_weights, CSVLogger, a Callback
subclass that reads the optimizer's learning rate, evaluate and predict.
"""
import csv
import os
import tempfile

import numpy as np

from _backend import QUICK, keras, layers, report
import _data


def friedman(n, seed):
    from sklearn.datasets import make_friedman1

    x, y = make_friedman1(n_samples=n, n_features=10, noise=1.0, random_state=seed)
    # centred and scaled by fixed constants, the target's mean and standard deviation at
    # this noise level (14.41 and 4.99 over 200,000 draws), so train and test scale alike
    return x.astype("float32"), ((y - 14.4) / 5.0).astype("float32")[:, None]


class LearningRateLog(keras.callbacks.Callback):
    """Keeps the learning rate each epoch ran with (ReduceLROnPlateau changes it)."""

    def on_train_begin(self, logs=None):
        self.rates = []

    def on_epoch_end(self, epoch, logs=None):
        self.rates.append(float(keras.backend.get_value(self.model.optimizer.learning_rate)))


def build_model(hidden=64):
    model = keras.Sequential([keras.Input(shape=(10,)),
                              layers.Dense(hidden, activation="relu"),
                              layers.Dense(hidden, activation="relu"),
                              layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(3e-3), loss="mse", metrics=["mae"])
    return model


def main():
    x_train, y_train = friedman(1500 if QUICK else 5000, seed=1)
    x_test, y_test = friedman(2000, seed=2)
    model = build_model(hidden=32 if QUICK else 64)
    lr_log = LearningRateLog()
    with tempfile.TemporaryDirectory() as tmp:
        best_path = os.path.join(tmp, "best")
        csv_path = os.path.join(tmp, "epochs.csv")
        callbacks = [
            keras.callbacks.EarlyStopping(monitor="val_loss", patience=6,
                                          restore_best_weights=True),
            keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=2,
                                              min_lr=1e-4),
            keras.callbacks.ModelCheckpoint(best_path, monitor="val_loss",
                                            save_best_only=True, save_weights_only=True),
            keras.callbacks.CSVLogger(csv_path),
            lr_log,
        ]
        history = model.fit(x_train, y_train, validation_split=0.2, batch_size=32,
                            epochs=8 if QUICK else 150, callbacks=callbacks, verbose=0)
        with open(csv_path) as f:
            csv_rows = list(csv.DictReader(f))
        # a second model from the best checkpoint: it must score the best epoch's val_loss
        best = build_model(hidden=32 if QUICK else 64)
        best.load_weights(best_path)
        n_val = len(x_train) // 5
        best_val = best.evaluate(x_train[-n_val:], y_train[-n_val:], verbose=0,
                                 return_dict=True)["loss"]

    scores = model.evaluate(x_test, y_test, verbose=0, return_dict=True)
    guess = np.asarray(model.predict(x_test, verbose=0))
    losses = history.history["loss"]
    out = report(losses[0], losses[-1], "test R^2", _data.r_squared(y_test, guess),
                 linear_r2=_data.least_squares_r2(x_train, y_train, x_test, y_test),
                 test_mse=scores["loss"],
                 epochs_run=len(losses), min_val_loss=min(history.history["val_loss"]),
                 checkpoint_val_loss=best_val, csv_rows=len(csv_rows),
                 first_lr=lr_log.rates[0], last_lr=lr_log.rates[-1])
    out["lr_by_epoch"] = lr_log.rates
    return out


if __name__ == "__main__":
    main()
