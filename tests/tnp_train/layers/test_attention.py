"""MultiHeadAttention and Attention: against a PyTorch fixture
(tests/fixtures/make_rnn_attention_fixtures.py), hand-written NumPy and finite differences."""
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tnp
import tnp_train as tt
from tnp_train.autodiff.check import check_grads
from tnp_train.layers.attention import Attention, MultiHeadAttention, multi_head_attention

FIXTURES = np.load(os.path.join(os.path.dirname(__file__), "..", "..", "fixtures",
                                "rnn_attention_norm.npz"))
NAMES = ["wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo"]


def _np_softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _np_mha(q, k, v, w, mask=None):
    wq, bq, wk, bk, wv, bv, wo, bo = w
    Q = np.einsum("btd,dhk->bthk", q, wq) + bq
    K = np.einsum("bsd,dhk->bshk", k, wk) + bk
    V = np.einsum("bsd,dhv->bshv", v, wv) + bv
    s = np.einsum("bthk,bshk->bhts", Q / np.sqrt(wq.shape[-1]), K)
    if mask is not None:
        s = s + np.where(mask[:, None], 0.0, -1e9)      # additive, as Keras's masked softmax
    p = _np_softmax(s)
    return np.einsum("bthv,hvo->bto", np.einsum("bhts,bshv->bthv", p, V), wo) + bo, p


@pytest.mark.parametrize("dtype,rtol", [("float64", 1e-9), ("float32", 3e-5)])
def test_multi_head_attention_matches_torch(dtype, rtol):
    f = {n[4:]: FIXTURES[n] for n in FIXTURES.files if n.startswith("mha/")}
    H, K = f["wq"].shape[1:]
    layer = MultiHeadAttention(num_heads=H, key_dim=K, value_dim=f["wv"].shape[2], dtype=dtype)
    q, v, k = (tnp.asarray(f[n].astype(dtype)) for n in ("query", "value", "key"))
    layer(q, v, key=k)
    assert [w.name.split("/", 1)[1] for w in layer.weights] == [
        "query/kernel", "query/bias", "key/kernel", "key/bias", "value/kernel", "value/bias",
        "attention_output/kernel", "attention_output/bias"]
    layer.set_weights([f[n] for n in NAMES])
    with tt.GradientTape() as tape:
        tape.watch([q, v, k])
        y, scores = layer(q, v, key=k, attention_mask=f["mask"], return_attention_scores=True)
        loss = tnp.sum(y * tnp.asarray(f["dy"].astype(dtype)))
    grads = tape.gradient(loss, [q, v, k] + layer.weights)
    np.testing.assert_allclose(np.asarray(y), f["y"], rtol=rtol, atol=rtol)
    np.testing.assert_allclose(np.asarray(scores), f["scores"], rtol=rtol, atol=rtol)
    for g, name in zip(grads, ["g_query", "g_value", "g_key"] + [f"g_{n}" for n in NAMES]):
        np.testing.assert_allclose(np.asarray(g), f[name], rtol=rtol * 10, atol=rtol * 10,
                                   err_msg=name)


@pytest.mark.parametrize("use_bias", [True, False])
@pytest.mark.parametrize("with_mask", [True, False])
def test_multi_head_attention_finite_differences(use_bias, with_mask):
    rng = np.random.default_rng(0)
    B, T, S, D, H, K, V, O = 2, 2, 3, 3, 2, 2, 3, 4
    shapes = [(B, T, D), (B, S, D), (B, S, D + 1), (D, H, K), (H, K), (D, H, K), (H, K),
              (D + 1, H, V), (H, V), (H, V, O), (O,)]
    args = [tnp.asarray(rng.standard_normal(s) * 0.7) for s in shapes]
    if not use_bias:
        for i in (4, 6, 8, 10):
            args[i] = None
    mask = np.array([[[1, 0, 1], [0, 1, 1]], [[1, 1, 1], [1, 0, 0]]], bool) if with_mask else None
    drop = (rng.random((B, H, T, S)) > 0.3) / 0.7

    def f(*a):
        return list(multi_head_attention(*a, mask=mask, dropout_mask=drop, return_scores=True))
    argnums = [i for i, a in enumerate(args) if a is not None]
    check_grads(f, eps=1e-6, rtol=1e-6, atol=1e-8, argnums=argnums)(*args)


