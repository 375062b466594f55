"""The Initializer and Regularizer base classes, as TF 2.4 documents them."""
import numpy as np
import pytest

import tnp
import tnp_train as tt


def test_initializer_and_regularizer_base_classes():
    # TF 2.4: the bases have an empty config, from_config calls the class, and a subclass only
    # writes __call__
    class Twos(tt.initializers.Initializer):
        def __call__(self, shape, dtype=None, **kwargs):
            return tnp.full(shape, 2.0, dtype=dtype or "float32")

    init = Twos.from_config(Twos().get_config())
    assert init.get_config() == {} and isinstance(init, tt.initializers.Initializer)
    layer = tt.layers.Dense(2, kernel_initializer=init)
    layer.build((None, 3))
    np.testing.assert_array_equal(np.asarray(layer.kernel), np.full((3, 2), 2.0))

    class Abs(tt.regularizers.Regularizer):
        def __call__(self, x):
            return 0.5 * tnp.sum(tnp.abs(x))

    assert tt.regularizers.Regularizer().get_config() == {}
    assert float(tt.regularizers.Regularizer()(tnp.ones(3))) == 0.0
    layer = tt.layers.Dense(1, kernel_initializer="ones", kernel_regularizer=Abs())
    layer(tnp.ones((1, 4)))
    assert float(sum(layer.losses)) == pytest.approx(2.0)
