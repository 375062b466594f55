"""A Sequential model's graph (Keras's): ``inputs``/``outputs``/``input``/``output`` and every
layer's ``output`` in one graph, so a feature extractor can be cut out of it."""
import numpy as np
import pytest

import tnp_train as tt

L = tt.layers


def _relu(a):
    return np.maximum(a, 0)


def test_feature_extractor_from_a_sequential_model():
    model = tt.Sequential([tt.Input((4,)), L.Dense(3, activation="relu"), L.Dense(2)])
    model.add(L.Dense(5))                       # added after: still one graph
    extractor = tt.Model(inputs=model.inputs, outputs=[l.output for l in model.layers])
    x = np.random.default_rng(0).standard_normal((6, 4)).astype("float32")
    w = [np.asarray(a) for a in model.get_weights()]
    h1 = _relu(x @ w[0] + w[1])
    h2 = h1 @ w[2] + w[3]
    want = [h1, h2, h2 @ w[4] + w[5]]
    for got, ref in zip(extractor(x), want):
        np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-5, atol=1e-6)
    assert [len(l.inbound_nodes) for l in model.layers] == [1, 1, 1]
    assert model.input is model.inputs[0] and model.output is model.outputs[0]
    assert model.output.shape == (None, 5)


def test_pop_and_deferred_build_keep_one_graph():
    model = tt.Sequential([tt.Input((4,)), L.Dense(3), L.Dense(2)])
    model.pop()
    assert model.output.shape == (None, 3) and len(model.layers[0].inbound_nodes) == 1
    model.pop()
    assert model.output is model.input
    later = tt.Sequential([L.Dense(3)])
    with pytest.raises(AttributeError, match="no inputs yet"):
        later.inputs
    later(np.ones((2, 7), "float32"))        # built on the first call
    assert later.inputs[0].shape == (None, 7) and later.layers[0].input_shape == (None, 7)
    given = tt.Sequential([L.Dense(3, input_shape=(6,)), L.Dense(1)])
    assert given.input.shape == (None, 6) and given.outputs[0].shape == (None, 1)
