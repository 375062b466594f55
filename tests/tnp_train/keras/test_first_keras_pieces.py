"""Layer, Dense, Input, Sequential, SGD and SparseCategoricalCrossentropy against plain NumPy."""
import numpy as np
import pytest

import tnp
import tnp_train as tt


def rng(seed=0):
    return np.random.default_rng(seed)


def test_dense_forward_matches_numpy_and_keras_layout():
    layer = tt.layers.Dense(3, activation="relu")
    x = rng().standard_normal((5, 4)).astype(np.float32)
    y = layer(tnp.asarray(x))
    W, b = layer.get_weights()
    assert W.shape == (4, 3) and b.shape == (3,) and W.dtype == np.float32   # (input_dim, units)
    np.testing.assert_allclose(np.asarray(y), np.maximum(x @ W + b, 0), rtol=1e-6)
    assert [w.name for w in layer.weights] == [f"{layer.name}/kernel", f"{layer.name}/bias"]


def test_glorot_uniform_limits_and_zero_bias():
    layer = tt.layers.Dense(300, kernel_initializer=tt.initializers.GlorotUniform(seed=1))
    layer(tnp.ones((1, 200), dtype="float32"))
    W, b = layer.get_weights()
    limit = np.sqrt(6 / (200 + 300))
    assert np.abs(W).max() <= limit and np.abs(W).max() > 0.9 * limit
    np.testing.assert_array_equal(b, np.zeros(300, np.float32))


def test_sequential_with_input_is_built_at_once_and_weights_round_trip():
    model = tt.Sequential([tt.Input((4,)), tt.layers.Dense(8, activation="relu"), tt.layers.Dense(2)])
    assert [w.shape for w in model.weights] == [(4, 8), (8,), (8, 2), (2,)]
    new = [rng(i).standard_normal(w.shape).astype(np.float32) for i, w in enumerate(model.weights)]
    model.set_weights(new)
    for got, want in zip(model.get_weights(), new):
        np.testing.assert_array_equal(got, want)
    x = rng(9).standard_normal((3, 4)).astype(np.float32)
    W1, b1, W2, b2 = new
    np.testing.assert_allclose(np.asarray(model(tnp.asarray(x))), np.maximum(x @ W1 + b1, 0) @ W2 + b2,
                               rtol=1e-5)
    with pytest.raises(ValueError, match="shape"):
        model.set_weights([np.zeros((5, 8))] + new[1:])
    with pytest.raises(ValueError, match="expecting 4 weights"):
        model.set_weights(new[:2])


def test_sequential_builds_on_first_call_without_input():
    model = tt.Sequential([tt.layers.Dense(2)])
    assert model.weights == []
    model(tnp.ones((1, 3), dtype="float32"))
    assert [w.shape for w in model.weights] == [(3, 2), (2,)]


@pytest.mark.parametrize("from_logits", [True, False])
@pytest.mark.parametrize("labels_2d", [False, True])
def test_sparse_categorical_crossentropy_matches_numpy(from_logits, labels_2d):
    r = rng(2)
    logits = r.standard_normal((6, 4)).astype(np.float32)
    y = r.integers(0, 4, 6)
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    expected = -np.log(p[np.arange(6), y]).mean()
    pred = logits if from_logits else p
    labels = y[:, None] if labels_2d else y
    got = tt.losses.SparseCategoricalCrossentropy(from_logits=from_logits)(tnp.asarray(labels), tnp.asarray(pred))
    assert float(got) == pytest.approx(float(expected), rel=1e-5)
    with pytest.raises(ValueError, match="labels"):
        tt.losses.SparseCategoricalCrossentropy()(tnp.asarray(y[:5]), tnp.asarray(pred))


def test_sgd_momentum_follows_keras_formula():
    w0 = rng(3).standard_normal(4)
    grads = [rng(10 + i).standard_normal(4) for i in range(3)]
    v = tt.Variable(w0)
    opt = tt.optimizers.SGD(learning_rate=0.1, momentum=0.9)
    w, m = w0.copy(), np.zeros(4)
    for g in grads:
        opt.apply_gradients([(tnp.asarray(g), v)])
        m = 0.9 * m - 0.1 * g
        w = w + m
    np.testing.assert_allclose(v.numpy(), w, rtol=1e-12)
    assert int(opt.iterations) == 3


