"""TF 2.4's loss scales (``tf.mixed_precision.experimental.LossScale`` / ``FixedLossScale`` /
``DynamicLossScale``) against TF's own, stepped through the same gradients
(``tests/fixtures/loss_scale.json``, made by ``tests/fixtures/make_loss_scale_fixture.py``);
the LossScaleOptimizer that keeps one, and the experimental optimizer and policy that take
one, as TF 2.4 does."""
import json
from pathlib import Path

import numpy as np
import pytest

import tnp
import tnp_train as tt

exp = tt.mixed_precision.experimental
FIX = json.loads((Path(__file__).resolve().parents[2] / "fixtures" / "loss_scale.json")
                 .read_text())


def grads_for(kind, rng):
    """The fixture script's gradients for one step (same generator, same draws)."""
    a = rng.standard_normal((3, 2)).astype("float32")
    b = rng.standard_normal(4).astype("float32")
    if kind == "none":
        return [None, None]
    if kind == "inf":
        a[1, 0] = np.inf
    if kind == "nan":
        b[2] = np.nan
    return [a, b]


def _steps_of_every_case():
    """{case: [gradients of each step]}, drawn in the fixture's order from one generator."""
    rng = np.random.default_rng(0)
    return {name: [grads_for(k, rng) for k in FIX["patterns"][case["pattern"]]]
            for name, case in FIX["cases"].items()}


STEPS = _steps_of_every_case()


@pytest.mark.parametrize("name", sorted(FIX["cases"]))
def test_dynamic_loss_scale_steps_as_tf(name):
    case = FIX["cases"][name]
    ls = exp.DynamicLossScale(**case["kwargs"])
    for i, (g, want) in enumerate(zip(STEPS[name], case["steps"])):
        g = [None if x is None else tnp.asarray(x) for x in g]
        if name == "nested":
            g = {"b": g[1], "a": (g[0],)}
        op, apply = ls.update(g)
        scale = ls()
        assert op is None
        assert scale.dtype == np.float32 and scale.shape == ()
        assert [float(scale), int(ls._num_good_steps.numpy()), apply] == want, (name, i)
    assert ls.get_config() == case["config"]
    assert repr(ls) == case["repr"]


def test_fixed_loss_scale_as_tf():
    ref = FIX["fixed"]
    ls = exp.FixedLossScale(128)
    assert repr(ls) == ref["repr"] and ls.get_config() == ref["config"]
    assert float(ls()) == ref["value"] and ls().dtype == np.dtype(ref["dtype"])
    assert ls.update([tnp.asarray([np.inf])]) == (None, ref["update"][0])
    assert float(ls()) == ref["value"]
    args = {"0.5": 0.5, "'8'": "8", "None": None}
    assert FIX["fixed_errors"] == {k: "ValueError" for k in args}
    for arg in args.values():
        with pytest.raises(ValueError, match="FixedLossScale"):
            exp.FixedLossScale(arg)


def test_loss_scale_is_abstract_and_subclassable():
    assert FIX["abstract"] == "TypeError"
    with pytest.raises(TypeError):
        exp.LossScale()

    class Halving(exp.LossScale):
        def __init__(self, value=8.0):
            self.value = value

        def __call__(self):
            return tnp.asarray(np.float32(self.value))

        def update(self, grads):
            self.value /= 2
            return None, True

        def get_config(self):
            return {"value": self.value}

    h = Halving.from_config({"value": 4.0})
    assert h.update([]) == (None, True) and float(h()) == 2.0


def test_from_config_round_trip():
    ls = exp.DynamicLossScale(initial_loss_scale=16, increment_period=3, multiplier=4.0)
    again = exp.DynamicLossScale.from_config(ls.get_config())
    assert again.get_config() == {"initial_loss_scale": 16.0, "increment_period": 3,
                                  "multiplier": 4.0}
    assert float(again()) == 16.0
    fixed = exp.FixedLossScale.from_config(exp.FixedLossScale(3).get_config())
    assert float(fixed()) == 3.0


def test_checkpoint_saves_the_dynamic_state(tmp_path):
    ls = exp.DynamicLossScale(initial_loss_scale=64, increment_period=3)
    for g in ([1.0], [np.inf], [1.0], [2.0]):
        ls.update([tnp.asarray(np.float32(g))])
    assert float(ls()) == 32.0 and int(ls._num_good_steps.numpy()) == 2
    path = tt.train.Checkpoint(loss_scale=ls).save(str(tmp_path / "ckpt"))
    fresh = exp.DynamicLossScale(initial_loss_scale=64, increment_period=3)
    tt.train.Checkpoint(loss_scale=fresh).restore(path)
    assert float(fresh()) == 32.0 and int(fresh._num_good_steps.numpy()) == 2
    fresh.update([tnp.asarray(np.float32([1.0]))])      # the third good step: doubles
    assert float(fresh()) == 64.0


# ------------------------------------------------------------------- the optimizer keeps one
def test_loss_scale_optimizer_steps_as_tf_dynamic_loss_scale():
    """LossScaleOptimizer(initial_scale=8, dynamic_growth_steps=2): the scale and counter TF's
    DynamicLossScale(8, 2) had after each step, and only finite steps reach the variables."""
    case = FIX["cases"]["small"]
    opt = tt.mixed_precision.LossScaleOptimizer(tt.optimizers.SGD(0.01), initial_scale=8,
                                                dynamic_growth_steps=2)
    assert isinstance(opt._loss_scale_state, exp.DynamicLossScale)
    va, vb = tt.Variable(np.zeros((3, 2), "float32")), tt.Variable(np.zeros(4, "float32"))
    applied = 0
    for g, (scale, counter, apply) in zip(STEPS["small"], case["steps"]):
        opt.apply_gradients([(tnp.asarray(g[0]), va), (tnp.asarray(g[1]), vb)])
        applied += apply
        assert (float(opt.loss_scale), int(opt.dynamic_counter)) == (scale, counter)
        assert int(opt.iterations.numpy()) == applied
    assert np.isfinite(va.numpy()).all() and np.isfinite(vb.numpy()).all()


