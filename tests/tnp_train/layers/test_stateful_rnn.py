"""Stateful RNNs (``stateful=True``): each batch starts from the previous batch's final states.
The reference is the same layer without state, fed the previous call's ``return_state``
states as ``initial_state`` (what Keras's stateful layers are defined to do)."""
import numpy as np
import pytest

import tnp
import tnp_train as tt

L = tt.layers


def _weights(layer, seed=1):
    r = np.random.default_rng(seed)
    layer.set_weights([(r.standard_normal(w.shape) * 0.5).astype("float32")
                       for w in layer.get_weights()])


def _batches(n=3, seed=0):
    r = np.random.default_rng(seed)
    return [r.random((4, 5, 3)).astype("float32") for _ in range(n)]


@pytest.mark.parametrize("kind", ["SimpleRNN", "GRU", "LSTM"])
def test_stateful_layer_continues_each_row_from_the_last_batch(kind):
    xs = _batches()
    stateful = getattr(L, kind)(6, stateful=True, return_sequences=True)
    ref = getattr(L, kind)(6, return_sequences=True, return_state=True)
    stateful(xs[0])
    ref(xs[0])
    _weights(stateful)
    ref.set_weights(stateful.get_weights())
    stateful.reset_states()
    assert all(not np.asarray(s).any() for s in stateful.states)
    states = None
    for x in xs:
        got = np.asarray(stateful(x))
        out = ref(x, initial_state=states)
        want, states = np.asarray(out[0]), out[1:]
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    for s, w in zip(stateful.states, states):
        np.testing.assert_allclose(np.asarray(s), np.asarray(w), rtol=1e-6, atol=1e-7)
    stateful.reset_states()            # back to zeros: the first batch's outputs again
    np.testing.assert_allclose(np.asarray(stateful(xs[0])),
                               np.asarray(ref(xs[0])[0]), rtol=1e-6, atol=1e-7)


def test_reset_states_to_given_values_and_its_errors():
    x = _batches(1)[0]
    layer = L.LSTM(2, stateful=True)
    layer(x)
    h, c = np.full((4, 2), 0.5, "float32"), np.full((4, 2), -0.25, "float32")
    layer.reset_states([h, c])
    ref = L.LSTM(2)
    ref(x)
    ref.set_weights(layer.get_weights())
    np.testing.assert_allclose(np.asarray(layer(x)), np.asarray(ref(x, initial_state=[h, c])),
                               rtol=1e-6)
    with pytest.raises(ValueError, match="expected 2 state"):
        layer.reset_states([h])
    with pytest.raises(ValueError, match=r"expected \(batch, 2\)"):
        layer.reset_states([h, np.zeros((4, 3), "float32")])
    with pytest.raises(ValueError, match="batch size it started with"):
        layer(x[:2])
    with pytest.raises(AttributeError, match="stateful"):
        ref.reset_states()


def test_stateful_needs_a_batch_size_and_building_does_not_advance_it():
    with pytest.raises(ValueError, match="needs to know its batch size"):
        tt.Sequential([tt.Input((5, 3)), L.GRU(2, stateful=True)])
    layer = L.GRU(2, stateful=True)
    model = tt.Sequential([tt.Input((5, 3), batch_size=4), layer])
    assert layer.states is None      # built on placeholders: no states yet
    assert model.get_config()["layers"][1]["config"]["stateful"] is True

    class Sub(tt.Model):
        def __init__(self):
            super().__init__()
            self.rnn = L.GRU(2, stateful=True)

        def call(self, x):
            return self.rnn(x)

    sub = Sub()
    sub.build((4, 5, 3))             # runs call on zeros: not a batch of data
    assert sub.rnn.built and sub.rnn.states is None


def test_fit_carries_states_across_batches_and_model_reset_states():
    xs = _batches()
    x = np.concatenate(xs)
    y = np.random.default_rng(3).standard_normal((12, 1)).astype("float32")
    lstm = L.LSTM(3, stateful=True)
    model = tt.Sequential([tt.Input((5, 3), batch_size=4), lstm, L.Dense(1)])
    for layer in model.layers:
        _weights(layer, 2)
    w0 = model.get_weights()
    model.compile(tt.optimizers.SGD(0.1), "mse")
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    # the reference: the same three SGD steps, the states chained by hand
    cell = L.LSTM(3, return_state=True)
    dense = L.Dense(1)
    cell(xs[0])
    dense(np.zeros((4, 3), "float32"))
    cell.set_weights(w0[:3])
    dense.set_weights(w0[3:])
    states = None
    for k in range(3):
        variables = cell.trainable_variables + dense.trainable_variables
        with tt.GradientTape() as tape:
            out = cell(xs[k], initial_state=states)
            loss = tnp.mean((dense(out[0]) - y[4 * k:4 * k + 4]) ** 2)
        grads = tape.gradient(loss, variables)
        for v, g in zip(variables, grads):
            v.assign(v - 0.1 * g)
        states = [tnp.asarray(np.asarray(s)) for s in out[1:]]
    for a, b in zip(model.get_weights(), cell.get_weights() + dense.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    for s, w in zip(lstm.states, states):
        np.testing.assert_allclose(np.asarray(s), np.asarray(w), rtol=1e-5, atol=1e-6)
    model.reset_states()
    assert all(not np.asarray(s).any() for s in lstm.states)


def test_bidirectional_stateful_resets_both_directions():
    x = _batches(1)[0]
    layer = L.Bidirectional(L.GRU(2, stateful=True))
    first = np.asarray(layer(x))
    assert layer.stateful
    assert not np.allclose(np.asarray(layer(x)), first)
    layer.reset_states()
    np.testing.assert_allclose(np.asarray(layer(x)), first, rtol=1e-6)


def test_stateful_refused_on_several_replicas():
    strategy = tt.distribute.MirroredStrategy(["cpu:0", "cpu:1"])
    with strategy.scope():
        model = tt.Sequential([tt.Input((5, 3), batch_size=4), L.GRU(2, stateful=True)])
        model.compile("sgd", "mse")
    with pytest.raises(NotImplementedError, match="stateful RNNs are not supported under"):
        model.fit(np.concatenate(_batches(2)), np.zeros((8, 2), "float32"), batch_size=4,
                  verbose=0)


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_stateful_conv_lstm_continues_from_the_last_batch(data_format):
    r = np.random.default_rng(0)
    shape = (2, 3, 5, 5, 2) if data_format == "channels_last" else (2, 3, 2, 5, 5)
    xs = [r.random(shape).astype("float32") for _ in range(3)]
    stateful = L.ConvLSTM2D(3, 3, padding="same", stateful=True, data_format=data_format)
    ref = L.ConvLSTM2D(3, 3, padding="same", return_state=True, data_format=data_format)
    stateful(xs[0])
    ref(xs[0])
    _weights(stateful)
    ref.set_weights(stateful.get_weights())
    stateful.reset_states()
    states = None
    for x in xs:
        out = ref(x, initial_state=states)
        np.testing.assert_allclose(np.asarray(stateful(x)), np.asarray(out[0]), rtol=1e-5,
                                   atol=1e-6)
        states = out[1:]
    stateful.reset_states()
    np.testing.assert_allclose(np.asarray(stateful(xs[0])), np.asarray(ref(xs[0])[0]),
                               rtol=1e-5, atol=1e-6)
    assert stateful.get_config()["stateful"] is True
    with pytest.raises(ValueError, match="batch size it started with"):
        stateful(xs[0][:1])
