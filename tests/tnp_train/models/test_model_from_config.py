"""models.model_from_config and models.save_model."""
import numpy as np
import pytest

import tnp
import tnp_train as tt


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
