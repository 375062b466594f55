"""UpSampling1D/2D/3D, ZeroPadding1D/2D/3D, Cropping1D/2D/3D (tnp_train.layers.reshaping)
against NumPy (``np.repeat``, ``np.pad``, slicing, and TF 2's half-pixel bilinear resize
written out per output pixel), in both data formats, with finite differences, configs and
TF's errors."""
import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.autodiff import check_grads
from layer_checks import assert_config_round_trips, assert_fits_and_reloads

L = tt.layers


def _np(a):
    return np.asarray(a)


def _rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _repeat(x, axes, sizes):
    for ax, n in zip(axes, sizes):
        x = np.repeat(x, n, axis=ax)
    return x


def np_bilinear(img, fh, fw):
    """TF 2 ``tf.image.resize(..., method="bilinear")`` of an NHWC image by integer factors:
    output pixel (i, j) reads the input at ((i + .5) / fh - .5, (j + .5) / fw - .5), its four
    neighbours weighted by distance, coordinates clamped to the image."""
    N, H, W, Cc = img.shape
    out = np.zeros((N, H * fh, W * fw, Cc))
    for i in range(H * fh):
        for j in range(W * fw):
            sy = min(max((i + 0.5) / fh - 0.5, 0), H - 1)
            sx = min(max((j + 0.5) / fw - 0.5, 0), W - 1)
            y0, x0 = int(np.floor(sy)), int(np.floor(sx))
            y1, x1 = min(y0 + 1, H - 1), min(x0 + 1, W - 1)
            dy, dx = sy - y0, sx - x0
            out[:, i, j] = ((1 - dy) * (1 - dx) * img[:, y0, x0] + (1 - dy) * dx * img[:, y0, x1]
                            + dy * (1 - dx) * img[:, y1, x0] + dy * dx * img[:, y1, x1])
    return out


# ----------------------------------------------------------------------------- forward values
CASES = [
    # (layer, input shape, NumPy reference of a channels-last input)
    (lambda **k: L.UpSampling1D(3, **k), (2, 4, 3), lambda x: np.repeat(x, 3, axis=1)),
    (lambda **k: L.UpSampling2D((2, 3), **k), (2, 3, 4, 2), lambda x: _repeat(x, (1, 2), (2, 3))),
    (lambda **k: L.UpSampling2D((2, 3), interpolation="bilinear", **k), (2, 3, 4, 2),
     lambda x: np_bilinear(x, 2, 3)),
    (lambda **k: L.UpSampling3D((2, 1, 3), **k), (2, 2, 3, 2, 2),
     lambda x: _repeat(x, (1, 2, 3), (2, 1, 3))),
    (lambda **k: L.ZeroPadding1D((1, 2), **k), (2, 4, 3), lambda x: np.pad(x, ((0, 0), (1, 2), (0, 0)))),
    (lambda **k: L.ZeroPadding2D(((1, 0), (2, 3)), **k), (2, 3, 4, 2),
     lambda x: np.pad(x, ((0, 0), (1, 0), (2, 3), (0, 0)))),
    (lambda **k: L.ZeroPadding2D((2, 1), **k), (2, 3, 4, 2),
     lambda x: np.pad(x, ((0, 0), (2, 2), (1, 1), (0, 0)))),
    (lambda **k: L.ZeroPadding3D(1, **k), (2, 2, 3, 2, 2),
     lambda x: np.pad(x, ((0, 0), (1, 1), (1, 1), (1, 1), (0, 0)))),
    (lambda **k: L.Cropping1D((1, 2), **k), (2, 6, 3), lambda x: x[:, 1:4]),
    (lambda **k: L.Cropping2D(((1, 0), (2, 1)), **k), (2, 4, 5, 2), lambda x: x[:, 1:, 2:4]),
    (lambda **k: L.Cropping2D(1, **k), (2, 4, 5, 2), lambda x: x[:, 1:3, 1:4]),
    (lambda **k: L.Cropping3D(((0, 1), 1, (2, 0)), **k), (2, 3, 4, 5, 2),
     lambda x: x[:, 0:2, 1:3, 2:]),
]


@pytest.mark.parametrize("make,shape,ref", CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matches_numpy_in_both_data_formats(make, shape, ref, dtype):
    x = _rand(shape).astype(dtype)
    layer = make(dtype=dtype)
    y = layer(tnp.asarray(x))
    expected = ref(x.astype(np.float64))
    tol = 1e-6 if dtype == "float32" else 1e-12
    assert y.dtype == dtype
    np.testing.assert_allclose(_np(y), expected, rtol=tol, atol=tol)
    assert layer.compute_output_shape(shape) == expected.shape
    unknown = (None,) + tuple(None if i == 1 else d for i, d in enumerate(shape[1:], 1))
    assert layer.compute_output_shape(unknown)[1] is None
    assert layer.compute_output_shape(unknown)[2:] == expected.shape[2:]
    if len(shape) > 3:
        first = make(dtype=dtype, data_format="channels_first")
        yf = first(tnp.asarray(np.moveaxis(x, -1, 1)))
        np.testing.assert_allclose(_np(yf), np.moveaxis(expected, -1, 1), rtol=tol, atol=tol)
        assert first.compute_output_shape(np.moveaxis(x, -1, 1).shape) == yf.shape


def test_bilinear_is_tf_image_resize():
    # tf.image.resize([[1, 2], [3, 4]] (1x2x2x1), (4, 4), "bilinear"): half-pixel centers
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32).reshape(1, 2, 2, 1)
    y = _np(L.UpSampling2D(interpolation="bilinear")(tnp.asarray(x)))[0, :, :, 0]
    np.testing.assert_allclose(y, [[1.0, 1.25, 1.75, 2.0], [1.5, 1.75, 2.25, 2.5],
                                   [2.5, 2.75, 3.25, 3.5], [3.0, 3.25, 3.75, 4.0]], rtol=1e-6)


