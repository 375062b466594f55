"""Sequential: building with and without an Input, weights round trip."""
import numpy as np
import pytest

import tnp
import tnp_train as tt


def rng(seed=0):
    return np.random.default_rng(seed)


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
