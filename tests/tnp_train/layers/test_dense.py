"""Dense against plain NumPy and Keras's weight layout."""
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
