"""Training a Sequential model step by step equals the same training written in NumPy."""
import numpy as np
import pytest

import tnp
import tnp_train as tt


def rng(seed=0):
    return np.random.default_rng(seed)


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
