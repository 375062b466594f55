"""Mixed-precision policies: names and dtypes, the TensorFloat-32 switch of a global mixed policy,
float32 islands (softmax, losses), float32 accumulation of float16/bfloat16 matmul and
convolution, and mixed-policy weights moving to and from float32 models."""
import sys
import types

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp import config as tnp_config
from tnp_train.mixed_precision import Policy, global_policy, set_global_policy

BF16 = np.dtype(tnp.bfloat16)


@pytest.fixture
def restore_policy():
    before = global_policy()
    tf32 = tnp_config.tensor_float_32_execution_enabled()
    yield set_global_policy
    set_global_policy(before)
    tnp_config.enable_tensor_float_32_execution(tf32)


# ----------------------------------------------------------------------------- Policy
@pytest.mark.parametrize("name,compute,variable", [
    ("float32", "float32", "float32"), ("float16", "float16", "float16"),
    ("bfloat16", "bfloat16", "bfloat16"), ("mixed_float16", "float16", "float32"),
    ("mixed_bfloat16", "bfloat16", "float32")])
def test_policy_dtypes(name, compute, variable):
    p = Policy(name)
    assert (p.name, p.compute_dtype, p.variable_dtype) == (name, compute, variable)
    assert Policy.from_config(p.get_config()) == p
    layer = tt.layers.Dense(2, dtype=name)
    y = layer(np.ones((1, 3), np.float32))
    assert y.dtype == np.dtype(compute if compute != "bfloat16" else BF16)
    assert layer.kernel.dtype == np.dtype(variable if variable != "bfloat16" else BF16)


def test_policy_errors_and_global(restore_policy):
    with pytest.raises(ValueError):
        Policy("mixed_float32")
    with pytest.raises(TypeError):
        Policy(3.5)
    restore_policy("mixed_bfloat16")
    assert global_policy().name == "mixed_bfloat16"
    assert tt.layers.Dense(2).dtype_policy == Policy("mixed_bfloat16")
    restore_policy(None)
    assert global_policy().name == "float32"


# ----------------------------------------------------------------------------- TensorFloat-32
def test_tf32_follows_the_global_mixed_policy(restore_policy):
    tnp_config.enable_tensor_float_32_execution(False)
    restore_policy("float32")
    assert not tnp_config.tensor_float_32_execution_enabled()
    restore_policy("mixed_float16")
    assert tnp_config.tensor_float_32_execution_enabled()
    restore_policy("mixed_bfloat16")                       # mixed -> mixed: stays on
    assert tnp_config.tensor_float_32_execution_enabled()
    restore_policy("float16")                              # leaves the mixed policies: restored
    assert not tnp_config.tensor_float_32_execution_enabled()
    restore_policy(None)
    assert not tnp_config.tensor_float_32_execution_enabled()
    # a layer's own mixed dtype does not touch the switch
    tt.layers.Dense(2, dtype="mixed_float16")(np.ones((1, 2), np.float32))
    assert not tnp_config.tensor_float_32_execution_enabled()


def test_tf32_restores_a_setting_made_before(restore_policy):
    restore_policy(None)
    tnp_config.enable_tensor_float_32_execution(True)      # the user's choice
    restore_policy("mixed_float16")
    assert tnp_config.tensor_float_32_execution_enabled()
    restore_policy("float32")
    assert tnp_config.tensor_float_32_execution_enabled()  # kept, not turned off


def test_tf32_reaches_cupy_when_a_gpu_backend_exists(restore_policy, monkeypatch):
    """Without a GPU: a stand-in CuPy backend records the compute type the switch sets."""
    import tnp._core.backend as backend_mod

    calls = []
    core = types.ModuleType("cupy._core")
    core.COMPUTE_TYPE_TF32, core.COMPUTE_TYPE_DEFAULT = "tf32", "default"
    core.set_compute_type = calls.append
    fake = types.ModuleType("cupy")
    fake._core = core
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setitem(sys.modules, "cupy._core", core)
    monkeypatch.setattr(backend_mod, "cupy_backend", lambda: types.SimpleNamespace(xp=fake))
    restore_policy(None)
    tnp_config.enable_tensor_float_32_execution(False)
    calls.clear()
    restore_policy("mixed_float16")
    restore_policy("float32")
    assert calls == ["tf32", "default"]


# ----------------------------------------------------------------------------- float32 islands
def test_mixed_float16_model_softmax_and_loss_are_float32(restore_policy):
    restore_policy("mixed_float16")
    tt.utils.set_random_seed(0)
    model = tt.Sequential([tt.layers.Dense(32, activation="relu"), tt.layers.Dense(10),
                           tt.layers.Activation("softmax", dtype="float32")])
    x = np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32) * 4
    y = np.arange(16) % 10
    probs = model(x)
    assert model.layers[1].compute_dtype == "float16"
    assert probs.dtype == np.float32
    sums = np.asarray(tnp.sum(probs, axis=-1), dtype=np.float64)
    np.testing.assert_allclose(sums, 1.0, rtol=0, atol=8 * np.finfo(np.float32).eps)
    loss = tt.losses.SparseCategoricalCrossentropy()(y, probs)
    assert loss.dtype == np.float32
    # float16 logits: the loss and the softmax still compute in float32
    logits = tt.Sequential([tt.layers.Dense(10)])(x)
    assert logits.dtype == np.float16
    l16 = tt.losses.SparseCategoricalCrossentropy(from_logits=True)(y, logits)
    assert l16.dtype == np.float32
    lg = np.asarray(logits).astype(np.float64)
    ref = np.mean(np.log(np.exp(lg - lg.max(1, keepdims=True)).sum(1)) + lg.max(1) - lg[np.arange(16), y])
    np.testing.assert_allclose(float(l16), ref, rtol=1e-5)
    sm = tt.activations.softmax(logits)
    ref_sm = np.exp(lg - lg.max(1, keepdims=True))
    ref_sm /= ref_sm.sum(1, keepdims=True)
    assert sm.dtype == np.float16
    np.testing.assert_array_equal(np.asarray(sm), ref_sm.astype(np.float32).astype(np.float16))


