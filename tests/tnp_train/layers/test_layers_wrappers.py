"""TimeDistributed (tnp_train.layers.wrappers): the inner layer applied to each step (checked
against a NumPy loop over the steps), weights, training flag, masks, shapes, gradients,
configs and TF's errors."""
import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.autodiff import check_grads

L = tt.layers


def _np(a):
    return np.asarray(a)


def _r(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def test_dense_on_every_step():
    x = _r((2, 5, 3))
    td = L.TimeDistributed(L.Dense(4, activation="tanh", dtype="float64"), dtype="float64")
    y = td(tnp.asarray(x))
    k, b = td.get_weights()
    assert [w.shape for w in td.trainable_weights] == [(3, 4), (4,)]
    np.testing.assert_allclose(_np(y), np.tanh(x @ k + b), rtol=1e-12)
    assert td.compute_output_shape((None, 5, 3)) == (None, 5, 4)
    assert td.compute_output_shape((2, None, 3)) == (2, None, 4)
    check_grads(lambda a: td(a), eps=1e-6, rtol=1e-6, atol=1e-8)(tnp.asarray(x))


def test_conv2d_on_every_frame_matches_a_loop():
    x = _r((2, 3, 5, 5, 2)).astype(np.float32)
    conv = L.Conv2D(3, 3, padding="same")
    td = L.TimeDistributed(conv)
    y = _np(td(tnp.asarray(x)))
    loop = np.stack([_np(conv(tnp.asarray(x[:, t]))) for t in range(3)], axis=1)
    np.testing.assert_allclose(y, loop, rtol=1e-6, atol=1e-6)
    inp = tt.Input((None, 5, 5, 2))
    assert L.TimeDistributed(L.Conv2D(3, 3))(inp).shape == (None, None, 3, 3, 3)


def test_training_flag_reaches_the_inner_layer():
    td = L.TimeDistributed(L.Dropout(0.5))
    x = tnp.ones((4, 6, 8))
    assert np.array_equal(_np(td(x)), _np(x))
    y = _np(td(x, training=True))
    assert set(np.unique(y)) <= {0.0, 2.0} and 0 < (y == 0).mean() < 1
    model = tt.Sequential([tt.Input((6, 8)), td])
    assert np.any(_np(model(x, training=True)) == 0)


def test_mask_passes_through_to_a_following_rnn():
    ids = np.array([[3, 1, 0, 0], [2, 4, 5, 0]])
    tt.utils.set_random_seed(0)
    inp = tt.Input((4,), dtype="int64")
    e = L.Embedding(8, 3, mask_zero=True)(inp)
    h = L.TimeDistributed(L.Dense(5))(e)
    out = L.SimpleRNN(2)(h)
    model = tt.Model(inp, out)
    td = model.layers[2]
    m = td.compute_mask(tnp.ones((2, 4, 3)), tnp.asarray(ids != 0))
    np.testing.assert_array_equal(_np(m), ids != 0)
    # the RNN stops at each sequence's last unmasked step: the same as running it on the
    # unpadded steps only
    full = _np(model(ids))
    emb, dense, rnn = model.layers[1], model.layers[2].layer, model.layers[3]
    for i, n in enumerate((ids != 0).sum(1)):
        steps = dense(emb(tnp.asarray(ids[i:i + 1, :n])))
        np.testing.assert_allclose(full[i], _np(rnn(steps))[0], rtol=1e-5, atol=1e-6)


def test_inner_mask_of_a_masking_layer():
    x = _r((2, 3, 4, 2))
    x[0, 1, 2] = 0.0
    td = L.TimeDistributed(L.Masking(0.0))
    m = _np(td.compute_mask(tnp.asarray(x)))
    np.testing.assert_array_equal(m, np.any(x != 0, axis=-1))
    assert m.shape == (2, 3, 4)
    # an inner layer that drops the mask: one mask per step, "any" over the rest (TF)
    flat = L.TimeDistributed(L.Flatten())
    inner = tnp.asarray(np.array([[[1, 0], [0, 0]], [[0, 0], [0, 1]]], bool))
    np.testing.assert_array_equal(_np(flat.compute_mask(tnp.ones((2, 2, 2, 3)), inner)),
                                  [[True, False], [False, True]])


def test_config_round_trip_and_save_load(tmp_path):
    td = L.TimeDistributed(L.Dense(3, activation="relu", name="inner"), name="td")
    cfg = td.get_config()
    assert cfg["layer"]["class_name"] == "Dense" and cfg["layer"]["config"]["units"] == 3
    again = tt.layers.deserialize(tt.layers.serialize(td))
    assert type(again.layer) is L.Dense and again.layer.units == 3 and again.name == "td"
    model = tt.Sequential([tt.Input((4, 2)), L.TimeDistributed(L.Dense(3)),
                           L.TimeDistributed(L.Dense(1))])
    model.compile("adam", "mse")
    x = _r((6, 4, 2)).astype(np.float32)
    model.fit(x, x[..., :1], epochs=2, verbose=0)
    model.save(tmp_path / "m")
    loaded = tt.models.load_model(tmp_path / "m")
    np.testing.assert_array_equal(_np(loaded.predict(x)), _np(model.predict(x)))


def test_bad_arguments_and_inputs_raise_value_errors():
    with pytest.raises(ValueError, match="Layer` instance"):
        L.TimeDistributed(lambda t: t)
    with pytest.raises(ValueError, match="at least 3 dimensions"):
        L.TimeDistributed(L.Dense(2))(tnp.ones((2, 3)))
    with pytest.raises(ValueError, match="at least 3 dimensions"):
        L.TimeDistributed(L.Dense(2))(tt.Input((3,)))
