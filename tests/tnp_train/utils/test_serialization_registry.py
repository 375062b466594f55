"""One custom-object registry (tnp_train.utils.serialization): what register_keras_serializable,
custom_object_scope and get_custom_objects() make known is found by every kind's get /
deserialize and by load_model, as in TF 2.4.

References: TF 2.4's tensorflow/python/keras/utils/generic_utils.py: names registered as
"Package>Name"; ``deserialize_keras_object`` raises ``ValueError("Unknown " +
printable_module_name + ": " + name)`` with each kind's printable name ("loss function",
"metric function", "optimizer", "layer", "initializer", "regularizer", "constraint",
"activation function" -- tf-keras 2.21 under TF_USE_LEGACY_KERAS=1 prints the same names);
``CustomObjectScope`` copies its objects into the global dict and puts it back on exit.
"""
import numpy as np
import pytest

import tnp
import tnp_train as tt

U = tt.utils
PKG = "SerialRegistryTest"


# ------------------------------------------------------- custom objects, one of each kind
def twice(x):
    return x * 2.0


def abs_error(y_true, y_pred):
    return tnp.mean(tnp.abs(y_true - y_pred), axis=-1)


def max_error(y_true, y_pred):
    return tnp.max(tnp.abs(y_true - y_pred), axis=-1)


class ScaledMSE(tt.losses.Loss):
    def __init__(self, factor=1.0, reduction="auto", name="scaled_mse"):
        super().__init__(reduction=reduction, name=name)
        self.factor = factor

    def call(self, y_true, y_pred):
        return self.factor * tnp.mean((y_true - y_pred) ** 2, axis=-1)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


class MeanAbsError(tt.metrics.MeanMetricWrapper):
    def __init__(self, name="mean_abs_error", dtype=None):
        super().__init__(abs_error, name=name, dtype=dtype)


class HalfSGD(tt.optimizers.SGD):
    """An optimizer class of the user's (SGD's update, its own name)."""


class _ArgsConfig:
    """``get_config``: the constructor's arguments, kept as attributes of the same names."""

    def get_config(self):
        return dict(vars(self))


class ConstantInit(_ArgsConfig, tt.initializers.Initializer):
    def __init__(self, value=0.5):
        self.value = value

    def __call__(self, shape, dtype=None, **kwargs):
        return tnp.full(shape, self.value, dtype=dtype or "float32")


class L1Abs(_ArgsConfig, tt.regularizers.Regularizer):
    def __init__(self, k=0.01):
        self.k = k

    def __call__(self, x):
        return self.k * tnp.sum(tnp.abs(x))


class ScaleDown(_ArgsConfig, tt.constraints.Constraint):
    """Scales the weight down to a largest magnitude of ``v`` (the shape is kept)."""

    def __init__(self, v=1.0):
        self.v = v

    def __call__(self, w):
        return w * (self.v / tnp.maximum(self.v, tnp.max(tnp.abs(w))))


