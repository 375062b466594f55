"""Convolution and pooling layers (tnp_train.layers.convolutional / .pooling, tnp_train.ops.conv /
.pooling) against PyTorch fixtures (tests/fixtures/make_conv_fixtures.py), a direct NumPy
convolution written by hand, and finite differences in float64."""
import contextlib
import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tnp
import tnp_train as tt
from tnp_train.autodiff import check_grads
from tnp_train.layers import convolutional as C
from tnp_train.layers import pooling as P
from tnp_train.ops import conv as conv_ops
from tnp_train.ops import pooling as pool_ops

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "conv_pool.npz")
_DATA = np.load(FIXTURES)
CASES = json.loads(str(_DATA["cases_json"]))
LAYERS = {**{n: getattr(C, n) for n in C.__all__}, **{n: getattr(P, n) for n in P.__all__}}


@contextlib.contextmanager
def array_module_path():
    """The CuPy-style path on NumPy arrays. float64 tests run there, apart from the Winograd
    ones: each Numba specialisation costs about a second to compile in a cold CI cache."""
    saved = conv_ops.USE_NUMBA
    conv_ops.USE_NUMBA = False
    try:
        yield
    finally:
        conv_ops.USE_NUMBA = saved


@pytest.fixture(params=["numba", "array-module"])
def kernels(request, monkeypatch):
    """Run a test on the Numba kernels and on the array-module (CuPy-style) path."""
    monkeypatch.setattr(conv_ops, "USE_NUMBA", request.param == "numba" and conv_ops.HAVE_NUMBA)
    return request.param


def _np(a):
    return np.asarray(a)


# ----------------------------------------------------------------------------- PyTorch fixtures
@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_matches_torch_fixture(case, kernels):
    name = case["name"]
    x = _DATA[f"{name}__x"]
    dy = _DATA[f"{name}__dy"]
    ws = [_DATA[f"{name}__w{i}"] for i in range(case["n_weights"])]
    layer = LAYERS[case["layer"]](**case["config"])
    layer.build(x.shape)
    layer.set_weights(ws)
    xt = tnp.asarray(x)
    with tt.GradientTape() as tape:
        tape.watch(xt)
        y = layer(xt)
    grads = tape.gradient(y, [xt] + layer.trainable_weights, output_gradients=tnp.asarray(dy))
    np.testing.assert_allclose(_np(y), _DATA[f"{name}__y"], rtol=1e-5, atol=1e-5)
    assert y.dtype == np.float32
    assert tuple(y.shape) == layer.compute_output_shape(x.shape)
    assert layer.compute_output_shape((None,) + x.shape[1:])[1:] == tuple(y.shape[1:])
    np.testing.assert_allclose(_np(grads[0]), _DATA[f"{name}__dx"], rtol=1e-5, atol=1e-5)
    for i, g in enumerate(grads[1:]):
        np.testing.assert_allclose(_np(g), _DATA[f"{name}__dw{i}"], rtol=1e-5, atol=1e-5,
                                   err_msg=f"weight {i}")


def test_fixture_covers_every_option():
    names = {c["name"] for c in CASES}
    for want in ["conv1d_causal_d2", "conv2d_groups", "conv2d_same_d2", "conv2dT_same_s2_op1",
                 "maxpool2d_same", "avgpool2d_same", "avgpool1d_same", "depthwise_same_m2",
                 "conv2d_wino_same_relu", "conv2d_wino_valid_nobias"]:
        assert want in names
    assert os.path.getsize(FIXTURES) < 1_000_000


# ----------------------------------------------------------------------------- hand-written NumPy
def direct_conv2d(x, K, b, strides, pads, dilation, groups):
    """The textbook sum, one output pixel at a time (NHWC, Keras kernel layout)."""
    N, H, W, Cin = x.shape
    KH, KW, Cg, F = K.shape
    (pt, pb), (pl, pr) = pads
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    sh, sw = strides
    dh, dw = dilation
    OH = (H + pt + pb - (KH - 1) * dh - 1) // sh + 1
    OW = (W + pl + pr - (KW - 1) * dw - 1) // sw + 1
    Fg = F // groups
    y = np.zeros((N, OH, OW, F))
    for oh in range(OH):
        for ow in range(OW):
            for g in range(groups):
                patch = xp[:, oh * sh:oh * sh + (KH - 1) * dh + 1:dh, ow * sw:ow * sw + (KW - 1) * dw + 1:dw,
                           g * Cg:(g + 1) * Cg]
                y[:, oh, ow, g * Fg:(g + 1) * Fg] = np.einsum("nijc,ijcf->nf", patch, K[..., g * Fg:(g + 1) * Fg])
    return y + (0 if b is None else b)


