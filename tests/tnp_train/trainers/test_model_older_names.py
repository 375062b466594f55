"""TF 2.4's older Model methods: ``fit_generator``/``evaluate_generator``/``predict_generator``
(deprecated aliases of fit/evaluate/predict), ``reset_states``, ``run_eagerly``."""
import numpy as np
import pytest

import tnp
import tnp_train as tt


def _model(seed=0):
    tt.utils.set_random_seed(seed)
    m = tt.Sequential([tt.Input((3,)), tt.layers.Dense(2)])
    m.compile(tt.optimizers.SGD(0.1), "mse")
    return m


def _gen():
    r = np.random.default_rng(0)
    while True:
        yield r.standard_normal((4, 3)).astype("float32"), np.ones((4, 2), "float32")


def test_generator_methods_are_fit_evaluate_predict_with_a_warning():
    a, b = _model(), _model()
    with pytest.warns(DeprecationWarning, match="fit_generator"):
        ha = a.fit_generator(_gen(), steps_per_epoch=3, epochs=2, verbose=0)
    hb = b.fit(_gen(), steps_per_epoch=3, epochs=2, verbose=0)
    assert ha.history == hb.history
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(wa, wb)
    with pytest.warns(DeprecationWarning, match="evaluate_generator"):
        assert a.evaluate_generator(_gen(), steps=2) == b.evaluate(_gen(), steps=2, verbose=0)
    with pytest.warns(DeprecationWarning, match="predict_generator"):
        pa = a.predict_generator(_gen(), steps=2)
    np.testing.assert_array_equal(np.asarray(pa), np.asarray(b.predict(_gen(), steps=2)))


class _Accumulate(tt.layers.Layer):
    """A stateful layer: adds the running sum of its inputs."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.stateful = True
        self.total = tnp.zeros(())

    def call(self, x):
        self.total = self.total + tnp.sum(x)
        return x + self.total

    def reset_states(self):
        self.total = tnp.zeros(())


def test_reset_states_resets_stateful_layers_only():
    acc = _Accumulate()
    model = tt.Sequential([tt.Input((1,)), acc])
    x = np.ones((2, 1), "float32")
    model(x)
    model(x)
    assert float(acc.total) == 4.0
    model.reset_states()
    assert float(acc.total) == 0.0
    acc.stateful = False       # TF resets only layers that say they are stateful
    model(x)
    model.reset_states()
    assert float(acc.total) == 2.0


def test_run_eagerly_reads_what_compile_set():
    m = _model()
    assert m.run_eagerly is False
    m.compile("sgd", "mse", run_eagerly=True)
    assert m.run_eagerly is True
    m.run_eagerly = False
    assert m.run_eagerly is False
