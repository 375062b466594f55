"""Model.to_json / to_yaml and tt.models.model_from_json / model_from_yaml (TF 2.4): round trips
of Sequential and functional models, and tf.keras's own JSON (tests/fixtures/tf_model_json.json,
made by make_model_json_fixture.py with tf-keras 2.21) loaded here gives TF's outputs with TF's
weights."""
import json
from pathlib import Path

import numpy as np
import pytest

import tnp_train as tt

FIX = json.loads((Path(__file__).resolve().parents[2] / "fixtures" /
                  "tf_model_json.json").read_text())


def _models():
    seq = tt.Sequential([tt.Input((4,)), tt.layers.Dense(3, activation="relu"),
                         tt.layers.Dropout(0.2), tt.layers.Dense(2, activation="softmax")])
    inp = tt.Input((6, 6, 2))
    h = tt.layers.Conv2D(3, (3, 3), padding="same", activation="relu")(inp)
    out = tt.layers.Dense(2)(tt.layers.Flatten()(tt.layers.MaxPooling2D()(h)))
    return [(seq, (5, 4)), (tt.Model(inp, out), (2, 6, 6, 2))]


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_round_trip_gives_the_same_model(fmt):
    if fmt == "yaml":
        pytest.importorskip("yaml")
    rng = np.random.default_rng(0)
    for model, shape in _models():
        text = model.to_json(indent=1) if fmt == "json" else model.to_yaml()
        if fmt == "json":
            meta = json.loads(text)
            assert meta["class_name"] == type(model).__name__ and "keras_version" in meta
        again = tt.models.model_from_json(text) if fmt == "json" else \
            tt.models.model_from_yaml(text)
        assert [type(l).__name__ for l in again.layers] == \
            [type(l).__name__ for l in model.layers]
        again.set_weights(model.get_weights())
        x = rng.standard_normal(shape).astype("float32")
        np.testing.assert_array_equal(np.asarray(again.predict(x, verbose=0)),
                                      np.asarray(model.predict(x, verbose=0)))


@pytest.mark.parametrize("name", ["sequential", "functional"])
def test_tf_keras_json_loads_and_computes_tfs_outputs(name):
    f = FIX[name]
    model = tt.models.model_from_json(f["json"])
    model.set_weights([np.asarray(w, "float32") for w in f["weights"]])
    got = np.asarray(model.predict(np.asarray(f["x"], "float32"), verbose=0))
    np.testing.assert_allclose(got, np.asarray(f["y"]), rtol=1e-5, atol=1e-6)


def test_subclassed_model_to_json_says_why():
    class Net(tt.Model):
        def call(self, x):
            return x
    with pytest.raises(NotImplementedError, match="subclassed model"):
        Net().to_json()


def test_model_from_yaml_is_safe():
    yaml = pytest.importorskip("yaml")
    with pytest.raises(yaml.YAMLError):
        tt.models.model_from_yaml("!!python/object/apply:os.system ['echo hacked']")
