"""Image preprocessing layers: shapes, TF 2.4's training semantics, reproducible randomness,
hand-written NumPy references for the augmentations' arithmetic, gradients (finite
differences), configs and a model save/load round trip. TF's own values are in
test_preprocessing_fixtures.py."""
import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.autodiff import check_grads

P = tt.layers.experimental.preprocessing


def _rand(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def round_trip(layer):
    again = tt.layers.deserialize(tt.layers.serialize(layer))
    a, b = layer.get_config(), again.get_config()
    a.pop("name"), b.pop("name")
    assert type(again) is type(layer) and a == b
    return again


def test_rescaling_float32_and_float64():
    x = np.arange(12, dtype=np.uint8).reshape(1, 2, 2, 3)
    out = P.Rescaling(1 / 255.0, offset=-0.5)(tnp.asarray(x))
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), x.astype(np.float32) / 255 - 0.5, rtol=1e-6)
    out64 = P.Rescaling(2.0, offset=1.0, dtype="float64")(tnp.asarray(_rand((2, 3), 1, np.float64)))
    assert out64.dtype == np.float64
    np.testing.assert_allclose(np.asarray(out64), _rand((2, 3), 1, np.float64) * 2 + 1)
    round_trip(P.Rescaling(0.5, offset=[1.0, 2.0, 3.0]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rescaling_and_normalization_gradients(dtype):
    x = tnp.asarray(_rand((3, 4), 2, dtype))
    resc = P.Rescaling(3.0, offset=1.0, dtype=np.dtype(dtype).name)
    check_grads(lambda a: resc(a), rtol=1e-3 if dtype == np.float32 else 1e-5,
                eps=1e-3 if dtype == np.float32 else 1e-6)(x)
    norm = P.Normalization(dtype=np.dtype(dtype).name)
    norm.adapt(_rand((10, 4), 3, dtype))
    check_grads(lambda a: norm(a), rtol=1e-3 if dtype == np.float32 else 1e-5,
                eps=1e-3 if dtype == np.float32 else 1e-6)(x)


@pytest.mark.parametrize("method", ["bilinear", "bicubic", "area", "lanczos3", "gaussian"])
def test_resizing_gradients(method):
    x = tnp.asarray(_rand((1, 4, 5, 2), 4))
    layer = P.Resizing(6, 3, interpolation=method)
    check_grads(lambda a: layer(a), eps=1e-2, rtol=2e-3, atol=1e-4)(x)


def test_resizing_nearest_and_bilinear_by_hand():
    # nearest with half-pixel centers: output i reads floor((i + .5) * in / out)
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 6, 1)
    out = P.Resizing(1, 4, interpolation="nearest")(tnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(out).ravel(), [0, 2, 3, 5])
    # bilinear 2x upsampling of [0, 4]: positions -.25, .25, .75, 1.25 clamped -> 0, 1, 3, 4
    x = np.array([0.0, 4.0], np.float32).reshape(1, 1, 2, 1)
    out = P.Resizing(1, 4)(tnp.asarray(x))
    np.testing.assert_allclose(np.asarray(out).ravel(), [0, 1, 3, 4])


def test_resizing_shapes_single_image_and_functional():
    layer = P.Resizing(3, 5)
    assert layer(tnp.asarray(_rand((4, 4, 2)))).shape == (3, 5, 2)
    assert layer.compute_output_shape((None, 8, 8, 2)) == (None, 3, 5, 2)
    inp = tt.Input(shape=(6, 6, 2))
    out = tt.layers.Flatten()(P.Resizing(3, 3)(inp))
    model = tt.Model(inp, tt.layers.Dense(1)(out))
    assert model.output_shape == (None, 1)
    assert model(tnp.asarray(_rand((2, 6, 6, 2)))).shape == (2, 1)
    round_trip(P.Resizing(3, 4, interpolation="lanczos5"))
    with pytest.raises(NotImplementedError, match="interpolation"):
        P.Resizing(3, 3, interpolation="cubic")


def test_center_crop():
    x = _rand((2, 5, 6, 1))
    out = P.CenterCrop(3, 2)(tnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(out), x[:, 1:4, 2:4, :])
    assert P.CenterCrop(3, 2).compute_output_shape((None, 5, 6, 1)) == (None, 3, 2, 1)
    with pytest.raises(ValueError, match="larger than the images"):
        P.CenterCrop(6, 2)(tnp.asarray(x))
    round_trip(P.CenterCrop(3, 2))


RANDOM_LAYERS = [
    lambda **k: P.RandomFlip(**k),
    lambda **k: P.RandomTranslation(0.3, 0.2, **k),
    lambda **k: P.RandomRotation(0.2, **k),
    lambda **k: P.RandomZoom(0.3, **k),
    lambda **k: P.RandomContrast(0.5, **k),
    lambda **k: P.RandomCrop(4, 3, **k),
    lambda **k: P.RandomHeight(0.4, **k),
    lambda **k: P.RandomWidth(0.4, **k),
]


@pytest.mark.parametrize("make", RANDOM_LAYERS)
def test_random_layers_identity_unless_training_and_reproducible(make):
    x = tnp.asarray(_rand((3, 6, 5, 2), 5))
    layer = make()
    if not isinstance(layer, P.RandomCrop):
        assert layer(x, training=False) is x
    else:     # inference: 6x5 is resized to 4x3 (int(4 * 5 / 6) = 3 columns), no crop left
        np.testing.assert_array_equal(np.asarray(layer(x, training=False)),
                                      np.asarray(P.Resizing(4, 3)(x)))
    tt.utils.set_random_seed(7)
    a = np.asarray(make()(x))           # training unset: augments, as TF 2.4's default
    tt.utils.set_random_seed(7)
    b = np.asarray(make()(x, training=True))
    np.testing.assert_array_equal(a, b)
    s1 = np.asarray(make(seed=3)(x, training=True))
    s2 = np.asarray(make(seed=3)(x, training=True))
    np.testing.assert_array_equal(s1, s2)
    again = round_trip(make(seed=3))
    np.testing.assert_array_equal(np.asarray(again(x, training=True)), s1)


def test_random_flip_is_a_flip_of_each_image():
    x = _rand((16, 3, 4, 1), 6)
    out = np.asarray(P.RandomFlip("horizontal", seed=1)(tnp.asarray(x), training=True))
    flipped = [np.array_equal(o, xi[:, ::-1]) for o, xi in zip(out, x)]
    kept = [np.array_equal(o, xi) for o, xi in zip(out, x)]
    assert all(f or k for f, k in zip(flipped, kept)) and any(flipped) and any(kept)
    with pytest.raises(ValueError, match="mode"):
        P.RandomFlip("diagonal")


def test_random_contrast_formula():
    x = _rand((2, 4, 3, 2), 8)
    layer = P.RandomContrast((0.2, 0.5), seed=11)
    out = np.asarray(layer(tnp.asarray(x), training=True))
    mean = x.mean(axis=(1, 2), keepdims=True)
    # the one factor of the call, recovered from the first pixel: out = (x - m) c + m
    c = (out[0, 0, 0, 0] - mean[0, 0, 0, 0]) / (x[0, 0, 0, 0] - mean[0, 0, 0, 0])
    assert 0.8 <= c <= 1.5
    np.testing.assert_allclose(out, (x - mean) * c + mean, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="negative"):
        P.RandomContrast(-0.1)


def test_random_rotation_by_zero_and_quarter_turn():
    x = _rand((1, 4, 4, 1), 9)
    out = P.RandomRotation((0.0, 0.0))(tnp.asarray(x), training=True)
    np.testing.assert_allclose(np.asarray(out), x, atol=1e-5)
    # TF's rotation matrix for +pi/2 maps output (x, y) to input (w-1-y, x): np.rot90
    out = P.RandomRotation((0.25, 0.25), interpolation="nearest")(tnp.asarray(x), training=True)
    np.testing.assert_allclose(np.asarray(out)[0, :, :, 0], np.rot90(x[0, :, :, 0], k=1),
                               atol=1e-5)


def test_random_translation_integer_shift_constant_fill():
    x = _rand((1, 4, 5, 1), 10)
    layer = P.RandomTranslation((0.25, 0.25), (0.0, 0.0), fill_mode="constant", fill_value=-9)
    out = np.asarray(layer(tnp.asarray(x), training=True))[0, :, :, 0]
    np.testing.assert_allclose(out[1:], x[0, :3, :, 0], atol=1e-6)
    np.testing.assert_allclose(out[0], -9)
    with pytest.raises(ValueError, match="between"):
        P.RandomTranslation(1.5, 0.1)
    with pytest.raises(NotImplementedError, match="fill_mode"):
        P.RandomTranslation(0.1, 0.1, fill_mode="mirror")


def test_random_zoom_keeps_aspect_and_gradient():
    x = tnp.asarray(_rand((2, 5, 5, 1), 12))
    layer = P.RandomZoom((-0.5, -0.5), seed=0)     # zoom in 2x about the centre
    out = np.asarray(layer(x, training=True))
    # output pixel (2, 2) (the centre) samples the input centre
    np.testing.assert_allclose(out[:, 2, 2], np.asarray(x)[:, 2, 2], atol=1e-6)
    rot = P.RandomRotation(0.1, seed=4)
    # the same draw each time (a fresh layer per call), so finite differences see one function
    check_grads(lambda a: P.RandomRotation(0.1, seed=4)(a, training=True), eps=1e-2,
                rtol=2e-3, atol=1e-4)(x)
    assert rot.compute_output_shape((None, 5, 5, 1)) == (None, 5, 5, 1)
    with pytest.raises(ValueError, match="less than -1"):
        P.RandomZoom((-1.5, 0.2))


def test_random_height_width_sizes():
    x = tnp.asarray(_rand((2, 10, 8, 1), 13))
    out = P.RandomHeight((0.5, 0.5))(x, training=True)
    assert out.shape == (2, 15, 8, 1)
    out = P.RandomWidth((-0.5, -0.5))(x, training=True)
    assert out.shape == (2, 10, 4, 1)
    assert P.RandomHeight(0.2).compute_output_shape((None, 10, 8, 1)) == (None, None, 8, 1)
    assert P.RandomWidth(0.2).compute_output_shape((None, 10, 8, 1)) == (None, 10, None, 1)


def test_random_crop_inference_resizes_then_center_crops():
    # TF 2.4: 6x5 images for a 2x3 crop are taller than 2:3, so they are resized to
    # int(3 * 6 / 5) = 3 rows by 3 columns, and rows int((3 - 2) / 2) = 0..1 are kept
    x = tnp.asarray(_rand((1, 6, 5, 2), 16))
    out = P.RandomCrop(2, 3)(x, training=False)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(P.Resizing(3, 3)(x))[:, 0:2])


