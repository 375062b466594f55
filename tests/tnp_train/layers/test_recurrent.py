"""SimpleRNN, LSTM, GRU, RNN and Bidirectional: against PyTorch fixtures
(tests/fixtures/make_rnn_attention_fixtures.py), against the step-by-step tape path, and
against finite differences (float64)."""
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tnp
import tnp_train as tt
from tnp_train.autodiff.check import check_grads
from tnp_train.layers import recurrent as rec
from tnp_train.layers.embedding import Embedding
from tnp_train.layers.recurrent import (GRU, LSTM, RNN, Bidirectional, GRUCell, LSTMCell,
                                        SimpleRNN, SimpleRNNCell, fused_rnn)

FIXTURES = np.load(os.path.join(os.path.dirname(__file__), "..", "..", "fixtures",
                                "rnn_attention_norm.npz"))
INIT = dict(kernel_initializer="glorot_uniform", recurrent_initializer="glorot_uniform")
CLASSES = {"simple_rnn": SimpleRNN, "lstm": LSTM, "gru": GRU}
CASES = [(True, False, False), (False, False, False), (True, True, False), (True, False, True),
         (False, True, True)]


def _grads(layer, x, dy, **call_kw):
    x = tnp.asarray(x)
    with tt.GradientTape() as tape:
        tape.watch(x)
        out = layer(x, **call_kw)
        outs = out if isinstance(out, (list, tuple)) else [out]
        dys = dy if isinstance(dy, (list, tuple)) else [dy]
        loss = sum(tnp.sum(o * tnp.asarray(np.asarray(d, dtype=o.dtype))) for o, d in zip(outs, dys))
    g = tape.gradient(loss, [x] + layer.weights)
    return [np.asarray(o) for o in outs], [np.asarray(a) for a in g]


@pytest.mark.parametrize("kind", sorted(CLASSES))
@pytest.mark.parametrize("rs,gb,masked", CASES)
@pytest.mark.parametrize("dtype,rtol,atol", [("float64", 1e-9, 1e-11), ("float32", 2e-5, 2e-6)])
def test_matches_torch_fixture(kind, rs, gb, masked, dtype, rtol, atol):
    key = f"{kind}/rs{int(rs)}_gb{int(gb)}_m{int(masked)}"
    f = {n: FIXTURES[f"{key}/{n}"] for n in ("x", "kernel", "recurrent_kernel", "bias", "mask",
                                             "dy", "y", "g_x", "g_kernel", "g_recurrent_kernel",
                                             "g_bias")}
    U = f["recurrent_kernel"].shape[0]
    layer = CLASSES[kind](U, return_sequences=rs, go_backwards=gb, dtype=dtype, **INIT)
    x = f["x"].astype(dtype)
    layer(tnp.asarray(x))
    layer.set_weights([f["kernel"], f["recurrent_kernel"], f["bias"]])
    outs, g = _grads(layer, x, f["dy"], mask=f["mask"] if masked else None)
    np.testing.assert_allclose(outs[0], f["y"], rtol=rtol, atol=atol)
    for got, name in zip(g, ("g_x", "g_kernel", "g_recurrent_kernel", "g_bias")):
        np.testing.assert_allclose(got, f[name], rtol=rtol * 10, atol=atol * 10, err_msg=name)


def _run(layer, x, mask, states, fused, seed=0, training=None):
    """Outputs and gradients (x, states, weights) through the fused or the step-by-step path."""
    orig = rec._CellBase._fused_spec
    if not fused:
        rec._CellBase._fused_spec = lambda self: None
    try:
        tt.utils.set_random_seed(seed)
        x = tnp.asarray(x)
        states = None if states is None else [tnp.asarray(s) for s in states]
        with tt.GradientTape() as tape:
            tape.watch(x)
            if states is not None:
                tape.watch(states)
            out = layer(x, mask=mask, initial_state=states, training=training)
            outs = out if isinstance(out, list) else [out]
            loss = sum(tnp.sum(o * tnp.asarray(np.cos(np.arange(o.size)).reshape(o.shape)))
                       for o in outs)
        g = tape.gradient(loss, [x] + (states or []) + layer.weights)
    finally:
        rec._CellBase._fused_spec = orig
    return [np.asarray(o) for o in outs], [np.asarray(a) for a in g]


@settings(max_examples=25, deadline=None)
@given(kind=st.sampled_from(["simple_rnn", "lstm", "gru", "gru_v1"]),
       B=st.integers(1, 3), T=st.integers(1, 4), D=st.integers(1, 3), U=st.integers(1, 3),
       rs=st.booleans(), gb=st.booleans(), rst=st.booleans(), tm=st.booleans(),
       masked=st.booleans(), with_state=st.booleans(), seed=st.integers(0, 2**16))
