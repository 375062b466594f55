"""Layer base, Sequential, the functional API and subclassed models against NumPy by hand."""
import json

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.autodiff import check_grads
from tnp_train.ops.dense import dense


def rng(seed=0):
    return np.random.default_rng(seed)


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("lead", [(4,), (2, 3)])
def test_dense_op_values_and_gradients(relu, bias, lead):
    r = rng(1)
    x = r.standard_normal(lead + (5,))
    W = r.standard_normal((5, 3))
    b = r.standard_normal(3)
    y = dense(tnp.asarray(x), tnp.asarray(W), tnp.asarray(b) if bias else None, relu=relu)
    ref = x @ W + (b if bias else 0)
    ref = np.maximum(ref, 0) if relu else ref
    np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-12)
    args = (x, W, b) if bias else (x, W)
    check_grads(lambda *a: dense(*a, relu=relu), order=2)(*(tnp.asarray(a) for a in args))


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_dense_op_low_precision_accumulates_in_float32(dt):
    r = rng(2)
    x = r.standard_normal((8, 64)).astype(np.float32)
    W = r.standard_normal((64, 4)).astype(np.float32)
    xl, Wl = tnp.asarray(x).astype(dt), tnp.asarray(W).astype(dt)
    y = dense(xl, Wl)
    assert y.dtype == np.dtype(tnp.bfloat16 if dt == "bfloat16" else dt)
    ref = (np.asarray(xl).astype(np.float32) @ np.asarray(Wl).astype(np.float32)).astype(y.dtype)
    np.testing.assert_array_equal(np.asarray(y), ref)


def test_sequential_and_functional_agree():
    seq = tt.Sequential([tt.Input((6,)), tt.layers.Dense(4, activation="tanh"), tt.layers.Dense(2)])
    inp = tt.Input((6,))
    out = tt.layers.Dense(2)(tt.layers.Dense(4, activation="tanh")(inp))
    fun = tt.Model(inp, out)
    fun.set_weights(seq.get_weights())
    x = rng().standard_normal((5, 6)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(fun(x)), np.asarray(seq(x)), rtol=1e-6)
    W1, b1, W2, b2 = seq.get_weights()
    np.testing.assert_allclose(np.asarray(seq(x)), np.tanh(x @ W1 + b1) @ W2 + b2, rtol=1e-5, atol=1e-6)
    assert fun.output_shape == (None, 2) and seq.layers[0].output_shape == (None, 4)


def test_functional_multi_input_output_shared_layer_and_config_round_trip():
    a, b = tt.Input((3,), name="a"), tt.Input((3,), name="b")
    shared = tt.layers.Dense(4, name="shared")
    ha, hb = shared(a), shared(b)
    merged = tt.layers.Concatenate()([ha, hb])
    out1 = tt.layers.Dense(1, name="out1")(merged)
    out2 = tt.layers.Add()([ha, hb])
    model = tt.Model([a, b], [out1, out2])
    assert len(model.weights) == 4            # the shared layer counts once
    xa, xb = rng(1).standard_normal((2, 3)), rng(2).standard_normal((2, 3))
    y1, y2 = model([xa, xb])
    W, c, V, d = model.get_weights()
    ha_, hb_ = xa @ W + c, xb @ W + c
    np.testing.assert_allclose(np.asarray(y1), np.concatenate([ha_, hb_], 1) @ V + d, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(y2), ha_ + hb_, rtol=1e-5, atol=1e-6)
    cfg = json.loads(json.dumps(model.get_config()))
    clone = tt.Model.from_config(cfg)
    clone.set_weights(model.get_weights())
    z1, z2 = clone({"a": xa, "b": xb})
    np.testing.assert_allclose(np.asarray(z1), np.asarray(y1), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(z2), np.asarray(y2), rtol=1e-6)
    with pytest.raises(ValueError, match="expects 2 input"):
        model(xa)


def test_graph_disconnected_and_bad_inputs():
    a, b = tt.Input((3,)), tt.Input((3,))
    out = tt.layers.Add()([a, b])
    with pytest.raises(ValueError, match="Graph disconnected"):
        tt.Model(a, out)
    m = tt.Model([a, b], out)
    with pytest.raises(ValueError, match="incompatible"):
        m([np.zeros((2, 4)), np.zeros((2, 4))])


class Residual(tt.Model):
    def __init__(self, units, **kw):
        super().__init__(**kw)
        self.inner = tt.layers.Dense(units, activation="relu")
        self.blocks = [tt.layers.Dense(units) for _ in range(2)]
        self.drop = tt.layers.Dropout(0.5)

    def call(self, x, training=None):
        h = self.inner(x)
        for blk in self.blocks:
            h = h + blk(h)
        return self.drop(h)