def test_random_crop_training_window():
    x = _rand((2, 6, 5, 1), 14)
    out = np.asarray(P.RandomCrop(4, 3, seed=2)(tnp.asarray(x), training=True))
    hits = [(t, l) for t in range(3) for l in range(3)
            if np.array_equal(out, x[:, t:t + 4, l:l + 3])]
    assert len(hits) == 1


def test_augmenting_model_trains_saves_and_loads(tmp_path):
    model = tt.Sequential([P.Rescaling(0.5), P.RandomFlip("horizontal", seed=1),
                           P.RandomRotation(0.05, seed=2), P.Resizing(3, 3),
                           tt.layers.Flatten(), tt.layers.Dense(1)])
    x = _rand((8, 5, 5, 1), 15)
    y = x.reshape(8, -1).mean(axis=1, keepdims=True)
    model.compile(tt.optimizers.Adam(0.05), "mse")
    hist = model.fit(x, y, epochs=5, verbose=0)
    assert hist.history["loss"][-1] < hist.history["loss"][0]
    model.save(tmp_path / "m")
    again = tt.models.load_model(tmp_path / "m")
    # predict runs with training=False: the augmentations are the identity
    np.testing.assert_array_equal(np.asarray(again.predict(x)), np.asarray(model.predict(x)))
