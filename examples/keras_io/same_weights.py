"""The keras-io examples' models from the same initial weights under tnp_train and tf-keras.

compare.py measures whole programs, whose two runs start from different initial weights (each
framework draws its own from the seed), so one seed's difference mixes the frameworks'
behaviour with that draw. Here each model (the layers, loss, optimizer, metrics and
``class_weight`` of an example, on small data) starts from the same weights on both backends
and trains on the same batches (``shuffle=False``, no dropout), so the per-epoch losses and
metrics differ by rounding only:

    python examples/keras_io/same_weights.py [--floatx float64] [--tf-python /work/tfref/bin/python]

prints, for each model, the largest relative difference between the two backends' histories.
In float32 the training-loop model (SGD on raw 0-255 pixels, a first loss of 40) amplifies
rounding: its two float32 runs part by a few percent within 4 epochs; in float64
(``--floatx float64``) every model agrees to about 1e-6, which tells such rounding from a bug.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = ["training_loop", "timeseries", "imbalanced", "rnn", "convnet"]


def same_weights(model, seed=0):
    import numpy as np
    from _backend import keras
    rng = np.random.RandomState(seed)
    # kernels uniform in +-0.3; vectors (biases, BN scales and variances) positive, so that a
    # moving variance stays valid
    model.set_weights([(rng.uniform(-0.3, 0.3, size=w.shape) if w.ndim > 1
                        else rng.uniform(0.5, 1.0, size=w.shape))
                       .astype(keras.backend.floatx()) for w in model.get_weights()])


def run_case(case):
    import numpy as np
    from _backend import keras, layers
    import _data

    floatx = keras.backend.floatx()
    if case == "training_loop":   # writing_a_training_loop_from_scratch: SGD on raw pixels
        (x, y), _ = _data.digits()
        x = x.reshape(-1, 64).astype(floatx)
        inputs = keras.Input(shape=(64,))
        h = layers.Dense(64, activation="relu")(inputs)
        h = layers.Dense(64, activation="relu")(h)
        model = keras.Model(inputs, layers.Dense(10)(h))
        same_weights(model)
        model.compile(optimizer=keras.optimizers.SGD(1e-3), metrics=["accuracy"],
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return model.fit(x, y, batch_size=64, epochs=5, shuffle=False, verbose=0).history
    if case == "timeseries":      # Conv1D + BatchNormalization + ReLU, GAP, Adam
        rng = np.random.RandomState(1)
        x = rng.normal(size=(256, 64, 1)).astype(floatx)
        y = (x[:, :32, 0].mean(1) > 0).astype("int32")
        inp = layers.Input((64, 1))
        h = inp
        for _ in range(3):
            h = layers.ReLU()(layers.BatchNormalization()(layers.Conv1D(16, 3, padding="same")(h)))
        out = layers.Dense(2, activation="softmax")(layers.GlobalAveragePooling1D()(h))
        model = keras.Model(inp, out)
        same_weights(model)
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                      metrics=["sparse_categorical_accuracy"])
        return model.fit(x, y, batch_size=32, epochs=5, shuffle=False, verbose=0,
                         validation_split=0.2).history
    if case == "imbalanced":      # sigmoid output, Adam 1e-2, class_weight, confusion metrics
        from sklearn.datasets import make_classification
        f, t = make_classification(n_samples=4000, n_features=30, n_informative=8,
                                   weights=[0.95], random_state=0)
        f = ((f - f.mean(0)) / f.std(0)).astype(floatx)
        t = t.reshape(-1, 1).astype("uint8")
        model = keras.Sequential([layers.Dense(64, activation="relu", input_shape=(30,)),
                                  layers.Dense(64, activation="relu"),
                                  layers.Dense(1, activation="sigmoid")])
        same_weights(model)
        counts = np.bincount(t[:, 0])
        model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="binary_crossentropy",
                      metrics=[keras.metrics.Recall(name="recall"),
                               keras.metrics.Precision(name="precision"),
                               keras.metrics.FalseNegatives(name="fn")])
        return model.fit(f, t, batch_size=512, epochs=5, shuffle=False, verbose=0,
                         class_weight={0: 1.0 / counts[0], 1: 1.0 / counts[1]},
                         validation_split=0.2).history
    if case == "rnn":             # working_with_rnns: LSTM + BatchNormalization, SGD
        (x, y), _ = _data.digits()
        model = keras.Sequential([layers.LSTM(16, input_shape=(None, 8)),
                                  layers.BatchNormalization(), layers.Dense(10)])
        same_weights(model)
        model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      optimizer="sgd", metrics=["accuracy"])
        return model.fit(x / 255.0, y, batch_size=64, epochs=3, shuffle=False,
                         verbose=0).history
    if case == "convnet":         # mnist_convnet without its Dropout, categorical crossentropy
        (x, y), _ = _data.digits(side=16)
        x = x[:512, :, :, None].astype(floatx) / 255
        y = keras.utils.to_categorical(y[:512], 10)
        model = keras.Sequential([keras.Input(shape=(16, 16, 1)),
                                  layers.Conv2D(8, (3, 3), activation="relu"),
                                  layers.MaxPooling2D((2, 2)),
                                  layers.Conv2D(8, (3, 3), activation="relu"),
                                  layers.MaxPooling2D((2, 2)), layers.Flatten(),
                                  layers.Dense(10, activation="softmax")])
        same_weights(model)
        model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
        return model.fit(x, y, batch_size=64, epochs=3, shuffle=False, verbose=0,
                         validation_split=0.1).history
    raise SystemExit(f"unknown case {case!r}; one of {CASES}")


def main():
    floatx = sys.argv[sys.argv.index("--floatx") + 1] if "--floatx" in sys.argv else "float32"
    if "--case" in sys.argv:
        from _backend import keras
        keras.backend.set_floatx(floatx)
        history = run_case(sys.argv[sys.argv.index("--case") + 1])
        print("HISTORY " + json.dumps({k: [float(v) for v in vs] for k, vs in history.items()}))
        return 0
    tf_python = "/work/tfref/bin/python"
    if "--tf-python" in sys.argv:
        tf_python = sys.argv[sys.argv.index("--tf-python") + 1]
    env = dict(os.environ, PYTHONPATH=str(HERE.parents[1]), OMP_NUM_THREADS="1",
               TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    worst_all = 0.0
    print(f"{'model':14} {'largest relative difference, ' + floatx:>36}  (in)")
    for case in CASES:
        histories = {}
        for backend, python in (("tnp", sys.executable), ("tf", tf_python)):
            proc = subprocess.run([python, __file__, "--case", case, "--backend", backend,
                                   "--floatx", floatx],
                                  env=env, capture_output=True, text=True)
            line = [ln for ln in proc.stdout.splitlines() if ln.startswith("HISTORY ")]
            if not line:
                raise SystemExit(f"{case} ({backend}) failed:\n{proc.stderr[-3000:]}")
            histories[backend] = json.loads(line[0][len("HISTORY "):])
        worst, where = 0.0, ""
        for key, a in histories["tnp"].items():
            for i, (u, v) in enumerate(zip(a, histories["tf"][key])):
                rel = abs(u - v) / max(abs(v), 1e-12)
                if rel > worst:
                    worst, where = rel, f"{key}, epoch {i + 1}: tnp {u:.6g}, tf {v:.6g}"
        worst_all = max(worst_all, worst)
        print(f"{case:14} {worst:36.2e}  ({where})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
