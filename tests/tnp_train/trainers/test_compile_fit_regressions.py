"""Numbers that used to come out silently wrong on keras-io examples (only imports and data
changed), each checked against what TF/Keras 2.4 computes on the same input.

No TF here: every expected value is hand-written NumPy that follows TF 2.4's semantics, named
in a comment (``compile_utils.py``: ``_get_metric_object``, ``match_dtype_and_rank``,
``LossesContainer.__call__``; ``training.py``: ``_minimize``, ``evaluate``).
"""
import numpy as np
import pytest

import tnp
import tnp_train as tt


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def tf_binary_crossentropy(y, p, eps=1e-7):
    """TF 2.4 ``backend.binary_crossentropy`` on probabilities: clip, then log(p + eps)."""
    p = np.clip(p, eps, 1 - eps)
    return -(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps))


def logistic_data(n=64, seed=0):
    """Separable-ish data with integer labels of shape (n,) and three flipped labels."""
    r = np.random.default_rng(seed)
    X = r.standard_normal((n, 2))
    y = (X[:, 0] - 0.5 * X[:, 1] > 0).astype(np.int64)
    y[:3] = 1 - y[:3]
    return X, y


def logistic_model(W=((2.0,), (-1.0,)), b=(0.1,)):
    inp = tt.Input((2,), dtype="float64")
    out = tt.layers.Dense(1, activation="sigmoid", dtype="float64")(inp)
    model = tt.Model(inp, out)
    model.set_weights([np.array(W), np.array(b)])
    return model


def predict_np(model, X):
    W, b = model.get_weights()
    return sigmoid(X @ W + b)[:, 0]


# ---------------------------------------------------------------- 1. "accuracy" resolution
@pytest.mark.parametrize("name", ["accuracy", "acc", "Accuracy"])
def test_accuracy_of_a_sigmoid_output_with_integer_labels_is_binary_accuracy(name):
    # TF 2.4 `_get_metric_object`: the output's last dim is 1 -> binary_accuracy, whatever the
    # labels' rank; it used to resolve to sparse categorical accuracy (argmax of one column)
    X, y = logistic_data()
    model = logistic_model()
    model.compile(tt.optimizers.SGD(0.1), "binary_crossentropy", metrics=[name])
    acc0 = np.mean((predict_np(model, X) > 0.5) == y)
    assert acc0 > 0.9 and abs(np.mean(y == 0) - acc0) > 0.3   # far from chance level
    hist = model.fit(X, y, batch_size=len(X), epochs=1, shuffle=False, verbose=0)
    # one batch: the metric sees the predictions made before the update
    np.testing.assert_allclose(hist.history[name][0], acc0, rtol=1e-7)
    acc1 = np.mean((predict_np(model, X) > 0.5) == y)
    loss, acc = model.evaluate(X, y, batch_size=16, verbose=0)
    np.testing.assert_allclose(acc, acc1, rtol=1e-7)
    np.testing.assert_allclose(loss, np.mean(tf_binary_crossentropy(y, predict_np(model, X))),
                               rtol=1e-6)


@pytest.mark.parametrize("name", ["crossentropy", "ce"])
def test_crossentropy_of_a_sigmoid_output_is_binary_crossentropy(name):
    X, y = logistic_data()
    model = logistic_model()
    model.compile("sgd", "mse", metrics=[name])
    logs = model.evaluate(X, y, batch_size=64, verbose=0, return_dict=True)
    p = predict_np(model, X)
    np.testing.assert_allclose(logs[name], np.mean(tf_binary_crossentropy(y, p)), rtol=1e-6)
    np.testing.assert_allclose(logs["loss"], np.mean((p - y) ** 2), rtol=1e-6)


def _softmax_model():
    inp = tt.Input((2,), dtype="float64")
    out = tt.layers.Dense(3, activation="softmax", dtype="float64")(inp)
    model = tt.Model(inp, out)
    W = np.array([[1.0, -1.0, 0.5], [0.3, 0.8, -1.2]])
    model.set_weights([W, np.zeros(3)])
    return model, W