@pytest.mark.parametrize("make,shape,ref", CASES)
def test_finite_differences(make, shape, ref):
    layer = make(dtype="float64")
    check_grads(lambda a: layer(a), eps=1e-6, rtol=1e-6, atol=1e-8)(tnp.asarray(_rand(shape, 1)))


def test_nearest_upsampling_gradient_sums_each_block():
    x = tnp.asarray(_rand((1, 2, 2, 1)))
    u = _rand((1, 4, 6, 1), 2)
    with tt.GradientTape() as tape:
        tape.watch(x)
        y = L.UpSampling2D((2, 3), dtype="float64")(x)
        s = tnp.sum(y * tnp.asarray(u))
    g = _np(tape.gradient(s, x))
    np.testing.assert_allclose(g, u.reshape(1, 2, 2, 2, 3, 1).sum(axis=(2, 4)), rtol=1e-12)


@pytest.mark.parametrize("layer", [
    L.UpSampling1D(4), L.UpSampling2D((1, 2), "channels_first", "bilinear"),
    L.UpSampling3D(3), L.ZeroPadding1D(3), L.ZeroPadding2D(((1, 2), (3, 4))),
    L.ZeroPadding3D((1, 2, 3), data_format="channels_first"), L.Cropping1D(2),
    L.Cropping2D((1, 2)), L.Cropping3D(((1, 0), (0, 1), (2, 2))),
])
def test_config_round_trips(layer):
    assert_config_round_trips(layer)


def test_tf_defaults_and_normalised_arguments():
    assert L.UpSampling1D().size == (2,) and L.UpSampling1D().get_config()["size"] == 2
    u2 = L.UpSampling2D()
    assert (u2.size, u2.data_format, u2.interpolation) == ((2, 2), "channels_last", "nearest")
    assert L.UpSampling3D().size == (2, 2, 2)
    assert L.ZeroPadding1D().get_config()["padding"] == (1, 1)
    assert L.ZeroPadding2D().padding == ((1, 1), (1, 1))
    assert L.ZeroPadding3D().padding == ((1, 1),) * 3
    assert L.Cropping1D().get_config()["cropping"] == (1, 1)
    assert L.Cropping2D().cropping == ((0, 0), (0, 0))
    assert L.Cropping3D().cropping == ((1, 1),) * 3


def test_in_a_model_trains_and_saves(tmp_path):
    tt.utils.set_random_seed(0)
    model = tt.Sequential([
        tt.Input((6, 6, 1)), L.ZeroPadding2D(1), L.Conv2D(2, 3), L.UpSampling2D(interpolation="bilinear"),
        L.Cropping2D(((1, 1), (2, 2))), L.GlobalAveragePooling2D(), L.Dense(1)])
    assert model.output_shape == (None, 1)
    x = np.random.default_rng(1).random((8, 6, 6, 1)).astype(np.float32)
    assert_fits_and_reloads(model, x, x.mean(axis=(1, 2, 3))[:, None], tmp_path / "m")


def test_bad_arguments_and_inputs_raise_value_errors():
    with pytest.raises(ValueError, match="interpolation"):
        L.UpSampling2D(interpolation="bicubic")
    with pytest.raises(ValueError, match="size"):
        L.UpSampling2D((2, 2, 2))
    with pytest.raises(ValueError, match="size"):
        L.UpSampling1D(0)
    with pytest.raises(ValueError, match="padding"):
        L.ZeroPadding2D((1, 2, 3))
    with pytest.raises(ValueError, match="padding"):
        L.ZeroPadding3D(((1, 2), (1, 2)))
    with pytest.raises(ValueError, match="padding"):
        L.ZeroPadding1D(-1)
    with pytest.raises(ValueError, match="cropping"):
        L.Cropping2D("x")
    with pytest.raises(ValueError, match="data_format"):
        L.Cropping2D(data_format="NHWC")
    with pytest.raises(ValueError, match=r"removes every element.*\(2, 4, 5, 2\)"):
        L.Cropping2D(((2, 2), (0, 0)))(tnp.zeros((2, 4, 5, 2)))
    with pytest.raises(ValueError, match="ndim=4"):
        L.ZeroPadding2D()(tnp.zeros((2, 4, 5)))
    with pytest.raises(ValueError, match="ndim=3"):
        L.UpSampling1D()(tnp.zeros((2, 4, 5, 1)))
    with pytest.raises(TypeError):
        L.UpSampling1D(2, data_format="channels_first")     # channels-last only in TF 2.4