def test_subclassed_model_tracks_layers_and_passes_training_down():
    tt.utils.set_random_seed(1)
    m = Residual(4)
    x = np.ones((3, 4), np.float32)
    y_inf = m(x)                     # dropout inactive
    assert len(m.weights) == 6 and [k for k in m._trackable_children()] == ["inner", "blocks/0", "blocks/1", "drop"]
    tt.utils.set_random_seed(0)
    y_tr = np.asarray(m(x, training=True))
    assert np.any(y_tr == 0) and not np.allclose(y_tr, np.asarray(y_inf))
    tt.utils.set_random_seed(0)
    np.testing.assert_array_equal(np.asarray(m(x, training=True)), y_tr)   # reproducible


def test_gradients_flow_through_models_match_finite_differences():
    model = tt.Sequential([tt.Input((3,)), tt.layers.Dense(4, activation="tanh", dtype="float64"),
                           tt.layers.Dense(1, dtype="float64")])
    x = rng(3).standard_normal((5, 3))
    with tt.GradientTape() as tape:
        loss = tnp.sum(model(x) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    eps = 1e-6
    for v, g in zip(model.trainable_variables, grads):
        flat = v.numpy().ravel()
        num = np.zeros_like(flat)
        for i in range(flat.size):
            for s in (1, -1):
                w = flat.copy()
                w[i] += s * eps
                v.assign(w.reshape(v.shape))
                num[i] += s * float(tnp.sum(model(x) ** 2)) / (2 * eps)
            v.assign(flat.reshape(v.shape))
        np.testing.assert_allclose(np.asarray(g).ravel(), num, rtol=1e-6, atol=1e-8)


def test_mixed_policy_autocasts_inputs_and_weights():
    layer = tt.layers.Dense(3, dtype="mixed_float16")
    x = rng().standard_normal((2, 4)).astype(np.float32)
    y = layer(x)
    assert layer.kernel.dtype == np.float32 and y.dtype == np.float16
    assert layer.compute_dtype == "float16" and layer.variable_dtype == "float32"
    with tt.GradientTape() as tape:
        out = tnp.sum(layer(x).astype("float32"))
    gk, gb = tape.gradient(out, [layer.kernel, layer.bias])
    assert gk.dtype == np.float32 and isinstance(layer.kernel, tt.Variable)   # restored after call
    np.testing.assert_allclose(np.asarray(gk), np.repeat(x.astype(np.float16).astype(np.float32).sum(0)[:, None], 3, 1), rtol=1e-3)
    tt.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        assert tt.layers.Dense(2).compute_dtype == "bfloat16"
    finally:
        tt.mixed_precision.set_global_policy(None)
    assert tt.layers.Dense(2).compute_dtype == "float32"


def test_layer_regularizer_and_add_loss_collected():
    layer = tt.layers.Dense(2, kernel_regularizer=tt.regularizers.L2(0.1))
    layer(np.ones((1, 3), np.float32))
    (reg,) = layer.losses
    np.testing.assert_allclose(float(reg), 0.1 * np.sum(layer.get_weights()[0] ** 2), rtol=1e-6)


def test_summary_lists_layers_and_counts(capsys):
    model = tt.Sequential([tt.Input((8, 8, 1)), tt.layers.Flatten(), tt.layers.Dense(10)])
    model.summary()
    out = capsys.readouterr().out
    assert "(None, 64)" in out and "Total params: 650" in out and "Trainable params: 650" in out


def test_sequential_builds_on_first_call_and_layer_errors():
    m = tt.Sequential([tt.layers.Dense(2)])
    assert not m.built
    m(np.zeros((3, 5), np.float32))
    assert m.built and m.layers[0].kernel.shape == (5, 2)
    with pytest.raises(ValueError, match="positive integer"):
        tt.layers.Dense(-2)
    with pytest.raises(TypeError, match="unexpected keyword"):
        tt.layers.Dense(2, bogus=1)
    with pytest.raises(ValueError, match="incompatible"):
        m(np.zeros((3, 4), np.float32))


@pytest.mark.parametrize("layer,ref", [
    (tt.layers.Flatten(), lambda x: x.reshape(len(x), -1)),
    (tt.layers.Reshape((3, -1)), lambda x: x.reshape(len(x), 3, -1)),
    (tt.layers.Permute((2, 1, 3)), lambda x: x.transpose(0, 2, 1, 3)),
    (tt.layers.Activation("tanh"), np.tanh),
    (tt.layers.Dropout(0.3), lambda x: x),
])
def test_shape_layers_match_numpy_and_config_round_trips(layer, ref):
    x = rng().standard_normal((2, 3, 4, 2)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(layer(x)), ref(x), rtol=1e-6)
    clone = type(layer).from_config(layer.get_config())
    np.testing.assert_allclose(np.asarray(clone(x)), ref(x), rtol=1e-6)
    inp = tt.Input((3, 4, 2))
    assert layer(inp).shape == (None,) + ref(x).shape[1:]


def test_merge_layers_match_numpy():
    # float64 inputs are cast to the layers' compute dtype (float32), as in Keras
    a, b = rng(1).standard_normal((2, 3)).astype(np.float32), rng(2).standard_normal((2, 3)).astype(np.float32)
    for cls, ref in [(tt.layers.Add, a + b), (tt.layers.Subtract, a - b), (tt.layers.Multiply, a * b),
                     (tt.layers.Average, (a + b) / 2), (tt.layers.Maximum, np.maximum(a, b)),
                     (tt.layers.Minimum, np.minimum(a, b))]:
        np.testing.assert_allclose(np.asarray(cls()([a, b])), ref, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(tt.layers.Dot(axes=1)([a, b])), (a * b).sum(1, keepdims=True), rtol=1e-6)
    with pytest.raises(ValueError, match="at least 2 inputs"):
        tt.layers.Add()([a])


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_policies_give_float32_gradients_to_float32_variables(policy):
    layer = tt.layers.Dense(2, dtype=policy)
    x = np.ones((2, 3), np.float32)
    with tt.GradientTape() as tape:
        y = tnp.sum(layer(x).astype("float32"))
    gk, gb = tape.gradient(y, layer.trainable_variables)
    assert gk.dtype == np.float32 and gb.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(gk), np.full((3, 2), 2.0, np.float32))
    np.testing.assert_array_equal(np.asarray(gb), np.full(2, 2.0, np.float32))


