"""RNN over a list of cells (StackedRNNCells) against tf.keras's (tests/fixtures/stacked_rnn.npz,
made by make_stacked_rnn_fixture.py with tf-keras 2.21): outputs, per-cell final states (TF's
nesting) and gradients, float32 and float64; initial states per cell, dropout, config round
trip; AbstractRNNCell subclassing."""
from pathlib import Path

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.autodiff import GradientTape

FIX = np.load(Path(__file__).resolve().parents[2] / "fixtures" / "stacked_rnn.npz")
L = tt.layers


def _flat(res):
    out = []
    for r in res:
        out.extend(_flat(r) if isinstance(r, list) else [r])
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_stacked_cells_equal_tf_keras(dtype):
    layer = L.RNN([L.LSTMCell(3, dtype=dtype), L.GRUCell(2, dtype=dtype),
                   L.SimpleRNNCell(3, dtype=dtype)], return_sequences=True, return_state=True,
                  dtype=dtype)
    x = tnp.asarray(FIX["x"].astype(dtype))
    layer(x)
    layer.set_weights([FIX[f"w{i}"].astype(dtype) for i in range(9)])
    with GradientTape() as tape:
        tape.watch(x)
        res = layer(x)
        flat = _flat(res)
        loss = sum(tnp.sum(r * r) for r in flat)
    # TF's nesting: [output, [h, c] of the LSTM, h of the GRU, h of the SimpleRNN]
    assert isinstance(res[1], list) and len(res[1]) == 2 and not isinstance(res[2], list)
    grads = tape.gradient(loss, [x] + layer.trainable_weights)
    tol = 1e-5 if dtype == "float32" else 1e-12
    for i, r in enumerate(flat):
        np.testing.assert_allclose(np.asarray(r), FIX[f"{dtype}_out{i}"], rtol=tol, atol=tol,
                                   err_msg=f"out{i}")
    for i, g in enumerate(grads):
        np.testing.assert_allclose(np.asarray(g), FIX[f"{dtype}_g{i}"], rtol=tol * 10,
                                   atol=tol * 10, err_msg=f"g{i}")


def test_stacked_cells_initial_state_per_cell_and_config():
    cells = L.StackedRNNCells([L.LSTMCell(3), L.GRUCell(2)])
    assert cells.state_size == [3, 3, 2] and cells.output_size == 2
    layer = L.RNN(cells, return_state=True)
    x = tnp.ones((2, 4, 5))
    init = [[tnp.ones((2, 3)), tnp.zeros((2, 3))], tnp.ones((2, 2))]
    y, (h1, c1), h2 = layer(x, initial_state=init)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(h2))
    again = L.RNN.from_config(layer.get_config())
    assert [type(c).__name__ for c in again.cell.cells] == ["LSTMCell", "GRUCell"]
    with pytest.raises(ValueError, match="all cells must have"):
        L.StackedRNNCells([L.Dense(2)])


def test_stacked_cells_dropout_in_training_only():
    tt.utils.set_random_seed(0)
    layer = L.RNN([L.LSTMCell(4, dropout=0.5), L.GRUCell(3, recurrent_dropout=0.5)])
    x = tnp.asarray(np.random.default_rng(0).standard_normal((3, 5, 2)), dtype="float32")
    plain = np.asarray(layer(x))
    np.testing.assert_array_equal(np.asarray(layer(x, training=False)), plain)
    assert not np.allclose(np.asarray(layer(x, training=True)), plain)


def test_abstract_rnn_cell_subclass_runs_in_rnn():
    class MinimalRNNCell(L.AbstractRNNCell):
        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.units = units

        @property
        def state_size(self):
            return self.units

        @property
        def output_size(self):
            return self.units

        def build(self, input_shape):
            self.kernel = self.add_weight("kernel", (input_shape[-1], self.units),
                                          initializer="ones")
            self.built = True

        def call(self, inputs, states):
            h = inputs @ self.kernel + states[0]
            return h, [h]

    y = L.RNN(MinimalRNNCell(2))(tnp.ones((1, 3, 4)))
    # h_t = 4 + h_{t-1}: 12 after three steps
    np.testing.assert_array_equal(np.asarray(y), np.full((1, 2), 12.0))
    with pytest.raises(NotImplementedError, match="state_size"):
        L.AbstractRNNCell().state_size
