"""Recurrent layers on variable-length sequences.

Each sequence is a walk of up / flat / down steps, 8 to 24 steps long, padded to 24, and
each step is observed through noise. The question is whether the running total ever drops
below zero. The answer depends on the order of the steps, not only on their counts, so the
model has to carry a running state.

Covers: Masking of padded steps, an LSTM returning its whole sequence feeding a GRU, a
sigmoid head with binary cross-entropy, validation_split, evaluate, predict.
"""
import numpy as np

from _backend import QUICK, keras, layers, report
import _data

MAX_STEPS = 24
STEP_VALUES = np.array([1, 0, -1])


def walks(n, seed, noise=0.5):
    rng = np.random.RandomState(seed)
    lengths = rng.randint(8, MAX_STEPS + 1, size=n)
    # an upward drift offsets the early dips (one step down at the start is enough), so about
    # half the walks dip below zero. The final total alone then answers only about 62% of
    # them, so the order of the steps has to be read
    steps = rng.choice(STEP_VALUES, size=(n, MAX_STEPS), p=[0.5, 0.25, 0.25])
    alive = np.arange(MAX_STEPS) < lengths[:, None]
    labels = (np.cumsum(steps * alive, axis=1) < 0).any(axis=1)
    # the model sees each step through noise, so some walks stay ambiguous; the second
    # channel marks real steps, so that a padded step (all zeros) is the only one masked
    seen = (steps + rng.normal(0, noise, size=steps.shape)) * alive
    x = np.stack([seen, alive.astype("float64")], axis=-1).astype("float32")
    return x, labels.astype("float32")[:, None]


def build_model(units=24):
    model = keras.Sequential([
        keras.Input(shape=(MAX_STEPS, 2)),
        layers.Masking(mask_value=0.0),
        layers.LSTM(units, return_sequences=True),
        layers.GRU(units),
        layers.Dense(1, activation="sigmoid"),
    ])
    model.compile(optimizer=keras.optimizers.Adam(5e-3), loss="binary_crossentropy",
                  metrics=["accuracy"])
    return model


def main():
    x_train, y_train = walks(1200 if QUICK else 5000, seed=1)
    x_test, y_test = walks(1000 if QUICK else 2000, seed=2)
    model = build_model(units=16 if QUICK else 24)
    history = model.fit(x_train, y_train, batch_size=64, epochs=4 if QUICK else 15,
                        validation_split=0.1, verbose=0)
    _, accuracy = model.evaluate(x_test, y_test, verbose=0)
    probabilities = np.asarray(model.predict(x_test[:4], verbose=0))
    losses = history.history["loss"]
    # a rule blind to the order, for scale: the sign of the observed total
    total_rule = np.mean((x_test[..., 0].sum(axis=1) < 0) == (y_test[:, 0] == 1))
    out = report(losses[0], losses[-1], "test accuracy", accuracy,
                 val_accuracy=history.history["val_accuracy"][-1], final_total_rule=total_rule,
                 chance=_data.majority_rate(y_test), n_eval=len(y_test))
    out["prediction_shape"] = probabilities.shape
    return out


if __name__ == "__main__":
    main()
