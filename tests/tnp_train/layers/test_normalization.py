"""BatchNormalization and LayerNormalization: against PyTorch fixtures
(tests/fixtures/make_rnn_attention_fixtures.py), hand-written NumPy and finite differences."""
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tnp
import tnp_train as tt
from tnp_train.autodiff.check import check_grads
from tnp_train.layers.normalization import BatchNormalization, LayerNormalization, normalize

FIXTURES = np.load(os.path.join(os.path.dirname(__file__), "..", "..", "fixtures",
                                "rnn_attention_norm.npz"))


def _grads(layer, x, dy, **kw):
    x = tnp.asarray(x)
    with tt.GradientTape() as tape:
        tape.watch(x)
        y = layer(x, **kw)
        loss = tnp.sum(y * tnp.asarray(np.asarray(dy, dtype=y.dtype)))
    g = tape.gradient(loss, [x] + layer.trainable_weights)
    return np.asarray(y), [np.asarray(a) for a in g]


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("dtype,rtol", [("float32", 2e-5)])
def test_batch_norm_matches_torch(training, dtype, rtol):
    k = f"bn/train{int(training)}"
    f = {n[len(k) + 1:]: FIXTURES[n] for n in FIXTURES.files if n.startswith(k + "/")}
    bn = BatchNormalization(momentum=0.9, dtype=dtype)
    x = f["x"].astype(dtype)
    bn(tnp.asarray(x))
    bn.set_weights([f["gamma"], f["beta"], f["moving_mean"], f["moving_variance"]])
    y, (gx, gg, gb) = _grads(bn, x, f["dy"], training=training)
    np.testing.assert_allclose(y, f["y"], rtol=rtol, atol=rtol)
    np.testing.assert_allclose(gx, f["g_x"], rtol=rtol * 10, atol=rtol * 10)
    np.testing.assert_allclose(gg, f["g_gamma"], rtol=rtol * 10, atol=rtol * 10)
    np.testing.assert_allclose(gb, f["g_beta"], rtol=rtol * 10, atol=rtol * 10)
    # 4-D NHWC inputs: the moving variance gets the Bessel-corrected variance (TF's fused path)
    np.testing.assert_allclose(bn.moving_mean.numpy(), f["new_moving_mean"], rtol=1e-5)
    np.testing.assert_allclose(bn.moving_variance.numpy(), f["new_moving_variance"], rtol=1e-5)


def test_batch_norm_weights_and_variables():
    bn = BatchNormalization()
    bn(tnp.asarray(np.zeros((2, 3), np.float32)))
    assert [w.name.split("/")[-1] for w in bn.weights] == ["gamma", "beta", "moving_mean",
                                                           "moving_variance"]
    assert [w.trainable for w in bn.weights] == [True, True, False, False]
    for v in bn.weights[2:]:
        assert v.aggregation == tt.VariableAggregation.MEAN
        assert v.synchronization == tt.VariableSynchronization.ON_READ
    assert len(bn.trainable_weights) == 2 and len(bn.non_trainable_weights) == 2
    assert len(BatchNormalization(center=False, scale=False)(
        tnp.asarray(np.zeros((2, 3), np.float32))).shape) == 2


def test_batch_norm_2d_training_uses_biased_variance_and_updates_outside_the_tape():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 3)) * 3 + 2
    bn = BatchNormalization(momentum=0.8, epsilon=1e-3, dtype="float64")
    xt = tnp.asarray(x)
    with tt.GradientTape() as tape:
        y = bn(xt, training=True)
    assert len(tape._nodes) <= 3          # the op, plus gamma/beta reshapes; no assign nodes
    mean, var = x.mean(0), x.var(0)
    np.testing.assert_allclose(np.asarray(y), (x - mean) / np.sqrt(var + 1e-3), rtol=1e-10)
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.2 * mean, rtol=1e-12)
    np.testing.assert_allclose(bn.moving_variance.numpy(), 0.8 + 0.2 * var, rtol=1e-12)
    # inference: the moving statistics, which training=None and False both use
    y_inf = np.asarray(bn(xt))
    mm, mv = bn.moving_mean.numpy(), bn.moving_variance.numpy()
    np.testing.assert_allclose(y_inf, (x - mm) / np.sqrt(mv + 1e-3), rtol=1e-10)
    np.testing.assert_array_equal(np.asarray(bn(xt, training=False)), y_inf)
    np.testing.assert_array_equal(bn.moving_mean.numpy(), mm)


def test_frozen_batch_norm_runs_in_inference_mode_even_when_training():
    rng = np.random.default_rng(1)
    x = tnp.asarray(rng.standard_normal((6, 2, 2, 3)).astype(np.float32))
    bn = BatchNormalization()
    bn(x)
    bn.set_weights([np.full(3, 2.0), np.full(3, 0.5), np.full(3, 1.0), np.full(3, 4.0)])
    bn.trainable = False
    y = np.asarray(bn(x, training=True))
    np.testing.assert_allclose(y, 2.0 * (np.asarray(x) - 1.0) / np.sqrt(4.0 + 1e-3) + 0.5, rtol=1e-5)
    np.testing.assert_array_equal(bn.moving_mean.numpy(), np.full(3, 1.0, np.float32))


