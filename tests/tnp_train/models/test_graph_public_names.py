"""The public names the models read the layers' graph and the trainer's compile state through
(issue 29, item 5): ``KerasTensor.node`` (tf.keras's) and ``tensor_index``, ``Layer.inbound_nodes``,
``Layer.call_takes_mask`` (tf.keras's ``_expects_mask_arg``: the values below are what tf-keras
2.21 answers), ``Node.detach()``, ``Model.get_compile_config()`` / ``compile_from_config()``
(tf.keras's). Values of models run through these paths are checked by the model tests."""
import numpy as np
import pytest

import tnp_train as tt


class _TwoOut(tt.layers.Layer):
    def call(self, x):
        return [x * 2.0, x + 1.0]


def test_a_tensor_names_the_call_that_made_it():
    inp = tt.Input((3,))
    dense = tt.layers.Dense(2)
    y = dense(inp)
    assert isinstance(inp.node.layer, tt.layers.InputLayer) and inp.tensor_index == 0
    assert y.node.layer is dense and y.tensor_index == 0
    assert dense.inbound_nodes == [y.node] and y.node.inputs == [inp]
    a, b = _TwoOut()(y)
    assert a.node is b.node and (a.tensor_index, b.tensor_index) == (0, 1)
    assert tt.layers.Dense(1)(b).node.inputs[0] is b


@pytest.mark.parametrize("make, expected", [
    (lambda: tt.layers.Dense(2), False),
    (lambda: tt.layers.LSTM(2), True),
    (lambda: tt.layers.Attention(), True),
    (lambda: tt.layers.Dropout(0.1), False),
])
def test_call_takes_mask_as_tf_keras_expects_mask_arg(make, expected):
    assert make().call_takes_mask is expected


def test_detach_takes_a_call_out_of_its_layer():
    dense = tt.layers.Dense(2)
    first, second = dense(tt.Input((3,))), dense(tt.Input((3,)))
    first.node.detach()
    assert dense.inbound_nodes == [second.node]
    first.node.detach()                       # a second time: nothing left to take
    assert dense.inbound_nodes == [second.node]


def test_compile_config_round_trips_through_compile_from_config():
    def build():
        return tt.Sequential([tt.Input((3,)), tt.layers.Dense(1)])
    model = build()
    assert model.get_compile_config() is None          # as tf-keras before compile
    model.compile(optimizer=tt.optimizers.Adam(0.01), loss="mse", metrics=["mae"])
    config = model.get_compile_config()
    other = build()
    other.set_weights(model.get_weights())
    other.compile_from_config(config)
    assert other.get_compile_config() == config
    x, y = np.ones((4, 3), "float32"), np.zeros((4, 1), "float32")
    assert other.evaluate(x, y, verbose=0) == pytest.approx(model.evaluate(x, y, verbose=0))