def tf_same(n, k, s, d=1):
    kd = (k - 1) * d + 1
    out = -(-n // s)
    total = max((out - 1) * s + kd - n, 0)
    return total // 2, total - total // 2


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_conv2d_matches_direct_numpy(data):
    groups = data.draw(st.sampled_from([1, 2]))
    cin = groups * data.draw(st.integers(1, 3))
    filters = groups * data.draw(st.integers(1, 3))
    kh, kw = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    dilated = data.draw(st.booleans())
    strides = (1, 1) if dilated else (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    dilation = (data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))) if dilated else (1, 1)
    padding = data.draw(st.sampled_from(["valid", "same"]))
    H = data.draw(st.integers((kh - 1) * dilation[0] + 1, 7))
    W = data.draw(st.integers((kw - 1) * dilation[1] + 1, 7))
    relu = data.draw(st.booleans())
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16)))
    x = rng.standard_normal((2, H, W, cin))
    K = rng.standard_normal((kh, kw, cin // groups, filters))
    b = rng.standard_normal(filters)
    layer = C.Conv2D(filters, (kh, kw), strides=strides, padding=padding, dilation_rate=dilation,
                     groups=groups, activation="relu" if relu else None, dtype="float64")
    layer.build(x.shape)
    layer.set_weights([K, b])
    with array_module_path():
        y = _np(layer(tnp.asarray(x)))
    pads = ((0, 0), (0, 0)) if padding == "valid" else \
        (tf_same(H, kh, strides[0], dilation[0]), tf_same(W, kw, strides[1], dilation[1]))
    want = direct_conv2d(x, K, b, strides, pads, dilation, groups)
    if relu:
        want = np.maximum(want, 0)
    np.testing.assert_allclose(y, want, rtol=1e-10, atol=1e-10)
    assert y.shape == layer.compute_output_shape(x.shape)


@pytest.mark.parametrize("H,W", [(4, 4), (5, 7), (3, 3), (8, 5)])
@pytest.mark.parametrize("padding", ["same", "valid"])
def test_winograd_path_matches_direct_numpy_and_im2col(H, W, padding, monkeypatch):
    rng = np.random.default_rng(H * 10 + W)
    x = rng.standard_normal((2, H, W, 16))
    K = rng.standard_normal((3, 3, 16, 8))
    b = rng.standard_normal(8)
    dy = rng.standard_normal((2, H, W, 8) if padding == "same" else (2, H - 2, W - 2, 8))
    pads = (tf_same(H, 3, 1), tf_same(W, 3, 1)) if padding == "same" else ((0, 0), (0, 0))
    want = np.maximum(direct_conv2d(x, K, b, (1, 1), pads, (1, 1), 1), 0)
    outs = {}
    for wino in (True, False):
        monkeypatch.setattr(conv_ops, "USE_NUMBA", wino)   # im2col: the array-module path
        xs, ks, bs = tnp.asarray(x), tnp.asarray(K), tnp.asarray(b)
        with tt.GradientTape() as tape:
            tape.watch([xs, ks, bs])
            y = conv_ops.conv2d(xs, ks, bs, padding=padding, activation="relu")
        outs[wino] = [_np(y)] + [_np(g) for g in tape.gradient(y, [xs, ks, bs], output_gradients=tnp.asarray(dy))]
    np.testing.assert_allclose(outs[True][0], want, rtol=1e-11, atol=1e-11)
    for a, r in zip(outs[True], outs[False]):
        np.testing.assert_allclose(a, r, rtol=1e-11, atol=1e-11)


def direct_pool2d(x, kind, pool, strides, padding):
    N, H, W, Cc = x.shape
    if padding == "same":
        (pt, pb), (pl, pr) = tf_same(H, pool[0], strides[0]), tf_same(W, pool[1], strides[1])
    else:
        pt = pb = pl = pr = 0
    OH = (H + pt + pb - pool[0]) // strides[0] + 1
    OW = (W + pl + pr - pool[1]) // strides[1] + 1
    y = np.zeros((N, OH, OW, Cc))
    for oh in range(OH):
        for ow in range(OW):
            h0, w0 = oh * strides[0] - pt, ow * strides[1] - pl
            win = x[:, max(h0, 0):h0 + pool[0], max(w0, 0):w0 + pool[1], :]
            y[:, oh, ow] = win.max(axis=(1, 2)) if kind == "max" else win.mean(axis=(1, 2))
    return y


@settings(max_examples=30, deadline=None)
@given(kind=st.sampled_from(["max", "avg"]), ph=st.integers(1, 3), pw=st.integers(1, 3),
       sh=st.integers(1, 3), sw=st.integers(1, 3), H=st.integers(3, 7), W=st.integers(3, 7),
       padding=st.sampled_from(["valid", "same"]), seed=st.integers(0, 1000))
def test_pool2d_matches_direct_numpy(kind, ph, pw, sh, sw, H, W, padding, seed):
    x = np.random.default_rng(seed).standard_normal((2, H, W, 3))
    cls = P.MaxPooling2D if kind == "max" else P.AveragePooling2D
    layer = cls((ph, pw), (sh, sw), padding, dtype="float64")
    with array_module_path():
        y = _np(layer(tnp.asarray(x)))
    np.testing.assert_allclose(y, direct_pool2d(x, kind, (ph, pw), (sh, sw), padding), rtol=1e-12)
    assert y.shape == layer.compute_output_shape(x.shape)


# ----------------------------------------------------------------------------- finite differences
def _rand(rng, shape):
    return tnp.asarray(rng.standard_normal(shape))


FD_CONV = [
    # (op, kwargs, x shape, kernel shape, bias)
    (conv_ops.conv2d, dict(strides=(2, 1), padding="same"), (2, 5, 4, 3), (3, 2, 3, 4), True),
    (conv_ops.conv2d, dict(padding="valid", dilation_rate=(2, 1), activation="relu"), (1, 6, 4, 2),
     (2, 2, 2, 3), True),
    (conv_ops.conv2d, dict(padding="same", groups=2), (2, 4, 4, 4), (3, 3, 2, 4), True),
    (conv_ops.conv2d, dict(padding="same", groups=3), (1, 4, 3, 3), (2, 2, 1, 6), False),  # depthwise
    (conv_ops.conv2d, dict(padding="same", activation="relu"), (1, 5, 4, 16), (3, 3, 16, 8), True),
    (conv_ops.conv1d, dict(padding="causal", dilation_rate=2), (2, 7, 2), (3, 2, 3), True),
    (conv_ops.conv1d, dict(strides=2, padding="same", groups=2, activation="relu"), (2, 7, 4), (3, 2, 4),
     True),
    (conv_ops.conv2d_transpose, dict(strides=(2, 2), padding="same", output_shape=(8, 5)), (2, 4, 3, 2),
     (3, 3, 3, 2), True),
    (conv_ops.conv2d_transpose, dict(strides=(3, 2), padding="valid", activation="relu"), (1, 3, 2, 2),
     (2, 3, 2, 2), True),
    (conv_ops.conv1d_transpose, dict(strides=2, padding="same", dilation_rate=1), (2, 4, 3), (3, 2, 3),
     True),
]


@pytest.mark.parametrize("op,kw,xs,ks,bias", FD_CONV, ids=[f"{o.__name__}-{i}" for i, (o, *_) in
                                                         enumerate(FD_CONV)])
def test_conv_ops_finite_differences(op, kw, xs, ks, bias):
    _fd_conv(op, kw, xs, ks, bias)


@pytest.mark.parametrize("kw,xs", [(dict(padding="same", activation="relu"), (1, 5, 4, 16)),
                                   (dict(padding="valid"), (2, 5, 6, 16))])
def test_winograd_finite_differences(kw, xs):
    """The Numba kernels in float64 (3x3, stride 1, >= 16 channels: Winograd)."""
    assert conv_ops.USE_NUMBA and conv_ops.USE_WINOGRAD
    _fd_conv(conv_ops.conv2d, kw, xs, (3, 3, 16, 8), True, numba=True)


def _fd_conv(op, kw, xs, ks, bias, numba=False):
    rng = np.random.default_rng(len(xs) + sum(ks))
    x, k = _rand(rng, xs), _rand(rng, ks)
    nout = ks[-2] if "transpose" in op.__name__ else ks[-1]
    args = (x, k) + ((_rand(rng, (nout,)),) if bias else ())

    def f(*a):
        return op(a[0], a[1], a[2] if len(a) > 2 else None, **kw)
    with contextlib.nullcontext() if numba else array_module_path():
        check_grads(f, eps=1e-6, rtol=1e-6, atol=1e-8)(*args)


@pytest.mark.parametrize("op,kw,xs", [
    (pool_ops.max_pool2d, dict(pool_size=(3, 2), strides=(2, 2), padding="same"), (2, 5, 7, 2)),
    (pool_ops.max_pool2d, dict(pool_size=(2, 2)), (2, 4, 6, 3)),
    (pool_ops.avg_pool2d, dict(pool_size=(3, 3), strides=(2, 1), padding="same"), (2, 5, 4, 2)),
    (pool_ops.avg_pool2d, dict(pool_size=(2, 3), padding="valid"), (1, 4, 6, 2)),
    (pool_ops.max_pool1d, dict(pool_size=3, strides=2, padding="same"), (2, 8, 3)),
    (pool_ops.avg_pool1d, dict(pool_size=2, strides=1, padding="same"), (2, 5, 3)),
])
def test_pool_ops_finite_differences(op, kw, xs):
    x = _rand(np.random.default_rng(sum(xs)), xs)
    with array_module_path():
        check_grads(lambda a: op(a, **kw), eps=1e-6, rtol=1e-6, atol=1e-8)(x)


@pytest.mark.parametrize("make", [
    lambda: C.SeparableConv2D(4, 3, padding="same", depth_multiplier=2, dtype="float64"),
    lambda: C.DepthwiseConv2D(2, strides=2, depth_multiplier=2, activation="relu", dtype="float64"),
    lambda: C.Conv2D(3, 2, data_format="channels_first", activation="tanh", dtype="float64"),
    lambda: P.GlobalAveragePooling2D(dtype="float64"),
    lambda: P.GlobalMaxPooling1D(keepdims=True, dtype="float64"),
])
def test_layer_input_gradients_finite_differences(make):
    layer = make()
    shape = (2, 3, 5, 4) if isinstance(layer, C.Conv2D) else \
        (2, 6, 3) if isinstance(layer, P.GlobalMaxPooling1D) else (2, 5, 5, 3)
    x = _rand(np.random.default_rng(3), shape)
    with array_module_path():
        layer(x)
        check_grads(lambda a: layer(a), eps=1e-6, rtol=1e-6, atol=1e-8)(x)


def test_separable_matches_depthwise_then_pointwise():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 5, 3)).astype(np.float32)
    sep = C.SeparableConv2D(4, 3, padding="same", depth_multiplier=2)
    sep.build(x.shape)
    dw, pw, b = [rng.standard_normal(w.shape).astype(np.float32) for w in sep.weights]
    sep.set_weights([dw, pw, b])
    d = C.DepthwiseConv2D(3, padding="same", depth_multiplier=2, use_bias=False)
    d.build(x.shape)
    d.set_weights([dw])
    p = C.Conv2D(4, 1)
    p.build((2, 5, 5, 6))
    p.set_weights([pw, b])
    np.testing.assert_allclose(_np(sep(tnp.asarray(x))), _np(p(d(tnp.asarray(x)))), rtol=1e-5, atol=1e-6)
    assert [w.name.split("/")[-1] for w in sep.weights] == ["depthwise_kernel", "pointwise_kernel", "bias"]


