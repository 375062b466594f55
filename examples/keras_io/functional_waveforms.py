"""Functional API: two named inputs, two named outputs, and a save/load round trip.

A simulated sensor records a waveform (sine, square or triangle) through an amplifier whose
gain is known per recording. One head names the waveform, which the trace alone shows; the
other recovers the true amplitude, which needs the trace and the gain together, so the model
must merge its two inputs.

Covers: keras.Input with names, a Conv1D branch and a Dense branch joined by Concatenate,
per-output losses, loss weights and metrics given as dicts, inputs and targets given as
dicts, model.save / load_model.
"""
import os
import tempfile

import numpy as np

from _backend import QUICK, keras, layers, report
import _data

STEPS = 48
KINDS = ("sine", "square", "triangle")


def recordings(n, seed):
    rng = np.random.RandomState(seed)
    kind = rng.randint(len(KINDS), size=n)
    cycles = rng.uniform(1.0, 3.0, size=n)
    phase = rng.uniform(0, 2 * np.pi, size=n)
    amplitude = rng.uniform(0.5, 2.0, size=n)
    gain = rng.choice([0.5, 1.0, 2.0, 4.0], size=n)
    angle = 2 * np.pi * cycles[:, None] * np.arange(STEPS) / STEPS + phase[:, None]
    shapes = np.stack([np.sin(angle), np.sign(np.sin(angle)),
                       (2 / np.pi) * np.arcsin(np.sin(angle))])
    wave = shapes[kind, np.arange(n)]
    # the amplifier amplifies the sensor's noise too
    trace = gain[:, None] * (amplitude[:, None] * wave + rng.normal(0, 0.3, size=(n, STEPS)))
    # the amplifier setting is metadata: log2 puts the four settings one unit apart
    context = np.stack([np.log2(gain), cycles], axis=1)
    inputs = {"trace": trace.astype("float32"), "context": context.astype("float32")}
    targets = {"kind": kind.astype("int32"), "amplitude": amplitude.astype("float32")[:, None]}
    return inputs, targets


def build_model(hidden=64):
    trace = keras.Input(shape=(STEPS,), name="trace")
    context = keras.Input(shape=(2,), name="context")
    # convolutions because the phase is random: a pattern must be recognised wherever it sits
    t = layers.Reshape((STEPS, 1))(trace)
    t = layers.Conv1D(hidden // 4, 7, activation="relu")(t)
    t = layers.Conv1D(hidden // 2, 5, activation="relu")(t)
    t = layers.GlobalAveragePooling1D()(t)
    c = layers.Dense(8, activation="relu")(context)
    merged = layers.Concatenate()([t, c])
    amplitude = layers.Dense(1, name="amplitude")(
        layers.Dense(hidden // 2, activation="relu")(merged))
    # the waveform's kind does not depend on the amplifier, so its head reads the trace only
    kind = layers.Dense(len(KINDS), name="kind")(t)
    model = keras.Model(inputs=[trace, context], outputs=[kind, amplitude])
    model.compile(
        optimizer=keras.optimizers.Adam(5e-3),
        loss={"kind": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              "amplitude": "mse"},
        # the amplitude's squared error starts near 1, the kind's cross-entropy near 1.1;
        # halving the first keeps the classifier from being starved early on
        loss_weights={"kind": 1.0, "amplitude": 0.5},
        metrics={"kind": "accuracy", "amplitude": "mae"})
    return model


def main():
    x_train, y_train = recordings(1500 if QUICK else 6000, seed=1)
    x_test, y_test = recordings(1000 if QUICK else 2000, seed=2)
    model = build_model(hidden=32 if QUICK else 64)
    history = model.fit(x_train, y_train, batch_size=64, epochs=6 if QUICK else 15,
                        validation_split=0.15, verbose=0)
    scores = model.evaluate(x_test, y_test, verbose=0, return_dict=True)

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "waveforms")
        model.save(path)
        reloaded = keras.models.load_model(path)
    sample = {k: v[:8] for k, v in x_test.items()}
    before = [np.asarray(p) for p in model.predict(sample, verbose=0)]
    after = [np.asarray(p) for p in reloaded.predict(sample, verbose=0)]
    drift = max(float(np.max(np.abs(a - b))) for a, b in zip(before, after))

    losses = history.history["loss"]
    out = report(losses[0], losses[-1], "test kind accuracy", scores["kind_accuracy"],
                 amplitude_mae=scores["amplitude_mae"], reload_drift=drift,
                 amplitude_mae_of_mean=np.mean(np.abs(y_test["amplitude"]
                                                      - y_train["amplitude"].mean())),
                 chance=_data.majority_rate(y_test["kind"]), n_eval=len(y_test["kind"]))
    out["prediction_shapes"] = [p.shape for p in before]
    return out


if __name__ == "__main__":
    main()
