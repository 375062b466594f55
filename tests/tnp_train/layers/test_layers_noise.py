"""GaussianNoise, GaussianDropout, AlphaDropout (tnp_train.layers.noise), SpatialDropout1D/2D/3D
and ActivityRegularization (tnp_train.layers.core): the identity unless training=True, TF 2.4's
formulas (AlphaDropout's affine correction is recomputed here from the SELU constants), the
statistics the noise must have, reproducibility under tt.utils.set_random_seed, gradients,
configs and TF's errors."""
import math

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.autodiff import check_grads
from layer_checks import assert_config_round_trips

L = tt.layers
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _np(a):
    return np.asarray(a)


def _x(shape=(200, 500), seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


NOISY = [lambda: L.GaussianNoise(0.5), lambda: L.GaussianDropout(0.3),
         lambda: L.AlphaDropout(0.2), lambda: L.SpatialDropout1D(0.5),
         lambda: L.SpatialDropout2D(0.5), lambda: L.SpatialDropout3D(0.5)]
SHAPES = {"SpatialDropout2D": (2, 3, 4, 5), "SpatialDropout3D": (2, 3, 4, 2, 5)}


@pytest.mark.parametrize("make", NOISY)
def test_identity_unless_training(make):
    layer = make()
    x = tnp.asarray(_x(SHAPES.get(type(layer).__name__, (2, 3, 4))))
    assert layer(x) is x and layer(x, training=False) is x
    assert not np.array_equal(_np(layer(x, training=True)), _np(x))
    # training=True reaches the layer from an enclosing call (as fit's)
    model = tt.Sequential([tt.Input(tuple(x.shape[1:])), layer])
    assert np.array_equal(_np(model(x)), _np(x))
    assert not np.array_equal(_np(model(x, training=True)), _np(x))
    assert layer.compute_output_shape((None,) + tuple(x.shape[1:])) == (None,) + tuple(x.shape[1:])


@pytest.mark.parametrize("make", NOISY)
def test_reproducible_under_set_random_seed(make):
    layer = make()
    x = tnp.asarray(_x(SHAPES.get(type(layer).__name__, (2, 3, 4))))
    tt.utils.set_random_seed(7)
    a = _np(layer(x, training=True))
    tt.utils.set_random_seed(7)
    b = _np(layer(x, training=True))
    c = _np(layer(x, training=True))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(b, c)


def test_gaussian_noise_statistics():
    x = _x()
    noise = _np(L.GaussianNoise(0.5)(tnp.asarray(x), training=True)) - x
    assert abs(noise.mean()) < 0.005 and abs(noise.std() - 0.5) < 0.005
    assert L.GaussianNoise(0.5)(tnp.asarray(x.astype(np.float64)), training=True).dtype == np.float32
    y64 = L.GaussianNoise(0.5, dtype="float64")(tnp.asarray(x.astype(np.float64)), training=True)
    assert y64.dtype == np.float64


def test_gaussian_dropout_statistics_and_rate_edges():
    x = np.ones((200, 500), np.float32)
    m = _np(L.GaussianDropout(0.3)(tnp.asarray(x), training=True))
    # multiplicative N(1, rate / (1 - rate)) noise
    assert abs(m.mean() - 1) < 0.005 and abs(m.std() - math.sqrt(0.3 / 0.7)) < 0.005
    xt = tnp.asarray(x)
    assert L.GaussianDropout(0.0)(xt, training=True) is xt
    assert L.GaussianDropout(1.0)(xt, training=True) is xt      # TF: only 0 < rate < 1 acts


def test_alpha_dropout_formula_and_self_normalisation():
    rate = 0.2
    x = _x((400, 500), dtype=np.float64)
    y = _np(L.AlphaDropout(rate, dtype="float64")(tnp.asarray(x), training=True))
    alpha_p = -SELU_ALPHA * SELU_SCALE
    a = ((1 - rate) * (1 + rate * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * rate
    dropped = np.isclose(y, a * alpha_p + b, rtol=0, atol=1e-12)
    assert abs(dropped.mean() - rate) < 0.005
    np.testing.assert_allclose(y[~dropped], a * x[~dropped] + b, rtol=1e-12)
    # a standard normal input keeps mean 0 and variance 1
    assert abs(y.mean()) < 0.01 and abs(y.std() - 1) < 0.01


def test_alpha_dropout_noise_shape_and_seed():
    x = tnp.asarray(_x((4, 6, 3)))
    layer = L.AlphaDropout(0.5, noise_shape=(None, 1, 3), seed=1)
    y = _np(layer(x, training=True))
    const = np.isclose(y, y.min())
    assert np.all(const == const[:, :1, :])             # one decision per (sample, feature)
    again = L.AlphaDropout(0.5, noise_shape=(None, 1, 3), seed=1)
    np.testing.assert_array_equal(_np(again(x, training=True)), y)
    with pytest.raises(ValueError, match="noise_shape"):
        L.AlphaDropout(0.5, noise_shape=(1, 3))(x, training=True)


@pytest.mark.parametrize("cls,shape,spatial,data_format", [
    (L.SpatialDropout1D, (6, 8, 10), (1,), None),
    (L.SpatialDropout2D, (6, 4, 5, 10), (1, 2), None),
    (L.SpatialDropout2D, (6, 10, 4, 5), (2, 3), "channels_first"),
    (L.SpatialDropout3D, (6, 3, 4, 2, 10), (1, 2, 3), "channels_last"),
    (L.SpatialDropout3D, (6, 10, 3, 4, 2), (2, 3, 4), "channels_first"),
])
def test_spatial_dropout_drops_whole_feature_maps(cls, shape, spatial, data_format):
    kw = {} if data_format is None else {"data_format": data_format}
    x = np.abs(_x(shape)) + 1
    y = _np(cls(0.4, **kw)(tnp.asarray(x), training=True))
    kept = y != 0
    np.testing.assert_array_equal(kept, kept.all(axis=spatial, keepdims=True) & np.ones_like(kept))
    np.testing.assert_allclose(y[kept], x[kept] / 0.6, rtol=1e-6)
    assert 0 < kept.mean() < 1


def test_dropouts_pass_finite_differences_with_a_fixed_draw():
    x = tnp.asarray(_x((3, 4, 5), dtype=np.float64))
    for layer in [L.GaussianNoise(0.3, dtype="float64"), L.GaussianDropout(0.3, dtype="float64"),
                  L.AlphaDropout(0.3, dtype="float64"), L.SpatialDropout1D(0.3, dtype="float64")]:
        def f(a, layer=layer):
            tt.utils.set_random_seed(3)                 # the same draw on every evaluation
            return layer(a, training=True)
        check_grads(f, eps=1e-6, rtol=1e-6, atol=1e-8)(x)


def test_activity_regularization_adds_the_mean_penalty():
    layer = L.ActivityRegularization(l1=0.01, l2=0.1)
    x = _x((4, 5), dtype=np.float64)
    xt = tnp.asarray(x)
    y = layer(xt)
    np.testing.assert_array_equal(_np(y), x.astype(np.float32))
    (loss,) = layer.losses
    # TF divides the activity penalty by the batch size
    ref = (0.01 * np.abs(x).sum() + 0.1 * (x ** 2).sum()) / 4
    np.testing.assert_allclose(float(loss), ref, rtol=1e-6)
    # in a model: the penalty joins the training loss and its gradient reaches earlier layers
    dense = L.Dense(3, kernel_initializer="ones", use_bias=False, dtype="float64")
    model = tt.Sequential([tt.Input((5,)), dense, L.ActivityRegularization(l2=0.5, dtype="float64")])
    with tt.GradientTape() as tape:
        out = model(xt, training=True)
        (total,) = model.losses
    (g,) = tape.gradient(total, model.trainable_weights)
    h = x @ np.ones((5, 3))
    np.testing.assert_allclose(float(total), 0.5 * (h ** 2).sum() / 4, rtol=1e-12)
    np.testing.assert_allclose(_np(g), x.T @ (2 * 0.5 * h / 4), rtol=1e-12)
    assert out.shape == (4, 3)


@pytest.mark.parametrize("layer", [
    L.GaussianNoise(0.2), L.GaussianDropout(0.4), L.AlphaDropout(0.1, (None, 1), 3),
    L.SpatialDropout1D(0.2), L.SpatialDropout2D(0.3, "channels_first"),
    L.SpatialDropout3D(0.1, seed=2), L.ActivityRegularization(0.1, 0.2),
])
def test_config_round_trips(layer):
    assert_config_round_trips(layer)


def test_save_and_load_a_model_with_noise_layers(tmp_path):
    model = tt.Sequential([tt.Input((4, 3)), L.GaussianNoise(0.1), L.SpatialDropout1D(0.2),
                           L.Flatten(), L.Dense(2), L.AlphaDropout(0.1),
                           L.ActivityRegularization(l1=0.01)])
    model.compile("sgd", "mse")
    x = _x((5, 4, 3))
    model.fit(x, np.zeros((5, 2), np.float32), epochs=1, verbose=0)
    model.save(tmp_path / "m")
    again = tt.models.load_model(tmp_path / "m")
    np.testing.assert_array_equal(_np(again.predict(x)), _np(model.predict(x)))


def test_bad_arguments_and_inputs_raise_value_errors():
    with pytest.raises(ValueError, match="rate"):
        L.GaussianDropout(1.5)
    with pytest.raises(ValueError, match="rate"):
        L.AlphaDropout(-0.1)
    with pytest.raises(ValueError, match="stddev"):
        L.GaussianNoise(float("nan"))
    with pytest.raises(ValueError, match="data_format"):
        L.SpatialDropout2D(0.5, data_format="NHWC")
    with pytest.raises(ValueError, match="ndim=4"):
        L.SpatialDropout2D(0.5)(tnp.ones((2, 3, 4)), training=True)
    with pytest.raises(ValueError, match="ndim=3"):
        L.SpatialDropout1D(0.5)(tnp.ones((2, 3)))
    with pytest.raises(ValueError, match="l2"):
        L.ActivityRegularization(l2=-1)
    with pytest.raises(ValueError, match="noise_shape"):
        L.Dropout(0.5, noise_shape=(None, 1))(tnp.ones((2, 3, 4)), training=True)
