"""GlorotUniform's limits and the zero bias, against NumPy."""
import numpy as np
import pytest

import tnp
import tnp_train as tt


def rng(seed=0):
    return np.random.default_rng(seed)


def test_glorot_uniform_limits_and_zero_bias():
    layer = tt.layers.Dense(300, kernel_initializer=tt.initializers.GlorotUniform(seed=1))
    layer(tnp.ones((1, 200), dtype="float32"))
    W, b = layer.get_weights()
    limit = np.sqrt(6 / (200 + 300))
    assert np.abs(W).max() <= limit and np.abs(W).max() > 0.9 * limit
    np.testing.assert_array_equal(b, np.zeros(300, np.float32))
