"""Every layer type survives model.save / tt.models.load_model: the same config, weights and
predictions, in Sequential and functional models."""
import numpy as np
import pytest

import tnp_train as tt

L = tt.layers

ZOO = {
    "dense": ((6,), lambda: [L.Dense(4, activation="relu", kernel_regularizer="l2"), L.Dense(3)]),
    "conv1d": ((10, 3), lambda: [L.Conv1D(4, 3, padding="causal", dilation_rate=2), L.MaxPooling1D(),
                                 L.AveragePooling1D(padding="same"), L.GlobalMaxPooling1D()]),
    "conv2d": ((8, 8, 2), lambda: [L.Conv2D(4, 3, strides=2, padding="same", activation="relu"),
                                   L.Conv2DTranspose(3, 3, strides=2, padding="same"),
                                   L.DepthwiseConv2D(3), L.SeparableConv2D(4, 3),
                                   L.AveragePooling2D(), L.GlobalAveragePooling2D()]),
    "norm": ((5, 4), lambda: [L.BatchNormalization(), L.LayerNormalization(), L.Dropout(0.2),
                              L.Flatten(), L.RepeatVector(2), L.Permute((2, 1)), L.Reshape((-1,))]),
    "rnn": ((6, 3), lambda: [L.SimpleRNN(4, return_sequences=True), L.GRU(4, return_sequences=True),
                             L.Bidirectional(L.LSTM(3)), L.Activation("gelu")]),
}


@pytest.mark.parametrize("name", sorted(ZOO))
def test_sequential_zoo_round_trips_through_save(name, tmp_path):
    shape, make = ZOO[name]
    tt.utils.set_random_seed(0)
    model = tt.Sequential([tt.Input(shape)] + make())
    model.compile("adam", "mse")
    x = np.random.default_rng(1).random((3,) + shape).astype(np.float32)
    y = np.asarray(model.predict(x))
    model.fit(x, y + 1, epochs=1, verbose=0)                 # optimizer state to save too
    before = np.asarray(model.predict(x))
    model.save(tmp_path / "m")
    again = tt.models.load_model(tmp_path / "m")
    assert [type(l).__name__ for l in again.layers] == [type(l).__name__ for l in model.layers]
    for a, b in zip(model.get_weights(), again.get_weights()):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(np.asarray(again.predict(x)), before)
    # training continues from the restored optimizer state exactly as the original does
    tt.utils.set_random_seed(5)                               # the same dropout masks
    model.fit(x, y, epochs=1, verbose=0, shuffle=False)
    tt.utils.set_random_seed(5)
    again.fit(x, y, epochs=1, verbose=0, shuffle=False)
    for a, b in zip(model.get_weights(), again.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_functional_with_embedding_lstm_attention_round_trips(tmp_path):
    tt.utils.set_random_seed(0)
    ids = tt.Input((7,), dtype="int64", name="ids")
    e = L.Embedding(20, 8, mask_zero=True)(ids)
    h = L.LSTM(8, return_sequences=True)(e)
    a = L.MultiHeadAttention(num_heads=2, key_dim=4)(h, h)
    pooled = L.GlobalAveragePooling1D()(L.Add()([h, a]))
    out = L.Dense(2)(pooled)
    model = tt.Model(ids, out)
    model.compile(tt.optimizers.Adam(1e-2), tt.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    x = np.random.default_rng(2).integers(1, 20, (16, 7))
    x[:, 5:] = 0
    yl = (x[:, 0] > 10).astype(np.int64)
    hist = model.fit(x, yl, batch_size=8, epochs=3, verbose=0)
    assert hist.history["loss"][-1] < hist.history["loss"][0]
    model.save(tmp_path / "f")
    again = tt.models.load_model(tmp_path / "f")
    np.testing.assert_array_equal(np.asarray(again.predict(x)), np.asarray(model.predict(x)))