class Scale(tt.layers.Layer):
    """``x * w`` with one weight per feature, made with the custom initializer, regularizer
    and constraint, and a custom activation after it."""

    def __init__(self, initializer="ones", regularizer=None, constraint=None, activation=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.initializer = tt.initializers.get(initializer)
        self.regularizer = tt.regularizers.get(regularizer)
        self.constraint = tt.constraints.get(constraint)
        self.activation = tt.activations.get(activation)

    def build(self, input_shape):
        self.w = self.add_weight("w", shape=(input_shape[-1],), initializer=self.initializer,
                                 regularizer=self.regularizer, constraint=self.constraint)
        super().build(input_shape)

    def call(self, x):
        return self.activation(x * self.w)

    def get_config(self):
        return {**super().get_config(),
                "initializer": tt.initializers.serialize(self.initializer),
                "regularizer": tt.regularizers.serialize(self.regularizer),
                "constraint": tt.constraints.serialize(self.constraint),
                "activation": tt.activations.serialize(self.activation)}


CUSTOM = {f.__name__: f for f in (twice, abs_error, max_error, ScaledMSE, MeanAbsError, HalfSGD,
                                  ConstantInit, L1Abs, ScaleDown, Scale)}
for _obj in CUSTOM.values():       # once per process: registering twice is an error (as TF)
    U.register_keras_serializable(package=PKG)(_obj)

# (kind, TF 2.4's printable_module_name of the kind, a custom object of that kind)
KINDS = [("losses", "loss function", abs_error), ("losses", "loss function", ScaledMSE),
         ("metrics", "metric function", max_error), ("metrics", "metric function", MeanAbsError),
         ("optimizers", "optimizer", HalfSGD), ("layers", "layer", Scale),
         ("initializers", "initializer", ConstantInit), ("regularizers", "regularizer", L1Abs),
         ("constraints", "constraint", ScaleDown), ("activations", "activation function", twice)]
IDS = [f"{kind}-{obj.__name__}" for kind, _, obj in KINDS]


def lookup(kind, identifier):
    """``tt.<kind>.get(identifier)`` (layers have no ``get``: ``tt.layers.deserialize``)."""
    module = getattr(tt, kind)
    return module.deserialize(identifier) if kind == "layers" else module.get(identifier)


def is_found(got, obj):
    """A function is found as itself, a class as an instance of it (made with its defaults)."""
    return got is obj if not isinstance(obj, type) else type(got) is obj


# --------------------------------------------------------------------------- every kind
@pytest.mark.parametrize("kind,printable,obj", KINDS, ids=IDS)
def test_registered_objects_are_found_by_every_get(kind, printable, obj):
    name = f"{PKG}>{obj.__name__}"
    assert U.get_registered_name(obj) == name
    assert U.get_registered_object(name) is obj
    assert is_found(lookup(kind, name), obj)
    if isinstance(obj, type):                         # the dict form, and serialize writes it
        got = lookup(kind, {"class_name": name, "config": {}})
        assert type(got) is obj
        ser = getattr(tt, kind).serialize(got)
        assert ser["class_name"] == name
        assert type(getattr(tt, kind).deserialize(ser)) is obj
    else:
        assert getattr(tt, kind).serialize(obj) == name
        assert getattr(tt, kind).deserialize(name) is obj
    # registered under "Package>Name" only, as TF: the bare name stays unknown
    with pytest.raises(ValueError, match=f"^Unknown {printable}: {obj.__name__}"):
        lookup(kind, obj.__name__ if kind != "optimizers" else obj.__name__ + "x")


@pytest.mark.parametrize("kind,printable,obj", KINDS, ids=IDS)
def test_scoped_and_added_objects_are_found_by_every_get(kind, printable, obj):
    with pytest.raises(ValueError, match=f"^Unknown {printable}: Mine\\."):
        lookup(kind, "Mine")
    with U.custom_object_scope({"Mine": obj}) as scope:
        assert isinstance(scope, U.CustomObjectScope)
        assert is_found(lookup(kind, "Mine"), obj)
        assert U.get_custom_objects()["Mine"] is obj      # TF 2.4 copies the scope in
        if isinstance(obj, type):
            assert type(lookup(kind, {"class_name": "Mine", "config": {}})) is obj
    with pytest.raises(ValueError, match=f"^Unknown {printable}: Mine\\."):
        lookup(kind, "Mine")
    U.get_custom_objects()["Mine"] = obj                  # the live dict, as TF's
    try:
        assert is_found(lookup(kind, "Mine"), obj)
    finally:
        del U.get_custom_objects()["Mine"]
    # custom_objects= of deserialize finds it too
    module = getattr(tt, kind)
    assert is_found(module.deserialize(
        {"class_name": "Mine", "config": {}} if kind == "optimizers" else "Mine",
        custom_objects={"Mine": obj}), obj)


@pytest.mark.parametrize("kind,printable", sorted({(k, p) for k, p, _ in KINDS}))
def test_unknown_names_are_keras_value_errors(kind, printable):
    for identifier in ("no_such_thing", {"class_name": "no_such_thing", "config": {}}):
        with pytest.raises(ValueError) as e:
            lookup(kind, identifier)
        assert str(e.value).startswith(f"Unknown {printable}: no_such_thing.")


def test_registration_rules_as_tf():
    with pytest.raises(ValueError, match=f"^{PKG}>twice has already been registered to"):
        U.register_keras_serializable(package=PKG, name="twice")(lambda x: x)   # same name
    with pytest.raises(ValueError, match="has already been registered to " + PKG + ">twice"):
        U.register_keras_serializable(package="Other", name="again")(twice)
    with pytest.raises(ValueError, match="Cannot register a class that does not have a "
                                         "get_config"):
        U.register_keras_serializable()(type("NoConfig", (), {}))
    assert U.get_registered_name(abs) == "abs"           # not registered: its __name__

    # a subclass of a registered class is not registered with it
    class SubScale(Scale):
        pass
    assert U.get_registered_name(SubScale) == "SubScale"
    assert tt.layers.serialize(SubScale())["class_name"] == "SubScale"


def test_scopes_nest_and_put_back_what_they_replaced():
    def other(x):
        return x

    objects = U.get_custom_objects()
    with U.custom_object_scope({"a": twice}):
        with U.custom_object_scope({"a": other}, {"b": other}):
            assert tt.activations.get("a") is other and tt.activations.get("b") is other
        assert tt.activations.get("a") is twice and "b" not in objects
        # registered inside a scope: stays registered after it (TF 2.4 dropped it)
        U.register_keras_serializable(package=PKG, name="inside_scope")(other)
    assert "a" not in objects and U.get_registered_object(f"{PKG}>inside_scope") is other
    assert tt.activations.get(f"{PKG}>inside_scope") is other


def test_kinds_keep_their_own_lookup_rules():
    # TF 2.4's special cases, through the same registry
    assert tt.regularizers.get("l1_l2").get_config() == pytest.approx({"l1": 0.01, "l2": 0.01})
    assert type(tt.optimizers.get("ADAM")) is tt.optimizers.Adam   # built-ins: any case
    assert type(tt.constraints.get("max_norm")) is tt.constraints.MaxNorm
    assert tt.activations.get(None) is tt.activations.linear
    assert type(tt.initializers.get(ConstantInit)) is ConstantInit  # a class is instantiated
    with pytest.raises(TypeError, match="Could not interpret activation function identifier"):
        tt.activations.get(3)
    with pytest.raises(ValueError, match="Could not interpret optimizer identifier"):
        tt.optimizers.get(3)


# --------------------------------------------------------------------------- load_model
X = np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32)
Y = np.random.default_rng(1).standard_normal((8, 3)).astype(np.float32)