@settings(max_examples=15, deadline=None)
@given(B=st.integers(1, 2), T=st.integers(1, 3), S=st.integers(1, 3), H=st.integers(1, 3),
       K=st.integers(1, 3), D=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_self_attention_matches_numpy(B, T, S, H, K, D, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((B, T, D))
    layer = MultiHeadAttention(H, K, dtype="float64")
    layer(tnp.asarray(x), tnp.asarray(x))
    w = [rng.standard_normal(tuple(p.shape)) for p in layer.weights]
    layer.set_weights(w)
    mask = (rng.random((B, T, T)) > 0.3) | np.eye(T, dtype=bool)   # finite differences need a
    xt = tnp.asarray(x)                                            # visible key in every row
    with tt.GradientTape() as tape:
        tape.watch(xt)
        y = layer(xt, xt, attention_mask=mask)
        loss = tnp.sum(y * y)
    gx = np.asarray(tape.gradient(loss, xt))
    ref, _ = _np_mha(x, x, x, w, mask)
    np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-9, atol=1e-12)
    eps, v = 1e-6, rng.standard_normal(x.shape)
    num = (np.sum(_np_mha(x + eps * v, x + eps * v, x + eps * v, w, mask)[0] ** 2) -
           np.sum(_np_mha(x - eps * v, x - eps * v, x - eps * v, w, mask)[0] ** 2)) / (2 * eps)
    np.testing.assert_allclose(np.sum(gx * v), num, rtol=1e-5, atol=1e-7)   # q, k, v grads summed


def test_rank4_inputs_attend_jointly_and_output_shape():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 2, 3, 4))
    layer = MultiHeadAttention(2, 3, output_shape=(2, 5), dtype="float64")
    y, s = layer(tnp.asarray(x), tnp.asarray(x), return_attention_scores=True)
    assert tuple(y.shape) == (2, 2, 3, 2, 5) and tuple(s.shape) == (2, 2, 2, 3, 2, 3)
    assert tuple(layer.weights[6].shape) == (2, 3, 2, 5)
    w = [p.numpy() for p in layer.weights]
    w[6] = w[6].reshape(2, 3, 10)
    w[7] = w[7].reshape(10)
    xf = x.reshape(2, 6, 4)
    ref, p = _np_mha(xf, xf, xf, w)
    np.testing.assert_allclose(np.asarray(y).reshape(2, 6, 10), ref, rtol=1e-9)
    np.testing.assert_allclose(np.asarray(s).reshape(2, 2, 6, 6), p, rtol=1e-9)
    with pytest.raises(NotImplementedError, match="attention_axes"):
        MultiHeadAttention(2, 3, attention_axes=(2,))(tnp.asarray(x), tnp.asarray(x))
    same = MultiHeadAttention(2, 3, attention_axes=(1, 2))
    assert tuple(same(tnp.asarray(x), tnp.asarray(x)).shape) == x.shape


def test_dropout_only_in_training_and_reproducible():
    x = tnp.asarray(np.random.default_rng(2).standard_normal((2, 4, 6)).astype(np.float32))
    layer = MultiHeadAttention(2, 3, dropout=0.5)
    base = np.asarray(layer(x, x))
    np.testing.assert_array_equal(np.asarray(layer(x, x, training=False)), base)
    tt.utils.set_random_seed(3)
    a = np.asarray(layer(x, x, training=True))
    tt.utils.set_random_seed(3)
    b = np.asarray(layer(x, x, training=True))
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, base)


def test_mixed_float16_softmax_in_float32():
    rng = np.random.default_rng(4)
    q = rng.standard_normal((2, 3, 8)).astype(np.float32) * 30     # large logits
    ref = MultiHeadAttention(2, 4)
    mixed = MultiHeadAttention(2, 4, dtype="mixed_float16")
    ref(tnp.asarray(q), tnp.asarray(q))
    mixed(tnp.asarray(q), tnp.asarray(q))
    mixed.set_weights(ref.get_weights())
    mask = np.tril(np.ones((3, 3), bool))[None].repeat(2, 0)
    y, s = mixed(tnp.asarray(q), tnp.asarray(q), attention_mask=mask, return_attention_scores=True)
    y32, s32 = ref(tnp.asarray(q), tnp.asarray(q), attention_mask=mask, return_attention_scores=True)
    assert y.dtype == np.float16 and s.dtype == np.float16
    assert np.isfinite(np.asarray(y)).all()
    np.testing.assert_allclose(np.asarray(s).astype(np.float32), np.asarray(s32), atol=2e-2)
    np.testing.assert_allclose(np.asarray(y).astype(np.float32), np.asarray(y32),
                               atol=0.05 * np.abs(np.asarray(y32)).max())


def test_config_round_trip_and_errors():
    layer = MultiHeadAttention(4, 2, value_dim=3, dropout=0.1, use_bias=False, output_shape=7)
    cfg = layer.get_config()
    assert MultiHeadAttention.from_config(cfg).get_config() == cfg
    with pytest.raises(ValueError, match="num_heads"):
        MultiHeadAttention(0, 2)
    x = tnp.asarray(np.zeros((2, 3, 4), np.float32))
    layer(x, x)
    assert [tuple(w.shape) for w in layer.weights] == [(4, 4, 2), (4, 4, 2), (4, 4, 3), (4, 3, 7)]
    with pytest.raises(ValueError, match="broadcast"):
        layer(x, x, attention_mask=np.ones((2, 3, 5), bool))
    with pytest.raises(ValueError, match="feature sizes"):
        layer(tnp.asarray(np.zeros((2, 3, 5), np.float32)), x)


@pytest.mark.parametrize("use_scale,causal", [(False, False), (True, False), (False, True)])
def test_dot_product_attention_matches_numpy(use_scale, causal):
    rng = np.random.default_rng(5)
    q, v, k = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 6)), rng.standard_normal((2, 5, 4))
    qm = np.array([[1, 1, 0], [1, 1, 1]], bool)
    vm = np.array([[1, 1, 1, 0, 0], [1, 0, 1, 1, 1]], bool)
    layer = Attention(use_scale=use_scale, causal=causal, dtype="float64")
    inputs = [tnp.asarray(q), tnp.asarray(v), tnp.asarray(k)]
    layer(inputs)
    if use_scale:
        layer.set_weights([np.array(0.7)])
    y, p = layer(inputs, mask=[qm, vm], return_attention_scores=True)
    s = q @ k.transpose(0, 2, 1) * (0.7 if use_scale else 1.0)
    hide = ~vm[:, None, :]
    if causal:
        hide = hide | np.triu(np.ones((3, 5), bool), 1)[None]
    pr = _np_softmax(s - 1e9 * hide)
    np.testing.assert_allclose(np.asarray(p), pr, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.asarray(y), (pr @ v) * qm[..., None], rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(np.asarray(layer.compute_mask(inputs, [qm, vm])), qm)

    def f(q, v, k):
        return layer([q, v, k], mask=[qm, vm])
    check_grads(f, eps=1e-6, rtol=1e-6, atol=1e-8)(*inputs)
    cfg = layer.get_config()
    assert Attention.from_config(cfg).get_config() == cfg
