"""Activations and initializers looked up by name."""
import numpy as np
import pytest

import tnp
import tnp_train as tt


def rng(seed=0):
    return np.random.default_rng(seed)


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
        tt.layers.Dense(-1)
