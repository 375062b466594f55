"""compile/fit/evaluate/predict against a hand-written NumPy training loop, and the loop's
behaviour (validation, callbacks, shuffling, errors)."""
import numpy as np
import pytest

import tnp
import tnp_train as tt


def numpy_mlp_losses(params, X, Y, steps, lr, mu, dtype):
    """Hand-written: relu MLP, softmax cross-entropy (mean), SGD momentum (Keras form)."""
    p = [a.astype(dtype).copy() for a in params]
    v = [np.zeros_like(a) for a in p]
    losses = []
    n = len(p) // 2
    for _ in range(steps):
        hs, h = [X], X
        for k in range(n):
            z = h @ p[2 * k] + p[2 * k + 1]
            h = np.maximum(z, 0) if k < n - 1 else z
            hs.append(h)
        m = h.max(1, keepdims=True)
        e = np.exp(h - m)
        s = e.sum(1, keepdims=True)
        losses.append(float(np.mean(np.log(s[:, 0]) + m[:, 0] - h[np.arange(len(Y)), Y])))
        g = (e / s)
        g[np.arange(len(Y)), Y] -= 1
        g /= len(Y)
        grads = [None] * len(p)
        for k in reversed(range(n)):
            grads[2 * k] = hs[k].T @ g
            grads[2 * k + 1] = g.sum(0)
            if k:
                g = (g @ p[2 * k].T) * (hs[k] > 0)
        for i in range(len(p)):
            v[i] = mu * v[i] - lr * grads[i]
            p[i] = p[i] + v[i]
    return losses