# ----------------------------------------------------------------------------- layers
def test_unfused_activation_and_channels_first():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 6, 5, 3)).astype(np.float32)
    lin = C.Conv2D(4, 3, padding="same")
    lin.build(x.shape)
    ws = [rng.standard_normal(w.shape).astype(np.float32) for w in lin.weights]
    lin.set_weights(ws)
    th = C.Conv2D(4, 3, padding="same", activation="tanh")
    th.build(x.shape)
    th.set_weights(ws)
    np.testing.assert_allclose(_np(th(tnp.asarray(x))), np.tanh(_np(lin(tnp.asarray(x)))), rtol=1e-5,
                               atol=1e-6)
    cf = C.Conv2D(4, 3, padding="same", data_format="channels_first")
    xf = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    cf.build(xf.shape)
    cf.set_weights(ws)
    y = _np(cf(tnp.asarray(xf)))
    assert y.shape == cf.compute_output_shape(xf.shape) == (2, 4, 6, 5)
    np.testing.assert_allclose(y, _np(lin(tnp.asarray(x))).transpose(0, 3, 1, 2), rtol=1e-5, atol=1e-6)
    mp = P.MaxPooling2D(2, data_format="channels_first")
    np.testing.assert_array_equal(_np(mp(tnp.asarray(xf))),
                                  _np(P.MaxPooling2D(2)(tnp.asarray(x))).transpose(0, 3, 1, 2))


