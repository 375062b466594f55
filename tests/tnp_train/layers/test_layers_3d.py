"""Conv3D, Conv3DTranspose and the 3-D poolings (tnp_train.layers.convolutional / .pooling)
against direct NumPy loops written here from TF's definitions (``"same"`` padding puts the odd
element at the end; a transposed convolution scatters each input element times the kernel and
is cut as the gradient of the forward convolution), an adjoint identity, and finite
differences in float64."""
import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.autodiff import check_grads
from tnp_train.layers import convolutional as C
from layer_checks import assert_config_round_trips, assert_fits_and_reloads

L = tt.layers


def _np(a):
    return np.asarray(a)


def _out_len(n, k, s, padding, d=1):
    ke = (k - 1) * d + 1
    return (n - ke) // s + 1 if padding == "valid" else -(-n // s)


def _same_pads(n, k, s, d, o):
    tot = max((o - 1) * s + (k - 1) * d + 1 - n, 0)
    return tot // 2, tot - tot // 2


def np_conv3d(x, k, b, strides, padding, dilation, groups=1):
    """Direct NDHWC convolution: a sum over the kernel taps of strided input slices."""
    N, *sp, C_ = x.shape
    ks, (Cg, F) = k.shape[:3], k.shape[3:]
    outs = [_out_len(n, kk, s, padding, d) for n, kk, s, d in zip(sp, ks, strides, dilation)]
    pads = [_same_pads(n, kk, s, d, o) if padding == "same" else (0, 0)
            for n, kk, s, d, o in zip(sp, ks, strides, dilation, outs)]
    xp = np.pad(x, [(0, 0)] + pads + [(0, 0)])
    y = np.zeros((N, *outs, F))
    Fg = F // groups
    for taps in np.ndindex(*ks):
        idx = tuple(slice(t * d, t * d + (o - 1) * s + 1, s)
                    for t, d, o, s in zip(taps, dilation, outs, strides))
        patch = xp[(slice(None),) + idx]
        for g in range(groups):
            y[..., g * Fg:(g + 1) * Fg] += (patch[..., g * Cg:(g + 1) * Cg]
                                            @ k[taps][:, g * Fg:(g + 1) * Fg])
    return y + (0 if b is None else b)


