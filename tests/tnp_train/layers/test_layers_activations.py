"""Advanced activation layers (tnp_train.layers.advanced_activations): TF 2.4's docstring
examples (cited at each), NumPy formulas, finite differences in float64, masks, configs and
TF's errors."""
import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.autodiff import check_grads
from layer_checks import assert_config_round_trips

L = tt.layers
X4 = [-3.0, -1.0, 0.0, 2.0]


def _np(a):
    return np.asarray(a)


def _run(layer, x):
    return _np(layer(tnp.asarray(np.asarray(x, dtype=np.float32))))


def test_tf_docstring_examples():
    # tf.keras.layers.LeakyReLU docstring (TF 2.4)
    np.testing.assert_allclose(_run(L.LeakyReLU(), X4), [-0.9, -0.3, 0.0, 2.0], rtol=1e-6)
    np.testing.assert_allclose(_run(L.LeakyReLU(alpha=0.1), X4), [-0.3, -0.1, 0.0, 2.0], rtol=1e-6)
    # tf.keras.layers.ReLU docstring (TF 2.4)
    np.testing.assert_array_equal(_run(L.ReLU(), X4), [0.0, 0.0, 0.0, 2.0])
    np.testing.assert_array_equal(_run(L.ReLU(max_value=1.0), X4), [0.0, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(_run(L.ReLU(negative_slope=1.0), X4), [-3.0, -1.0, 0.0, 2.0])
    np.testing.assert_array_equal(_run(L.ReLU(threshold=1.5), X4), [0.0, 0.0, 0.0, 2.0])
    # tf.keras.layers.Softmax docstring (TF 2.4)
    inp = np.asarray([1.0, 2.0, 1.0], dtype=np.float32)
    np.testing.assert_allclose(_run(L.Softmax(), inp), [0.21194157, 0.5761169, 0.21194157],
                               rtol=1e-6)
    mask = np.asarray([True, False, True])
    np.testing.assert_allclose(_np(L.Softmax()(tnp.asarray(inp), mask)), [0.5, 0.0, 0.5],
                               atol=1e-7)


X = np.random.default_rng(0).standard_normal((3, 4, 5))

FORMULAS = [
    (lambda: L.LeakyReLU(0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    (lambda: L.ReLU(max_value=0.8, negative_slope=0.1, threshold=0.3),
     lambda x: np.where(x >= 0.8, 0.8, np.where(x > 0.3, x, 0.1 * (x - 0.3)))),
    (lambda: L.ELU(0.7), lambda x: np.where(x > 0, x, 0.7 * (np.exp(x) - 1))),
    (lambda: L.ThresholdedReLU(0.4), lambda x: np.where(x > 0.4, x, 0.0)),
    (lambda: L.Softmax(axis=1),
     lambda x: np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)),
    (lambda: L.Softmax(axis=[1, 2]),
     lambda x: np.exp(x) / np.exp(x).sum(axis=(1, 2), keepdims=True)),
    (lambda: L.Softmax(axis=(0, -1)),
     lambda x: np.exp(x) / np.exp(x).sum(axis=(0, 2), keepdims=True)),
]


@pytest.mark.parametrize("make,ref", FORMULAS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matches_numpy_formula_and_finite_differences(make, ref, dtype):
    layer = make()
    layer = type(layer).from_config({**layer.get_config(), "dtype": dtype})
    y = layer(tnp.asarray(X.astype(dtype)))
    assert y.dtype == dtype
    tol = 1e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(_np(y), ref(X), rtol=tol, atol=tol)
    assert layer.compute_output_shape((None, 4, 5)) == (None, 4, 5)
    if dtype == "float64":
        check_grads(lambda a: layer(a), eps=1e-6, rtol=1e-6, atol=1e-8)(tnp.asarray(X))


def test_softmax_mask_with_broadcasting_and_float16():
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    mask = np.random.default_rng(2).random((2, 1, 4)) > 0.4
    mask[:, :, 0] = True
    y = _np(L.Softmax()(tnp.asarray(x), mask=tnp.asarray(mask)))
    # TF: inputs + (1 - mask) * -1e9, then softmax
    z = x + (1 - mask) * -1e9
    ref = np.exp(z - z.max(-1, keepdims=True))
    ref /= ref.sum(-1, keepdims=True)
    np.testing.assert_allclose(y, ref, rtol=1e-6, atol=1e-7)
    y16 = _np(L.Softmax(dtype="float16")(tnp.asarray(x.astype(np.float16)), mask=mask))
    assert y16.dtype == np.float16 and np.all(np.isfinite(y16))
    np.testing.assert_allclose(y16, ref, atol=2e-3)
    with pytest.raises(ValueError, match="rank"):
        L.Softmax()(tnp.asarray(x), mask=tnp.asarray(mask[:, 0]))


def test_softmax_in_a_model_takes_the_propagated_mask():
    # scores (batch, steps) of a masked sequence: the masked steps get no probability
    ids = tt.Input((4,), dtype="int64")
    e = L.Embedding(10, 1, mask_zero=True)(ids)                  # (batch, 4, 1), mask (batch, 4)
    scores = L.Lambda(lambda t: t[..., 0], mask=lambda t, m: m)(e)
    m = tt.Model(ids, L.Softmax()(scores))
    x = np.array([[3, 4, 0, 0], [1, 2, 3, 5]])
    y = _np(m(x))
    w = _np(m.layers[1].get_weights()[0])[x, 0]
    ref = np.where(x > 0, np.exp(w), 0)
    np.testing.assert_allclose(y, ref / ref.sum(-1, keepdims=True), rtol=1e-6, atol=1e-7)
    # a (batch, steps) mask against (batch, steps, features) scores is refused, not broadcast
    seq = tt.Sequential([tt.Input((4,), dtype="int64"), L.Embedding(10, 4, mask_zero=True),
                         L.Softmax()])
    with pytest.raises(ValueError, match="rank"):
        seq(x)


def test_prelu_weights_shared_axes_and_gradients():
    layer = L.PReLU(alpha_initializer=tt.initializers.Constant(0.25), shared_axes=[1, 2],
                    dtype="float64")
    x = np.random.default_rng(3).standard_normal((2, 3, 4, 5))
    y = layer(tnp.asarray(x))
    assert layer.alpha.shape == (1, 1, 5)
    np.testing.assert_allclose(_np(y), np.where(x >= 0, x, 0.25 * x), rtol=1e-12)
    alpha = np.random.default_rng(4).random((1, 1, 5))
    layer.set_weights([alpha])
    np.testing.assert_allclose(_np(layer(tnp.asarray(x))), np.where(x >= 0, x, alpha * x),
                               rtol=1e-12)
    check_grads(lambda a: layer(a), eps=1e-6, rtol=1e-6, atol=1e-8)(tnp.asarray(x))
    with tt.GradientTape() as tape:
        out = tnp.sum(layer(tnp.asarray(x)))
    (g,) = tape.gradient(out, layer.trainable_weights)
    np.testing.assert_allclose(_np(g), np.minimum(x, 0).sum(axis=(0, 1, 2), keepdims=True)[0],
                               rtol=1e-12)
    # the default: one alpha per input element, initialised to zeros (a ReLU)
    full = L.PReLU()
    full(tnp.ones((2, 3, 4)))
    assert full.alpha.shape == (3, 4) and not np.any(full.get_weights()[0])


def test_prelu_refuses_inputs_that_alpha_would_broadcast_over():
    layer = L.PReLU()
    layer(tnp.ones((2, 1, 4)))
    with pytest.raises(ValueError, match=r"alpha has shape \(1, 4\).*\(2, 5, 4\)"):
        layer(tnp.ones((2, 5, 4)))
    shared = L.PReLU(shared_axes=1)
    shared(tnp.ones((2, 3, 4)))
    assert tuple(shared(tnp.ones((2, 7, 4))).shape) == (2, 7, 4)
    with pytest.raises(ValueError, match="shared_axes"):
        L.PReLU(shared_axes=3)(tnp.ones((2, 3, 4)))


def test_masks_pass_through_activation_layers():
    for layer in [L.LeakyReLU(), L.ReLU(), L.ELU(), L.ThresholdedReLU(), L.Softmax(), L.PReLU()]:
        assert layer.supports_masking
        m = tnp.asarray(np.array([[True, False]]))
        assert layer.compute_mask(tnp.ones((1, 2, 3)), m) is m


@pytest.mark.parametrize("layer", [
    L.LeakyReLU(0.1), L.ReLU(6.0, 0.2, 0.5), L.ELU(2.0), L.ThresholdedReLU(0.3),
    L.Softmax([1, 2]), L.PReLU("ones", "l2", None, [1]),
])
def test_config_round_trips_and_defaults(layer):
    assert_config_round_trips(layer)


def test_tf_defaults():
    assert L.LeakyReLU().alpha == pytest.approx(0.3)
    r = L.ReLU()
    assert (r.max_value, r.negative_slope, r.threshold) == (None, 0.0, 0.0)
    assert L.ELU().alpha == 1.0 and L.ThresholdedReLU().theta == 1.0 and L.Softmax().axis == -1
    p = L.PReLU()
    assert p.shared_axes is None and p.get_config()["alpha_initializer"] == "zeros"


def test_bad_arguments_raise_value_errors():
    with pytest.raises(ValueError, match="max_value"):
        L.ReLU(max_value=-1)
    with pytest.raises(ValueError, match="negative_slope"):
        L.ReLU(negative_slope=-0.1)
    with pytest.raises(ValueError, match="threshold"):
        L.ReLU(threshold=None)
    with pytest.raises(ValueError, match="alpha"):
        L.LeakyReLU(alpha=None)
    with pytest.raises(ValueError, match="alpha"):
        L.ELU(alpha=None)
    with pytest.raises(ValueError, match="theta"):
        L.ThresholdedReLU(theta=-1)
    with pytest.raises(ValueError, match="out of range"):
        L.Softmax(axis=[1, 5])(tnp.ones((2, 3)))