def test_fixed_loss_scale_optimizer_keeps_a_fixed_loss_scale():
    opt = tt.mixed_precision.LossScaleOptimizer(tt.optimizers.SGD(), dynamic=False,
                                                initial_scale=16)
    assert isinstance(opt._loss_scale_state, exp.FixedLossScale)
    assert float(opt.loss_scale) == 16.0 and opt.dynamic_counter is None
    # TF 2.4: a fixed scale is configuration, no checkpointed state
    assert list(opt._trackable_children()) == ["inner_optimizer"]


def test_old_fixed_scale_checkpoint_still_restores(tmp_path):
    """A checkpoint written when a fixed scale kept variables (loss_scale, good_steps) restores
    into an optimizer that keeps none."""
    v = tt.Variable([1.0, 2.0])
    dyn = tt.mixed_precision.LossScaleOptimizer(tt.optimizers.SGD(0.1))
    dyn.apply_gradients([(tnp.asarray([1.0, 1.0]), v)])
    path = tt.train.Checkpoint(optimizer=dyn, v=v).save(str(tmp_path / "ckpt"))
    w = tt.Variable([0.0, 0.0])
    fixed = tt.mixed_precision.LossScaleOptimizer(tt.optimizers.SGD(0.1), dynamic=False,
                                                  initial_scale=4)
    tt.train.Checkpoint(optimizer=fixed, v=w).restore(path)
    np.testing.assert_array_equal(w.numpy(), v.numpy())
    assert int(fixed.iterations.numpy()) == 1 and float(fixed.loss_scale) == 4.0


# ---------------------------------------- the experimental optimizer and policy take one
def test_experimental_optimizer_takes_loss_scales_as_tf_24():
    fixed = exp.LossScaleOptimizer(tt.optimizers.SGD(), exp.FixedLossScale(64))
    assert not fixed.dynamic and float(fixed.loss_scale) == 64.0
    dyn = exp.LossScaleOptimizer(tt.optimizers.SGD(), exp.DynamicLossScale(16, 3))
    assert dyn.dynamic and float(dyn.loss_scale) == 16.0 and dyn.dynamic_growth_steps == 3
    served = exp.LossScaleOptimizer(tt.optimizers.SGD(), {
        "class_name": "DynamicLossScale", "config": {"initial_loss_scale": 4.0,
                                                     "increment_period": 5, "multiplier": 2.0}})
    assert served.initial_scale == 4.0 and served.dynamic_growth_steps == 5
    with pytest.raises(ValueError, match="DynamicLossScale.multiplier must be 2"):
        exp.LossScaleOptimizer(tt.optimizers.SGD(), exp.DynamicLossScale(multiplier=3.0))

    class Custom(exp.LossScale):        # a LossScale of the user's own
        def __call__(self):
            return tnp.asarray(np.float32(1))

        def update(self, grads):
            return None, True

        def get_config(self):
            return {}

    with pytest.raises(TypeError, match="not a FixedLossScale or a DynamicLossScale"):
        exp.LossScaleOptimizer(tt.optimizers.SGD(), Custom())
    with pytest.raises(ValueError, match="Invalid value passed to loss_scale"):
        exp.LossScaleOptimizer(tt.optimizers.SGD(), None)


def test_optimizer_from_a_tf_23_config():
    """TF 2.3 saved a LossScaleOptimizer as (optimizer, loss_scale): TF 2.4 reads it."""
    cfg = {"optimizer": tt.optimizers.serialize(tt.optimizers.Adam(0.5)),
           "loss_scale": {"class_name": "DynamicLossScale",
                          "config": {"initial_loss_scale": 128.0, "increment_period": 7,
                                     "multiplier": 2.0}}}
    for cls in (tt.mixed_precision.LossScaleOptimizer, exp.LossScaleOptimizer):
        opt = cls.from_config(dict(cfg))
        assert opt.dynamic and opt.initial_scale == 128.0 and opt.dynamic_growth_steps == 7
        assert float(opt.learning_rate) == 0.5
    fixed = tt.mixed_precision.LossScaleOptimizer.from_config(
        {"optimizer": cfg["optimizer"],
         "loss_scale": {"class_name": "FixedLossScale", "config": {"loss_scale_value": 8.0}}})
    assert not fixed.dynamic and float(fixed.loss_scale) == 8.0
    again = exp.LossScaleOptimizer.from_config(fixed.get_config())
    assert not again.dynamic and float(again.loss_scale) == 8.0


def test_policy_with_a_loss_scale_compiles_to_its_settings():
    try:
        p = exp.Policy("mixed_float16", loss_scale=exp.FixedLossScale(32))
        assert p.loss_scale == 32.0
        dls = exp.DynamicLossScale(initial_loss_scale=256, increment_period=10)
        exp.set_policy(exp.Policy("mixed_float16", loss_scale=dls))
        model = tt.Sequential([tt.Input((3,)), tt.layers.Dense(2)])
        model.compile("sgd", "mse")
        opt = model.optimizer
        assert isinstance(opt, tt.mixed_precision.LossScaleOptimizer)
        assert opt.dynamic and opt.initial_scale == 256.0 and opt.dynamic_growth_steps == 10
        model.fit(np.ones((4, 3), "float32"), np.zeros((4, 2), "float32"), verbose=0)
    finally:
        tt.mixed_precision.set_global_policy(None)
