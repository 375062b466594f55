"""tnp functions applied to symbolic tensors become TnpOpLambda layers (as tf ops on KerasTensors
become TFOpLambda layers in Keras): the model computes what the same tnp calls compute on arrays,
gradients flow through them in fit, and the model saves and loads by the functions' names."""
import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.autodiff import GradientTape


def _graph():
    x = tt.Input((4,))
    h = tt.layers.Dense(3, kernel_initializer="ones")(x)
    outs = [tnp.mean(tnp.square(h), axis=-1), tnp.linalg.norm(x, axis=-1),
            tnp.concatenate([x, tnp.exp(h)], axis=-1), tnp.add.reduce(x, axis=1),
            tnp.where(h > 0, h, 0.0)]
    return x, tt.Model(x, outs)


def test_symbolic_tnp_calls_compute_what_eager_ones_do(tmp_path):
    x, model = _graph()
    assert [type(l).__name__ for l in model.layers].count("TnpOpLambda") >= 6
    xs = np.random.default_rng(0).standard_normal((3, 4)).astype("float32")
    h = xs @ np.ones((4, 3), "float32")
    want = [np.mean(h ** 2, axis=-1), np.linalg.norm(xs, axis=-1),
            np.concatenate([xs, np.exp(h)], axis=-1), np.add.reduce(xs, axis=1),
            np.where(h > 0, h, 0.0)]
    got = model(xs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-6)
    model.save(tmp_path / "m.keras")
    again = tt.models.load_model(tmp_path / "m.keras")
    for g, w in zip(again(xs), got):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_gradients_flow_through_symbolic_tnp_calls():
    x = tt.Input((2,))
    h = tt.layers.Dense(2, use_bias=False, kernel_initializer="ones")(x)
    y = tnp.sum(tnp.square(h), axis=-1, keepdims=True)
    model = tt.Model(x, y)
    xs = np.array([[1.0, 2.0]], "float32")
    with GradientTape() as tape:
        out = model(xs)
    (g,) = tape.gradient(out, model.trainable_variables)
    # out = sum_j (x @ W)_j^2, d/dW_ij = 2 x_i (x @ W)_j = 2 x_i * 3
    np.testing.assert_allclose(np.asarray(g), 6.0 * np.array([[1.0, 1.0], [2.0, 2.0]]))


def test_an_unknown_function_still_says_the_tensor_is_symbolic():
    x = tt.Input((2,))
    with pytest.raises(TypeError, match="symbolic"):
        np.asarray(x)
