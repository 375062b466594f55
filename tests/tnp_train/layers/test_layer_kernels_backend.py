"""The hand-written kernels of Embedding, BatchNormalization/LayerNormalization,
MultiHeadAttention/Attention and the fused recurrent layers compute with the array module of
their inputs' device (``x._dev.backend.xp``), not with NumPy on host copies.

Without a GPU, the fake ``cpu:1`` device is given a fake backend whose module is a proxy over
NumPy (a module object that is not ``numpy``, as ``cupy`` would not be): every kernel must give
bit-for-bit the CPU's results and gradients through it, use it (its attribute reads are
counted), leave results, gradients and updated statistics on ``cpu:1`` although no
``tnp.default_device`` block is open, and never turn a ``cpu:1`` array into a NumPy array from
inside the kernel modules (``np.asarray(x)`` there is a host copy on a GPU: it raises here).
"""
import collections
import os
import sys
import types

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp._core.backend import Backend
from tnp_train.layers import attention as attention_mod
from tnp_train.layers import embedding as embedding_mod
from tnp_train.layers import normalization as normalization_mod
from tnp_train.layers import recurrent as recurrent_mod
from tnp_train.layers.attention import multi_head_attention
from tnp_train.layers.embedding import embedding_lookup
from tnp_train.layers.normalization import normalize
from tnp_train.layers.recurrent import fused_rnn
from tnp_train.ops import _rnn_cpu
from tnp_train.ops import recurrent as recurrent_ops_mod

L = tt.layers
CPU, FAKE = tnp.device("cpu"), tnp.device("cpu:1")
KERNEL_FILES = {os.path.abspath(m.__file__) for m in
                (attention_mod, embedding_mod, normalization_mod, recurrent_mod, recurrent_ops_mod)}


class _ProxyXP(types.ModuleType):
    """NumPy seen through another module object; counts the attributes the kernels read."""

    def __init__(self):
        super().__init__("numpy")   # the name lets Backend.submodule import numpy.linalg...
        self.used = collections.Counter()

    def __getattr__(self, name):
        self.used[name] += 1
        return getattr(np, name)


@pytest.fixture
def xp(monkeypatch):
    """``cpu:1`` computes through a proxy module; host conversions of its arrays made by the
    kernel modules fail the test."""
    proxy = _ProxyXP()
    assert proxy is not np and FAKE.backend.xp is np
    monkeypatch.setattr(FAKE, "_backend", Backend("numpy-proxy", proxy, np.ndarray, False))
    original = tnp.ndarray.__array__

    def guarded(self, *args, **kwargs):
        if self._dev is FAKE:
            caller = os.path.abspath(sys._getframe(1).f_code.co_filename)
            if caller in KERNEL_FILES:
                raise AssertionError(f"{caller}: a {FAKE} array was converted to NumPy (a "
                                     f"host copy on a GPU)")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(tnp.ndarray, "__array__", guarded)
    # the CPU reference takes the array-module code too, not the Numba time loop of the fused
    # recurrent kernel (float32 on NumPy only; tests/tnp_train/layers/test_rnn_cpu_loop.py
    # compares the two)
    monkeypatch.setattr(_rnn_cpu, "applies", lambda *args: False)
    assert tnp.get_default_device() is CPU     # everything below runs outside a device block
    yield proxy
    assert FAKE.backend.xp is proxy


def _on(a, dev):
    return tnp.asarray(a).to_device(dev)


def _host(a):
    return None if a is None else np.asarray(a.to_device("cpu"))


def _run_fn(fn, arrays, dev, seed=1):
    """``fn(*arrays)`` on ``dev`` (arrays moved there), with the gradients of
    ``sum(y * dy)`` (fixed random ``dy`` per output) with respect to every array."""
    args = [_on(a, dev) for a in arrays]
    with tt.GradientTape() as tape:
        for a in args:
            tape.watch(a)
        outs, loss = _outputs_and_loss(fn(*args), dev, seed)
    grads = tape.gradient(loss, args)
    return outs, grads


def _outputs_and_loss(out, dev, seed):
    """The outputs as a list, and ``sum(y * dy)`` over them with a fixed random ``dy``."""
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    rng = np.random.default_rng(seed)
    loss = 0
    for o in outs:
        d = rng.standard_normal(tuple(o.shape)).astype(o.dtype)
        loss = loss + tnp.sum(o * _on(d, dev))
    return outs, loss