def test_fused_equals_step_by_step(kind, B, T, D, U, rs, gb, rst, tm, masked, with_state, seed):
    rng = np.random.default_rng(seed)
    extra = {"reset_after": False} if kind == "gru_v1" else {}
    cls = CLASSES["gru" if kind == "gru_v1" else kind]
    layer = cls(U, return_sequences=rs, go_backwards=gb, return_state=rst, time_major=tm,
                dtype="float64", **INIT, **extra)
    shape = (T, B, D) if tm else (B, T, D)
    x = rng.standard_normal(shape)
    layer(tnp.asarray(x))
    layer.set_weights([w.numpy() + 0.3 * rng.standard_normal(w.shape) for w in layer.weights])
    mask = rng.random(shape[:2]) > 0.4 if masked else None
    n_states = 2 if kind == "lstm" else 1
    states = [rng.standard_normal((B, U)) for _ in range(n_states)] if with_state else None
    o1, g1 = _run(layer, x, mask, states, fused=True)
    o2, g2 = _run(layer, x, mask, states, fused=False)
    assert len(o1) == len(o2) == (1 + n_states if rst else 1)
    for a, b in zip(o1, o2):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    for a, b in zip(g1, g2):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("kind", ["simple_rnn", "lstm", "gru"])
def test_dropout_masks_are_shared_by_both_paths_and_only_in_training(kind):
    rng = np.random.default_rng(1)
    layer = CLASSES[kind](4, return_sequences=True, dropout=0.3, recurrent_dropout=0.4,
                          dtype="float64", **INIT)
    x = rng.standard_normal((3, 5, 2))
    layer(tnp.asarray(x))      # built first: initializers may draw from the seeded generator
    o1, g1 = _run(layer, x, None, None, fused=True, seed=7, training=True)
    o2, g2 = _run(layer, x, None, None, fused=False, seed=7, training=True)
    for a, b in zip(o1 + g1, o2 + g2):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)
    o3, _ = _run(layer, x, None, None, fused=True, seed=8, training=True)
    assert not np.allclose(o1[0], o3[0])
    inf1, _ = _run(layer, x, None, None, fused=True, seed=7, training=False)
    inf2, _ = _run(layer, x, None, None, fused=True, seed=8, training=None)
    np.testing.assert_array_equal(inf1[0], inf2[0])


@pytest.mark.parametrize("kind,reset_after", [("rnn", True), ("lstm", True), ("gru", True),
                                              ("gru", False)])
@pytest.mark.parametrize("act,ract", [("tanh", "sigmoid"), ("relu", "hard_sigmoid")])
def test_fused_kernel_finite_differences(kind, reset_after, act, ract):
    rng = np.random.default_rng(3)
    B, T, D, U = 2, 4, 3, 2
    G = {"rnn": 1, "lstm": 4, "gru": 3}[kind]
    bshape = (2, G * U) if kind == "gru" and reset_after else (G * U,)
    args = [tnp.asarray(rng.standard_normal(s) * 0.6) for s in
            ((B, T, D), (D, G * U), (U, G * U), bshape, (B, U), (B, U))]
    mask = np.array([[True, False, True, True], [False, True, True, False]])
    rmask = rng.random((B, U)) + 0.5
    for gb in (False, True):
        def f(x, W, R, b, h0, c0):
            out = fused_rnn(kind, x, W, R, b, h0, c0 if kind == "lstm" else None, mask=mask,
                            rmask=rmask, activation=act, recurrent_activation=ract,
                            reset_after=reset_after, go_backwards=gb, return_sequences=True)
            return list(out)
        n = 6 if kind == "lstm" else 5
        check_grads(f, eps=1e-6, rtol=1e-5, atol=1e-7, argnums=list(range(n)))(*args)


def test_one_tape_node_per_sequence():
    layer = LSTM(4, return_sequences=True, **INIT)
    x = tnp.asarray(np.ones((2, 30, 3), np.float32))
    layer(x)
    with tt.GradientTape() as tape:
        tape.watch(x)
        layer(x)
    assert len(tape._nodes) == 1