@pytest.mark.parametrize("dtype,rtol", [("float64", 1e-10), ("float32", 1e-5)])
def test_mlp_fit_matches_numpy_for_20_steps(dtype, rtol):
    r = np.random.default_rng(0)
    sizes = [12, 16, 16, 5]
    params = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        params += [r.uniform(-0.5, 0.5, (a, b)), r.uniform(-0.1, 0.1, b)]
    X = r.standard_normal((32, 12)).astype(dtype)
    Y = r.integers(0, 5, 32)
    model = tt.Sequential([tt.Input((12,), dtype=dtype)] +
                          [tt.layers.Dense(b, activation="relu" if k < 2 else None, dtype=dtype)
                           for k, b in enumerate(sizes[1:])])
    model.set_weights(params)
    model.compile(optimizer=tt.optimizers.SGD(0.1, momentum=0.9),
                  loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    hist = model.fit(X, Y, batch_size=32, epochs=20, shuffle=False, verbose=0)
    ref = numpy_mlp_losses(params, X.astype(dtype), Y, 20, 0.1, 0.9, dtype)
    np.testing.assert_allclose(hist.history["loss"], ref, rtol=rtol)
    assert ref[-1] < ref[0]


def test_fit_validation_split_metrics_and_evaluate_predict():
    r = np.random.default_rng(1)
    X = r.standard_normal((200, 4)).astype(np.float32)
    Y = (X[:, 0] + X[:, 1] > 0).astype(np.int64)
    tt.utils.set_random_seed(0)
    model = tt.Sequential([tt.Input((4,)), tt.layers.Dense(8, activation="relu"), tt.layers.Dense(2)])
    model.compile(optimizer=tt.optimizers.Adam(0.05),
                  loss=tt.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    hist = model.fit(X, Y, batch_size=20, epochs=8, validation_split=0.25, verbose=0)
    assert set(hist.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert len(hist.history["loss"]) == 8 and hist.epoch == list(range(8))
    assert hist.history["accuracy"][-1] > 0.85
    loss, acc = model.evaluate(X[150:], Y[150:], batch_size=50, verbose=0)
    np.testing.assert_allclose([loss, acc], [hist.history["val_loss"][-1], hist.history["val_accuracy"][-1]], rtol=1e-5)
    pred = model.predict(X[150:], batch_size=7)
    assert pred.shape == (50, 2)
    np.testing.assert_allclose(acc, np.mean(np.argmax(np.asarray(pred), 1) == Y[150:]), rtol=1e-6)
    logits = np.asarray(pred)
    lse = np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1)) + logits.max(1)
    np.testing.assert_allclose(loss, np.mean(lse - logits[np.arange(50), Y[150:]]), rtol=1e-4)
    d = model.evaluate(X[150:], Y[150:], verbose=0, return_dict=True)
    assert set(d) == {"loss", "accuracy"}


def test_fit_is_reproducible_with_set_random_seed():
    r = np.random.default_rng(2)
    X, Y = r.standard_normal((64, 3)).astype(np.float32), r.integers(0, 3, 64)

    def run():
        tt.utils.set_random_seed(7)
        m = tt.Sequential([tt.Input((3,)), tt.layers.Dense(6, activation="relu"), tt.layers.Dropout(0.2),
                           tt.layers.Dense(3)])
        m.compile("adam", tt.losses.SparseCategoricalCrossentropy(from_logits=True))
        m.fit(X, Y, batch_size=8, epochs=2, verbose=0)      # shuffles every epoch
        return m.get_weights()
    for a, b in zip(run(), run()):
        np.testing.assert_array_equal(a, b)


def test_custom_train_step_and_custom_loop_with_minimize():
    class Counting(tt.Model):
        def __init__(self):
            super().__init__()
            self.d = tt.layers.Dense(1)
            self.steps = 0

        def call(self, x):
            return self.d(x)

        def train_step(self, data):
            self.steps += 1
            return super().train_step(data)

    X = np.ones((10, 2), np.float32)
    Y = np.zeros((10, 1), np.float32)
    m = Counting()
    m.compile(tt.optimizers.SGD(0.1), "mse")
    m.fit(X, Y, batch_size=5, epochs=3, verbose=0)
    assert m.steps == 6
    # the TF 2.4 release-notes loop
    model = tt.Sequential([tt.Input((2,)), tt.layers.Dense(1)])
    opt = tt.optimizers.SGD(0.1)
    loss_fn = tt.losses.MeanSquaredError()
    before = float(loss_fn(Y, model(X)))
    for _ in range(5):
        with tt.GradientTape() as tape:
            y_pred = model(X, training=True)
            loss = loss_fn(Y, y_pred)
        opt.minimize(loss, model.trainable_variables, tape=tape)
    assert float(loss_fn(Y, model(X))) < before


def test_multi_output_losses_and_weights():
    inp = tt.Input((3,))
    h = tt.layers.Dense(4, activation="relu")(inp)
    a = tt.layers.Dense(1, name="reg")(h)
    b = tt.layers.Dense(2, name="cls")(h)
    model = tt.Model(inp, [a, b])
    model.compile("sgd", loss={"reg": "mse", "cls": tt.losses.SparseCategoricalCrossentropy(from_logits=True)},
                  loss_weights={"reg": 0.5, "cls": 2.0})
    X = np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32)
    ya, yb = np.zeros((8, 1), np.float32), np.ones(8, np.int64)
    logs = model.evaluate(X, {"reg": ya, "cls": yb}, verbose=0, return_dict=True)
    pa, pb = model.predict(X)
    mse = np.mean((np.asarray(pa) - ya) ** 2)
    pb = np.asarray(pb)
    ce = np.mean(np.log(np.exp(pb).sum(1)) - pb[:, 1])
    np.testing.assert_allclose(logs["loss"], 0.5 * mse + 2.0 * ce, rtol=1e-5)
    np.testing.assert_allclose([logs["reg_loss"], logs["cls_loss"]], [mse, ce], rtol=1e-5)


def test_fit_errors():
    m = tt.Sequential([tt.Input((2,)), tt.layers.Dense(1)])
    with pytest.raises(RuntimeError, match="compile"):
        m.fit(np.zeros((4, 2)), np.zeros((4, 1)))
    m.compile("sgd", "mse")
    with pytest.raises(ValueError, match="cardinality|samples"):
        m.fit(np.zeros((4, 2)), np.zeros((5, 1)), verbose=0)
    with pytest.raises(ValueError, match="validation"):
        m.fit(np.zeros((1, 2)), np.zeros((1, 1)), validation_split=0.5, verbose=0)


