"""The cross-entropy of a sigmoid or softmax output is computed from the activation's logits, as
Keras does (TF 2.4 inside fit/evaluate, tf-keras 2.21 always): a saturated, wrong unit gets
loss 30 and gradient -1 (tf-keras 2.21 on this model: 30.0, [[0.0], [-1.0]]; softmax 60.0,
[[0, 0], [1, -1]]), where clipped probabilities give 15.4 and 0. Anything done to the output
after the activation (a cast, a slice) falls back to the probabilities, as in Keras."""
import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.autodiff import GradientTape

CASES = [("sigmoid", "binary_crossentropy", np.ones((1, 1), "float32"), 30.0, [[0.0], [-1.0]]),
         ("softmax", "categorical_crossentropy", np.array([[0, 1]], "float32"), 60.0,
          [[0.0, 0.0], [1.0, -1.0]]),
         ("softmax", "sparse_categorical_crossentropy", np.array([1]), 60.0,
          [[0.0, 0.0], [1.0, -1.0]])]


def _model(act):
    units = 1 if act == "sigmoid" else 2
    bias = [-30.0] if units == 1 else [30.0, -30.0]
    return tt.Sequential([tt.Input((1,)), tt.layers.Dense(
        units, activation=act, kernel_initializer="zeros",
        bias_initializer=tt.initializers.Constant(bias))])


@pytest.mark.parametrize("act, loss, y, want_loss, want_grads", CASES)
@pytest.mark.parametrize("as_class", [False, True])
def test_saturated_output_gets_keras_loss_and_gradient(act, loss, y, want_loss, want_grads,
                                                       as_class):
    model = _model(act)
    fn = tt.losses.get(loss)
    if as_class:
        fn = tt.losses.get({"binary_crossentropy": "BinaryCrossentropy",
                            "categorical_crossentropy": "CategoricalCrossentropy",
                            "sparse_categorical_crossentropy":
                                "SparseCategoricalCrossentropy"}[loss])
    with GradientTape() as tape:
        value = fn(y, model(np.zeros((1, 1), "float32")))
    grads = tape.gradient(value, model.trainable_variables)
    assert float(np.asarray(value).mean()) == pytest.approx(want_loss, rel=1e-6)
    for g, w in zip(grads, want_grads):
        np.testing.assert_allclose(np.asarray(g).reshape(np.shape(w)), w, atol=1e-6)


def test_a_saturated_unit_recovers_in_fit():
    model = _model("sigmoid")
    model.compile(tt.optimizers.SGD(1.0), "binary_crossentropy")
    hist = model.fit(np.zeros((4, 1), "float32"), np.ones((4, 1), "float32"), epochs=3,
                     verbose=0).history["loss"]
    assert hist[0] == pytest.approx(30.0, rel=1e-5) and hist[-1] < hist[0] - 1.5


def test_unsaturated_values_equal_the_probability_formula():
    rng = np.random.default_rng(0)
    z = tnp.asarray(rng.standard_normal((5, 3)))
    p = tt.activations.sigmoid(z)
    t = rng.integers(0, 2, (5, 3)).astype("float64")
    pn = 1 / (1 + np.exp(-np.asarray(z)))
    want = -(t * np.log(pn) + (1 - t) * np.log(1 - pn)).mean(-1)
    np.testing.assert_allclose(np.asarray(tt.losses.binary_crossentropy(t, p)), want,
                               rtol=1e-6)


def test_anything_after_the_activation_uses_the_probabilities():
    z = tnp.asarray(np.array([[-30.0]], "float32"))
    p = tt.activations.sigmoid(z)
    assert tt.activations.logits_of(p, "sigmoid")[0] is z
    later = p * 1.0
    assert tt.activations.logits_of(later, "sigmoid") is None
    clipped = float(np.asarray(tt.losses.binary_crossentropy(np.ones((1, 1)), later))[0])
    assert clipped == pytest.approx(-np.log(1e-7 + 1e-7), rel=1e-3)   # Keras's clipped value