def test_mask_from_embedding_equals_the_unpadded_sequence():
    emb = Embedding(10, 3, mask_zero=True, embeddings_initializer="glorot_uniform")
    lstm = LSTM(4, **INIT)
    ids = np.array([[3, 4, 5, 0, 0], [7, 1, 2, 9, 6]])
    e = emb(ids)
    y = np.asarray(lstm(e, mask=emb.compute_mask(ids)))
    short = np.asarray(lstm(emb(ids[:1, :3])))
    np.testing.assert_allclose(y[0], short[0], rtol=1e-6)
    full = np.asarray(lstm(emb(ids[1:])))
    np.testing.assert_allclose(y[1], full[0], rtol=1e-6)
    # return_sequences: masked steps repeat the previous output; the mask passes through
    lstm_seq = LSTM(4, return_sequences=True, **INIT)
    ys = np.asarray(lstm_seq(e, mask=emb.compute_mask(ids)))
    np.testing.assert_array_equal(ys[0, 3], ys[0, 2])
    np.testing.assert_array_equal(ys[0, 4], ys[0, 2])
    m = lstm_seq.compute_mask(e, emb.compute_mask(ids))
    np.testing.assert_array_equal(np.asarray(m), ids != 0)
    assert lstm.compute_mask(e, emb.compute_mask(ids)) is None


def test_weights_layout_names_and_unit_forget_bias():
    lstm = LSTM(3, **INIT)
    lstm(tnp.asarray(np.zeros((2, 4, 5), np.float32)))
    assert [tuple(w.shape) for w in lstm.weights] == [(5, 12), (3, 12), (12,)]
    assert [w.name.split("/")[-1] for w in lstm.weights] == ["kernel", "recurrent_kernel", "bias"]
    np.testing.assert_array_equal(lstm.weights[2].numpy(), np.r_[np.zeros(3), np.ones(3), np.zeros(6)])
    gru = GRU(3, **INIT)
    gru(tnp.asarray(np.zeros((2, 4, 5), np.float32)))
    assert [tuple(w.shape) for w in gru.weights] == [(5, 9), (3, 9), (2, 9)]
    gru1 = GRU(3, reset_after=False, **INIT)
    gru1(tnp.asarray(np.zeros((2, 4, 5), np.float32)))
    assert [tuple(w.shape) for w in gru1.weights] == [(5, 9), (3, 9), (9,)]
    rnn = SimpleRNN(3, use_bias=False, **INIT)
    rnn(tnp.asarray(np.zeros((2, 4, 5), np.float32)))
    assert [tuple(w.shape) for w in rnn.weights] == [(5, 3), (3, 3)]


def test_default_initializers_when_available():
    try:
        tt.initializers.get("orthogonal")
    except ValueError:
        pytest.skip("the orthogonal initializer is not in tnp_train.initializers yet")
    layer = LSTM(4)
    layer(tnp.asarray(np.zeros((1, 2, 3), np.float32)))
    R = layer.weights[1].numpy()
    for k in range(4):
        block = R[:, 4 * k:4 * (k + 1)]
        assert np.abs(block.T @ block).max() > 0
    np.testing.assert_allclose(R @ R.T, np.eye(4), atol=1e-5)   # orthogonal rows (4 x 16)


def test_output_structure_and_shapes():
    x = tnp.asarray(np.zeros((2, 5, 3), np.float32))
    layer = LSTM(4, return_sequences=True, return_state=True, **INIT)
    out = layer(x)
    assert isinstance(out, list) and [tuple(o.shape) for o in out] == [(2, 5, 4), (2, 4), (2, 4)]
    assert layer.compute_output_shape((None, 5, 3)) == [(None, 5, 4), (None, 4), (None, 4)]
    g = GRU(4, time_major=True, **INIT)
    assert tuple(g(tnp.asarray(np.zeros((5, 2, 3), np.float32))).shape) == (2, 4)
    assert g.compute_output_shape((5, None, 3)) == (None, 4)
    # initial states as the rest of an input list
    h0, c0 = np.ones((2, 4), np.float32), np.zeros((2, 4), np.float32)
    a = np.asarray(layer([x, h0, c0])[0])
    b = np.asarray(layer(x, initial_state=[h0, c0])[0])
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, np.asarray(layer(x)[0]))


def test_errors():
    layer = SimpleRNN(3, **INIT)
    with pytest.raises(ValueError, match="rank 3"):
        layer(tnp.asarray(np.zeros((2, 3), np.float32)))
    layer(tnp.asarray(np.zeros((2, 4, 3), np.float32)))
    with pytest.raises(ValueError, match="mask"):
        layer(tnp.asarray(np.zeros((2, 4, 3), np.float32)), mask=np.ones((2, 5), bool))
    with pytest.raises(ValueError, match="initial state"):
        layer(tnp.asarray(np.zeros((2, 4, 3), np.float32)), initial_state=[np.zeros((2, 4))])
    with pytest.raises(ValueError, match="units"):
        LSTM(0)
    with pytest.raises(ValueError, match="dropout"):
        GRU(2, dropout=1.5)


