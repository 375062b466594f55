"""The Numba time loop of the fused recurrent kernel (tnp_train/ops/_rnn_cpu.py) against the
NumPy loop it replaces and against float64.

The NumPy loop in float64 is the reference: the float32 Numba loop must be about as close to it as
the float32 NumPy loop is (its tanh and sigmoid are tnp.extend.vecmath's, its sums run in
another order), on the outputs, the final states and every gradient, for each kind, activation, mask, recurrent
dropout mask, cotangent and direction.
"""
import itertools

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import tnp
import tnp_train as tt
from tnp_train.ops import _common as ops_common
from tnp_train.ops import _rnn_cpu
from tnp_train.ops import recurrent as rec

pytestmark = pytest.mark.skipif(not _rnn_cpu.available(), reason="Numba is not installed")

KINDS = {"rnn": 1, "lstm": 4, "gru": 3}
ACTS = list(_rnn_cpu.ACT_CODES)


def _sequence(kind, seed, dt, T, B, D, U, mask, rmask, act, ract, numba, parts,
              time_major=False, go_backwards=False):
    """``fused_rnn`` forward and backward (a tape over ``sum(y * wy) + sum(hT * wh) + ...``):
    the outputs and the gradients of every input, as NumPy arrays."""
    rng = np.random.default_rng(seed)
    G = KINDS[kind] * U

    def rand(*shape, scale=1.0):
        return (scale * rng.standard_normal(shape)).astype(dt)

    lead = (T, B) if time_major else (B, T)
    x, W, R = rand(*lead, D), rand(D, G, scale=0.5), rand(U, G, scale=0.5)
    b = rand(2, G) if kind == "gru" else rand(G)
    h0 = rand(B, U)
    c0 = rand(B, U) if kind == "lstm" else None
    m = rng.random(lead) > 0.3 if mask else None
    rm = ((rng.random((B, U)) > 0.5) * 2.0).astype(dt) if rmask else None
    seq = "seq" in parts
    wy = rand(*lead, U) if seq else rand(B, U) * (1.0 if "last" in parts else 0.0)
    wh, wc = rand(B, U), rand(B, U)
    args = [tnp.asarray(a) if a is not None else None for a in (x, W, R, b, h0, c0)]
    original = _rnn_cpu.applies
    if not numba:
        _rnn_cpu.applies = lambda *a: False
    try:
        assert _rnn_cpu.applies(np, kind, dt, act, ract, True) == (numba and dt == np.float32)
        with tt.GradientTape() as tape:
            for a in args:
                if a is not None:
                    tape.watch(a)
            outs = rec.fused_rnn(kind, *args, mask=m, rmask=rm, activation=act,
                                 recurrent_activation=ract, reset_after=True,
                                 go_backwards=go_backwards, return_sequences=seq,
                                 time_major=time_major)
            loss = sum(tnp.sum(o * tnp.asarray(w)) for o, w in zip(outs, (wy, wh, wc)))
        grads = tape.gradient(loss, [a for a in args if a is not None])
    finally:
        _rnn_cpu.applies = original
    return [np.asarray(o) for o in outs] + [np.asarray(g) for g in grads]


def _compare(kind, seed, drawn=False, **kw):
    with np.errstate(all="ignore"):
        exact = _sequence(kind, seed, np.float64, numba=False, **kw)
    if drawn:   # unbounded activations (relu, linear) may blow past float32's range: not the
        # subject here
        assume(all(np.abs(e).max() < 1e4 for e in exact))
    with np.errstate(all="ignore"):
        fast = _sequence(kind, seed, np.float32, numba=True, **kw)
        slow = _sequence(kind, seed, np.float32, numba=False, **kw)
    assert len(fast) == len(slow) == len(exact)
    for f, s, e in zip(fast, slow, exact):
        assert f.dtype == np.float32 and f.shape == e.shape
        scale = np.abs(e).max() + 1e-6
        err_fast = np.abs(f - e).max() / scale
        err_slow = np.abs(s - e).max() / scale
        assert err_fast <= 3 * err_slow + 3e-6, (err_fast, err_slow)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("mask,rmask,layout,parts", [
    (False, False, "batch", ("last",)), (True, False, "batch", ("seq",)),
    (False, True, "time-major", ("seq",)), (True, True, "backwards", ("last",)),
    (True, False, "time-major-backwards", ("seq",)), (True, True, "batch", ())])
def test_default_activations(kind, mask, rmask, layout, parts):
    _compare(kind, 3, T=9, B=5, D=3, U=6, mask=mask, rmask=rmask, act="tanh", ract="sigmoid",
             parts=parts, time_major=layout.startswith("time"),
             go_backwards=layout.endswith("backwards"))


@settings(max_examples=30, deadline=None)
@given(kind=st.sampled_from(list(KINDS)), act=st.sampled_from(ACTS), ract=st.sampled_from(ACTS),
       mask=st.booleans(), rmask=st.booleans(),
       parts=st.sampled_from([(), ("seq",), ("last",)]),
       time_major=st.booleans(), go_backwards=st.booleans(),
       T=st.integers(1, 7), B=st.integers(1, 4), U=st.integers(1, 9),
       seed=st.integers(0, 2 ** 16))
