"""A layer's functional-graph accessors as TF 2.4 has them: ``input_shape``, ``get_input_at``,
``get_output_at``, ``get_input_shape_at``, ``get_output_shape_at``, ``inbound_nodes``; and the
small TF 2.4 methods ``add_variable``, ``add_update``, ``dynamic``."""
import numpy as np
import pytest

import tnp
import tnp_train as tt

L = tt.layers


def _graph():
    a, b = tt.Input((4,), name="a"), tt.Input((6,), name="b")
    shared = L.Activation("relu", name="shared")
    sa, sb = shared(a), shared(b)
    cat = L.Concatenate(name="cat")
    c = cat([sa, sb])
    out = L.Dense(2, name="out")
    model = tt.Model([a, b], out(c))
    return model, a, b, shared, sa, sb, cat, out


def test_input_shape_of_layers_in_a_graph():
    model, a, b, shared, sa, sb, cat, out = _graph()
    assert model.layers[0].input_shape == [(None, 4)]       # TF's InputLayer: a list of one
    assert cat.input_shape == [(None, 4), (None, 6)]
    assert out.input_shape == (None, 10)
    with pytest.raises(AttributeError, match="multiple inbound nodes"):
        shared.input_shape
    with pytest.raises(AttributeError, match="never been called"):
        L.Dense(2).input_shape


def test_per_node_accessors():
    model, a, b, shared, sa, sb, cat, out = _graph()
    assert len(shared.inbound_nodes) == 2
    assert shared.get_input_at(1) is b and shared.get_output_at(0) is sa
    assert shared.get_input_shape_at(1) == (None, 6)
    assert shared.get_output_shape_at(0) == (None, 4)
    assert cat.get_input_at(0) == [sa, sb]
    assert model.layers[0].get_input_at(0) is model.inputs[0]
    with pytest.raises(ValueError, match="only 2 inbound nodes"):
        shared.get_input_at(5)
    with pytest.raises(RuntimeError, match="never been called"):
        L.Dense(2).get_output_at(0)


def test_add_variable_add_update_and_dynamic():
    class Counter(L.Layer):
        def build(self, shape):
            self.count = self.add_variable("count", shape=(), initializer="zeros",
                                           trainable=False)

        def call(self, x):
            self.add_update(lambda: self.count.assign_add(1.0))
            self.add_update(self.count.assign_add(1.0))     # applied already: nothing more
            return x

    layer = Counter(dynamic=True)
    layer(np.ones((2, 2), "float32"))
    layer(np.ones((2, 2), "float32"))
    assert float(np.asarray(layer.count)) == 4.0
    assert layer.dynamic and not L.Dense(1).dynamic
    assert len(layer.non_trainable_weights) == 1 and layer.non_trainable_weights[0] is layer.count
