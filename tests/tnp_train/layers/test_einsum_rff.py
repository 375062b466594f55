"""EinsumDense and RandomFourierFeatures (TF 2.4's tf.keras.layers.experimental) against
tf.keras's (tests/fixtures/einsum_rff.npz, made by make_einsum_rff_fixture.py with tf-keras
2.21): weight shapes from the equation, outputs and gradients with TF's weights; the random
features' defaults and errors."""
from pathlib import Path

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.autodiff import GradientTape

FIX = np.load(Path(__file__).resolve().parents[2] / "fixtures" / "einsum_rff.npz")
E = tt.layers.experimental
CASES = {
    "plain": ("ab,bc->ac", 4, "c"),
    "left": ("...b,bc->...c", 4, "c"),
    "heads": ("abc,cde->abde", (3, 2, 4), "de"),
    "right": ("abc...,cd->abd...", (3, 2), "d"),
    "nobias": ("abc,cd->abd", (3, 5), None),
}


@pytest.mark.parametrize("case", list(CASES))
def test_einsum_dense_equals_tf_keras(case):
    eq, oshape, bias_axes = CASES[case]
    x = tnp.asarray(FIX[f"{case}_x"])
    layer = E.EinsumDense(eq, oshape, bias_axes=bias_axes, activation="tanh", dtype="float64")
    layer.build(x.shape)
    n = 1 if bias_axes is None else 2
    assert [tuple(w.shape) for w in layer.weights] == [FIX[f"{case}_w{i}"].shape for i in range(n)]
    layer.set_weights([FIX[f"{case}_w{i}"] for i in range(n)])
    with GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
        loss = tnp.sum(y * y)
    grads = tape.gradient(loss, [x] + layer.trainable_weights)
    assert tuple(y.shape) == layer.compute_output_shape(tuple(x.shape))
    np.testing.assert_allclose(np.asarray(y), FIX[f"{case}_y"], rtol=1e-12, atol=1e-12)
    for i, g in enumerate(grads):
        np.testing.assert_allclose(np.asarray(g), FIX[f"{case}_g{i}"], rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("eq, oshape, bias, match", [
    ("ab->ac", 4, None, "Invalid einsum equation"),
    ("ab,bc->ad", 4, None, "no corresponding dim"),
    ("ab,bcx->ac", 4, None, "did not have a match"),
    ("ab,bc->ac", 4, "z", "not a part of the output"),
    ("abc,cd->abd", (7, 2), None, "do not match at shared dimension"),
])
def test_einsum_dense_bad_equations(eq, oshape, bias, match):
    with pytest.raises(ValueError, match=match):
        E.EinsumDense(eq, oshape, bias_axes=bias).build((2, 3, 4) if "abc" in eq else (2, 3))


@pytest.mark.parametrize("kind", ["gaussian", "laplacian"])
def test_random_fourier_features_equal_tf_keras_with_its_draws(kind):
    x = tnp.asarray(FIX[f"rff_{kind}_x"])
    layer = E.RandomFourierFeatures(5, kernel_initializer=kind)
    layer.build(x.shape)
    names = list(FIX[f"rff_{kind}_names"])
    for name, i in zip(names, range(3)):
        getattr(layer, name).assign(tnp.asarray(FIX[f"rff_{kind}_w{i}"]))
    with GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
        loss = tnp.sum(y * y)
    gx = tape.gradient(loss, x)
    np.testing.assert_allclose(np.asarray(y), FIX[f"rff_{kind}_y"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(gx), FIX[f"rff_{kind}_gx"], rtol=1e-4, atol=1e-5)
    assert not layer.trainable and layer.trainable_weights == []


def test_random_fourier_features_defaults_and_errors():
    tt.utils.set_random_seed(0)
    layer = E.RandomFourierFeatures(4000)
    layer.build((None, 8))
    assert float(layer.kernel_scale.numpy()[0]) == pytest.approx(np.sqrt(8 / 2))
    k, b = layer.unscaled_kernel.numpy(), layer.bias.numpy()
    assert abs(k.mean()) < 0.05 and abs(k.std() - 1) < 0.05
    assert b.min() >= 0 and b.max() < 2 * np.pi
    assert float(E.RandomFourierFeatures(3, "laplacian").get_config()["output_dim"]) == 3
    with pytest.raises(ValueError, match="positive integer"):
        E.RandomFourierFeatures(0)
    with pytest.raises(ValueError, match="Unsupported kernel type"):
        E.RandomFourierFeatures(3, kernel_initializer="poly")
    with pytest.raises(ValueError, match="rank of the input tensor should be 2"):
        E.RandomFourierFeatures(3).build((2, 3, 4))