CORE_F64 = [
    ("Activation", lambda: tt.layers.Activation("tanh", dtype="float64"), (2, 3, 4)),
    ("Flatten", lambda: tt.layers.Flatten(dtype="float64"), (2, 3, 4)),
    ("Reshape", lambda: tt.layers.Reshape((4, 3), dtype="float64"), (2, 3, 4)),
    ("Permute", lambda: tt.layers.Permute((2, 1), dtype="float64"), (2, 3, 4)),
    ("RepeatVector", lambda: tt.layers.RepeatVector(3, dtype="float64"), (2, 4)),
    ("Dense3d", lambda: tt.layers.Dense(2, activation="sigmoid", dtype="float64"), (2, 3, 4)),
]


@pytest.mark.parametrize("name,make,shape", CORE_F64, ids=[c[0] for c in CORE_F64])
def test_core_layers_gradients_pass_finite_differences(name, make, shape):
    layer = make()
    x = rng(4).standard_normal(shape)
    layer(x)
    check_grads(lambda a: layer(a))(tnp.asarray(x))


def test_dropout_in_training_passes_finite_differences_with_a_fixed_mask():
    layer = tt.layers.Dropout(0.4, seed=3, dtype="float64")
    x = tnp.asarray(rng(5).standard_normal((4, 5)))
    mask = np.asarray(layer(tnp.ones((4, 5), dtype="float64"), training=True)) != 0
    layer._rng = np.random.default_rng(3)

    def f(a):
        layer._rng = np.random.default_rng(3)      # the same mask on every evaluation
        return layer(a, training=True)
    y = np.asarray(f(x))
    np.testing.assert_allclose(y, np.where(mask, np.asarray(x) / 0.6, 0))
    check_grads(f)(x)


@pytest.mark.parametrize("cls", ["Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum",
                                 "Concatenate"])
def test_merge_layers_gradients_pass_finite_differences(cls):
    layer = getattr(tt.layers, cls)(dtype="float64")
    a, b = tnp.asarray(rng(6).standard_normal((2, 3))), tnp.asarray(rng(7).standard_normal((2, 3)))
    check_grads(lambda u, v: layer([u, v]), argnums=[0, 1])(a, b)


def test_batch_methods_build_get_layer_clone_and_json():
    import json as _json
    X = rng(9).standard_normal((6, 3)).astype(np.float32)
    Y = np.array([0, 1, 0, 1, 1, 0])
    m = tt.Sequential([tt.Input((3,)), tt.layers.Dense(4, activation="relu", name="hidden"),
                       tt.layers.Dense(2, name="out")])
    m.compile(tt.optimizers.SGD(0.1), tt.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
    loss0, _ = m.test_on_batch(X, Y)
    m.train_on_batch(X, Y)
    loss1, _ = m.test_on_batch(X, Y)
    assert loss1 < loss0
    np.testing.assert_allclose(np.asarray(m.predict_on_batch(X)), np.asarray(m.predict(X)), rtol=1e-6)
    assert m.get_layer("hidden") is m.layers[0] and m.get_layer(index=1).name == "out"
    with pytest.raises(ValueError, match="No such layer"):
        m.get_layer("nope")
    clone = tt.models.clone_model(m)
    assert [l.name for l in clone.layers] == ["hidden", "out"] and clone.count_params() == m.count_params()
    again = tt.models.model_from_json(_json.dumps({"class_name": "Sequential", "config": m.get_config()}))
    again.set_weights(m.get_weights())
    np.testing.assert_allclose(np.asarray(again(X)), np.asarray(m(X)), rtol=1e-6)

    class Sub(tt.Model):
        def __init__(self):
            super().__init__()
            self.d = tt.layers.Dense(2)

        def call(self, x):
            return self.d(x)
    s = Sub()
    s.build((None, 5))
    assert s.built and s.d.kernel.shape == (5, 2)
    with pytest.raises(NotImplementedError, match="subclassed model"):
        s.get_config()
    tt.backend.clear_session()
    assert tt.layers.Dense(1).name == "dense"