def test_every_activation_mask_and_cotangent(kind, act, ract, mask, rmask, parts, time_major,
                                             go_backwards, T, B, U, seed):
    _compare(kind, seed, drawn=True, T=T, B=B, D=2, U=U, mask=mask, rmask=rmask, act=act,
             ract=ract, parts=parts, time_major=time_major, go_backwards=go_backwards)


def test_tanh_approximation_matches_float32_tanh():
    """The loop's tanh: within 1e-7 of the exact value everywhere (NumPy's float32 tanh: 6e-8),
    exactly +-1 far out, odd,
    NaN stays NaN (a SimpleRNN with a linear projection exposes the activation itself)."""
    pos = np.linspace(0, 12, 10001).astype(np.float32)
    z = np.concatenate([-pos[::-1], pos, np.array([0.0, 1e-30, -1e-30, 40.0, -40.0], np.float32)])
    T = z.size
    x = z.reshape(1, T, 1)
    W = np.ones((1, 1), np.float32)
    R = np.zeros((1, 1), np.float32)

    def run(x):
        assert _rnn_cpu.applies(np, "rnn", np.float32, "tanh", "sigmoid", True)
        y, _ = rec.fused_rnn("rnn", tnp.asarray(x), tnp.asarray(W), tnp.asarray(R),
                             return_sequences=True)
        return np.asarray(y).reshape(-1)

    y = run(x)
    exact = np.tanh(z.astype(np.float64))
    assert np.abs(y - exact).max() < 1e-7
    assert y[-2] == 1.0 and y[-1] == -1.0 and y[-5] == 0.0
    np.testing.assert_array_equal(y[:10001][::-1], -y[10001:20002])
    assert np.isnan(run(np.full((1, 1, 1), np.nan, np.float32))).all()


@pytest.mark.parametrize("layer", ["lstm", "gru", "bidirectional-mask"])
def test_layers_take_the_loop_and_agree_with_numpy(layer, monkeypatch):
    """Through the public layers (batch-major inputs, masks, go_backwards in Bidirectional):
    the Numba loop runs (counted) and outputs and gradients agree with the NumPy loop."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 11, 5)).astype(np.float32)
    mask = np.ones((4, 11), bool)
    mask[1, 7:] = False
    mask[3, 2:] = False

    def make():
        tt.utils.set_random_seed(0)
        if layer == "lstm":
            return tt.layers.LSTM(6, return_sequences=True, return_state=True)
        if layer == "gru":
            return tt.layers.GRU(6, return_sequences=True)
        return tt.layers.Bidirectional(tt.layers.LSTM(6, return_sequences=True))

    def run():
        lay = make()
        xt = tnp.asarray(x)
        kw = {"mask": tnp.asarray(mask)} if layer.endswith("mask") else {}
        with tt.GradientTape() as tape:
            tape.watch(xt)
            outs = lay(xt, **kw)
            outs = outs if isinstance(outs, list) else [outs]
            loss = sum(tnp.sum(o * o) for o in outs)
        grads = tape.gradient(loss, [xt] + lay.trainable_weights)
        return [np.asarray(o) for o in outs + grads]

    calls = []
    original_forward = _rnn_cpu.forward
    monkeypatch.setattr(_rnn_cpu, "forward",
                        lambda *a: calls.append(1) or original_forward(*a))
    fast = run()
    assert calls, "the Numba loop did not run"
    monkeypatch.setattr(_rnn_cpu, "applies", lambda *args: False)
    calls.clear()
    slow = run()
    assert not calls
    for f, s in zip(fast, slow):
        np.testing.assert_allclose(f, s, rtol=2e-5, atol=2e-6)


def test_float64_and_gru_reset_before_keep_the_numpy_loop():
    assert not _rnn_cpu.applies(np, "lstm", np.float64, "tanh", "sigmoid", True)
    assert not _rnn_cpu.applies(np, "gru", np.float32, "tanh", "sigmoid", False)
    assert not _rnn_cpu.applies(np, "lstm", np.float32, "softplus", "sigmoid", True)
    assert _rnn_cpu.applies(np, "gru", np.float32, "tanh", "sigmoid", True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_scatter_add_rows_equals_add_at(dtype):
    """The Embedding gradient's row loop: the same sums as numpy.add.at (same order, same bits),
    negative ids wrap, other shapes take add.at."""
    rng = np.random.default_rng(1)
    for n, d, k in itertools.product((1, 7), (1, 5), (1, 40)):
        a = rng.standard_normal((n, d)).astype(dtype)
        idx = rng.integers(-n, n, size=k)
        v = rng.standard_normal((k, d)).astype(dtype)
        want = a.copy()
        np.add.at(want, idx, v)
        ops_common.scatter_add(np, a, idx, v)
        np.testing.assert_array_equal(a, want)
    a = np.zeros(6)
    ops_common.scatter_add(np, a, np.array([1, 1, 4]), np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(a, [0, 3, 0, 0, 3, 0])
