"""The tf.keras 2.4 names no other test exercised (docs/keras-compat.md listed them as
untested): five metrics, the Initializer/Regularizer base classes, InputLayer, InputSpec,
Wrapper, models.model_from_config and models.save_model. References: tf-keras 2.21 values in
tests/fixtures/keras_utils.json (tests/fixtures/make_keras_utils_fixtures.py) and TF 2.4's
documented behaviour of the base classes."""
import json
from pathlib import Path

import numpy as np
import pytest

import tnp
import tnp_train as tt

FIX = Path(__file__).resolve().parents[2] / "fixtures"
REF = np.load(FIX / "keras_utils.npz")
META = json.loads((FIX / "keras_utils.json").read_text())["remaining"]
METRICS = ["CategoricalHinge", "Hinge", "MeanSquaredLogarithmicError", "Poisson",
           "SquaredHinge"]


@pytest.mark.parametrize("name", METRICS)
def test_metric_matches_keras(name):
    t, p, w = (REF[f"remaining/{k}"] for k in ("y_true", "y_pred", "w"))
    m = getattr(tt.metrics, name)()
    m.update_state(t[:2], p[:2])
    m.update_state(t[2:], p[2:], sample_weight=w[2:])
    keras = META[name]
    assert float(m.result()) == pytest.approx(keras["result"], rel=1e-6)
    assert m.name == keras["name"]
    cfg = m.get_config()
    assert cfg["name"] == keras["config"]["name"] and cfg["dtype"] == keras["config"]["dtype"]


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


def test_input_layer_input_spec_and_wrapper():
    keras = META["input_layer"]
    layer = tt.layers.InputLayer(input_shape=(3,))
    out = layer._inbound_nodes[0].outputs
    assert list(out.shape) == keras["output_shape"]
    cfg = layer.get_config()
    assert list(cfg["batch_input_shape"]) == keras["config"]["batch_input_shape"]
    assert cfg["dtype"] == keras["config"]["dtype"] and cfg["sparse"] is False
    model = tt.Sequential([tt.layers.InputLayer(input_shape=(3,)), tt.layers.Dense(2)])
    assert model(tnp.ones((5, 3))).shape == (5, 2)

    spec = tt.layers.InputSpec(ndim=3, axes={-1: 4})
    ks = META["input_spec"]
    assert spec.ndim == ks["ndim"] and spec.min_ndim == ks["min_ndim"]
    assert {str(k): v for k, v in spec.axes.items()} == ks["axes"]

    wrapped = tt.layers.TimeDistributed(tt.layers.Dense(2))
    assert isinstance(wrapped, tt.layers.Wrapper) == META["wrapper_is_base"]
    assert isinstance(wrapped.layer, tt.layers.Dense)
    assert wrapped.get_config()["layer"]["class_name"] == "Dense"


def test_model_from_config_and_save_model(tmp_path):
    model = tt.Sequential([tt.Input((3,)), tt.layers.Dense(2, kernel_initializer="ones")])
    config = {"class_name": "Sequential", "config": model.get_config()}
    rebuilt = tt.models.model_from_config(config)
    assert isinstance(rebuilt, tt.Sequential)
    assert [type(layer).__name__ for layer in rebuilt.layers] == ["Dense"]
    assert rebuilt.layers[0].units == 2
    x = np.arange(6.0, dtype="float32").reshape(2, 3)
    path = tmp_path / "saved.keras"
    tt.models.save_model(model, path)
    back = tt.models.load_model(path)
    np.testing.assert_array_equal(np.asarray(back(x)), np.asarray(model(x)))
    np.testing.assert_array_equal(np.asarray(back(x)), x.sum(1, keepdims=True).repeat(2, 1))
