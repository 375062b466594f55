"""tt.preprocessing.image transforms and ImageDataGenerator against tf-keras 2.21
(tests/fixtures/make_kpre_fixtures.py; see its docstring for how TF 2.4's affine arguments map
to tf-keras 2.21's) and against NumPy/SciPy written out by hand."""
import os
import sys
import warnings

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _kpre_ref import arrays, meta  # noqa: E402

from tnp_train.preprocessing import _affine as A  # noqa: E402
from tnp_train.preprocessing import image as I  # noqa: E402

CASES = ["rot", "shift", "zoom", "rot_shift_zoom", "constant", "reflect", "wrap", "order0"]


@pytest.mark.parametrize("name", CASES)
def test_apply_affine_transform_matches_tf(name):
    kw = meta()["affine_cases"][name]
    img = arrays()["img/input"]
    out = I.apply_affine_transform(img, row_axis=0, col_axis=1, channel_axis=2, **kw)
    np.testing.assert_allclose(out, arrays()[f"affine/{name}"], rtol=1e-5, atol=1e-3)
    out = I.apply_affine_transform(img.transpose(2, 0, 1), row_axis=1, col_axis=2,
                                   channel_axis=0, **kw)
    np.testing.assert_allclose(out, arrays()[f"affine_cf/{name}"], rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("name", CASES)
def test_numpy_fallback_equals_scipy(monkeypatch, name):
    kw = meta()["affine_cases"][name]
    img = arrays()["img/input"].astype("float64")
    monkeypatch.setattr(A, "_ndimage", None)
    out = I.apply_affine_transform(img, row_axis=0, col_axis=1, channel_axis=2, **kw)
    np.testing.assert_allclose(out, arrays()[f"affine/{name}"], rtol=1e-5, atol=1e-3)


def test_shear_and_tx_follow_tf24_matrix_on_a_non_square_image():
    from scipy import ndimage
    rng = np.random.RandomState(1)
    img = rng.uniform(size=(6, 9, 2))
    s = np.deg2rad(25.0)
    # TF 2.4: M = shift @ shear about the centre, applied to (row, col) coordinates
    m = np.array([[1, 0, 1.5], [0, 1, 0], [0, 0, 1]]) @ np.array(
        [[1, -np.sin(s), 0], [0, np.cos(s), 0], [0, 0, 1]])
    o = np.array([[1, 0, 2.5], [0, 1, 4.0], [0, 0, 1]])
    r = np.array([[1, 0, -2.5], [0, 1, -4.0], [0, 0, 1]])
    m = o @ m @ r
    ref = np.stack([ndimage.affine_transform(img[..., c], m[:2, :2], m[:2, 2], order=1,
                                             mode="nearest") for c in range(2)], axis=-1)
    out = I.apply_affine_transform(img, tx=1.5, shear=25.0)   # TF 2.4 defaults: rows, cols, ch
    np.testing.assert_allclose(out, ref, rtol=1e-12)
    # a pure row shift moves rows: output row i reads input row i + tx
    out = I.apply_affine_transform(img, tx=2, order=0)
    np.testing.assert_array_equal(out[:4], img[2:])


def test_affine_errors_and_identity():
    img = np.zeros((4, 4, 1))
    assert I.apply_affine_transform(img) is not None
    np.testing.assert_array_equal(I.apply_affine_transform(img + 3), img + 3)
    with pytest.raises(ValueError, match="3-D image"):
        I.apply_affine_transform(np.zeros((4, 4)), theta=10)
    with pytest.raises(ValueError, match="0, 1 and 2"):
        I.apply_affine_transform(img, theta=10, row_axis=0, col_axis=0, channel_axis=2)


def test_channel_shift_and_brightness_match_tf():
    img = arrays()["img/input"]
    np.testing.assert_allclose(I.apply_channel_shift(img, 40.0, channel_axis=2),
                               arrays()["channel_shift"], rtol=1e-6)
    for b in ("1.4", "0.3"):
        np.testing.assert_array_equal(I.apply_brightness_shift(img, float(b)),
                                      arrays()[f"brightness/{b}"])
    small = (img / 4.0).astype("float32")
    np.testing.assert_array_equal(I.apply_brightness_shift(small, 0.7),
                                  arrays()["brightness_small/0.7"])
    np.testing.assert_array_equal(I.apply_brightness_shift(small, 0.7, scale=False),
                                  arrays()["brightness_small_noscale/0.7"])
    neg = (img - 100.0).astype("float32")
    np.testing.assert_allclose(I.apply_brightness_shift(neg, 1.2, scale=False),
                               arrays()["brightness_neg_noscale/1.2"], rtol=1e-6)


def test_brightness_equals_pillow():
    Image = pytest.importorskip("PIL.Image")
    from PIL import ImageEnhance
    rng = np.random.RandomState(3)
    for c, mode in ((3, "RGB"), (1, "L"), (4, "RGBA")):
        a = rng.randint(0, 256, size=(5, 6, c)).astype("uint8")
        a[0, 0] = 0
        a[0, 1] = 255
        for b in (0.0, 0.37, 1.0, 1.9):
            pil = Image.fromarray(a[..., 0] if c == 1 else a, mode)
            ref = np.asarray(ImageEnhance.Brightness(pil).enhance(b), dtype="float32")
            ref = ref.reshape(5, 6, c)
            np.testing.assert_array_equal(I.apply_brightness_shift(a.astype("float32"), b), ref)


def test_random_functions_draw_from_numpys_global_generator():
    img = arrays()["img/input"]
    np.random.seed(4)
    out = I.random_rotation(img, 30, row_axis=0, col_axis=1, channel_axis=2)
    np.random.seed(4)
    theta = np.random.uniform(-30, 30)
    np.testing.assert_array_equal(out, I.apply_affine_transform(img, theta=theta))
    np.random.seed(5)
    out = I.random_shift(img, 0.1, 0.2, row_axis=0, col_axis=1, channel_axis=2)
    np.random.seed(5)
    tx = np.random.uniform(-0.2, 0.2) * 9
    ty = np.random.uniform(-0.1, 0.1) * 9
    np.testing.assert_array_equal(out, I.apply_affine_transform(img, tx=tx, ty=ty))
    np.random.seed(6)
    out = I.random_zoom(img, (0.8, 1.2), row_axis=0, col_axis=1, channel_axis=2)
    np.random.seed(6)
    zx, zy = np.random.uniform(0.8, 1.2, 2)
    np.testing.assert_array_equal(out, I.apply_affine_transform(img, zx=zx, zy=zy))
    np.random.seed(7)
    out = I.random_shear(img, 15, row_axis=0, col_axis=1, channel_axis=2)
    np.random.seed(7)
    np.testing.assert_array_equal(out, I.apply_affine_transform(
        img, shear=np.random.uniform(-15, 15)))
    np.random.seed(8)
    out = I.random_channel_shift(img, 20, channel_axis=2)
    np.random.seed(8)
    np.testing.assert_array_equal(out, I.apply_channel_shift(img, np.random.uniform(-20, 20), 2))
    with pytest.raises(ValueError, match="zoom_range"):
        I.random_zoom(img, (0.5,))
    with pytest.raises(ValueError, match="brightness_range"):
        I.random_brightness(img, (0.5,))


def test_get_random_transform_draws_match_tf():
    gen = I.ImageDataGenerator(rotation_range=20, width_shift_range=0.2,
                               height_shift_range=[1, 2], shear_range=10, zoom_range=0.2,
                               channel_shift_range=5.0, horizontal_flip=True,
                               vertical_flip=True, brightness_range=(0.5, 1.5))
    got = gen.get_random_transform((9, 9, 3), seed=42)
    ref = meta()["random_transform"]
    assert set(got) == set(ref)
    for k, v in ref.items():
        assert float(got[k]) == pytest.approx(v, rel=1e-12), k


def test_fit_and_standardize_match_tf():
    x = arrays()["fit/x"]
    g = I.ImageDataGenerator(featurewise_center=True, featurewise_std_normalization=True,
                             rescale=2.0)
    g.fit(x)
    np.testing.assert_allclose(g.mean, arrays()["fit/mean"], rtol=1e-6)
    np.testing.assert_allclose(g.std, arrays()["fit/std"], rtol=1e-6)
    np.testing.assert_allclose(g.standardize(np.copy(x[0])), arrays()["fit/std0"], rtol=1e-5)
    with pytest.warns(UserWarning, match="overrides"):
        g = I.ImageDataGenerator(samplewise_std_normalization=True)
    assert g.samplewise_center
    np.testing.assert_allclose(g.standardize(np.copy(x[0])), arrays()["fit/samplewise0"],
                               rtol=1e-5)
    with pytest.raises(ValueError, match="rank 4"):
        g.fit(x[0])


def test_zca_whitening_whitens():
    # TF 2.4's ZCA: sigma = X^T X / n, U S U^T = svd(sigma), W = U diag(1/sqrt(S + eps)) U^T
    rng = np.random.RandomState(0)
    x = rng.normal(size=(200, 2, 2, 1)) @ np.ones((1, 1)) * [1.0]
    x[..., 0, 0, 0] += 3 * x[..., 1, 1, 0]
    with pytest.warns(UserWarning):
        g = I.ImageDataGenerator(zca_whitening=True, zca_epsilon=1e-9, dtype="float64")
    g.fit(x)
    flat = np.stack([g.standardize(np.copy(v)).ravel() for v in x])
    np.testing.assert_allclose(flat.T @ flat / len(flat), np.eye(4), atol=1e-6)
    xc = (x - x.mean(axis=(0, 1, 2))).reshape(200, 4)
    u, s, _ = np.linalg.svd(xc.T @ xc / 200)
    np.testing.assert_allclose(g.principal_components,
                               (u * (1 / np.sqrt(s[None] + 1e-9))) @ u.T, rtol=1e-8)


def test_flow_batches_match_tf_for_the_same_seed():
    x = arrays()["fit/x"]
    g = I.ImageDataGenerator(horizontal_flip=True, vertical_flip=True, channel_shift_range=0.3,
                             rescale=0.5)
    it = g.flow(x, np.arange(6), batch_size=4, shuffle=True, seed=3)
    assert len(it) == 2
    for i in range(len(it)):
        bx, by = it[i]
        np.testing.assert_allclose(bx, arrays()[f"flow/{i}/x"], rtol=1e-6)
        np.testing.assert_array_equal(by, arrays()[f"flow/{i}/y"])
    it = g.flow(x, np.arange(6), batch_size=4, shuffle=True, seed=3)
    for i in range(3):
        bx, by = next(it)
        np.testing.assert_allclose(bx, arrays()[f"flow_next/{i}/x"], rtol=1e-6)
        np.testing.assert_array_equal(by, arrays()[f"flow_next/{i}/y"])


def test_flow_subsets_sample_weight_and_errors():
    x = np.arange(10 * 2 * 2 * 1, dtype="float32").reshape(10, 2, 2, 1)
    y = np.array([0, 1] * 5)
    w = np.arange(10, dtype="float32")
    g = I.ImageDataGenerator(validation_split=0.3)
    bx, by, bw = g.flow(x, y, sample_weight=w, batch_size=10, shuffle=False,
                        subset="training")[0]
    np.testing.assert_array_equal(bx, x[3:])
    np.testing.assert_array_equal(by, y[3:])
    # the weights follow their rows (TF 2.4 sliced x and y but not the weights)
    np.testing.assert_array_equal(bw, w[3:])
    bx, by = g.flow(x, y, batch_size=10, shuffle=False, subset="validation")[0]
    np.testing.assert_array_equal(bx, x[:3])
    with pytest.raises(ValueError, match="different number of classes"):
        g.flow(x, np.sort(y), subset="training")
    with pytest.raises(ValueError, match="same length"):
        g.flow(x, y[:3])
    with pytest.raises(ValueError, match="rank 4"):
        g.flow(x[0], y[:2])
    with pytest.raises(ValueError, match="Asked to retrieve element 5"):
        g.flow(x, y, batch_size=2)[5]
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        I.ImageDataGenerator(validation_split=1.5)
    with pytest.raises(ValueError, match="data_format"):
        I.ImageDataGenerator(data_format="nhwc")
    with pytest.raises(ValueError, match="zoom_range"):
        I.ImageDataGenerator(zoom_range=(1, 2, 3))
    # x as (images, [extra inputs])
    out, yy = g.flow((x, [w]), y, batch_size=4, shuffle=False)[0]
    np.testing.assert_array_equal(out[1], w[:4])


def test_preprocessing_function_and_channels_first():
    x = np.random.RandomState(2).uniform(0, 255, size=(3, 3, 5, 5)).astype("float32")
    g = I.ImageDataGenerator(preprocessing_function=lambda a: a + 1.0, rescale=0.5,
                             data_format="channels_first", horizontal_flip=True)
    np.random.seed(0)
    bx = g.flow(x, batch_size=3, shuffle=False, seed=1)[0]
    np.random.seed(1)   # the iterator reseeds with seed + batches seen (0)
    ref = []
    for v in x:
        p = g.get_random_transform(v.shape)
        v = v[:, :, ::-1] if p["flip_horizontal"] else v
        ref.append((v + 1.0) * 0.5)
    np.testing.assert_allclose(bx, np.stack(ref), rtol=1e-6)


def test_iterator_feeds_fit():
    import tnp_train as tt
    rng = np.random.RandomState(0)
    x = rng.uniform(size=(16, 4, 4, 1)).astype("float32")
    y = (x.mean(axis=(1, 2, 3)) > 0.5).astype("float32")
    it = I.ImageDataGenerator(horizontal_flip=True).flow(x, y, batch_size=8, seed=0)
    model = tt.Sequential([tt.layers.Flatten(input_shape=(4, 4, 1)),
                           tt.layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer="sgd", loss="binary_crossentropy")
    hist = model.fit(it, epochs=2, verbose=0)
    assert len(hist.history["loss"]) == 2 and np.isfinite(hist.history["loss"]).all()


def test_smart_resize_matches_tf():
    src = arrays()["smart/in"]
    np.testing.assert_allclose(I.smart_resize(src, (5, 5)), arrays()["smart/out_5x5"],
                               rtol=1e-5, atol=1e-3)
    np.testing.assert_array_equal(I.smart_resize(src, (4, 9), interpolation="nearest"),
                                  arrays()["smart/out_4x9_nearest"])
    np.testing.assert_allclose(I.smart_resize(src, (6, 3)), arrays()["smart/out_6x3"],
                               rtol=1e-5, atol=1e-3)
    batch = I.smart_resize(np.stack([src, src]), (5, 5))
    assert batch.shape == (2, 5, 5, 3)
    with pytest.raises(ValueError, match="incorrect rank"):
        I.smart_resize(src[0], (2, 2))
    with pytest.raises(ValueError, match="2 integers"):
        I.smart_resize(src, (2,))
    warnings.simplefilter("default")


@pytest.mark.parametrize("mode", ["wrap", "reflect", "nearest", "constant"])
@pytest.mark.parametrize("order", [0, 1])
def test_numpy_fallback_equals_scipy_on_random_maps(mode, order):
    from scipy import ndimage
    rng = np.random.RandomState(order * 10 + len(mode))
    for t in range(60):
        a = rng.uniform(size=(rng.randint(1, 7), rng.randint(2, 8)))
        m, off = rng.uniform(-2, 2, size=(2, 2)), rng.uniform(-12, 12, size=2)
        if t % 3 == 0:   # half-integer coordinates: SciPy rounds halves up
            m, off = np.round(m * 2) / 2, np.round(off * 2) / 2
        ref = ndimage.affine_transform(a, m, off, order=order, mode=mode, cval=-3.0)
        np.testing.assert_allclose(A._affine_numpy(a, m, off, order, mode, -3.0), ref,
                                   atol=1e-12)


def test_iterator_classes_directly():
    x = arrays()["fit/x"]
    gen = I.ImageDataGenerator(rescale=0.5)
    it = I.NumpyArrayIterator(x, np.arange(6), gen, batch_size=4, shuffle=False)
    assert isinstance(it, I.Iterator) and len(it) == 2
    bx, by = it[1]
    np.testing.assert_allclose(bx, x[4:] * 0.5, rtol=1e-7)
    np.testing.assert_array_equal(by, [4, 5])
    # the endless iterator wraps around and reshuffles per pass (here: no shuffle)
    seen = [next(it)[1].tolist() for _ in range(3)]
    assert seen == [[0, 1, 2, 3], [4, 5], [0, 1, 2, 3]]

    class Squares(I.Iterator):
        def _get_batches_of_transformed_samples(self, index_array):
            return np.asarray(index_array) ** 2
    sq = Squares(5, 2, shuffle=True, seed=0)
    np.random.seed(0)
    order = np.random.permutation(5)
    np.testing.assert_array_equal(sq[0], order[:2] ** 2)
    assert len(sq) == 3


def test_generator_brightness_stretches_as_tf24_and_honours_its_data_format():
    img = arrays()["img/input"]
    # TF 2.4's apply_transform calls apply_brightness_shift(x, b): scale=True
    out = I.ImageDataGenerator().apply_transform(img, {"brightness": 1.4})
    np.testing.assert_array_equal(out, arrays()["brightness/1.4"])
    small = (img / 4.0).astype("float32")
    out = I.ImageDataGenerator().apply_transform(small, {"brightness": 0.7})
    np.testing.assert_array_equal(out, arrays()["brightness_small/0.7"])
    out = I.ImageDataGenerator(data_format="channels_first").apply_transform(
        img.transpose(2, 0, 1), {"brightness": 0.3})
    np.testing.assert_array_equal(out, arrays()["brightness/0.3"].transpose(2, 0, 1))


def test_transforms_take_tnp_arrays():
    import tnp
    img = arrays()["img/input"]
    out = I.apply_affine_transform(tnp.asarray(img), theta=30)
    np.testing.assert_allclose(out, arrays()["affine/rot"], rtol=1e-5, atol=1e-3)
    r = I.smart_resize(tnp.asarray(arrays()["smart/in"]), (5, 5))
    assert isinstance(r, tnp.ndarray)
    np.testing.assert_allclose(np.asarray(r), arrays()["smart/out_5x5"], rtol=1e-5, atol=1e-3)