@pytest.mark.parametrize("labels", ["sparse", "sparse_column", "one_hot"])
def test_accuracy_of_a_softmax_output_follows_the_label_shape(labels):
    # TF 2.4: y_true of lower rank, or a last dim of 1 against >1 classes -> sparse, else
    # categorical; both equal argmax agreement here
    r = np.random.default_rng(1)
    X = r.standard_normal((30, 2))
    model, W = _softmax_model()
    cls = r.integers(0, 3, 30)
    y = {"sparse": cls, "sparse_column": cls[:, None], "one_hot": np.eye(3)[cls]}[labels]
    model.compile("sgd", "categorical_crossentropy" if labels == "one_hot"
                  else "sparse_categorical_crossentropy", metrics=["acc", "ce"])
    logs = model.evaluate(X, y, verbose=0, return_dict=True)
    z = X @ W
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(logs["acc"], np.mean(np.argmax(z, 1) == cls), rtol=1e-7)
    np.testing.assert_allclose(logs["ce"], np.mean(-np.log(p[np.arange(30), cls])), rtol=1e-6)


# ---------------------------------------------------------------- 2./4. compiled_loss in a custom train_step
class LossRecordingModel(tt.Model):
    """A functional model whose own ``train_step`` calls ``compiled_loss`` with the model's
    regularization losses, and keeps every loss that call returned."""
    returned = []

    def train_step(self, data):
        features, targets = data
        with tt.GradientTape() as tape:
            predictions = self(features, training=True)
            total = self.compiled_loss(targets, predictions, regularization_losses=self.losses)
        type(self).returned.append(total)
        weights = self.trainable_variables
        self.optimizer.apply_gradients(list(zip(tape.gradient(total, weights), weights)))
        self.compiled_metrics.update_state(targets, predictions)
        return {metric.name: metric.result() for metric in self.metrics}


def _regression(n=16, seed=2):
    r = np.random.default_rng(seed)
    X = r.standard_normal((n, 4))
    y = X @ np.array([[1.0], [-2.0], [0.5], [0.0]]) + 0.3 + 0.1 * r.standard_normal((n, 1))
    W0 = r.uniform(-0.5, 0.5, (4, 1))
    b0 = np.array([0.05])
    return X, y, W0, b0


def _custom_model(W0, b0, l2=0.01):
    inputs = tt.Input(shape=(4,), dtype="float64")
    outputs = tt.layers.Dense(1, dtype="float64", kernel_regularizer=tt.regularizers.l2(l2))(inputs)
    model = LossRecordingModel(inputs, outputs)
    model.set_weights([W0, b0])
    return model


@pytest.mark.parametrize("target_shape", ["column", "flat"])
def test_compiled_loss_in_a_custom_train_step_is_the_scalar_total_and_one_sgd_step(target_shape):
    X, y, W0, b0 = _regression()
    n, lr, l2 = len(X), 0.1, 0.01
    model = _custom_model(W0, b0, l2)
    assert isinstance(model, LossRecordingModel) and isinstance(model, tt.models.Functional)
    model.compile(optimizer=tt.optimizers.SGD(lr), loss="mse", metrics=["mae"])
    LossRecordingModel.returned.clear()
    targets = y if target_shape == "column" else y[:, 0]     # (n,) meets (n, 1) row by row
    hist = model.fit(X, targets, batch_size=n, epochs=1, shuffle=False, verbose=0)
    # by hand: loss = mean(e^2) + l2 * sum(W^2); dL/dW = 2 X^T e / n + 2 l2 W; dL/db = 2 mean(e)
    e = X @ W0 + b0 - y
    loss = np.mean(e ** 2) + l2 * np.sum(W0 ** 2)
    (returned,) = LossRecordingModel.returned
    assert isinstance(returned, tnp.ndarray) and returned.ndim == 0
    np.testing.assert_allclose(float(returned), loss, rtol=1e-12)
    np.testing.assert_allclose(float(hist.history["loss"][0]), loss, rtol=1e-6)
    np.testing.assert_allclose(float(hist.history["mae"][0]), np.mean(np.abs(e)), rtol=1e-6)
    W1, b1 = model.get_weights()
    np.testing.assert_allclose(W1, W0 - lr * (2 * X.T @ e / n + 2 * l2 * W0), rtol=1e-12)
    np.testing.assert_allclose(b1, b0 - lr * 2 * np.mean(e), rtol=1e-12)


