"""The loss classes without arguments of their own (made from one table in tt.losses) keep
Keras's signatures, names and errors."""
import inspect

import numpy as np
import pytest

import tnp
import tnp_train as tt

# inspect.signature(tf.keras.losses.<name>.__init__) under tf-keras 2.21 (TF_USE_LEGACY_KERAS=1)
KERAS_SIGNATURES = {
    "MeanSquaredError": "(self, reduction='auto', name='mean_squared_error')",
    "MeanAbsoluteError": "(self, reduction='auto', name='mean_absolute_error')",
    "MeanAbsolutePercentageError": "(self, reduction='auto', name='mean_absolute_percentage_error')",
    "MeanSquaredLogarithmicError":
        "(self, reduction='auto', name='mean_squared_logarithmic_error')",
    "LogCosh": "(self, reduction='auto', name='log_cosh')",
    "KLDivergence": "(self, reduction='auto', name='kl_divergence')",
    "Poisson": "(self, reduction='auto', name='poisson')",
    "Hinge": "(self, reduction='auto', name='hinge')",
    "SquaredHinge": "(self, reduction='auto', name='squared_hinge')",
    "CategoricalHinge": "(self, reduction='auto', name='categorical_hinge')",
}


@pytest.mark.parametrize("name", sorted(KERAS_SIGNATURES))
def test_signature_name_and_config_are_keras(name):
    cls = getattr(tt.losses, name)
    assert str(inspect.signature(cls.__init__)) == KERAS_SIGNATURES[name]
    assert (cls.__name__, cls.__qualname__, cls.__module__) == (name, name, "tnp_train.losses")
    default = KERAS_SIGNATURES[name].split("name='")[1][:-2]
    loss = cls()
    assert loss.name == default
    assert loss.get_config() == {"reduction": "auto", "name": default}
    again = cls.from_config(cls(reduction="sum", name="x").get_config())
    assert (again.reduction, again.name) == ("sum", "x")
    assert tt.losses.deserialize(tt.losses.serialize(loss)).get_config() == loss.get_config()


@pytest.mark.parametrize("name", sorted(KERAS_SIGNATURES))
def test_unknown_argument_names_the_class(name):
    with pytest.raises(TypeError, match=rf"{name}\.__init__\(\) got an unexpected keyword"):
        getattr(tt.losses, name)(delta=1.0)


def test_class_computes_its_function_form_and_subclasses():
    y_true = np.array([[0.0, 1.0], [1.0, 0.0]], np.float32)
    y_pred = np.array([[0.2, 0.7], [0.6, 0.1]], np.float32)
    # mean over the batch of mean((y_true - y_pred)^2, axis=-1), by hand
    expected = np.mean(np.mean((y_true - y_pred) ** 2, axis=-1))
    got = tt.losses.MeanSquaredError()(tnp.asarray(y_true), tnp.asarray(y_pred))
    np.testing.assert_allclose(float(got), expected, rtol=1e-6)

    class Doubled(tt.losses.MeanSquaredError):
        def call(self, y_true, y_pred):
            return 2.0 * super().call(y_true, y_pred)

    assert Doubled().name == "mean_squared_error"
    np.testing.assert_allclose(float(Doubled()(tnp.asarray(y_true), tnp.asarray(y_pred))),
                               2 * expected, rtol=1e-6)


@pytest.mark.parametrize("cls", [tt.losses.CategoricalCrossentropy, tt.losses.BinaryCrossentropy])
def test_label_smoothing_is_checked_and_from_logits_read(cls):
    with pytest.raises(ValueError, match=rf"{cls.__name__}: label_smoothing must be in \[0, 1\]"):
        cls(label_smoothing=1.5)
    assert cls(from_logits=True).from_logits is True
    assert tt.losses.SparseCategoricalCrossentropy(from_logits=True).from_logits is True