def test_one_tape_node_per_conv_and_no_input_gradient_unless_asked(monkeypatch):
    layer = C.Conv2D(4, 3, padding="same", activation="relu")
    x = tnp.asarray(np.random.default_rng(0).standard_normal((2, 5, 5, 3)).astype(np.float32))
    layer(x)
    calls = []
    real = conv_ops.col2im
    monkeypatch.setattr(conv_ops, "col2im", lambda *a, **k: calls.append(1) or real(*a, **k))
    with tt.GradientTape() as tape:
        y = layer(x)
        pooled = P.MaxPooling2D(2)(y)
    assert len(tape._nodes) == 2      # conv+bias+relu is one node, the pooling another
    gk, gb = tape.gradient(pooled, layer.trainable_weights)
    assert gk.shape == (3, 3, 3, 4) and gb.shape == (4,)
    assert calls == []                # the input is not watched: its gradient is never built
    with tt.GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
    assert tape.gradient(y, x).shape == x.shape and calls == [1]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision_inputs_compute_in_float32(dtype):
    rng = np.random.default_rng(2)
    x32 = rng.standard_normal((2, 6, 6, 3)).astype(np.float32)
    k32 = rng.standard_normal((3, 3, 3, 4)).astype(np.float32)
    b32 = rng.standard_normal(4).astype(np.float32)
    xs, ks, bs = (tnp.asarray(a).astype(dtype) for a in (x32, k32, b32))
    with tt.GradientTape() as tape:
        tape.watch([xs, ks, bs])
        y = conv_ops.conv2d(xs, ks, bs, padding="same", activation="relu")
        z = pool_ops.avg_pool2d(y, 2)
    assert y.dtype == np.dtype(dtype) and z.dtype == np.dtype(dtype)
    ref = conv_ops.conv2d(*(tnp.asarray(_np(a).astype(np.float32)) for a in (xs, ks, bs)), padding="same",
                          activation="relu")
    np.testing.assert_array_equal(_np(y).astype(np.float32), _np(ref).astype(dtype).astype(np.float32))
    if dtype == "bfloat16":
        return   # the tape does not differentiate bfloat16 arrays yet (autodiff.tape._inexact)
    gx, gk, gb = tape.gradient(z, [xs, ks, bs])
    assert gx.dtype == gk.dtype == gb.dtype == np.dtype(dtype)
    assert gx.shape == xs.shape and gk.shape == ks.shape