def _check_same(fn, arrays, proxy, used):
    """``fn`` on the CPU and through the proxy on ``cpu:1``: identical, and on ``cpu:1``."""
    ref_outs, ref_grads = _run_fn(fn, arrays, CPU)
    before = sum(proxy.used.values())
    outs, grads = _run_fn(fn, arrays, FAKE)
    assert sum(proxy.used.values()) > before
    for name in used:
        assert proxy.used[name] > 0, f"xp.{name} was not used ({dict(proxy.used)})"
    for o, r in zip(outs, ref_outs):
        assert o.device is FAKE and o.dtype == r.dtype
        np.testing.assert_array_equal(_host(o), _host(r))
    for g, r in zip(grads, ref_grads):
        assert (g is None) == (r is None)
        if g is not None:
            assert g.device is FAKE and g.dtype == r.dtype
            np.testing.assert_array_equal(_host(g), _host(r))


# ---------------------------------------------------------------------------- kernel functions
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_embedding_lookup(xp, dtype):
    rng = np.random.default_rng(0)
    table = rng.standard_normal((6, 3)).astype(dtype)
    ids = np.array([[0, 5, 5], [2, 0, 1]])          # repeated ids accumulate
    for ids_on in (lambda d: ids, lambda d: _on(ids, d)):   # NumPy ids move to the device
        _check_same(lambda t: embedding_lookup(t, ids_on(t.device)), [table], xp,
                    used=("take", "add", "zeros"))
    with pytest.raises(ValueError, match="out of range"):
        embedding_lookup(_on(table, FAKE), _on(np.array([6]), FAKE))


def test_embedding_lookup_float_ids_move_and_truncate(xp):
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = embedding_lookup(_on(table, FAKE), np.array([1.0, 3.0]))
    assert y.device is FAKE
    np.testing.assert_array_equal(_host(y), table[[1, 3]])


@pytest.mark.parametrize("given", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_normalize(xp, dtype, given):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4, 5)).astype(dtype)
    g = rng.standard_normal((1, 1, 5)).astype("float32")
    b = rng.standard_normal((1, 1, 5)).astype("float32")
    mean = rng.standard_normal((1, 4, 1)).astype("float32") if given else None
    var = rng.random((1, 4, 1)).astype("float32") + 0.5 if given else None
    _check_same(lambda x, g, b: normalize(x, g, b, (0, 2), 1e-3, mean=mean, variance=var),
                [x, g, b], xp, used=("sqrt",))


@pytest.mark.parametrize("scores", [False, True])
def test_multi_head_attention(xp, scores):
    rng = np.random.default_rng(2)
    B, T, S, D, H, K = 2, 3, 4, 5, 2, 3
    arrays = [rng.standard_normal(s).astype("float32") for s in
              [(B, T, D), (B, S, D), (B, S, D), (D, H, K), (H, K), (D, H, K), (H, K), (D, H, K),
               (H, K), (H, K, D), (D,)]]
    mask = rng.random((B, T, S)) < 0.7
    mask[..., 0] = True
    drop = (rng.random((B, H, T, S)) < 0.8) / 0.8
    _check_same(lambda *a: multi_head_attention(*a, mask=mask, dropout_mask=drop,
                                                return_scores=scores), arrays, xp,
                used=("exp", "where"))


@pytest.mark.parametrize("kind,reset_after", [("rnn", True), ("lstm", True), ("gru", True),
                                              ("gru", False)])
@pytest.mark.parametrize("return_sequences,go_backwards,time_major",
                         [(True, False, False), (False, True, False), (True, True, True)])