def np_conv3d_transpose(x, k, b, strides, padding, dilation, output_padding=None):
    """Direct transposed convolution: every input element adds ``x * kernel`` at
    ``position * stride + tap * dilation`` of the full output, which is then cut where the
    forward convolution of the output's size would start (Keras's output size)."""
    N, *sp, Cin = x.shape
    ks, Co = k.shape[:3], k.shape[3]
    ops = output_padding or (None,) * 3
    out, start = [], []
    for n, kk, s, d, op in zip(sp, ks, strides, dilation, ops):
        ke = (kk - 1) * d + 1
        if op is None:
            o = n * s + max(ke - s, 0) if padding == "valid" else n * s
        else:
            o = (n - 1) * s + ke - 2 * (ke // 2 if padding == "same" else 0) + op
        out.append(o)
        start.append(0 if padding == "valid" else max((n - 1) * s + ke - o, 0) // 2)
    full = [max((n - 1) * s + (kk - 1) * d + 1, st + o) for n, s, kk, d, st, o in
            zip(sp, strides, ks, dilation, start, out)]
    y = np.zeros((N, *full, Co))
    for pos in np.ndindex(*sp):
        for taps in np.ndindex(*ks):
            at = tuple(p * s + t * d for p, s, t, d in zip(pos, strides, taps, dilation))
            y[(slice(None),) + at] += x[(slice(None),) + pos] @ k[taps].T
    y = y[(slice(None),) + tuple(slice(st, st + o) for st, o in zip(start, out))]
    return y + (0 if b is None else b)


CASES = [
    # (layer class, arguments, input shape, NumPy reference of (x, kernel, bias, layer))
    *[(L.Conv3D, cfg, (2, 5, 6, 7, 4), lambda x, k, b, c: np_conv3d(
        x, k, b, c.strides, c.padding, c.dilation_rate, c.groups)) for cfg in [
        dict(kernel_size=(3, 2, 3)),
        dict(kernel_size=3, strides=(2, 1, 2), padding="same"),
        dict(kernel_size=(2, 3, 2), padding="same", dilation_rate=(2, 1, 2)),
        dict(kernel_size=(2, 2, 3), groups=2),
        dict(kernel_size=(3, 1, 2), strides=(1, 2, 1)),
    ]],
    *[(L.Conv3DTranspose, cfg, (2, 3, 4, 3, 5), lambda x, k, b, c: np_conv3d_transpose(
        x, k, b, c.strides, c.padding, c.dilation_rate, c.output_padding)) for cfg in [
        dict(kernel_size=(3, 2, 3)),
        dict(kernel_size=3, strides=2, padding="same"),
        dict(kernel_size=(3, 2, 2), strides=(2, 3, 1), padding="valid"),
        dict(kernel_size=(3, 3, 2), strides=(2, 2, 2), padding="same", output_padding=(1, 0, 1)),
        dict(kernel_size=(2, 3, 2), dilation_rate=(2, 1, 2), padding="same"),
    ]],
]


@pytest.mark.parametrize("cls,cfg,shape,ref", CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matches_direct_numpy(cls, cfg, shape, ref, dtype):
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    layer = cls(4, dtype=dtype, bias_initializer="glorot_uniform", **cfg)
    y = layer(tnp.asarray(x))
    k, b = layer.get_weights()
    expected = ref(x.astype(np.float64), k, b, layer)
    assert y.dtype == dtype
    assert tuple(y.shape) == expected.shape == layer.compute_output_shape(x.shape)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(_np(y), expected, rtol=tol, atol=tol)


def test_transposed_kernel_layout():
    layer = L.Conv3DTranspose(4, (3, 2, 1))
    layer.build((None, 2, 2, 2, 5))
    assert layer.kernel.shape == (3, 2, 1, 4, 5)


@pytest.mark.parametrize("strides,padding", [((1, 1, 1), "valid"), ((2, 1, 2), "same"),
                                             ((2, 2, 1), "valid")])
def test_conv3d_transpose_is_the_adjoint_of_conv3d(strides, padding):
    # <conv(u), x> == <u, conv_transpose(x)> for the same kernel, when the transposed output
    # has the size the forward convolution reads
    rng = np.random.default_rng(2)
    x = tnp.asarray(rng.standard_normal((2, 3, 3, 4, 5)))
    t = L.Conv3DTranspose(4, (3, 2, 3), strides=strides, padding=padding, use_bias=False,
                          dtype="float64")
    v = t(x)
    u = tnp.asarray(rng.standard_normal(tuple(v.shape)))
    f = L.Conv3D(5, (3, 2, 3), strides=strides, padding=padding, use_bias=False,
                 dtype="float64")
    f.build(tuple(u.shape))
    f.set_weights(t.get_weights())
    fu = f(u)
    assert tuple(fu.shape) == tuple(x.shape)
    np.testing.assert_allclose(float(tnp.sum(fu * x)), float(tnp.sum(u * v)), rtol=1e-12)


@pytest.mark.parametrize("cls", [L.Conv3D, L.Conv3DTranspose])
def test_conv3d_channels_first_and_activation(cls):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 5, 3, 4)).astype(np.float32)
    last = cls(3, 2, padding="same", activation="tanh")
    y_last = last(tnp.asarray(x))
    first = cls(3, 2, padding="same", activation="tanh", data_format="channels_first")
    xf = np.moveaxis(x, -1, 1)
    first.build(xf.shape)
    first.set_weights(last.get_weights())
    y_first = first(tnp.asarray(xf))
    assert tuple(y_first.shape) == first.compute_output_shape(xf.shape)
    np.testing.assert_allclose(_np(y_first), np.moveaxis(_np(y_last), -1, 1), rtol=1e-6,
                               atol=1e-6)
    assert np.all(np.abs(_np(y_last)) < 1)


@pytest.mark.parametrize("fn,kw", [
    (C._conv3d, dict(strides=(2, 1, 1), padding="same", dilation=(1, 1, 2), groups=2,
                     activation=None, name="t")),
    (C._conv3d, dict(strides=(1, 1, 1), padding="valid", dilation=(1, 1, 1), groups=1,
                     activation="relu", name="t")),
])
def test_conv3d_finite_differences(fn, kw):
    rng = np.random.default_rng(4)
    x = tnp.asarray(rng.standard_normal((1, 4, 3, 4, 4)))
    k = tnp.asarray(rng.standard_normal((2, 2, 2, 4 // kw["groups"], 4)))
    b = tnp.asarray(rng.standard_normal(4))
    check_grads(lambda x, k, b: fn(x, k, b, **kw), eps=1e-6, rtol=1e-6, atol=1e-8)(x, k, b)


@pytest.mark.parametrize("strides,padding", [((2, 1, 2), "same"), ((1, 2, 1), "valid")])
def test_conv3d_transpose_finite_differences(strides, padding):
    rng = np.random.default_rng(5)
    x = tnp.asarray(rng.standard_normal((1, 3, 2, 3, 3)))
    k = tnp.asarray(rng.standard_normal((3, 2, 2, 2, 3)))
    layer = L.Conv3DTranspose(2, (3, 2, 2), strides=strides, padding=padding, dtype="float64")
    out = layer._out_spatial((3, 2, 3))
    check_grads(lambda x, k: C._conv3d_transpose(x, k, out, strides, padding, (1, 1, 1), "t"),
                eps=1e-6, rtol=1e-6, atol=1e-8)(x, k)


def test_conv3d_weights_get_gradients_through_the_tape():
    rng = np.random.default_rng(6)
    layer = L.Conv3D(3, 2, padding="same", dtype="float64")
    x = tnp.asarray(rng.standard_normal((2, 3, 3, 3, 2)))
    with tt.GradientTape() as tape:
        loss = tnp.sum(layer(x) ** 2)
    gk, gb = tape.gradient(loss, layer.trainable_weights)
    k, b = layer.get_weights()
    y = np_conv3d(_np(x), k, b, (1, 1, 1), "same", (1, 1, 1))
    # d/db sum(y^2) = 2 sum(y) over everything but the channel
    np.testing.assert_allclose(_np(gb), 2 * y.sum(axis=(0, 1, 2, 3)), rtol=1e-10)
    # d/dk along a random direction against finite differences of the NumPy reference
    v = rng.standard_normal(k.shape)
    eps = 1e-6
    num = (np.sum(np_conv3d(_np(x), k + eps * v, b, (1, 1, 1), "same", (1, 1, 1)) ** 2)
           - np.sum(np_conv3d(_np(x), k - eps * v, b, (1, 1, 1), "same", (1, 1, 1)) ** 2)) / (2 * eps)
    np.testing.assert_allclose(float(np.sum(_np(gk) * v)), num, rtol=1e-6)


# ----------------------------------------------------------------------------- pooling
def np_pool3d(x, kind, pool, strides, padding):
    """Direct NDHWC pooling; "same" windows see only real elements (max ignores the padding,
    the average divides by the count of real elements)."""
    N, *sp, Cc = x.shape
    outs = [_out_len(n, p, s, padding) for n, p, s in zip(sp, pool, strides)]
    starts = [(_same_pads(n, p, s, 1, o)[0] if padding == "same" else 0)
              for n, p, s, o in zip(sp, pool, strides, outs)]
    y = np.zeros((N, *outs, Cc))
    for o in np.ndindex(*outs):
        idx = []
        for oi, s, st, p, n in zip(o, strides, starts, pool, sp):
            lo = oi * s - st
            idx.append(slice(max(lo, 0), min(lo + p, n)))
        win = x[(slice(None),) + tuple(idx)].reshape(N, -1, Cc)
        y[(slice(None),) + o] = win.max(axis=1) if kind == "max" else win.mean(axis=1)
    return y


POOL3D = [((2, 2, 2), None, "valid"), ((3, 2, 2), (2, 1, 2), "same"), ((2, 3, 1), (1, 2, 1), "valid"),
          ((3, 3, 3), (2, 2, 2), "same")]


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("pool,strides,padding", POOL3D)
def test_pool3d_matches_direct_numpy(kind, pool, strides, padding):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 5, 6, 4, 3))
    cls = L.MaxPooling3D if kind == "max" else L.AveragePooling3D
    layer = cls(pool, strides, padding)
    y = layer(tnp.asarray(x.astype(np.float32)))
    ref = np_pool3d(x, kind, pool, strides or pool, padding)
    assert y.dtype == np.float32
    assert tuple(y.shape) == ref.shape == layer.compute_output_shape(x.shape)
    np.testing.assert_allclose(_np(y), ref, rtol=1e-6, atol=1e-6)
    first = cls(pool, strides, padding, data_format="channels_first", dtype="float64")
    yf = first(tnp.asarray(np.moveaxis(x, -1, 1)))
    np.testing.assert_allclose(_np(yf), np.moveaxis(ref, -1, 1), rtol=1e-12)


@pytest.mark.parametrize("cls", [L.MaxPooling3D, L.AveragePooling3D])
def test_pool3d_finite_differences(cls):
    rng = np.random.default_rng(8)
    x = tnp.asarray(rng.standard_normal((1, 4, 3, 5, 2)))
    layer = cls((2, 2, 3), (1, 2, 2), "same", dtype="float64")
    check_grads(lambda a: layer(a), eps=1e-6, rtol=1e-6, atol=1e-8)(x)


def test_max_pool3d_gradient_goes_to_the_window_maximum():
    x = np.zeros((1, 2, 2, 2, 1))
    x[0, 1, 0, 1, 0] = 5.0
    xt = tnp.asarray(x)
    with tt.GradientTape() as tape:
        tape.watch(xt)
        y = L.MaxPooling3D(dtype="float64")(xt)
    g = _np(tape.gradient(y, xt))
    expected = np.zeros_like(x)
    expected[0, 1, 0, 1, 0] = 1.0
    np.testing.assert_array_equal(g, expected)


@pytest.mark.parametrize("cls,reduce", [(L.GlobalMaxPooling3D, np.max),
                                        (L.GlobalAveragePooling3D, np.mean)])
def test_global_pooling3d(cls, reduce):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 3, 4, 2, 5))
    y = cls(dtype="float64")(tnp.asarray(x))
    np.testing.assert_allclose(_np(y), reduce(x, axis=(1, 2, 3)), rtol=1e-12)
    assert cls().compute_output_shape(x.shape) == (2, 5)
    yf = cls(data_format="channels_first", dtype="float64")(tnp.asarray(x))
    np.testing.assert_allclose(_np(yf), reduce(x, axis=(2, 3, 4)), rtol=1e-12)
    yk = cls(keepdims=True)(tnp.asarray(x))
    assert tuple(yk.shape) == (2, 1, 1, 1, 5)


