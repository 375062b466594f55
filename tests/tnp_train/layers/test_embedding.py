"""Embedding: lookup and scatter-add gradient against NumPy, masks, errors, dtypes, config."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tnp
import tnp_train as tt
from tnp_train.autodiff.check import check_grads
from tnp_train.layers.embedding import Embedding, embedding_lookup


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 6), d=st.integers(1, 4),
       shape=st.lists(st.integers(0, 4), min_size=1, max_size=3), seed=st.integers(0, 2**16))
def test_lookup_and_gradient_match_numpy(n, d, shape, seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, n, size=shape)
    layer = Embedding(n, d, embeddings_initializer="glorot_uniform")
    layer.build(ids.shape)
    W = layer.embeddings.numpy()
    dy = rng.standard_normal(tuple(shape) + (d,)).astype(np.float32)
    with tt.GradientTape() as tape:
        y = layer(ids)
        loss = tnp.sum(y * tnp.asarray(dy))
    g = np.asarray(tape.gradient(loss, layer.embeddings))
    np.testing.assert_array_equal(np.asarray(y), W[ids])
    ref = np.zeros_like(W)
    for idx, row in zip(ids.reshape(-1), dy.reshape(-1, d)):   # repeated ids accumulate
        ref[idx] += row
    np.testing.assert_allclose(g, ref, rtol=1e-6, atol=1e-6)


def test_finite_differences_float64():
    rng = np.random.default_rng(0)
    table = tnp.asarray(rng.standard_normal((5, 3)))
    ids = np.array([[0, 4, 4], [2, 0, 1]])
    check_grads(lambda t: embedding_lookup(t, ids), eps=1e-6, rtol=1e-7)(table)


def test_mask_zero():
    layer = Embedding(5, 2, mask_zero=True, embeddings_initializer="glorot_uniform")
    ids = np.array([[1, 2, 0, 0], [3, 0, 4, 0]])
    layer(ids)
    np.testing.assert_array_equal(np.asarray(layer.compute_mask(ids)), ids != 0)
    assert layer.supports_masking
    assert Embedding(5, 2).compute_mask(ids) is None


def test_out_of_range_ids_name_the_layer():
    layer = Embedding(4, 2, embeddings_initializer="glorot_uniform", name="tok_emb")
    with pytest.raises(ValueError, match=r"tok_emb.*id 4 is out of range \[0, 4\)"):
        layer(np.array([[0, 4]]))
    with pytest.raises(ValueError, match=r"tok_emb.*-1"):
        layer(np.array([-1, 2]))
    with pytest.raises(ValueError, match="positive"):
        Embedding(0, 3)


def test_default_uniform_initializer_when_available():
    try:
        tt.initializers.get("uniform")
    except ValueError:
        pytest.skip("the uniform initializer is not in tnp_train.initializers yet")
    layer = Embedding(200, 50)
    layer(np.array([1]))
    W = layer.embeddings.numpy()
    assert W.shape == (200, 50) and W.dtype == np.float32
    assert np.abs(W).max() <= 0.05 and np.abs(W).max() > 0.045


def test_dtypes_float_ids_and_mixed_precision():
    layer = Embedding(10, 3, embeddings_initializer="glorot_uniform", dtype="mixed_float16")
    y = layer(np.array([[1.0, 9.0]]))            # float ids are truncated to integers
    assert y.dtype == np.float16 and layer.embeddings.dtype == np.float32
    np.testing.assert_allclose(np.asarray(y)[0], layer.embeddings.numpy()[[1, 9]].astype(np.float16))
    with tt.GradientTape() as tape:
        loss = tnp.sum(layer(np.array([3, 3])).astype("float32"))
    g = tape.gradient(loss, layer.embeddings)
    assert g.dtype == np.float32 and np.asarray(g)[3].tolist() == [2.0, 2.0, 2.0]


def test_bfloat16_ids_are_cast_like_float_ids():
    # Keras casts any non-int32/int64 ids (bfloat16 is floating, kind 'V' for NumPy) to int32
    layer = Embedding(10, 3)
    ids = np.array([[1.0, 9.0]])
    np.testing.assert_array_equal(np.asarray(layer(tnp.asarray(ids.astype(tnp.bfloat16)))),
                                  layer.embeddings.numpy()[[[1, 9]]])


def test_output_shape_and_config_round_trip():
    layer = Embedding(7, 4, mask_zero=True, input_length=5, embeddings_initializer="glorot_uniform")
    assert layer.compute_output_shape((None, 5)) == (None, 5, 4)
    assert layer.compute_output_shape((None, None)) == (None, 5, 4)
    assert tuple(layer(np.zeros((2, 5), np.int64)).shape) == (2, 5, 4)
    cfg = layer.get_config()
    clone = Embedding.from_config(cfg)
    assert clone.get_config() == cfg and clone.mask_zero and clone.input_length == 5
    x = tnp.asarray(np.ones((2, 30), np.int64))
    with tt.GradientTape() as tape:
        layer.embeddings  # noqa: B018
        layer(x)
    assert len(tape._nodes) == 1
