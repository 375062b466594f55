"""TF 2.4's tf.keras.mixed_precision.experimental names: Policy(name, loss_scale="auto") and
what compile makes of its loss scale, LossScaleOptimizer(optimizer, loss_scale), set_policy,
global_policy, get_layer_policy (TF 2.4's documented behaviour, written out)."""
import numpy as np
import pytest

import tnp_train as tt

exp = tt.mixed_precision.experimental


@pytest.fixture(autouse=True)
def _restore_policy():
    yield
    tt.mixed_precision.set_global_policy(None)


def test_policy_loss_scale_auto_and_explicit():
    assert exp.Policy("mixed_float16").loss_scale == "dynamic"
    assert exp.Policy("mixed_bfloat16").loss_scale is None
    assert exp.Policy("float32").loss_scale is None
    p = exp.Policy("mixed_float16", loss_scale=128)
    assert p.loss_scale == 128.0 and p.compute_dtype == "float16"
    assert p.variable_dtype == "float32"
    assert repr(p) == '<Policy "mixed_float16", loss_scale=128.0>'
    with pytest.raises(ValueError, match="Invalid loss_scale"):
        exp.Policy("mixed_float16", loss_scale=-1)


@pytest.mark.parametrize("loss_scale, dynamic, scale", [("auto", True, 2.0 ** 15),
                                                        (64, False, 64.0), (None, None, None)])
def test_compile_applies_the_policy_loss_scale(loss_scale, dynamic, scale):
    exp.set_policy(exp.Policy("mixed_float16", loss_scale=loss_scale))
    model = tt.Sequential([tt.Input((3,)), tt.layers.Dense(2)])
    model.compile("sgd", "mse")
    opt = model.optimizer
    if dynamic is None:
        assert not isinstance(opt, tt.mixed_precision.LossScaleOptimizer)
    else:
        assert isinstance(opt, tt.mixed_precision.LossScaleOptimizer)
        assert opt.dynamic is dynamic
        assert float(opt.loss_scale) == scale
    x = np.ones((4, 3), "float32")
    model.fit(x, np.zeros((4, 2), "float32"), verbose=0)


def test_experimental_loss_scale_optimizer():
    dyn = exp.LossScaleOptimizer(tt.optimizers.SGD(), "dynamic")
    assert dyn.dynamic and float(dyn.loss_scale) == 2.0 ** 15
    fixed = exp.LossScaleOptimizer(tt.optimizers.SGD(), 256)
    assert not fixed.dynamic and float(fixed.loss_scale) == 256.0
    assert isinstance(fixed, tt.mixed_precision.LossScaleOptimizer)
    again = tt.optimizers.deserialize(tt.optimizers.serialize(fixed))
    assert not again.dynamic and float(again.loss_scale) == 256.0
    # TF 2.4's message
    with pytest.raises(ValueError, match="Invalid value passed to loss_scale"):
        exp.LossScaleOptimizer(tt.optimizers.SGD(), "static")


def test_set_policy_global_policy_get_layer_policy():
    exp.set_policy("mixed_float16")
    assert exp.global_policy().name == "mixed_float16"
    assert exp.global_policy().loss_scale == "dynamic"
    layer = tt.layers.Dense(2)
    assert exp.get_layer_policy(layer).name == "mixed_float16"
    assert layer.compute_dtype == "float16"
    exp.set_policy(None)
    assert exp.global_policy().name == "float32"
    with pytest.raises(ValueError, match="only be called on a layer"):
        exp.get_layer_policy("dense")


def test_a_tf_24_policy_v1_config_loads():
    cfg = {"name": "mixed_float16", "loss_scale": {"class_name": "FixedLossScale",
                                                   "config": {"loss_scale_value": 32.0}}}
    p = tt.mixed_precision.Policy.from_config(cfg)
    assert p.name == "mixed_float16" and p.loss_scale == 32.0
    dyn = tt.mixed_precision.Policy.from_config(
        {"name": "mixed_float16", "loss_scale": {"class_name": "DynamicLossScale", "config": {}}})
    assert dyn.loss_scale == "dynamic"
