"""Five metrics (CategoricalHinge, Hinge, MeanSquaredLogarithmicError, Poisson, SquaredHinge) against tf-keras 2.21 values in
tests/fixtures/keras_utils.json (tests/fixtures/make_keras_utils_fixtures.py)."""
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