def test_compiled_loss_updates_the_loss_mean_weighted_by_batch_size():
    # TF 2.4 LossesContainer: Mean.update_state(total, sample_weight=batch size)
    X, y, W0, b0 = _regression(n=10)
    model = _custom_model(W0, b0, l2=0.0)
    model.compile(tt.optimizers.SGD(0.0), loss="mse")
    hist = model.fit(X, y, batch_size=4, epochs=1, shuffle=False, verbose=0)   # 4 + 4 + 2
    per = ((X @ W0 + b0 - y) ** 2)[:, 0]
    np.testing.assert_allclose(float(hist.history["loss"][0]), per.mean(), rtol=1e-6)


# ---------------------------------------------------------------- 3. evaluate returns floats
class CustomEvalModel(tt.Model):
    def test_step(self, data):
        x, y = data
        y_pred = self(x, training=False)
        self.compiled_loss(y, y_pred, regularization_losses=self.losses)
        self.compiled_metrics.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


def test_evaluate_with_a_custom_test_step_returns_python_floats():
    X, y, W0, b0 = _regression()
    inputs = tt.Input((4,), dtype="float64")
    model = CustomEvalModel(inputs, tt.layers.Dense(1, dtype="float64")(inputs))
    model.set_weights([W0, b0])
    model.compile("sgd", loss="mse", metrics=["mae"])
    e = X @ W0 + b0 - y
    as_list = model.evaluate(X, y, batch_size=16, verbose=0)
    as_dict = model.evaluate(X, y, batch_size=16, verbose=0, return_dict=True)
    # TF's to_numpy_or_python_type: scalars come back as Python floats
    assert [type(v) for v in as_list] == [float, float]
    assert list(as_dict) == ["loss", "mae"] and all(type(v) is float for v in as_dict.values())
    np.testing.assert_allclose(as_list, [np.mean(e ** 2), np.mean(np.abs(e))], rtol=1e-6)
    np.testing.assert_allclose(list(as_dict.values()), as_list, rtol=0)


def test_evaluate_of_a_step_returning_extra_keys_lists_them_after_the_metrics():
    class Extra(tt.Model):
        def test_step(self, data):
            logs = super().test_step(data)
            return {"zeta": tnp.asarray(2.5), **logs}

    inputs = tt.Input((4,), dtype="float64")
    model = Extra(inputs, tt.layers.Dense(1, dtype="float64")(inputs))
    model.compile("sgd", "mse")
    X, y, _, _ = _regression()
    loss, zeta = model.evaluate(X, y, verbose=0)     # TF's flatten_metrics_in_order
    assert type(loss) is float and zeta == 2.5 and type(zeta) is float


