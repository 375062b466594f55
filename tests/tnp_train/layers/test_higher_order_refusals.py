"""Layers whose backward pass is hand-written NumPy refuse a gradient of a gradient with a
clear NotImplementedError instead of returning a silently incomplete one; first-order
gradients inside an unrelated enclosing tape still work."""
import numpy as np
import pytest

import tnp
import tnp_train as tt

L = tt.layers
CASES = {
    "LayerNormalization": (lambda: L.LayerNormalization(dtype="float64"), (2, 3, 4), "float64"),
    "BatchNormalization": (lambda: L.BatchNormalization(dtype="float64"), (4, 3), "float64"),
    "LSTM": (lambda: L.LSTM(2, dtype="float64"), (2, 3, 4), "float64"),
    "GRU": (lambda: L.GRU(2, dtype="float64"), (2, 3, 4), "float64"),
    "SimpleRNN": (lambda: L.SimpleRNN(2, dtype="float64"), (2, 3, 4), "float64"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_of_gradient_is_refused(name):
    make, shape, dt = CASES[name]
    layer = make()
    x = tnp.asarray(np.random.default_rng(0).random(shape).astype(dt))
    layer(x)
    with tt.GradientTape() as outer:
        outer.watch(x)
        with tt.GradientTape() as inner:
            inner.watch(x)
            y = tnp.sum(layer(x, training=True) ** 3)
        g = inner.gradient(y, x)                 # first order: fine
        p = tnp.sum(g ** 2)
    with pytest.raises(NotImplementedError, match="gradients of gradients"):
        outer.gradient(p, x)                     # second order through the NumPy backward


def test_attention_and_embedding_refuse_too():
    mha = L.MultiHeadAttention(num_heads=2, key_dim=2, dtype="float64")
    q = tnp.asarray(np.random.default_rng(1).random((1, 3, 4)))
    mha(q, q)
    with tt.GradientTape() as outer:
        outer.watch(q)
        with tt.GradientTape() as inner:
            inner.watch(q)
            y = tnp.sum(mha(q, q) ** 2)
        p = tnp.sum(inner.gradient(y, q) ** 2)
    with pytest.raises(NotImplementedError, match="MultiHeadAttention"):
        outer.gradient(p, q)
    emb = L.Embedding(5, 3, dtype="float64")
    ids = np.array([[1, 2]])
    emb(ids)
    with tt.GradientTape() as outer:
        with tt.GradientTape() as inner:
            y = tnp.sum(emb(ids) ** 2)
        p = tnp.sum(inner.gradient(y, emb.embeddings) ** 2)
    with pytest.raises(NotImplementedError, match="gradients of gradients"):
        outer.gradient(p, emb.embeddings)


def test_first_order_inside_an_unrelated_outer_tape_still_works():
    layer = L.LayerNormalization(dtype="float64")
    x = tnp.asarray(np.random.default_rng(2).random((2, 4)))
    other = tt.Variable(np.ones(3))
    with tt.GradientTape() as outer:
        z = tnp.sum(other * 2)                  # the outer tape follows something else
        with tt.GradientTape() as inner:
            inner.watch(x)
            y = tnp.sum(layer(x) ** 2)
        g = inner.gradient(y, x)
    assert g.shape == x.shape
    np.testing.assert_allclose(np.asarray(outer.gradient(z, other)), [2.0, 2.0, 2.0])
