"""tt.activations against NumPy references; gradients against finite differences."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

import tnp
import tnp_train as tt
from tnp_train.autodiff import check_grads

A = tt.activations
_erf = np.vectorize(math.erf)


def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def np_softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


SELU_A, SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

REFS = {
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.clip(x, 0, 6),
    "leaky_relu": lambda x: np.where(x > 0, x, 0.2 * x),
    "elu": lambda x: np.where(x > 0, x, np.exp(np.minimum(x, 0)) - 1),
    "selu": lambda x: SELU_S * np.where(x > 0, x, SELU_A * (np.exp(np.minimum(x, 0)) - 1)),
    "gelu": lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
    "silu": lambda x: x * np_sigmoid(x),
    "swish": lambda x: x * np_sigmoid(x),
    "sigmoid": np_sigmoid,
    "hard_sigmoid": lambda x: np.clip(0.2 * x + 0.5, 0, 1),
    "softplus": np_softplus,
    "softsign": lambda x: x / (1 + np.abs(x)),
    "tanh": np.tanh,
    "softmax": np_softmax,
    "log_softmax": lambda x: np.log(np_softmax(x)),
    "exponential": np.exp,
    "linear": lambda x: x,
    "mish": lambda x: x * np.tanh(np_softplus(x)),
}
# activations whose derivative is smooth everywhere (second order checked)
SMOOTH = ["gelu", "silu", "sigmoid", "softplus", "tanh", "softmax", "log_softmax", "exponential",
          "mish"]


@pytest.mark.parametrize("name", sorted(REFS))
@settings(max_examples=10, deadline=None)
@given(x=arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(1, 4)),
                elements=st.floats(-8, 8)))
def test_activation_matches_numpy(name, x):
    fn = A.get(name)
    got = fn(tnp.asarray(x))
    np.testing.assert_allclose(np.asarray(got), REFS[name](x), rtol=1e-7, atol=1e-12)
    assert np.asarray(got).dtype == np.float64
    got32 = fn(tnp.asarray(x.astype(np.float32)))
    assert np.asarray(got32).dtype == np.float32


@pytest.mark.parametrize("name", sorted(REFS))
def test_activation_gradients(name):
    # values away from the kinks of the piecewise-linear ones
    x = np.array([[-2.3, -0.7, 0.4, 1.9], [3.1, -4.2, 0.9, 6.6]])
    check_grads(A.get(name), order=2 if name in SMOOTH else 1)(tnp.asarray(x))


def test_relu_is_one_tape_node_and_custom_ones_too():
    v = tt.Variable(np.array([-1.0, 2.0]))
    for fn in (A.relu, A.sigmoid, A.softplus, A.softmax, A.log_softmax, A.gelu):
        with tt.GradientTape() as tape:
            fn(v)
        assert len(tape._nodes) == 1, fn.__name__


def test_relu_arguments_follow_keras():
    x = np.array([-3.0, -1.0, 0.5, 1.5, 2.5, 7.0])
    np.testing.assert_allclose(np.asarray(A.relu(x, alpha=0.1)), np.where(x > 0, x, 0.1 * x))
    np.testing.assert_allclose(np.asarray(A.relu(x, max_value=2.0)), np.clip(x, 0, 2))
    np.testing.assert_allclose(np.asarray(A.relu(x, threshold=1.0)), np.where(x > 1, x, 0))
    want = np.where(x >= 2.0, 2.0, np.where(x > 1.0, x, 0.5 * (x - 1.0)))
    np.testing.assert_allclose(np.asarray(A.relu(x, alpha=0.5, max_value=2.0, threshold=1.0)), want)
    check_grads(lambda t: A.relu(t, alpha=0.5, max_value=2.0, threshold=1.0))(tnp.asarray(x))
    np.testing.assert_allclose(np.asarray(A.leaky_relu(x, negative_slope=0.3)),
                               np.where(x > 0, x, 0.3 * x))
    np.testing.assert_allclose(np.asarray(A.elu(x, alpha=2.0)),
                               np.where(x > 0, x, 2.0 * (np.exp(x) - 1)))


def test_gelu_approximate():
    x = np.linspace(-4, 4, 9)
    want = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(np.asarray(A.gelu(x, approximate=True)), want, rtol=1e-12)
    check_grads(lambda t: A.gelu(t, approximate=True), order=2)(tnp.asarray(x))


def test_extreme_inputs_give_finite_values_and_gradients():
    x = np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0], dtype=np.float32)
    for fn in (A.sigmoid, A.softplus, A.silu, A.elu, A.selu, A.mish, A.softmax, A.log_softmax):
        v = tt.Variable(x)
        with tt.GradientTape() as tape:
            y = fn(v)
        g = tape.gradient(tnp.sum(y), v)
        assert np.all(np.isfinite(np.asarray(y))), fn.__name__
        assert np.all(np.isfinite(np.asarray(g))), fn.__name__
    np.testing.assert_allclose(np.asarray(A.sigmoid(x)), [0, 1.9287498e-22, 0.5, 1, 1], rtol=1e-6)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_softmax_low_precision_computes_in_float32_and_casts_back(dt):
    x = np.array([[10.0, 10.5, -3.0], [0.1, 0.2, 0.3]])
    xl = tnp.asarray(x).astype(dt)
    y = A.softmax(xl)
    assert y.dtype == xl.dtype
    want = np_softmax(np.asarray(xl).astype(np.float32))
    np.testing.assert_allclose(np.asarray(y).astype(np.float64), want, rtol=1e-2, atol=1e-6)
    assert A.log_softmax(xl).dtype == xl.dtype


def test_softmax_axis_and_errors():
    x = np.random.default_rng(0).normal(size=(2, 3, 4))
    np.testing.assert_allclose(np.asarray(A.softmax(x, axis=1)), np_softmax(x, axis=1), rtol=1e-12)
    check_grads(lambda t: A.softmax(t, axis=0), order=2)(tnp.asarray(x))
    with pytest.raises(ValueError, match="softmax.*scalar"):
        A.softmax(np.float64(1.0))
    with pytest.raises(ValueError, match=r"softmax: axis 3.*\(2, 3, 4\)"):
        A.softmax(x, axis=3)


def test_get_serialize_deserialize():
    assert A.get(None) is A.linear
    assert A.get("relu") is A.relu
    assert A.get("swish") is A.silu
    for name in REFS:
        fn = A.get(name)
        assert A.deserialize(A.serialize(fn)) is fn
    assert A.serialize(A.swish) == "swish"
    assert A.serialize(A.relu) == "relu"
    custom = lambda x: x  # noqa: E731
    assert A.get(custom) is custom
    with pytest.raises(ValueError, match="Unknown activation"):
        A.get("nope")
    with pytest.raises(TypeError):
        A.get(3)


def test_dense_uses_activations_by_name():
    layer = tt.layers.Dense(2, activation="gelu")
    x = np.random.default_rng(1).normal(size=(3, 4)).astype(np.float32)
    y = layer(tnp.asarray(x))
    W, b = layer.get_weights()
    np.testing.assert_allclose(np.asarray(y), REFS["gelu"]((x @ W + b).astype(np.float64)),
                               rtol=1e-5, atol=1e-6)
    assert layer.get_config()["activation"] == "gelu"


def test_relu_with_a_negative_threshold_and_max_value_clips_at_zero_as_tf():
    # TF 2.4's backend.relu: x * (x > threshold), then clip_by_value(x, 0, max_value) when
    # max_value is set, then - alpha * relu(threshold - x)
    x = np.array([-3.0, -1.0, -0.5, 0.5, 2.0, 9.0])
    for alpha in (0.0, 0.1):
        want = np.clip(x * (x > -2), 0, 6) - alpha * np.maximum(-2 - x, 0)
        got = tt.activations.relu(tnp.asarray(x), alpha=alpha, threshold=-2, max_value=6)
        np.testing.assert_allclose(np.asarray(got), want)
    # without max_value nothing is clipped: x in (threshold, 0) stays x
    np.testing.assert_allclose(np.asarray(tt.activations.relu(tnp.asarray(x), threshold=-2)),
                               x * (x > -2))


def test_advanced_activation_layers_by_class_name():
    # TF 2.4 (and tf-keras): activations.deserialize also knows the advanced-activation layers
    # by class name, each a new layer with its defaults (LeakyReLU's alpha is 0.3 there)
    for name in ("LeakyReLU", "PReLU", "ELU", "ReLU", "Softmax", "ThresholdedReLU"):
        layer = A.deserialize(name)
        assert type(layer) is getattr(tt.layers, name)
        assert A.deserialize(name) is not layer            # a new one each time
    assert A.get("relu") is A.relu                         # the functions come first
    x = np.array([[-2.0, -0.5, 0.0, 1.5]], np.float32)
    layer = tt.layers.Dense(4, activation="LeakyReLU", kernel_initializer="identity",
                            bias_initializer="zeros")
    np.testing.assert_allclose(np.asarray(layer(tnp.asarray(x))), np.where(x > 0, x, 0.3 * x),
                               rtol=1e-6)
    # the config names the layer, and from_config rebuilds it
    config = layer.get_config()
    assert config["activation"]["class_name"] == "LeakyReLU"
    again = tt.layers.Dense.from_config(config)
    assert type(again.activation) is tt.layers.LeakyReLU and again.activation.alpha == 0.3
    # a layer with weights as the activation is built with the model and trained with it:
    # tf-keras lists kernel (3, 4), bias (4,), alpha (4,), kernel (4, 1), bias (1,): 25
    model = tt.Sequential([tt.Input((3,)), tt.layers.Dense(4, activation="PReLU"),
                           tt.layers.Dense(1)])
    assert [tuple(w.shape) for w in model.trainable_weights] == [(3, 4), (4,), (4,), (4, 1),
                                                                 (1,)]
    assert model.count_params() == 25
