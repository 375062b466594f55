"""tt.constraints against tf-keras: each constraint's output (float32 and float64), its
serialized form, and a Dense layer trained with constraints (applied after every SGD step).

The references are in tests/fixtures/keras_utils.npz/.json, written by
tests/fixtures/make_keras_utils_fixtures.py under tf-keras 2.21 (TF 2.4's constraints code is
the same: checked against tensorflow/python/keras/constraints.py in the 2.4.4 wheel).
"""
import json
from pathlib import Path

import numpy as np
import pytest

import tnp
import tnp_train as tt

FIX = Path(__file__).resolve().parents[2] / "fixtures"
REF = np.load(FIX / "keras_utils.npz")
META = json.loads((FIX / "keras_utils.json").read_text())["constraints"]
C = tt.constraints

CASES = {
    "max_norm_default": C.MaxNorm(),
    "max_norm_axis1": C.MaxNorm(max_value=0.5, axis=1),
    "max_norm_filters": C.MaxNorm(max_value=1.5, axis=[0, 1, 2]),
    "min_max_norm": C.MinMaxNorm(min_value=0.5, max_value=1.0, rate=0.7, axis=0),
    "min_max_norm_filters": C.MinMaxNorm(min_value=1.2, max_value=3.0, axis=[0, 1, 2]),
    "unit_norm": C.UnitNorm(),
    "unit_norm_filters": C.UnitNorm(axis=[0, 1, 2]),
    "non_neg": C.NonNeg(),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_constraint_matches_keras(case, dtype):
    w = REF[f"constraints/{META[case]['input']}"].astype(dtype)
    got = CASES[case](tnp.asarray(w))
    assert isinstance(got, tnp.ndarray) and got.dtype == np.dtype(dtype)
    tol = 1e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(np.asarray(got), REF[f"constraints/{case}/{dtype}"], rtol=tol,
                               atol=tol)


@pytest.mark.parametrize("case", sorted(CASES))
def test_serialize_and_round_trip(case):
    keras = META[case]["serialized"]
    ours = C.serialize(CASES[case])
    assert ours == {"class_name": keras["class_name"], "config": keras["config"]}
    back = C.deserialize(ours)
    assert type(back) is type(CASES[case]) and back.get_config() == CASES[case].get_config()


@pytest.mark.parametrize("size", [3, 4, 5, 6])
def test_radial_constraint_matches_keras_code(size):
    # TF's code keeps w[s-1, s-1] at the centre (its docstring shows another kernel)
    got = C.RadialConstraint()(tnp.asarray(REF[f"constraints/radial{size}/in"]))
    np.testing.assert_array_equal(np.asarray(got), REF[f"constraints/radial{size}/out"])


def test_radial_constraint_refuses_what_tf_cannot_do():
    with pytest.raises(ValueError, match=r"rank 4.*\(3, 3\)"):
        C.RadialConstraint()(tnp.ones((3, 3)))
    with pytest.raises(ValueError, match=r"square.*\(3, 4, 1, 1\)"):
        C.RadialConstraint()(tnp.ones((3, 4, 1, 1)))
    with pytest.raises(ValueError, match="size 1"):
        C.RadialConstraint()(tnp.ones((1, 1, 2, 2)))


def test_get_names_aliases_and_errors():
    # tf.keras.constraints.get: a name gives an instance with the defaults; the lower-case
    # aliases are the classes themselves, and the legacy ones (maxnorm...) resolve too
    assert C.max_norm is C.MaxNorm and C.non_neg is C.NonNeg and C.unit_norm is C.UnitNorm
    assert C.min_max_norm is C.MinMaxNorm and C.radial_constraint is C.RadialConstraint
    for name, cls in [("MaxNorm", C.MaxNorm), ("max_norm", C.MaxNorm), ("maxnorm", C.MaxNorm),
                      ("nonneg", C.NonNeg), ("unit_norm", C.UnitNorm),
                      ("min_max_norm", C.MinMaxNorm), ("radial_constraint",
                                                       C.RadialConstraint)]:
        got = C.get(name)
        assert type(got) is cls, name
    assert C.get("max_norm").get_config() == {"max_value": 2, "axis": 0}
    assert C.get(None) is None
    fn = lambda w: w  # noqa: E731
    assert C.get(fn) is fn
    with pytest.raises(ValueError, match="Unknown constraint: nope"):
        C.get("nope")
    with pytest.raises(ValueError, match="Could not interpret constraint identifier: 3"):
        C.get(3)
    assert C.Constraint()(tnp.ones(2)) is not None and C.Constraint().get_config() == {}


def test_custom_constraint_through_custom_objects():
    class Clip(C.Constraint):
        def __init__(self, v=1.0):
            self.v = v

        def __call__(self, w):
            return tnp.clip(w, -self.v, self.v)

        def get_config(self):
            return {"v": self.v}

    got = C.deserialize({"class_name": "Clip", "config": {"v": 0.5}},
                        custom_objects={"Clip": Clip})
    np.testing.assert_array_equal(np.asarray(got(tnp.asarray([-2.0, 0.25, 2.0]))),
                                  [-0.5, 0.25, 0.5])


def _dense_fit(layer_kwargs):
    r = {k: REF[f"constraints/dense_fit/{k}"] for k in ("x", "y", "k0", "b0", "kernel", "bias")}
    layer = tt.layers.Dense(3, **layer_kwargs)
    model = tt.Sequential([tt.Input((4,)), layer])
    # Keras's set_weights writes the weights as given; tnp_train's assign (and so set_weights)
    # applies the constraint too, so the starting point is written around it
    for v, value in zip(layer.weights, [r["k0"], r["b0"]]):
        v.update(lambda a, x: a.__setitem__(..., x), value, constrain=False)
    model.compile(tt.optimizers.SGD(0.5), "mse")
    for _ in range(3):
        model.train_on_batch(r["x"], r["y"])
    return model, layer, r


def test_dense_trained_with_constraints_matches_keras():
    model, layer, r = _dense_fit(dict(kernel_constraint=C.MaxNorm(0.8),
                                      bias_constraint="non_neg"))
    np.testing.assert_allclose(np.asarray(layer.kernel), r["kernel"], rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(layer.bias), r["bias"], rtol=2e-5, atol=1e-6)
    # the constraint bit: every kernel column's norm is at most 0.8, no bias is negative
    assert np.linalg.norm(np.asarray(layer.kernel), axis=0).max() <= 0.8 + 1e-6
    assert np.asarray(layer.bias).min() >= 0


def test_dense_config_keeps_constraints_through_save_and_load(tmp_path):
    model, layer, _ = _dense_fit(dict(kernel_constraint=C.MaxNorm(0.8),
                                      bias_constraint="non_neg"))
    keras = META["dense_fit_config"]
    cfg = layer.get_config()
    for key in ("kernel_constraint", "bias_constraint"):
        assert cfg[key] == {"class_name": keras[key]["class_name"],
                            "config": keras[key]["config"]}
    path = tmp_path / "m.keras"
    model.save(path)
    back = tt.models.load_model(path)
    dense = back.layers[-1]
    assert isinstance(dense.kernel_constraint, C.MaxNorm)
    assert dense.kernel_constraint.get_config() == {"max_value": 0.8, "axis": 0}
    assert isinstance(dense.bias_constraint, C.NonNeg)
    # and the reloaded layer still applies it after a step
    back.compile(tt.optimizers.SGD(5.0), "mse")
    back.train_on_batch(np.ones((2, 4), "float32"), np.full((2, 3), -50.0, "float32"))
    assert np.asarray(dense.bias).min() >= 0
    assert np.linalg.norm(np.asarray(dense.kernel), axis=0).max() <= 0.8 + 1e-6


def test_add_weight_takes_a_constraint_name():
    class L(tt.layers.Layer):
        def build(self, shape):
            self.w = self.add_weight("w", (2,), initializer="ones", constraint="non_neg")

        def call(self, x):
            return x * self.w

    layer = L()
    layer(tnp.ones((1, 2)))
    assert isinstance(layer.w.constraint, C.NonNeg)
    tt.optimizers.SGD(1.0).apply_gradients([(tnp.asarray([2.0, -1.0]), layer.w)])
    np.testing.assert_array_equal(np.asarray(layer.w), [0.0, 2.0])   # [-1, 2] constrained