def test_mixed_precision_policy():
    layer = C.Conv2D(4, 3, padding="same", activation="relu", dtype="mixed_float16")
    x = tnp.asarray(np.random.default_rng(0).standard_normal((2, 5, 5, 3)).astype(np.float32))
    with tt.GradientTape() as tape:
        y = layer(x)
    assert y.dtype == np.float16 and layer.kernel.dtype == np.float32
    gk, gb = tape.gradient(y, layer.trainable_weights)
    assert gk.dtype == np.float32 and gb.dtype == np.float32


def test_global_pooling_and_mask():
    x = np.random.default_rng(0).standard_normal((2, 4, 5, 3)).astype(np.float32)
    np.testing.assert_allclose(_np(P.GlobalAveragePooling2D()(tnp.asarray(x))), x.mean(axis=(1, 2)), rtol=1e-6)
    np.testing.assert_array_equal(_np(P.GlobalMaxPool2D(keepdims=True)(tnp.asarray(x))),
                                  x.max(axis=(1, 2), keepdims=True))
    assert P.GlobalMaxPooling2D(keepdims=True).compute_output_shape((None, 4, 5, 3)) == (None, 1, 1, 3)
    assert P.GlobalAvgPool1D(data_format="channels_first").compute_output_shape((2, 3, 7)) == (2, 3)
    s = x[:, 0]                                   # (2, 5, 3) sequences
    mask = np.array([[1, 1, 0, 0, 0], [1, 1, 1, 1, 1]], bool)
    got = _np(P.GlobalAveragePooling1D()(tnp.asarray(s), mask=tnp.asarray(mask)))
    np.testing.assert_allclose(got, np.stack([s[0, :2].mean(0), s[1].mean(0)]), rtol=1e-6)


