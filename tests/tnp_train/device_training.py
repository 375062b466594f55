"""Training on a given tnp device, compared with the same training on the CPU (shared by
tests/tnp_train/test_device_training.py on the fake ``cpu:1`` device and by
tests/gpu/test_gpu_train.py on ``gpu:0``)."""
import numpy as np

import tnp
import tnp_train as tt


def build(kind):
    L = tt.layers
    if kind == "cnn":
        return tt.Sequential([tt.Input((8, 8, 2)), L.Conv2D(4, 3, padding="same", activation="relu"),
                              L.BatchNormalization(), L.MaxPooling2D(), L.Flatten(),
                              L.Dense(64, activation="relu"), L.Dense(64), L.Dense(3)])
    if kind == "rnn":
        return tt.Sequential([tt.Input((5,), dtype="int64"), L.Embedding(10, 4, mask_zero=True),
                              L.LSTM(6), L.LayerNormalization(), L.Dense(3)])
    raise ValueError(kind)


def data(kind, n=16):
    r = np.random.default_rng(1)
    if kind == "cnn":
        x = r.random((n, 8, 8, 2)).astype(np.float32)
    else:
        x = r.integers(0, 10, (n, 5))
        x[:, 4:] = 0
    return x, r.integers(0, 3, n)


def train_on(device, kind, epochs=2, save_to=None, inside=True):
    """(losses, weights, predictions) of a seeded run with everything on ``device``. The model
    is built under ``tnp.default_device(device)``; with ``inside=False`` it is then trained,
    evaluated, saved and loaded *outside* that block, from arrays moved to the device."""
    import contextlib
    with tnp.default_device(device):
        tt.utils.set_random_seed(0)
        model = build(kind)
        model.compile(tt.optimizers.Adam(0.01),        # the 64x64 kernel takes the fused update
                      tt.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    with tnp.default_device(device) if inside else contextlib.nullcontext():
        x, y = data(kind)
        X, Y = tnp.asarray(x).to_device(device), tnp.asarray(y).to_device(device)
        assert X.device is tnp.device(device) and model.weights[0].device is tnp.device(device)
        tt.utils.set_random_seed(0)
        hist = model.fit(X, Y, batch_size=8, epochs=epochs, verbose=0, validation_data=(X, Y))
        model.evaluate(X, Y, verbose=0)
        pred = model.predict(X)
        assert pred.device is tnp.device(device)
        assert all(w.device is tnp.device(device) for w in model.weights)
        if save_to is not None:
            model.save_weights(str(save_to))
            with tnp.default_device(device):
                again = build(kind)
            again.load_weights(str(save_to))
            np.testing.assert_array_equal(np.asarray(again.predict(X).to_device("cpu")),
                                          np.asarray(pred.to_device("cpu")))
        return (hist.history["loss"], [w for w in model.get_weights()],
                np.asarray(pred.to_device("cpu")))


def compare(device, kind, rtol, tmp_path=None, inside=True):
    ref = train_on("cpu", kind)
    got = train_on(device, kind, save_to=None if tmp_path is None else tmp_path / "w",
                   inside=inside)
    np.testing.assert_allclose(got[0], ref[0], rtol=rtol)
    for a, b in zip(got[1], ref[1]):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(got[2], ref[2], rtol=rtol, atol=rtol)