# ----------------------------------------------------------------------------- API
def test_tf_aliases_and_defaults():
    assert L.Convolution3D is L.Conv3D and L.Convolution3DTranspose is L.Conv3DTranspose
    assert L.MaxPool3D is L.MaxPooling3D and L.AvgPool3D is L.AveragePooling3D
    assert L.GlobalMaxPool3D is L.GlobalMaxPooling3D
    assert L.GlobalAvgPool3D is L.GlobalAveragePooling3D
    c = L.Conv3D(2, 3)
    assert (c.strides, c.dilation_rate, c.padding, c.data_format, c.groups) == \
        ((1, 1, 1), (1, 1, 1), "valid", "channels_last", 1)
    p = L.MaxPooling3D()
    assert (p.pool_size, p.strides, p.padding) == ((2, 2, 2), (2, 2, 2), "valid")
    for name in ["Conv3D", "Conv3DTranspose", "MaxPooling3D", "AveragePooling3D",
                 "GlobalMaxPooling3D", "GlobalAveragePooling3D"]:
        assert name in L.__all__


@pytest.mark.parametrize("layer", [
    L.Conv3D(4, (2, 3, 1), strides=(1, 2, 1), padding="same", groups=2,
             kernel_regularizer="l2", activation="relu"),
    L.Conv3DTranspose(3, 2, strides=2, output_padding=1, data_format="channels_first"),
    L.MaxPooling3D((1, 2, 2), padding="same"), L.AveragePooling3D(strides=1),
    L.GlobalAveragePooling3D(data_format="channels_first"),
])
def test_config_round_trips(layer):
    assert_config_round_trips(layer)