def test_batch_norm_axis_1_and_multiple_axes():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 3, 5))
    bn = BatchNormalization(axis=1, dtype="float64")
    y = np.asarray(bn(tnp.asarray(x), training=True))
    mean, var = x.mean((0, 2), keepdims=True), x.var((0, 2), keepdims=True)
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-10)
    assert tuple(bn.gamma.shape) == (3,)
    bn2 = BatchNormalization(axis=[1, 2], dtype="float64")
    y2 = np.asarray(bn2(tnp.asarray(x), training=True))
    assert tuple(bn2.gamma.shape) == (1, 3, 5)
    mean, var = x.mean(0, keepdims=True), x.var(0, keepdims=True)
    np.testing.assert_allclose(y2, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-10)
    with pytest.raises(ValueError, match="axis"):
        BatchNormalization(axis=3)(tnp.asarray(x))


def test_float16_statistics_in_float32():
    # values whose squares overflow float16: float16 statistics would give inf/nan
    x = (np.arange(24, dtype=np.float32).reshape(8, 3) * 40 - 300)
    for layer in (BatchNormalization(dtype="mixed_float16"), LayerNormalization(dtype="mixed_float16")):
        xt = tnp.asarray(x)
        y = layer(xt, training=True) if isinstance(layer, BatchNormalization) else layer(xt)
        assert y.dtype == np.float16
        axis = 0 if isinstance(layer, BatchNormalization) else 1
        ref = (x - x.mean(axis, keepdims=True)) / np.sqrt(x.var(axis, keepdims=True) + 1e-3)
        np.testing.assert_allclose(np.asarray(y).astype(np.float32), ref, atol=5e-3)
        assert all(w.dtype == np.float32 for w in layer.weights)


def test_layer_norm_matches_torch():
    f = {n[3:]: FIXTURES[n] for n in FIXTURES.files if n.startswith("ln/")}
    for dtype, rtol in (("float64", 1e-10), ("float32", 2e-5)):
        ln = LayerNormalization(dtype=dtype)
        ln(tnp.asarray(f["x"].astype(dtype)))
        ln.set_weights([f["gamma"], f["beta"]])
        assert [w.name.split("/")[-1] for w in ln.weights] == ["gamma", "beta"]
        y, (gx, gg, gb) = _grads(ln, f["x"].astype(dtype), f["dy"])
        np.testing.assert_allclose(y, f["y"], rtol=rtol, atol=rtol)
        for got, name in ((gx, "g_x"), (gg, "g_gamma"), (gb, "g_beta")):
            np.testing.assert_allclose(got, f[name], rtol=rtol * 10, atol=rtol * 10)


@settings(max_examples=20, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=2, max_size=4), data=st.data())
def test_layer_norm_any_axes_matches_numpy(shape, data):
    nd = len(shape)
    axes = sorted(data.draw(st.sets(st.integers(1, nd - 1), min_size=1)))
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape)
    ln = LayerNormalization(axis=axes, dtype="float64")
    ln(tnp.asarray(x))
    pshape = tuple(shape[a] for a in axes)
    gamma, beta = rng.standard_normal(pshape), rng.standard_normal(pshape)
    ln.set_weights([gamma, beta])
    bshape = [shape[i] if i in axes else 1 for i in range(nd)]
    mean = x.mean(tuple(axes), keepdims=True)
    var = x.var(tuple(axes), keepdims=True)
    ref = (x - mean) / np.sqrt(var + 1e-3) * gamma.reshape(bshape) + beta.reshape(bshape)
    np.testing.assert_allclose(np.asarray(ln(tnp.asarray(x))), ref, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("stat_axes,given_stats", [((0,), False), ((0, 1, 2), False),
                                                   ((2,), False), ((0, 1), True)])
def test_normalize_finite_differences(stat_axes, given_stats):
    rng = np.random.default_rng(3)
    x = tnp.asarray(rng.standard_normal((3, 2, 4)))
    bshape = tuple(1 if i in stat_axes else s for i, s in enumerate((3, 2, 4)))
    g = tnp.asarray(rng.standard_normal(bshape))
    b = tnp.asarray(rng.standard_normal(bshape))
    mean = rng.standard_normal(bshape) if given_stats else None
    var = rng.random(bshape) + 0.5 if given_stats else None

    def f(x, g, b):
        return normalize(x, g, b, stat_axes, 1e-3, mean=mean, variance=var)
    check_grads(f, eps=1e-6, rtol=1e-6, atol=1e-8)(x, g, b)


def test_one_tape_node_and_config_round_trip():
    x = tnp.asarray(np.ones((2, 5), np.float32))
    for layer in (LayerNormalization(axis=[1], epsilon=1e-5, center=False),
                  BatchNormalization(axis=-1, momentum=0.5, scale=False)):
        layer(x)
        with tt.GradientTape() as tape:
            tape.watch(x)
            layer(x)
        ops = [n.name for n in tape._nodes]
        assert ops.count("custom_gradient") == 1
        cfg = layer.get_config()
        assert type(layer).from_config(cfg).get_config() == cfg
