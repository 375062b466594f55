"""SeparableConv1D against tf.keras's (tests/fixtures/separable_conv1d.npz, made by
make_separable_conv1d_fixture.py with tf-keras 2.21): outputs and gradients with TF's weights,
float32 and float64, over padding modes, strides, dilation and depth multipliers;
channels-first against channels-last; config and save/load; bad arguments."""
from pathlib import Path

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.autodiff import GradientTape

FIX = np.load(Path(__file__).resolve().parents[2] / "fixtures" / "separable_conv1d.npz")
CASES = {
    "valid": dict(filters=3, kernel_size=3, depth_multiplier=2),
    "same_strided": dict(filters=2, kernel_size=4, strides=2, padding="same"),
    "causal_dilated": dict(filters=2, kernel_size=2, padding="causal", dilation_rate=2),
    "multiplier": dict(filters=2, kernel_size=3, depth_multiplier=3),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", list(CASES))
def test_separable_conv1d_equals_tf_keras(case, dtype):
    x = tnp.asarray(FIX[f"{case}_x"].astype(dtype))
    layer = tt.layers.SeparableConv1D(**CASES[case], activation="tanh", dtype=dtype)
    layer.build(x.shape)
    layer.set_weights([FIX[f"{case}_w{i}"].astype(dtype) for i in range(3)])
    with GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
        loss = tnp.sum(y * y)
    grads = tape.gradient(loss, [x] + layer.trainable_weights)
    tol = 1e-5 if dtype == "float32" else 1e-12
    want = FIX[f"{case}_{dtype}_y"]
    assert tuple(y.shape) == want.shape == layer.compute_output_shape(tuple(x.shape))
    np.testing.assert_allclose(np.asarray(y), want, rtol=tol, atol=tol)
    for i, g in enumerate(grads):
        np.testing.assert_allclose(np.asarray(g), FIX[f"{case}_{dtype}_g{i}"], rtol=tol * 10,
                                   atol=tol * 10, err_msg=f"g{i}")


def test_channels_first_equals_channels_last():
    x = FIX["multiplier_x"].astype("float32")
    last = tt.layers.SeparableConv1D(**CASES["multiplier"])
    first = tt.layers.SeparableConv1D(**CASES["multiplier"], data_format="channels_first")
    y_last = last(tnp.asarray(x))
    first.build((2, 2, 7))
    first.set_weights(last.get_weights())
    y_first = first(tnp.asarray(np.swapaxes(x, 1, 2)))
    np.testing.assert_allclose(np.swapaxes(np.asarray(y_first), 1, 2), np.asarray(y_last),
                               rtol=1e-6, atol=1e-6)


def test_separable_conv1d_save_load(tmp_path):
    model = tt.Sequential([tt.Input((10, 3)), tt.layers.SeparableConv1D(4, 3, padding="causal"),
                           tt.layers.GlobalAveragePooling1D(), tt.layers.Dense(2)])
    x = np.random.default_rng(0).standard_normal((2, 10, 3)).astype("float32")
    want = np.asarray(model.predict(x, verbose=0))
    model.save(tmp_path / "m.keras")
    again = tt.models.load_model(tmp_path / "m.keras")
    np.testing.assert_array_equal(np.asarray(again.predict(x, verbose=0)), want)
    assert tt.layers.SeparableConvolution1D is tt.layers.SeparableConv1D


@pytest.mark.parametrize("kw, match", [(dict(filters=2, kernel_size=2, padding="full"), "padding"),
                                       (dict(filters=2, kernel_size=2, depth_multiplier=0),
                                        "depth_multiplier"),
                                       (dict(filters=2, kernel_size=2, padding="causal",
                                             data_format="channels_first"), "causal")])
def test_separable_conv1d_bad_arguments(kw, match):
    with pytest.raises(ValueError, match=match):
        tt.layers.SeparableConv1D(**kw)