@pytest.mark.parametrize("cls,cfg", [
    (C.Conv1D, dict(filters=4, kernel_size=3, strides=2, padding="causal", dilation_rate=1, groups=2)),
    (C.Conv2D, dict(filters=4, kernel_size=(3, 1), padding="same", dilation_rate=2, activation="relu",
                    kernel_initializer="zeros", use_bias=False)),
    (C.Conv2DTranspose, dict(filters=2, kernel_size=3, strides=2, padding="same", output_padding=1)),
    (C.Conv1DTranspose, dict(filters=2, kernel_size=3, strides=3, output_padding=2)),
    (C.DepthwiseConv2D, dict(kernel_size=3, depth_multiplier=3, data_format="channels_first")),
    (C.SeparableConv2D, dict(filters=5, kernel_size=2, depth_multiplier=2, pointwise_initializer="ones")),
    (P.MaxPooling1D, dict(pool_size=3, strides=1, padding="same")),
    (P.AvgPool2D, dict(pool_size=(2, 3), strides=None, padding="valid")),
    (P.GlobalMaxPooling2D, dict(keepdims=True)),
])
def test_get_config_round_trips(cls, cfg):
    layer = cls(**cfg, name="probe")
    config = layer.get_config()
    again = cls.from_config(config)
    assert again.get_config() == config
    for k, v in cfg.items():
        if k.endswith("initializer"):
            assert config[k] == v
        elif v is not None and k != "strides":
            want = v if not isinstance(config[k], tuple) or isinstance(v, tuple) else \
                (v,) * len(config[k])
            assert config[k] == want, k


def test_tf_signatures_and_aliases():
    assert C.Convolution2D is C.Conv2D and P.MaxPool2D is P.MaxPooling2D and P.AvgPool1D is P.AveragePooling1D
    assert P.GlobalAvgPool2D is P.GlobalAveragePooling2D and P.GlobalMaxPool1D is P.GlobalMaxPooling1D
    layer = C.Conv2D(8, 3)
    assert layer.strides == (1, 1) and layer.padding == "valid" and layer.dilation_rate == (1, 1)
    assert P.MaxPooling2D().strides == (2, 2) and P.MaxPooling1D(3).strides == (3,)
    assert C.Conv2DTranspose(2, 3, strides=2).compute_output_shape((None, 4, 5, 3)) == (None, 9, 11, 2)
    assert C.Conv2DTranspose(2, 3, strides=2, padding="same").compute_output_shape((1, 4, 5, 3)) == (1, 8, 10, 2)
    assert C.Conv1D(2, 3, padding="causal", strides=2).compute_output_shape((1, 7, 3)) == (1, 4, 2)