# ---------------------------------------------------------------- 4. subclassing a functional model
def test_a_subclassed_functional_model_trains_with_its_own_step_and_saves(tmp_path):
    X, y, W0, b0 = _regression()
    model = _custom_model(W0, b0)
    model.compile(optimizer=tt.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
    LossRecordingModel.returned.clear()
    model.fit(X, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    assert len(LossRecordingModel.returned) == 4          # the subclass's train_step ran every step
    model.save(tmp_path / "m")
    loaded = tt.models.load_model(tmp_path / "m", custom_objects={"LossRecordingModel": LossRecordingModel})
    assert type(loaded) is LossRecordingModel
    np.testing.assert_allclose(np.asarray(loaded.predict(X)), np.asarray(model.predict(X)),
                               rtol=1e-12)
    LossRecordingModel.returned.clear()
    loaded.fit(X, y, batch_size=16, epochs=1, verbose=0)
    assert len(LossRecordingModel.returned) == 1

    # a class that was never called with inputs/outputs in this process loads as itself too
    class Fresh(tt.Model):
        def train_step(self, data):
            self.steps = getattr(self, "steps", 0) + 1
            return super().train_step(data)

    again = tt.models.load_model(tmp_path / "m", custom_objects={"LossRecordingModel": Fresh})
    assert type(again) is Fresh
    again.fit(X, y, batch_size=16, epochs=1, verbose=0)
    assert again.steps == 1


def test_a_subclass_that_builds_its_graph_in_init():
    class Net(tt.Model):
        def __init__(self, units, **kwargs):
            inputs = tt.Input((3,))
            outputs = tt.layers.Dense(units)(inputs)
            super().__init__(inputs, outputs, **kwargs)
            self.units = units

        def describe(self):
            return f"net of {self.units}"

    net = Net(2, name="n")
    assert net.name == "n" and net.describe() == "net of 2" and len(net.layers) == 2
    x = np.ones((5, 3), np.float32)
    W, b = net.get_weights()
    np.testing.assert_allclose(np.asarray(net(x)), x @ W + b, rtol=1e-6)


def test_model_with_positional_arguments_that_are_not_inputs_outputs_is_a_type_error():
    class M(tt.Model):
        def __init__(self):
            super().__init__(3)

    with pytest.raises(TypeError, match="M: Model"):
        M()


# ---------------------------------------------------------------- 5. KerasTensor.dtype
@pytest.mark.parametrize("dtype", [None, "float64", "int32", "bfloat16"])
def test_keras_tensor_dtype_is_a_dtype(dtype):
    t = tt.Input((3,), dtype=dtype)
    expected = np.dtype(tnp.bfloat16) if dtype == "bfloat16" else np.dtype(dtype or "float32")
    assert isinstance(t.dtype, np.dtype) and t.dtype == expected
    assert t.dtype.name == expected.name and t.dtype == expected.name
    if dtype in (None, "float64"):
        out = tt.layers.Dense(2, dtype=dtype)(t)
        assert isinstance(out.dtype, np.dtype) and out.dtype.name == expected.name


@pytest.mark.parametrize("dtype", ["float64", "bfloat16"])
def test_functional_model_casts_float_data_to_its_input_dtype(dtype):
    # the comparison used to be between strings, and bfloat16 (NumPy kind "V") never matched
    inp = tt.Input((2,), dtype=dtype)
    model = tt.Model(inp, tt.layers.Lambda(lambda v: v * 1, autocast=False)(inp))
    assert model(np.ones((1, 2), np.float32)).dtype == inp.dtype


# ---------------------------------------------------------------- 6. custom metric sees (batch, 1)
class BothPositive(tt.metrics.Metric):
    """Counts (with sample weights) the samples whose target and prediction are both nonzero:
    a user metric that compares its two inputs element by element, so (batch,) targets
    broadcast against (batch, 1) predictions would count batch x batch pairs."""

    def __init__(self, name="both_positive", **kwargs):
        super().__init__(name=name, **kwargs)
        self.count = self.add_weight(name="count", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        hits = ((tnp.asarray(y_true) != 0) & (tnp.asarray(y_pred) != 0)).astype(self.dtype)
        if sample_weight is not None:
            hits = hits * tnp.asarray(sample_weight).astype(self.dtype)
        self.count.assign_add(tnp.sum(hits))

    def result(self):
        return self.count

    def reset_state(self):
        self.count.assign(0.0)


def test_a_custom_metric_receives_targets_of_the_outputs_rank():
    # TF 2.4 match_dtype_and_rank: (batch,) targets of a (batch, 1) output reach user metrics
    # as (batch, 1), so the metric counts per sample; a (batch,) x (batch, 1) broadcast would
    # count batch x batch pairs
    r = np.random.default_rng(3)
    X = r.standard_normal((40, 2))
    y = (r.random(40) > 0.5).astype(np.int64)
    inp = tt.Input((2,), dtype="float64")
    model = tt.Model(inp, tt.layers.Dense(1, activation="relu", dtype="float64")(inp))
    W, b = np.array([[1.0], [-0.5]]), np.array([0.0])
    model.set_weights([W, b])
    model.compile("sgd", "binary_crossentropy", metrics=[BothPositive()])
    p = np.maximum(X @ W + b, 0)[:, 0]
    expected = np.sum(y.astype(bool) & (p != 0))       # relu gives exact zeros: some negatives
    assert 0 < expected < y.sum()
    logs = model.evaluate(X, y, batch_size=10, verbose=0, return_dict=True)
    assert logs["both_positive"] == expected


def test_a_users_loss_and_metric_functions_see_targets_of_the_outputs_rank():
    def my_mse(y_true, y_pred):
        return tnp.mean(tnp.square(y_true - y_pred), axis=-1)

    def my_abs(y_true, y_pred):
        return tnp.abs(y_true - y_pred)

    X, y, W0, b0 = _regression()
    inputs = tt.Input((4,), dtype="float64")
    model = tt.Model(inputs, tt.layers.Dense(1, dtype="float64")(inputs))
    model.set_weights([W0, b0])
    model.compile("sgd", loss=my_mse, metrics=[my_abs])
    e = X @ W0 + b0 - y
    loss, mabs = model.evaluate(X, y[:, 0], verbose=0)
    np.testing.assert_allclose([loss, mabs], [np.mean(e ** 2), np.mean(np.abs(e))], rtol=1e-6)
    # called directly, the wrappers align the ranks the same way
    yt, yp = tnp.asarray(y[:, 0]), tnp.asarray(X @ W0 + b0)
    np.testing.assert_allclose(float(tt.losses.LossFunctionWrapper(my_mse)(yt, yp)),
                               np.mean(e ** 2), rtol=1e-12)
    m = tt.metrics.MeanMetricWrapper(my_abs)
    m.update_state(yt, yp)
    np.testing.assert_allclose(float(m.result()), np.mean(np.abs(e)), rtol=1e-6)


@pytest.mark.parametrize("loss,ref", [
    ("mse", lambda y, p: np.mean((p - y) ** 2)),
    ("mae", lambda y, p: np.mean(np.abs(p - y))),
    ("binary_crossentropy", lambda y, p: np.mean(tf_binary_crossentropy(y, p))),
    ("bce", lambda y, p: np.mean(tf_binary_crossentropy(y, p))),
])
def test_builtin_losses_with_flat_labels_and_a_column_output_are_per_sample(loss, ref):
    # TF expands (N,) labels to (N, 1): never an N x N broadcast
    X, y = logistic_data(n=20)
    model = logistic_model()
    model.compile("sgd", loss)
    p = predict_np(model, X)
    np.testing.assert_allclose(model.evaluate(X, y, verbose=0), ref(y, p), rtol=1e-6)
    w = np.linspace(0.5, 2.0, 20)
    per = {"mse": (p - y) ** 2, "mae": np.abs(p - y)}.get(loss, tf_binary_crossentropy(y, p))
    np.testing.assert_allclose(model.evaluate(X, y, sample_weight=w, verbose=0),
                               np.sum(per * w) / 20, rtol=1e-6)   # SUM_OVER_BATCH_SIZE


# ---------------------------------------------------------------- 7. add_loss only, no trainable weights
class SquaredActivity(tt.Model):
    def call(self, x):
        self.add_loss(tnp.mean(x ** 2))
        return x


def test_fit_with_only_an_add_loss_and_no_trainable_weights_reports_the_loss():
    X = np.arange(10, dtype=np.float64).reshape(10, 1)
    model = SquaredActivity()
    model.compile(tt.optimizers.SGD(0.1))
    hist = model.fit(X, batch_size=4, epochs=2, shuffle=False, verbose=0)
    # TF 2.4: no targets -> no batch size for the loss mean, each batch counts once
    means = [np.mean(X[i:i + 4] ** 2) for i in (0, 4, 8)]
    np.testing.assert_allclose(hist.history["loss"], [np.mean(means)] * 2, rtol=1e-6)
    assert abs(hist.history["loss"][0] - np.sum(X ** 2) / 10) > 1    # not the per-sample mean
    assert int(model.optimizer.iterations) == 0     # `_minimize` applies nothing


def test_fit_with_frozen_weights_reports_the_loss_and_changes_nothing():
    X, y, W0, b0 = _regression()
    inputs = tt.Input((4,), dtype="float64")
    dense = tt.layers.Dense(1, dtype="float64", trainable=False)
    model = tt.Model(inputs, dense(inputs))
    model.set_weights([W0, b0])
    model.compile("sgd", "mse")
    hist = model.fit(X, y, batch_size=16, epochs=1, verbose=0)
    np.testing.assert_allclose(hist.history["loss"], [np.mean((X @ W0 + b0 - y) ** 2)],
                               rtol=1e-6)
    np.testing.assert_array_equal(model.get_weights()[0], W0)


# ---------------------------------------------------------------- more of the same class
def _two_outputs():
    inp = tt.Input((2,), dtype="float64")
    a = tt.layers.Dense(1, name="a", dtype="float64")(inp)
    b = tt.layers.Dense(1, name="b", dtype="float64")(inp)
    model = tt.Model(inp, [a, b])
    Wa, Wb = np.array([[1.0], [2.0]]), np.array([[-1.0], [0.5]])
    model.set_weights([Wa, np.zeros(1), Wb, np.zeros(1)])
    return model, Wa, Wb


def test_one_metric_object_for_two_outputs_is_copied_per_output():
    # TF 2.4 `_maybe_broadcast_to_outputs` copies a Metric given for every output: each output
    # keeps its own state and gets its own name
    r = np.random.default_rng(4)
    X, ya, yb = r.standard_normal((12, 2)), r.standard_normal(12), r.standard_normal(12)
    model, Wa, Wb = _two_outputs()
    model.compile("sgd", "mse", metrics=[tt.metrics.MeanAbsoluteError()])
    logs = model.evaluate(X, [ya, yb], verbose=0, return_dict=True)
    assert list(logs) == ["loss", "a_loss", "b_loss", "a_mean_absolute_error",
                          "b_mean_absolute_error"]
    np.testing.assert_allclose(logs["a_mean_absolute_error"], np.mean(np.abs(X @ Wa[:, 0] - ya)),
                               rtol=1e-6)
    np.testing.assert_allclose(logs["b_mean_absolute_error"], np.mean(np.abs(X @ Wb[:, 0] - yb)),
                               rtol=1e-6)


def test_a_wrapped_user_function_for_two_outputs_is_copied_too():
    def abs_error(y_true, y_pred):
        return tnp.abs(y_true - y_pred)

    r = np.random.default_rng(7)
    X, ya, yb = r.standard_normal((6, 2)), r.standard_normal(6), r.standard_normal(6)
    model, Wa, Wb = _two_outputs()
    model.compile("sgd", "mse", metrics=[tt.metrics.MeanMetricWrapper(abs_error)])
    logs = model.evaluate(X, [ya, yb], verbose=0, return_dict=True)
    np.testing.assert_allclose([logs["a_abs_error"], logs["b_abs_error"]],
                               [np.mean(np.abs(X @ Wa[:, 0] - ya)),
                                np.mean(np.abs(X @ Wb[:, 0] - yb))], rtol=1e-6)


def test_one_sample_weight_array_applies_to_every_output():
    # TF 2.4 `_conform_to_outputs`: a single structure is used for all outputs
    r = np.random.default_rng(5)
    X, ya, yb = r.standard_normal((12, 2)), r.standard_normal(12), r.standard_normal(12)
    w = np.linspace(0.1, 1.0, 12)
    model, Wa, Wb = _two_outputs()
    model.compile("sgd", "mse")
    logs = model.evaluate(X, [ya, yb], sample_weight=w, verbose=0, return_dict=True)
    la = np.sum(w * (X @ Wa[:, 0] - ya) ** 2) / 12
    lb = np.sum(w * (X @ Wb[:, 0] - yb) ** 2) / 12
    np.testing.assert_allclose([logs["a_loss"], logs["b_loss"], logs["loss"]], [la, lb, la + lb],
                               rtol=1e-6)


def test_weighted_metric_names_and_values_follow_tf():
    # TF 2.4 `_set_metric_names`: "weighted_" only where the plain name is already taken
    X, y = logistic_data(n=20)
    w = np.linspace(0.5, 2.0, 20)
    model = logistic_model()
    model.compile("sgd", "binary_crossentropy", metrics=["mae"], weighted_metrics=["mae"])
    logs = model.evaluate(X, y, sample_weight=w, verbose=0, return_dict=True)
    err = np.abs(predict_np(model, X) - y)
    assert list(logs) == ["loss", "mae", "weighted_mae"]
    np.testing.assert_allclose(logs["mae"], np.mean(err), rtol=1e-6)
    np.testing.assert_allclose(logs["weighted_mae"], np.sum(w * err) / np.sum(w), rtol=1e-6)
    only = logistic_model()
    only.compile("sgd", "binary_crossentropy", weighted_metrics=["mae"])
    assert list(only.evaluate(X, y, sample_weight=w, verbose=0, return_dict=True)) == \
        ["loss", "mae"]


def test_two_metrics_with_one_name_are_refused():
    X, y = logistic_data(n=8)
    model = logistic_model()
    model.compile("sgd", "mse", metrics=["mae", "mae"])
    with pytest.raises(ValueError, match="two metrics with the same name: mae"):
        model.evaluate(X, y, verbose=0)


def test_unknown_target_keys_are_refused():
    r = np.random.default_rng(6)
    X = r.standard_normal((4, 2))
    model, _, _ = _two_outputs()
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match=r"unexpected keys \['c'\].*\['a', 'b'\]"):
        model.evaluate(X, {"a": np.zeros(4), "c": np.zeros(4)}, verbose=0)


def test_tf_loss_aliases():
    assert tt.losses.get("bce") is tt.losses.binary_crossentropy is tt.losses.BCE
    assert tt.losses.get("huber_loss") is tt.losses.huber


def test_accuracy_of_an_output_without_a_class_axis_is_refused():
    # TF 2.4 resolves it to categorical accuracy over the batch axis: a number with no meaning
    inp = tt.Input((2,))
    model = tt.Model(inp, tt.layers.Reshape(())(tt.layers.Dense(1, activation="sigmoid")(inp)))
    model.compile("sgd", "binary_crossentropy", metrics=["accuracy"])
    with pytest.raises(ValueError, match=r"'accuracy'.*shape \(8,\).*BinaryAccuracy"):
        model.evaluate(np.zeros((8, 2)), np.zeros(8), verbose=0)


def test_evaluate_without_a_loss_reports_zero_and_fit_says_why_it_cannot_train():
    # TF 2.4: the LossesContainer returns 0 when no output has a loss; training then has no
    # gradient for any variable
    X, y = logistic_data(n=8)
    model = logistic_model()
    model.compile("sgd", metrics=["accuracy"])
    loss, acc = model.evaluate(X, y, verbose=0)
    assert loss == 0.0 and acc == np.mean((predict_np(model, X) > 0.5) == y)
    with pytest.raises(ValueError, match="No loss to minimize"):
        model.fit(X, y, verbose=0)
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match="No loss to minimize"):
        model.fit(X, verbose=0)                  # a loss, but no targets to apply it to
