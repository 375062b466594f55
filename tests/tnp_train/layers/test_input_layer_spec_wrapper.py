"""InputLayer, InputSpec and Wrapper against tf-keras 2.21 (tests/fixtures/keras_utils.json)."""
import json
from pathlib import Path

import numpy as np
import pytest

import tnp
import tnp_train as tt

FIX = Path(__file__).resolve().parents[2] / "fixtures"
META = json.loads((FIX / "keras_utils.json").read_text())["remaining"]


def test_input_layer_input_spec_and_wrapper():
    keras = META["input_layer"]
    layer = tt.layers.InputLayer(input_shape=(3,))
    out = layer.inbound_nodes[0].outputs
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
