"""LocallyConnected1D/2D against tf.keras's (tests/fixtures/locally_connected.npz, made by
make_locally_connected_fixture.py with tf-keras 2.21): outputs and gradients with TF's weights
(its implementation=1 layout), both data formats, float32 and float64; shapes, config and
save/load round trips, bad arguments."""
from pathlib import Path

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.autodiff import GradientTape

FIX = np.load(Path(__file__).resolve().parents[2] / "fixtures" / "locally_connected.npz")
CASES = {
    "1d_last": (tt.layers.LocallyConnected1D, dict(filters=3, kernel_size=3, strides=2)),
    "1d_first": (tt.layers.LocallyConnected1D,
                 dict(filters=2, kernel_size=2, data_format="channels_first")),
    "2d_last": (tt.layers.LocallyConnected2D,
                dict(filters=3, kernel_size=(2, 3), strides=(1, 2))),
    "2d_first": (tt.layers.LocallyConnected2D,
                 dict(filters=2, kernel_size=2, data_format="channels_first")),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", list(CASES))
def test_locally_connected_equals_tf_keras(case, dtype):
    cls, kw = CASES[case]
    x = tnp.asarray(FIX[f"{case}_x"].astype(dtype))
    layer = cls(**kw, activation="tanh", dtype=dtype)
    layer.build(x.shape)
    assert layer.kernel.shape == FIX[f"{case}_kernel"].shape
    assert layer.bias.shape == FIX[f"{case}_bias"].shape
    layer.set_weights([FIX[f"{case}_kernel"].astype(dtype), FIX[f"{case}_bias"].astype(dtype)])
    with GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
        loss = tnp.sum(y * y)
    gx, gk, gb = tape.gradient(loss, [x, layer.kernel, layer.bias])
    tol = 1e-5 if dtype == "float32" else 1e-12
    assert y.dtype == np.dtype(dtype)
    assert tuple(y.shape) == FIX[f"{case}_{dtype}_y"].shape
    assert layer.compute_output_shape(tuple(x.shape)) == FIX[f"{case}_{dtype}_y"].shape
    for got, key in ((y, "y"), (gx, "gx"), (gk, "gk"), (gb, "gb")):
        np.testing.assert_allclose(np.asarray(got), FIX[f"{case}_{dtype}_{key}"], rtol=tol,
                                   atol=tol, err_msg=key)


def test_locally_connected_save_load_round_trip(tmp_path):
    model = tt.Sequential([tt.Input((6, 5, 2)),
                           tt.layers.LocallyConnected2D(3, 2, activation="relu"),
                           tt.layers.Flatten(), tt.layers.Dense(2)])
    x = np.random.default_rng(1).standard_normal((4, 6, 5, 2)).astype("float32")
    want = np.asarray(model.predict(x, verbose=0))
    model.save(tmp_path / "m.keras")
    again = tt.models.load_model(tmp_path / "m.keras")
    np.testing.assert_array_equal(np.asarray(again.predict(x, verbose=0)), want)
    cfg = again.layers[0].get_config()
    assert cfg["kernel_size"] == (2, 2) and cfg["filters"] == 3 and cfg["implementation"] == 1


def test_locally_connected_trains():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 8, 2)).astype("float32")
    y = (x[:, :4, 0].sum(1) > 0).astype("int64")
    model = tt.Sequential([tt.Input((8, 2)), tt.layers.LocallyConnected1D(4, 3),
                           tt.layers.Flatten(), tt.layers.Dense(2)])
    model.compile("adam", tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    hist = model.fit(x, y, epochs=8, batch_size=16, verbose=0).history["loss"]
    assert hist[-1] < hist[0]


@pytest.mark.parametrize("kw, match", [
    (dict(filters=2, kernel_size=2, padding="same"), "only 'valid'"),
    (dict(filters=0, kernel_size=2), "filters must be a positive integer"),
    (dict(filters=2, kernel_size=0), "kernel_size"),
    (dict(filters=2, kernel_size=2, implementation=4), "implementation"),
])
def test_locally_connected_bad_arguments(kw, match):
    with pytest.raises(ValueError, match=match):
        tt.layers.LocallyConnected1D(**kw)


def test_locally_connected_kernel_larger_than_input():
    with pytest.raises(ValueError, match="does not fit"):
        tt.layers.LocallyConnected1D(2, 5).build((None, 3, 1))