def test_model_with_3d_layers_trains_and_saves(tmp_path):
    tt.utils.set_random_seed(0)
    model = tt.Sequential([tt.Input((4, 6, 6, 2)), L.Conv3D(3, 2, padding="same", activation="relu"),
                           L.MaxPooling3D(), L.Conv3DTranspose(2, 2, strides=2),
                           L.AveragePooling3D(), L.GlobalAveragePooling3D(), L.Dense(1)])
    assert model.output_shape == (None, 1)
    x = np.random.default_rng(1).random((6, 4, 6, 6, 2)).astype(np.float32)
    assert_fits_and_reloads(model, x, x.mean(axis=(1, 2, 3, 4))[:, None], tmp_path / "m", 8)


def test_bad_arguments_and_inputs_raise_value_errors():
    with pytest.raises(ValueError, match="kernel_size"):
        L.Conv3D(2, (3, 3))
    with pytest.raises(ValueError, match="padding"):
        L.Conv3D(2, 3, padding="causal")
    with pytest.raises(ValueError, match="output padding"):
        L.Conv3DTranspose(2, 3, strides=2, output_padding=2)
    with pytest.raises(ValueError, match="ndim=5"):
        L.Conv3D(2, 2)(tnp.zeros((1, 4, 4, 2)))
    with pytest.raises(ValueError, match="depth"):
        L.Conv3D(2, (3, 1, 1))(tnp.zeros((1, 2, 4, 4, 1)))
    with pytest.raises(ValueError, match="pool_size"):
        L.MaxPooling3D((2, 2))
    with pytest.raises(ValueError, match="ndim=5"):
        L.GlobalMaxPooling3D()(tnp.zeros((1, 4, 4, 2)))
    with pytest.raises(ValueError, match="ndim=5"):
        L.AveragePooling3D()(tnp.zeros((1, 4, 4, 2)))
