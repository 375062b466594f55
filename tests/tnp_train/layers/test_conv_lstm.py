"""ConvLSTM2D against tf.keras's (tests/fixtures/conv_lstm.npz, made by
make_conv_lstm_fixture.py with tf-keras 2.21): outputs, states and gradients with TF's weights,
float32 and float64, over sequences, states, 'same' padding with strides, go_backwards,
channels-first and a mask; dropout, config and save/load, bad arguments."""
from pathlib import Path

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.autodiff import GradientTape

FIX = np.load(Path(__file__).resolve().parents[2] / "fixtures" / "conv_lstm.npz")
CASES = {
    "seq": dict(filters=2, kernel_size=(2, 2), return_sequences=True),
    "state_same": dict(filters=3, kernel_size=3, padding="same", strides=(2, 1),
                       return_state=True),
    "backwards_first": dict(filters=2, kernel_size=2, go_backwards=True,
                            data_format="channels_first", recurrent_activation="sigmoid"),
    "mask": dict(filters=2, kernel_size=2, return_sequences=True),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", list(CASES))
def test_conv_lstm_equals_tf_keras(case, dtype):
    x = tnp.asarray(FIX[f"{case}_x"].astype(dtype))
    layer = tt.layers.ConvLSTM2D(**CASES[case], dtype=dtype)
    layer.build(x.shape)
    layer.set_weights([FIX[f"{case}_w{i}"].astype(dtype) for i in range(3)])
    mask = tnp.asarray(FIX[f"{case}_mask"]) if f"{case}_mask" in FIX else None
    with GradientTape() as tape:
        tape.watch(x)
        res = layer(x, mask=mask)
        res = res if isinstance(res, list) else [res]
        loss = sum(tnp.sum(r * r) for r in res)
    grads = tape.gradient(loss, [x] + layer.trainable_weights)
    tol = 2e-5 if dtype == "float32" else 1e-11
    for i, r in enumerate(res):
        want = FIX[f"{case}_{dtype}_out{i}"]
        assert tuple(r.shape) == want.shape and r.dtype == np.dtype(dtype)
        np.testing.assert_allclose(np.asarray(r), want, rtol=tol, atol=tol, err_msg=f"out{i}")
    shapes = layer.compute_output_shape(tuple(x.shape))
    shapes = shapes if isinstance(shapes, list) else [shapes]
    assert [tuple(s) for s in shapes] == [tuple(r.shape) for r in res]
    for i, g in enumerate(grads):
        np.testing.assert_allclose(np.asarray(g), FIX[f"{case}_{dtype}_g{i}"], rtol=tol * 5,
                                   atol=tol * 5, err_msg=f"g{i}")


def test_conv_lstm_dropout_only_in_training_and_seeded():
    x = tnp.asarray(np.random.default_rng(0).standard_normal((2, 3, 4, 4, 2)), dtype="float32")
    layer = tt.layers.ConvLSTM2D(2, 2, dropout=0.5, recurrent_dropout=0.3)
    plain = np.asarray(layer(x))
    np.testing.assert_array_equal(np.asarray(layer(x, training=False)), plain)
    tt.utils.set_random_seed(3)
    a = np.asarray(layer(x, training=True))
    tt.utils.set_random_seed(3)
    b = np.asarray(layer(x, training=True))
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, plain)


def test_conv_lstm_save_load_and_fit(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 3, 5, 5, 1)).astype("float32")
    y = (x.mean(axis=(1, 2, 3, 4)) > 0).astype("int64")
    model = tt.Sequential([tt.Input((3, 5, 5, 1)), tt.layers.ConvLSTM2D(3, 3),
                           tt.layers.Flatten(), tt.layers.Dense(2)])
    model.compile("adam", tt.losses.SparseCategoricalCrossentropy(from_logits=True))
    hist = model.fit(x, y, epochs=4, batch_size=8, verbose=0).history["loss"]
    assert hist[-1] < hist[0]
    want = np.asarray(model.predict(x, verbose=0))
    model.save(tmp_path / "m.keras")
    again = tt.models.load_model(tmp_path / "m.keras")
    np.testing.assert_array_equal(np.asarray(again.predict(x, verbose=0)), want)


@pytest.mark.parametrize("kw, exc, match", [
    (dict(filters=2, kernel_size=2, padding="causal"), ValueError, "padding"),
    (dict(filters=0, kernel_size=2), ValueError, "filters"),
    (dict(filters=2, kernel_size=2, dropout=1.5), ValueError, "dropout"),
])
def test_conv_lstm_bad_arguments(kw, exc, match):
    with pytest.raises(exc, match=match):
        tt.layers.ConvLSTM2D(**kw)


def test_conv_lstm_wrong_rank():
    with pytest.raises(ValueError, match="rank 5"):
        tt.layers.ConvLSTM2D(2, 2)(tnp.ones((2, 3, 4, 4)))
