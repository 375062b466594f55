"""AdditiveAttention against tf.keras's (tests/fixtures/additive_attention.npz, made by
make_additive_attention_fixture.py with tf-keras 2.21): outputs, scores and gradients, float32
and float64, masks and causal; config and save/load round trips."""
from pathlib import Path

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.autodiff import GradientTape

FIX = np.load(Path(__file__).resolve().parents[2] / "fixtures" / "additive_attention.npz")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", ["plain", "mask", "causal", "noscale"])
def test_additive_attention_equals_tf_keras(case, dtype):
    layer = tt.layers.AdditiveAttention(use_scale=case != "noscale", causal=case == "causal",
                                        dtype=dtype)
    q, v, k = (tnp.asarray(FIX[n].astype(dtype)) for n in ("q", "v", "k"))
    layer([q, v, k])
    if case != "noscale":
        layer.scale.assign(tnp.asarray(FIX["scale"].astype(dtype)))
    kw = {"mask": [None, tnp.asarray(FIX["vmask"])]} if case == "mask" else {}
    with GradientTape() as tape:
        tape.watch([q, v, k])
        out, scores = layer([q, v, k], return_attention_scores=True, **kw)
        loss = tnp.sum(out * out)
    grads = tape.gradient(loss, [q, v, k] + layer.trainable_weights)
    tol = 1e-5 if dtype == "float32" else 1e-12
    key = f"{case}_{dtype}"
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(np.asarray(out), FIX[key + "_out"], rtol=tol, atol=tol)
    np.testing.assert_allclose(np.asarray(scores), FIX[key + "_scores"], rtol=tol, atol=tol)
    for name, g in zip(["dq", "dv", "dk", "dscale"], grads):
        np.testing.assert_allclose(np.asarray(g), FIX[f"{key}_{name}"], rtol=tol * 10,
                                   atol=tol * 10, err_msg=name)


def test_additive_attention_scale_shape_and_init():
    tt.utils.set_random_seed(0)
    layer = tt.layers.AdditiveAttention()
    layer([tnp.ones((1, 2, 6)), tnp.ones((1, 3, 6))])
    assert layer.scale.shape == (6,)
    limit = np.sqrt(6.0 / 12)                     # glorot-uniform, fan_in = fan_out = 6
    assert np.all(np.abs(layer.scale.numpy()) <= limit)
    assert tt.layers.AdditiveAttention(use_scale=False).get_config()["use_scale"] is False


def test_additive_attention_functional_save_load(tmp_path):
    q_in, v_in = tt.Input((3, 4)), tt.Input((5, 4))
    out = tt.layers.AdditiveAttention(causal=True)([q_in, v_in])
    model = tt.Model([q_in, v_in], out)
    q = np.asarray(FIX["q"], "float32")
    v = np.asarray(FIX["v"], "float32")
    want = np.asarray(model.predict([q, v], verbose=0))
    model.save(tmp_path / "m.keras")
    again = tt.models.load_model(tmp_path / "m.keras")
    np.testing.assert_array_equal(np.asarray(again.predict([q, v], verbose=0)), want)
    layer = [l for l in again.layers if isinstance(l, tt.layers.AdditiveAttention)][0]
    assert layer.causal and layer.use_scale


def test_additive_attention_bad_inputs():
    with pytest.raises(ValueError, match="additive_attention.*list"):
        tt.layers.AdditiveAttention()(tnp.ones((1, 2, 3)))