def test_fused_rnn(xp, kind, reset_after, return_sequences, go_backwards, time_major):
    rng = np.random.default_rng(3)
    B, T, D, U = 2, 4, 3, 2
    G = {"rnn": 1, "lstm": 4, "gru": 3}[kind] * U
    x = rng.standard_normal((T, B, D) if time_major else (B, T, D))
    bias = rng.standard_normal((2, G) if kind == "gru" and reset_after else (G,))
    arrays = [x, rng.standard_normal((D, G)), rng.standard_normal((U, G)), bias,
              rng.standard_normal((B, U))]
    if kind == "lstm":
        arrays.append(rng.standard_normal((B, U)))
    mask = rng.random((B, T)) < 0.7
    mask = mask.T if time_major else mask
    rmask = (rng.random((B, U)) < 0.8) / 0.8

    def fn(x, W, R, b, h0, c0=None):
        return fused_rnn(kind, x, W, R, b, h0, c0, mask=mask, rmask=rmask,
                         reset_after=reset_after, go_backwards=go_backwards,
                         return_sequences=return_sequences, time_major=time_major)
    _check_same(fn, arrays, xp, used=("tanh", "where", "zeros", "empty"))


# ---------------------------------------------------------------------------- layers
def _layer_run(make, inputs, dev, call_kw=None, seed=0):
    """Build ``make()`` on ``dev`` (seeded weights, by a first inference call inside a
    ``tnp.default_device`` block: weights built lazily outside one land on the default
    device), then, outside any device block, call it
    on ``inputs`` moved to ``dev`` with ``training=True`` (seeded dropout) and take the
    gradients of ``sum(y * dy)`` for the float inputs and the trainable weights."""
    args = [_on(a, dev) for a in inputs]
    with tnp.default_device(dev):
        tt.utils.set_random_seed(seed)
        layer = make()
        layer(args if len(args) > 1 else args[0])   # builds the weights on dev (inference)
    watched = [a for a in args if a.dtype.kind == "f"]
    kw = {}
    for k, v in (call_kw or {}).items():        # NumPy masks: on the device too
        if isinstance(v, np.ndarray):
            v = _on(v, dev)
        elif isinstance(v, list):
            v = [None if m is None else _on(m, dev) for m in v]
        kw[k] = v
    tt.utils.set_random_seed(seed + 1)
    with tt.GradientTape() as tape:
        for a in watched:
            tape.watch(a)
        outs, loss = _outputs_and_loss(layer(args if len(args) > 1 else args[0], **kw), dev, seed)
    grads = tape.gradient(loss, watched + layer.trainable_weights)
    return layer, outs, grads


def _check_layer(make, inputs, proxy, call_kw=None, used=()):
    ref_layer, ref_outs, ref_grads = _layer_run(make, inputs, CPU, call_kw)
    layer, outs, grads = _layer_run(make, inputs, FAKE, call_kw)
    for name in used:
        assert proxy.used[name] > 0, f"xp.{name} was not used ({dict(proxy.used)})"
    assert len(outs) == len(ref_outs) and len(grads) == len(ref_grads)
    for o, r in zip(outs + grads, ref_outs + ref_grads):
        assert (o is None) == (r is None)
        if o is not None:
            assert o.device is FAKE and o.dtype == r.dtype
            np.testing.assert_array_equal(_host(o), _host(r))
    for w, r in zip(layer.weights, ref_layer.weights):    # BatchNormalization's moving stats
        assert w.device is FAKE
        np.testing.assert_array_equal(_host(w), _host(r))
    return layer


def test_embedding_mask_zero_into_lstm(xp):
    ids = np.array([[1, 2, 3, 0, 0], [4, 0, 5, 6, 0]])

    def make():
        return tt.Sequential([L.Embedding(8, 3, mask_zero=True), L.LSTM(4, dropout=0.3,
                                                                        recurrent_dropout=0.2)])
    _check_layer(make, [ids], xp, {"training": True}, used=("take", "add", "tanh", "where"))
    emb = L.Embedding(8, 3, mask_zero=True)
    m = emb.compute_mask(_on(ids, FAKE))
    assert m.device is FAKE
    np.testing.assert_array_equal(_host(m), ids != 0)


@pytest.mark.parametrize("make,used", [
    (lambda: L.GRU(3, return_sequences=True, dropout=0.2, recurrent_dropout=0.3), ("tanh",)),
    (lambda: L.GRU(3, reset_after=False, go_backwards=True, recurrent_dropout=0.3), ("tanh",)),
    (lambda: L.SimpleRNN(3, return_sequences=True, activation="relu", recurrent_dropout=0.2),
     ("maximum",)),
    (lambda: L.LSTM(3, return_state=True, time_major=True), ("tanh",)),
    # a non-fusable activation: the step-by-step path (tnp operations), with its dropout masks
    (lambda: L.LSTM(3, activation="softsign", dropout=0.2, recurrent_dropout=0.2), ("asarray",)),
    (lambda: L.Bidirectional(L.GRU(2, return_sequences=True)), ("tanh",)),
], ids=["gru", "gru-reset-before", "simple-rnn", "lstm-state-time-major", "lstm-steps",
        "bidirectional"])
