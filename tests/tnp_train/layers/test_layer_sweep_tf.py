"""The first tf.keras 2.4 slice of layers (advanced activations, reshaping, 3-D convolution and
pooling, merge) against tf.keras (tests/fixtures/layer_sweep.npz, made by
make_layer_sweep_fixture.py with tf-keras 2.21): outputs and input gradients of sum(y * y) with
TF's weights, float32 and float64 (where TF has a float64 CPU kernel)."""
import runpy
from pathlib import Path

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.autodiff import GradientTape

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
FIX = np.load(FIXTURES / "layer_sweep.npz")
CASES = runpy.run_path(str(FIXTURES / "make_layer_sweep_fixture.py"), run_name="fixture")["CASES"]
PARAMS = [(name, dt) for name in CASES for dt in ("float32", "float64")
          if f"{name}_{dt}_y" in FIX.files]


@pytest.mark.parametrize("name, dtype", PARAMS)
def test_layer_equals_tf_keras(name, dtype):
    cls, kw, shapes = CASES[name]
    xs = [tnp.asarray(FIX[f"{name}_x{i}"].astype(dtype)) for i in range(len(shapes))]
    layer = getattr(tt.layers, cls)(**kw, dtype=dtype)
    arg = xs if len(xs) > 1 else xs[0]
    layer(arg)
    n_w = sum(1 for k in FIX.files if k.startswith(f"{name}_w"))
    if n_w:
        layer.set_weights([FIX[f"{name}_w{i}"].astype(dtype) for i in range(n_w)])
    with GradientTape() as tape:
        tape.watch(xs)
        y = layer(arg)
        loss = tnp.sum(y * y)
    grads = tape.gradient(loss, xs)
    # float64: TF keeps a layer's float hyperparameters (LeakyReLU's alpha, ReLU's slope and
    # threshold, the bilinear resize scale) in float32, so its float64 results carry their
    # float32 rounding (1.5e-8 relative); we use the exact values
    tol = 2e-5 if dtype == "float32" else 1e-7
    if name == "upsampling2d_bilinear":
        tol = 2e-5     # TF's resize computes its sample positions in float32 for any dtype
    want = FIX[f"{name}_{dtype}_y"]
    assert tuple(y.shape) == want.shape and y.dtype == np.dtype(dtype)
    np.testing.assert_allclose(np.asarray(y), want, rtol=tol, atol=tol)
    for i, g in enumerate(grads):
        np.testing.assert_allclose(np.asarray(g), FIX[f"{name}_{dtype}_g{i}"], rtol=tol * 10,
                                   atol=tol * 10, err_msg=f"gradient {i}")