def _model():
    """A compiled model, trained one step, with a custom object of every kind."""
    scale = Scale(initializer=ConstantInit(0.75), regularizer=L1Abs(0.01),
                  constraint=ScaleDown(2.0), activation=twice, name="scale")
    model = tt.Sequential([tt.Input((3,)), scale])
    model.compile(optimizer=HalfSGD(learning_rate=0.1), loss=ScaledMSE(factor=3.0),
                  metrics=[max_error, MeanAbsError()])
    model.fit(X, Y, batch_size=8, epochs=1, verbose=0)
    return model


def _check_loaded(loaded, model):
    layer = loaded.layers[0]
    assert type(layer) is Scale
    assert type(layer.initializer) is ConstantInit and layer.initializer.value == 0.75
    assert type(layer.regularizer) is L1Abs and layer.regularizer.k == 0.01
    assert type(layer.constraint) is ScaleDown and layer.constraint.v == 2.0
    assert layer.activation is twice
    opt = getattr(loaded.optimizer, "inner_optimizer", loaded.optimizer)
    assert type(opt) is HalfSGD
    w = np.asarray(model.layers[0].w.numpy())
    np.testing.assert_array_equal(np.asarray(loaded.layers[0].w.numpy()), w)
    np.testing.assert_array_equal(np.asarray(loaded.predict(X, verbose=0)),
                                  np.asarray(model.predict(X, verbose=0)))
    # evaluate against hand-written NumPy: loss = 3 * mean((y - 2 x w)^2) + 0.01 * sum|w|,
    # max_error = mean over samples of max |y - p|, mean_abs_error = mean |y - p|
    p = 2.0 * X * w
    got = loaded.evaluate(X, Y, batch_size=8, verbose=0, return_dict=True)
    np.testing.assert_allclose(got["loss"], 3.0 * np.mean((Y - p) ** 2) + 0.01 * np.abs(w).sum(),
                               rtol=1e-5)
    np.testing.assert_allclose(got["max_error"], np.mean(np.max(np.abs(Y - p), axis=-1)),
                               rtol=1e-5)
    np.testing.assert_allclose(got["mean_abs_error"], np.mean(np.abs(Y - p)), rtol=1e-5)


def test_registered_objects_save_and_load_without_custom_objects(tmp_path):
    model = _model()
    path = str(tmp_path / "m")
    model.save(path)
    _check_loaded(tt.models.load_model(path), model)


def test_plain_objects_load_through_custom_objects_or_a_scope(tmp_path, monkeypatch):
    # the same objects, unregistered: saved under their plain names
    from tnp_train.utils import serialization as registry
    for obj in CUSTOM.values():
        monkeypatch.delitem(registry._GLOBAL_CUSTOM_NAMES, obj)
    model = _model()
    path = str(tmp_path / "m")
    model.save(path)
    with pytest.raises(ValueError, match="^Unknown layer: Scale"):
        tt.models.load_model(path)
    _check_loaded(tt.models.load_model(path, custom_objects=CUSTOM), model)
    with U.custom_object_scope(CUSTOM):
        _check_loaded(tt.models.load_model(path), model)


def test_raw_objects_in_a_config_are_written_by_their_registered_name(tmp_path):
    # a layer whose config holds its initializer object itself: JSON writes it (model.save and
    # to_json) as {"class_name", "config"} under the name that finds it again
    class RawConfig(Scale):
        def get_config(self):
            return {**super().get_config(), "initializer": self.initializer}

    U.register_keras_serializable(package=PKG, name="RawConfig")(RawConfig)
    try:
        model = tt.Sequential([tt.Input((3,)), RawConfig(initializer=ConstantInit(0.25))])
        assert f'"class_name": "{PKG}>ConstantInit"' in model.to_json()
        back = tt.models.model_from_json(model.to_json())
        assert type(back.layers[0].initializer) is ConstantInit
        model.save(str(tmp_path / "m"))
        loaded = tt.models.load_model(str(tmp_path / "m"))
        assert type(loaded.layers[0].initializer) is ConstantInit
        np.testing.assert_array_equal(np.asarray(loaded.layers[0].w.numpy()), np.full(3, 0.25))
    finally:
        from tnp_train.utils import serialization as registry
        del registry._GLOBAL_CUSTOM_OBJECTS[f"{PKG}>RawConfig"]
        del registry._GLOBAL_CUSTOM_NAMES[RawConfig]