# ----------------------------------------------------------------------------- errors
def test_bad_arguments_raise_value_errors():
    with pytest.raises(ValueError, match="filters"):
        C.Conv2D(0, 3)
    with pytest.raises(ValueError, match="kernel_size"):
        C.Conv2D(4, (3, 0))
    with pytest.raises(ValueError, match="kernel_size"):
        C.Conv1D(4, -1)
    with pytest.raises(ValueError, match="groups"):
        C.Conv2D(5, 3, groups=2)
    with pytest.raises(ValueError, match="padding"):
        C.Conv2D(4, 3, padding="causal")
    with pytest.raises(ValueError, match="dilation"):
        C.Conv2D(4, 3, strides=2, dilation_rate=2)
    with pytest.raises(ValueError, match="output padding"):
        C.Conv2DTranspose(4, 3, strides=2, output_padding=2)
    with pytest.raises(ValueError, match="data_format"):
        C.Conv2D(4, 3, data_format="NCHW")
    with pytest.raises(ValueError, match="pool_size"):
        P.MaxPooling2D(0)
    with pytest.raises(ValueError, match="padding"):
        P.AveragePooling1D(2, padding="full")


def test_bad_inputs_name_the_layer_and_shapes():
    layer = C.Conv2D(4, 3, name="c2")
    with pytest.raises(ValueError, match=r"c2.*ndim=4.*\(2, 5, 3\)"):
        layer(tnp.zeros((2, 5, 3), dtype="float32"))
    layer(tnp.zeros((1, 5, 5, 3), dtype="float32"))
    with pytest.raises(ValueError, match=r"c2.*\(1, 5, 5, 2\)"):
        layer(tnp.zeros((1, 5, 5, 2), dtype="float32"))
    with pytest.raises(ValueError, match=r"g: .*channels.*\(1, 5, 5, 3\).*groups"):
        C.Conv2D(4, 3, groups=2, name="g")(tnp.zeros((1, 5, 5, 3), dtype="float32"))
    with pytest.raises(ValueError, match=r"conv2d.*\(1, 2, 2, 3\).*smaller"):
        C.Conv2D(4, 3)(tnp.zeros((1, 2, 2, 3), dtype="float32"))
    with pytest.raises(ValueError, match=r"max_pool.*rank 4"):
        pool_ops.max_pool2d(tnp.zeros((2, 3), dtype="float32"))
    with pytest.raises(ValueError, match=r"ndim=3"):
        P.MaxPooling1D()(tnp.zeros((2, 3, 4, 5), dtype="float32"))
    with pytest.raises(ValueError, match=r"conv2d_transpose.*\(1, 3, 3, 4\).*\(3, 3, 2, 3\)"):
        conv_ops.conv2d_transpose(tnp.zeros((1, 3, 3, 4)), tnp.zeros((3, 3, 2, 3)))


def test_scratch_buffers_are_reused_only_when_free():
    a = conv_ops.scratch((5, 7), np.float32)
    b = conv_ops.scratch((5, 7), np.float32)
    assert a is not b                      # a is still held here
    view = a[1:]
    del a
    c = conv_ops.scratch((5, 7), np.float32)
    assert c is not view.base              # a view keeps its buffer out of reach
    del view, b, c
    pooled = conv_ops._scratch[((5, 7), np.dtype(np.float32).str)]
    got = conv_ops.scratch((5, 7), np.float32)
    assert any(got is p for p in pooled)   # free again: reused
    # a conv's saved patch matrix survives later calls until the tape lets it go
    layer = C.Conv2D(3, 3, padding="same")
    x1 = tnp.asarray(np.random.default_rng(0).standard_normal((2, 5, 5, 2)).astype(np.float32))
    x2 = tnp.asarray(np.random.default_rng(1).standard_normal((2, 5, 5, 2)).astype(np.float32))
    with tt.GradientTape() as tape:
        y = layer(x1)
    layer(x2)                              # same shapes: must not overwrite x1's saved patches
    gk = tape.gradient(y, layer.kernel)
    with tt.GradientTape() as tape2:
        y1 = layer(x1)
    np.testing.assert_allclose(_np(gk), _np(tape2.gradient(y1, layer.kernel)), rtol=1e-6)