def test_recurrent_layers(xp, make, used):
    x = np.random.default_rng(4).standard_normal((2, 5, 3)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    _check_layer(make, [x], xp, {"training": True, "mask": mask}, used=used)


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("make,shape,takes_training", [
    (lambda: L.BatchNormalization(momentum=0.5), (4, 3), True),
    (lambda: L.BatchNormalization(axis=-1), (2, 3, 3, 2), True),   # the fused-like Bessel path
    (lambda: L.LayerNormalization(axis=[1, 2]), (2, 3, 4), False),
], ids=["bn", "bn-4d", "ln"])
def test_normalization_layers(xp, make, shape, takes_training, training):
    x = np.random.default_rng(5).standard_normal(shape).astype("float32")
    _check_layer(make, [x], xp, {"training": training} if takes_training else None,
                 used=("sqrt",))


def test_batch_normalization_mixed_float16(xp):
    x = np.random.default_rng(6).standard_normal((4, 3)).astype("float16")
    layer = _check_layer(lambda: L.BatchNormalization(momentum=0.5, dtype="mixed_float16"), [x],
                         xp, {"training": True})
    assert layer.moving_mean.dtype == np.float32


@pytest.mark.parametrize("scores", [False, True])
def test_multi_head_attention_layer(xp, scores):
    rng = np.random.default_rng(7)
    q = rng.standard_normal((2, 3, 4)).astype("float32")
    v = rng.standard_normal((2, 5, 4)).astype("float32")
    amask = rng.random((2, 3, 5)) < 0.7
    amask[..., 0] = True

    def make():
        return _MHAWrap(L.MultiHeadAttention(num_heads=2, key_dim=3, dropout=0.3),
                        amask, scores)
    # the mask is broadcast with tnp operations on the query's device (a compiled step traces
    # them); the op applies it with the device's module
    _check_layer(make, [q, v], xp, {"training": True}, used=("exp", "where"))


class _MHAWrap(tt.layers.Layer):
    """Calls a MultiHeadAttention with a mask (given as NumPy: it moves to the device)."""

    def __init__(self, mha, mask, scores, **kw):
        super().__init__(**kw)
        self.mha, self._mask, self._scores = mha, mask, scores

    def call(self, inputs, training=None):
        q, v = inputs
        return self.mha(q, v, attention_mask=self._mask,
                        return_attention_scores=self._scores, training=training)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_layer(xp, causal):
    rng = np.random.default_rng(8)
    q = rng.standard_normal((2, 3, 4)).astype("float32")
    v = rng.standard_normal((2, 5, 4)).astype("float32")
    qm = np.array([[1, 1, 0], [1, 1, 1]], bool)
    vm = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    kw = {"training": True, "mask": [qm, vm], "return_attention_scores": True}
    # the masks are tnp operations on the scores' device (so a compiled step traces them):
    # the results on cpu:1 are what says they ran there
    _check_layer(lambda: L.Attention(use_scale=True, causal=causal, dropout=0.3),
                 [q, v], xp, kw)
    m = L.Attention().compute_mask([_on(q, FAKE), _on(v, FAKE)], [_on(qm, FAKE), None])
    assert m.device is FAKE
    np.testing.assert_array_equal(_host(m), qm)


def test_differentiated_operands_on_another_device_are_refused(xp):
    rng = np.random.default_rng(9)
    x = _on(rng.standard_normal((2, 3, 4)), FAKE)
    W, R = _on(rng.standard_normal((4, 2)), CPU), _on(rng.standard_normal((2, 2)), FAKE)
    with pytest.raises(ValueError, match=r"RNN: inputs on cpu:1.*shape \(4, 2\) is on cpu"):
        fused_rnn("rnn", x, W, R)
    with pytest.raises(ValueError, match="normalization: inputs on cpu:1"):
        normalize(x, _on(np.ones((1, 1, 4)), CPU), None, (0, 1), 1e-3)