def test_sgd_plain_nesterov_and_clipping():
    v = tt.Variable([1.0, 2.0])
    tt.optimizers.SGD(0.5).apply_gradients([(tnp.asarray([1.0, -1.0]), v)])
    np.testing.assert_allclose(v.numpy(), [0.5, 2.5])
    v = tt.Variable([0.0])
    opt = tt.optimizers.SGD(0.1, momentum=0.5, nesterov=True)
    opt.apply_gradients([(tnp.asarray([1.0]), v)])
    np.testing.assert_allclose(v.numpy(), [0.5 * -0.1 - 0.1])    # m = -0.1; w += 0.5 m - 0.1 g
    v = tt.Variable([0.0, 0.0])
    tt.optimizers.SGD(1.0, clipnorm=1.0).apply_gradients([(tnp.asarray([3.0, 4.0]), v)])
    np.testing.assert_allclose(v.numpy(), [-0.6, -0.8])
    v = tt.Variable([0.0, 0.0])
    tt.optimizers.SGD(1.0, clipvalue=0.5).apply_gradients([(tnp.asarray([3.0, -0.2]), v)])
    np.testing.assert_allclose(v.numpy(), [-0.5, 0.2])


def test_apply_gradients_skips_none_and_rejects_all_none():
    a, b = tt.Variable([1.0]), tt.Variable([1.0])
    opt = tt.optimizers.SGD(1.0)
    opt.apply_gradients([(None, a), (tnp.asarray([1.0]), b)])
    assert a.numpy()[0] == 1.0 and b.numpy()[0] == 0.0
    with pytest.raises(ValueError, match="no gradients"):
        opt.apply_gradients([(None, a)])


def test_minimize_with_a_callable_and_with_a_tape():
    v = tt.Variable([3.0])
    opt = tt.optimizers.SGD(0.25)
    opt.minimize(lambda: tnp.sum(v * v), [v])
    np.testing.assert_allclose(v.numpy(), [1.5])           # 3 - 0.25 * 6
    with tt.GradientTape() as tape:
        loss = tnp.sum(v * v)
    opt.minimize(loss, [v], tape=tape)
    np.testing.assert_allclose(v.numpy(), [0.75])
    with pytest.raises(ValueError, match="tape"):
        opt.minimize(tnp.sum(v), [v])


def test_training_a_sequential_model_matches_hand_written_numpy():
    """Five steps of Keras-convention SGD momentum on a small MLP: identical to NumPy."""
    r = rng(5)
    X = r.standard_normal((16, 6))
    y = r.integers(0, 3, 16)
    model = tt.Sequential([tt.Input((6,)), tt.layers.Dense(8, activation="relu", dtype="float64"),
                           tt.layers.Dense(3, dtype="float64")])
    params = [r.standard_normal(w.shape) * 0.5 for w in model.weights]
    model.set_weights(params)
    loss_fn = tt.losses.SparseCategoricalCrossentropy(from_logits=True)
    opt = tt.optimizers.SGD(0.1, momentum=0.9)
    for _ in range(5):
        with tt.GradientTape() as tape:
            loss = loss_fn(tnp.asarray(y), model(tnp.asarray(X), training=True))
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))

    W1, b1, W2, b2 = [p.copy() for p in params]
    mom = [np.zeros_like(p) for p in params]
    Y = np.eye(3)[y]
    for _ in range(5):
        z1 = X @ W1 + b1
        h = np.maximum(z1, 0)
        logits = h @ W2 + b2
        e = np.exp(logits - logits.max(1, keepdims=True))
        d = (e / e.sum(1, keepdims=True) - Y) / len(X)
        dz1 = (d @ W2.T) * (z1 > 0)
        grads = [X.T @ dz1, dz1.sum(0), h.T @ d, d.sum(0)]
        for k, (p, g) in enumerate(zip((W1, b1, W2, b2), grads)):
            mom[k] = 0.9 * mom[k] - 0.1 * g
            p += mom[k]
    for got, want in zip(model.get_weights(), (W1, b1, W2, b2)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_activations_and_initializers_by_name():
    assert tt.activations.get("relu") is tt.activations.relu
    assert tt.activations.get(None) is tt.activations.linear
    with pytest.raises(ValueError):
        tt.activations.get("nope")
    x = tnp.asarray(np.array([[1.0, 2.0, 3.0]]))
    np.testing.assert_allclose(np.asarray(tt.activations.softmax(x)),
                               (np.exp([1, 2, 3]) / np.exp([1, 2, 3]).sum())[None], rtol=1e-12)
    with pytest.raises(ValueError):
        tt.initializers.get("nope")
    with pytest.raises(ValueError, match="units"):
        tt.layers.Dense(0)
