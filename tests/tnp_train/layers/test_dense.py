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


def test_dense_zero_units_is_an_empty_output_and_negative_units_are_refused():
    # as Keras: units=0 gives a (batch, 0) output; only negative units raise
    layer = tt.layers.Dense(0)
    y = layer(tnp.asarray(np.ones((2, 3), np.float32)))
    assert y.shape == (2, 0) and layer.kernel.shape == (3, 0) and layer.bias.shape == (0,)
    with pytest.raises(ValueError, match=r"Received an invalid value for `units`.*-1"):
        tt.layers.Dense(-1)
