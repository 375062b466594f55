"""Ftrl against tf.keras's Ftrl (tests/fixtures/ftrl.json, made by make_ftrl_fixture.py with
tf-keras 2.21) and against TF's kernel formula written out in NumPy."""
import json
from pathlib import Path

import numpy as np
import pytest

import tnp
import tnp_train as tt

FIX = json.loads((Path(__file__).resolve().parents[2] / "fixtures" / "ftrl.json").read_text())


def _run(kwargs, dtype, steps=None):
    w = tt.Variable(tnp.asarray(np.asarray(FIX["w0"], dtype)))
    opt = tt.optimizers.Ftrl(**kwargs)
    for g in np.asarray(FIX["grads"], dtype)[:steps]:
        opt.apply_gradients([(tnp.asarray(g), w)])
    return w.numpy()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", list(FIX["cases"]))
def test_ftrl_equals_tf_keras(case, dtype):
    got = _run(FIX["cases"][case], dtype)
    want = np.asarray(FIX["out"][f"{case}_{dtype}"])
    assert got.dtype == np.dtype(dtype)
    # TF keeps the hyperparameters (and the accumulator's start) in float32 and casts them to
    # a float64 variable's dtype (0.1 becomes 0.10000000149...): with those rounded values our
    # float64 result equals TF's to 1e-16 on the default case; we keep the exact values, so
    # float64 agrees to float32's precision, and test_ftrl_one_step_is_tfs_formula pins
    # float64 exactly
    tol = 2e-6 if dtype == "float32" else 1e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_ftrl_one_step_is_tfs_formula():
    # ApplyFtrlV2 written out (tensorflow/core/kernels/training_ops.cc), one step from acc=0.1
    lr, l1, l2, shrink, beta = 0.05, 0.001, 0.01, 0.03, 0.2
    w = np.asarray(FIX["w0"])
    g = np.asarray(FIX["grads"])[0]
    acc, lin = np.full_like(w, 0.1), np.zeros_like(w)
    l2_adj = l2 + beta / (2 * lr)
    new = acc + g * g
    lin = lin + g + 2 * shrink * w - (np.sqrt(new) - np.sqrt(acc)) / lr * w
    quad = np.sqrt(new) / lr + 2 * l2_adj
    want = np.where(np.abs(lin) > l1, (np.sign(lin) * l1 - lin) / quad, 0.0)
    got = _run(dict(learning_rate=lr, l1_regularization_strength=l1,
                    l2_regularization_strength=l2, l2_shrinkage_regularization_strength=shrink,
                    beta=beta), "float64", steps=1)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


def test_ftrl_config_round_trip_and_get():
    opt = tt.optimizers.Ftrl(0.2, learning_rate_power=-0.7, beta=0.5,
                             l2_shrinkage_regularization_strength=0.1)
    cfg = tt.optimizers.serialize(opt)
    again = tt.optimizers.deserialize(cfg)
    assert type(again) is tt.optimizers.Ftrl
    for k in ("learning_rate_power", "beta", "l2_shrinkage_regularization_strength",
              "initial_accumulator_value"):
        assert again.get_config()[k] == opt.get_config()[k]
    assert type(tt.optimizers.get("ftrl")) is tt.optimizers.Ftrl


@pytest.mark.parametrize("kw", [dict(learning_rate_power=0.5), dict(beta=-1.0),
                                dict(initial_accumulator_value=-0.1),
                                dict(l1_regularization_strength=-1)])
def test_ftrl_bad_arguments_raise_value_error(kw):
    name = next(iter(kw))
    with pytest.raises(ValueError, match=f"Ftrl: `{name}`"):
        tt.optimizers.Ftrl(**kw)


def test_ftrl_trains_in_fit():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4)).astype("float32")
    y = (x @ np.array([1.0, -2.0, 0.5, 0.0], "float32"))[:, None]
    model = tt.Sequential([tt.Input((4,)), tt.layers.Dense(1)])
    model.compile(tt.optimizers.Ftrl(0.5), loss="mse")
    hist = model.fit(x, y, epochs=5, batch_size=16, verbose=0).history["loss"]
    assert hist[-1] < 0.5 * hist[0]