@pytest.mark.parametrize("layer", [
    SimpleRNN(3, activation="relu", dropout=0.1, return_sequences=True, **INIT),
    LSTM(3, unit_forget_bias=False, recurrent_dropout=0.2, go_backwards=True, **INIT),
    GRU(3, reset_after=False, return_state=True, time_major=True, **INIT),
    RNN(LSTMCell(2, **INIT), return_sequences=True),
])
def test_config_round_trip(layer):
    cfg = layer.get_config()
    clone = type(layer).from_config(cfg)
    assert clone.get_config() == cfg


def test_generic_rnn_over_builtin_and_user_cells():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 4, 3)).astype(np.float32)
    cell = GRUCell(3, **INIT)
    wrapped = RNN(cell, return_sequences=True)
    direct = GRU(3, return_sequences=True, **INIT)
    wrapped(tnp.asarray(x))
    direct(tnp.asarray(x))
    direct.set_weights(wrapped.get_weights())
    np.testing.assert_allclose(np.asarray(wrapped(tnp.asarray(x))), np.asarray(direct(tnp.asarray(x))),
                               rtol=1e-6)

    class MinimalCell(tt.layers.Layer):
        state_size = 2

        def build(self, input_shape):
            self.kernel = self.add_weight("kernel", (input_shape[-1], 2))
            super().build(input_shape)

        def call(self, inputs, states):
            h = tnp.tanh(inputs @ self.kernel + states[0])
            return h, [h]

    layer = RNN(MinimalCell(), return_state=True)
    xt = tnp.asarray(x)
    with tt.GradientTape() as tape:
        tape.watch(xt)
        y, h = layer(xt)
        loss = tnp.sum(y)
    K = layer.weights[0].numpy()
    ref = np.zeros((2, 2), np.float32)
    for t in range(4):
        ref = np.tanh(x[:, t] @ K + ref)
    np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(h), ref, rtol=1e-5)
    assert tape.gradient(loss, layer.weights[0]) is not None


def test_bidirectional_concat_and_sum():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)
    bi = Bidirectional(LSTM(4, return_sequences=True, **INIT))
    y = np.asarray(bi(tnp.asarray(x)))
    assert y.shape == (2, 5, 8) and len(bi.weights) == 6
    fwd, bwd = bi.forward_layer, bi.backward_layer
    assert bwd.go_backwards and not fwd.go_backwards
    np.testing.assert_allclose(y[..., :4], np.asarray(fwd(tnp.asarray(x))), rtol=1e-6)
    np.testing.assert_allclose(y[..., 4:], np.asarray(bwd(tnp.asarray(x)))[:, ::-1], rtol=1e-6)
    assert bi.compute_output_shape((None, 5, 3)) == (None, 5, 8)
    bs = Bidirectional(GRU(3, **INIT), merge_mode="sum")
    ys = np.asarray(bs(tnp.asarray(x)))
    np.testing.assert_allclose(ys, np.asarray(bs.forward_layer(tnp.asarray(x))) +
                               np.asarray(bs.backward_layer(tnp.asarray(x))), rtol=1e-6)
    clone = Bidirectional.from_config(bs.get_config())
    assert clone.merge_mode == "sum" and clone.backward_layer.go_backwards


def test_mixed_float16_computes_in_float32_and_returns_float16():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 6, 3)).astype(np.float32)
    ref = LSTM(4, return_sequences=True, **INIT)
    mixed = LSTM(4, return_sequences=True, dtype="mixed_float16", **INIT)
    ref(tnp.asarray(x))
    mixed(tnp.asarray(x))
    mixed.set_weights(ref.get_weights())
    assert all(w.dtype == np.float32 for w in mixed.weights)
    xt = tnp.asarray(x)
    with tt.GradientTape() as tape:
        y = mixed(xt)
        loss = tnp.sum(y.astype("float32"))
    assert y.dtype == np.float16
    g = tape.gradient(loss, mixed.weights)
    assert all(a.dtype == np.float32 for a in g)
    with tt.GradientTape() as tape:
        y32 = ref(xt)
        loss32 = tnp.sum(y32)
    g32 = tape.gradient(loss32, ref.weights)
    np.testing.assert_allclose(np.asarray(y).astype(np.float32), np.asarray(y32), atol=3e-3)
    for a, b in zip(g, g32):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=2e-2, rtol=1e-2)


def test_cells_alone():
    rng = np.random.default_rng(8)
    x = tnp.asarray(rng.standard_normal((2, 3)).astype(np.float32))
    for cell, n in ((SimpleRNNCell(4, **INIT), 1), (LSTMCell(4, **INIT), 2), (GRUCell(4, **INIT), 1)):
        states = [tnp.zeros((2, 4), dtype="float32")] * n
        out, new = cell(x, states)
        assert tuple(out.shape) == (2, 4) and len(new) == n
        np.testing.assert_array_equal(np.asarray(out), np.asarray(new[0]))