# ----------------------------------------------------------------------------- accumulation
# 2048 + 1 == 2048 in float16 and 256 + 1 == 256 in bfloat16: a sum of ones accumulated in the
# 16-bit type stalls there, one accumulated in float32 reaches n (exact in both types)
N_ONES = {"mixed_float16": 4096, "mixed_bfloat16": 1024}


def _conv_layers():
    from tnp_train.layers.convolutional import Conv1D, Conv2D, Conv2DTranspose
    return {
        "Conv2D": (lambda p: Conv2D(1, 1, kernel_initializer="ones", bias_initializer="ones",
                                    dtype=p), lambda n: (1, 1, 1, n)),
        "Conv1D": (lambda p: Conv1D(1, 1, kernel_initializer="ones", bias_initializer="ones",
                                    dtype=p), lambda n: (1, 1, n)),
        "Conv2DTranspose": (lambda p: Conv2DTranspose(1, 1, kernel_initializer="ones",
                                                      bias_initializer="ones", dtype=p),
                            lambda n: (1, 1, 1, n)),
    }


def _layers():
    out = {"Dense": (lambda p: tt.layers.Dense(1, kernel_initializer="ones",
                                               bias_initializer="ones", dtype=p),
                     lambda n: (1, n))}
    try:
        out.update(_conv_layers())
    except ImportError:  # pragma: no cover - the conv layers are being written
        pass
    return out


@pytest.mark.parametrize("policy", sorted(N_ONES))
@pytest.mark.parametrize("kind", sorted(_layers()))
def test_low_precision_forward_and_backward_accumulate_in_float32(policy, kind):
    make, shape = _layers()[kind]
    n = N_ONES[policy]
    layer = make(policy)
    x = np.ones(shape(n), np.float32)
    y = layer(x)
    assert y.dtype == np.dtype(Policy(policy).compute_dtype if policy == "mixed_float16" else BF16)
    # forward: n ones (+ the bias 1 where it is added after the sum: n + 1 rounds to n)
    np.testing.assert_array_equal(np.asarray(y).astype(np.float32), float(n))
    # backward: the kernel's gradient sums over the batch/positions; make those n long too
    layer = make(policy)
    big = np.ones((n,) + shape(1)[1:], np.float32)
    with tt.GradientTape() as tape:
        loss = tnp.sum(layer(big).astype("float32"))
    gk, gb = tape.gradient(loss, layer.trainable_variables)
    assert gk.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(gk), float(n))
    np.testing.assert_array_equal(np.asarray(gb), float(n))


@pytest.mark.parametrize("policy", sorted(N_ONES))
@pytest.mark.parametrize("kind", sorted(_layers()))
def test_low_precision_matches_float32_accumulated_reference(policy, kind):
    """Random values: the mixed layer equals a float32 layer run on the 16-bit-rounded inputs
    and weights, rounded once at the end (to one unit in the last place)."""
    make, shape = _layers()[kind]
    dt = np.float16 if policy == "mixed_float16" else BF16
    rng = np.random.default_rng(1)
    s = shape(64)
    x = rng.standard_normal((8,) + s[1:]).astype(np.float32)
    mixed = make(policy)
    y = np.asarray(mixed(x)).astype(np.float32)
    ref_layer = make("float32")
    ref_layer(x)
    ref_layer.set_weights([(rng.standard_normal(w.shape) * 0.3).astype(np.float32)
                           for w in mixed.get_weights()])
    mixed.set_weights(ref_layer.get_weights())
    ref_layer.set_weights([w.astype(dt).astype(np.float32) for w in ref_layer.get_weights()])
    ref = np.asarray(ref_layer(x.astype(dt).astype(np.float32)))
    y = np.asarray(mixed(x)).astype(np.float32)
    ulp = np.spacing(np.abs(ref).astype(dt)).astype(np.float32)
    assert np.all(np.abs(y - ref) <= ulp), float(np.max(np.abs(y - ref) / ulp))


# ----------------------------------------------------------------------------- weights
def _model(policy):
    tt.utils.set_random_seed(5)
    m = tt.Sequential([tt.layers.Dense(6, activation="relu", dtype=policy),
                       tt.layers.Dense(2, dtype=policy)])
    m(np.zeros((1, 4), np.float32))
    return m


def test_mixed_weights_load_into_float32_model_and_back(tmp_path):
    mixed = _model("mixed_float16")
    rng = np.random.default_rng(2)
    mixed.set_weights([rng.standard_normal(w.shape).astype(np.float32) for w in mixed.get_weights()])
    assert all(w.dtype == np.float32 for w in mixed.weights)
    mixed.save_weights(str(tmp_path / "w"))
    plain = _model("float32")
    plain.load_weights(str(tmp_path / "w"))
    for a, b in zip(mixed.get_weights(), plain.get_weights()):
        np.testing.assert_array_equal(a, b)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(mixed(x)).astype(np.float32), np.asarray(plain(x)),
                               rtol=1e-2, atol=1e-2)
    # and back, through tt.train.Checkpoint
    plain.set_weights([w * 2 for w in plain.get_weights()])
    path = tt.train.Checkpoint(model=plain).save(str(tmp_path / "ckpt"))
    again = _model("mixed_bfloat16")
    tt.train.Checkpoint(model=again).restore(path)
    for a, b in zip(again.get_weights(), plain.get_weights()):
        np.testing.assert_array_equal(a, b)