def _small_model(seed=0):
    tt.utils.set_random_seed(seed)
    m = tt.Sequential([tt.Input((3,)), tt.layers.Dense(4, activation="relu"), tt.layers.Dense(2)])
    m.compile(tt.optimizers.SGD(0.05), tt.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
    return m


def _data(n=24):
    r = np.random.default_rng(3)
    return r.standard_normal((n, 3)).astype(np.float32), r.integers(0, 2, n)


def test_fit_on_a_dataset_equals_fit_on_arrays():
    X, Y = _data()
    a, b = _small_model(), _small_model()
    ha = a.fit(X, Y, batch_size=6, epochs=3, shuffle=False, verbose=0)
    ds = tt.data.Dataset.from_tensor_slices((X, Y)).batch(6)
    hb = b.fit(ds, epochs=3, verbose=0, validation_data=ds)
    np.testing.assert_allclose(hb.history["loss"], ha.history["loss"], rtol=1e-6)
    for u, v in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(u, v)
    assert "val_accuracy" in hb.history
    np.testing.assert_allclose(b.evaluate(ds, verbose=0), a.evaluate(X, Y, batch_size=6, verbose=0), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(b.predict(ds.map(lambda x, y: x))), np.asarray(a.predict(X)))


def test_fit_on_a_generator_with_steps_per_epoch_and_a_repeated_dataset():
    X, Y = _data()

    def gen():
        while True:
            for i in range(0, 24, 6):
                yield X[i:i + 6], Y[i:i + 6]
    a, b, c = _small_model(), _small_model(), _small_model()
    a.fit(X, Y, batch_size=6, epochs=2, shuffle=False, verbose=0)
    b.fit(gen(), steps_per_epoch=4, epochs=2, verbose=0)
    c.fit(tt.data.Dataset.from_tensor_slices((X, Y)).batch(6).repeat(), steps_per_epoch=4, epochs=2,
          verbose=0)
    for u, v, w in zip(a.get_weights(), b.get_weights(), c.get_weights()):
        np.testing.assert_array_equal(u, v)
        np.testing.assert_array_equal(u, w)


def test_sample_weight_and_class_weight_scale_the_loss():
    X, Y = _data(8)
    m = _small_model()
    logits = np.asarray(m.predict(X))
    per = np.log(np.exp(logits).sum(1)) - logits[np.arange(8), Y]
    w = np.linspace(0.5, 2.0, 8).astype(np.float32)
    loss = m.evaluate(X, Y, sample_weight=w, batch_size=8, verbose=0)[0]
    np.testing.assert_allclose(loss, np.mean(per * w), rtol=1e-5)      # Keras: sum(w*l)/batch
    m2 = _small_model()
    cw = {0: 1.0, 1: 3.0}
    hist = m2.fit(X, Y, batch_size=8, epochs=1, shuffle=False, class_weight=cw, verbose=0)
    np.testing.assert_allclose(hist.history["loss"][0],
                               np.mean(per * np.where(Y == 1, 3.0, 1.0)), rtol=1e-5)


def test_initial_epoch_validation_freq_and_stop_training():
    X, Y = _data()
    m = _small_model()
    h = m.fit(X, Y, epochs=5, initial_epoch=2, validation_data=(X, Y), validation_freq=2, verbose=0)
    assert h.epoch == [2, 3, 4]
    assert len(h.history["loss"]) == 3 and len(h.history["val_loss"]) == 1      # epoch 4 only

    class Stop(tt.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 1:
                self.model.stop_training = True
    h = m.fit(X, Y, batch_size=4, epochs=5, callbacks=[Stop()], verbose=0)
    assert h.epoch == [0]


def test_progress_bar_and_verbose_2(capsys):
    X, Y = _data()
    m = _small_model()
    m.fit(X, Y, batch_size=6, epochs=2, verbose=2)
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Epoch 1/2" in text and "Epoch 2/2" in text and "loss" in text
    m.fit(X, Y, batch_size=6, epochs=1, verbose=1)
    out = capsys.readouterr()
    assert "4/4" in out.out + out.err


def test_a_one_shot_generator_that_runs_out_stops_training_with_a_warning():
    X, Y = _data()

    def gen():
        for i in range(0, 24, 6):
            yield X[i:i + 6], Y[i:i + 6]
    m = _small_model()
    with pytest.warns(UserWarning, match="ran out of data"):
        h = m.fit(gen(), epochs=3, verbose=0)
    assert h.epoch == [0]
    with pytest.raises(ValueError, match="no batches"):
        m.fit(iter([]), epochs=1, verbose=0)
