"""Training & evaluation with the built-in methods, from
https://keras.io/guides/training_with_built_in_methods/ (keras-io guides/
training_with_built_in_methods.py, fchollet, Keras 2 era: "API overview: a first end-to-end
example", "Custom metrics", "Handling losses and metrics that don't fit the standard signature"
(``add_loss`` and ``add_metric`` in a layer and on a functional model) and "Using callbacks"
sections).

Changes from the keras-io program (nothing else differs):
- imports: ``from _backend import ...`` replaces ``import tensorflow as tf``,
  ``from tensorflow import keras`` and ``from tensorflow.keras import layers``;
- data: scikit-learn's 8x8 digits (``_data.digits``, flattened to 64 features) replace
  ``keras.datasets.mnist.load_data()`` (784 features), so the validation reserve is 287 samples
  instead of 10,000 and ``keras.Input(shape=(64,))``;
- epochs 2 -> 20 (1 -> 10 in the later sections) for the ~1,150 training images;
- ``--quick``: 2 epochs; the last line reports the result for compare.py.
"""
import numpy as np
from _backend import keras, layers, tf, QUICK, report
import _data

"""
## API overview: a first end-to-end example
"""

inputs = keras.Input(shape=(64,), name="digits")
x = layers.Dense(64, activation="relu", name="dense_1")(inputs)
x = layers.Dense(64, activation="relu", name="dense_2")(x)
outputs = layers.Dense(10, activation="softmax", name="predictions")(x)

model = keras.Model(inputs=inputs, outputs=outputs)

(x_train, y_train), (x_test, y_test) = _data.digits()

# Preprocess the data (these are NumPy arrays)
x_train = x_train.reshape(-1, 64).astype("float32") / 255
x_test = x_test.reshape(-1, 64).astype("float32") / 255

y_train = y_train.astype("float32")
y_test = y_test.astype("float32")

# Reserve 287 samples for validation
x_val = x_train[-287:]
y_val = y_train[-287:]
x_train = x_train[:-287]
y_train = y_train[:-287]

model.compile(
    optimizer=keras.optimizers.RMSprop(),  # Optimizer
    # Loss function to minimize
    loss=keras.losses.SparseCategoricalCrossentropy(),
    # List of metrics to monitor
    metrics=[keras.metrics.SparseCategoricalAccuracy()],
)

print("Fit model on training data")
history = model.fit(
    x_train,
    y_train,
    batch_size=64,
    epochs=2 if QUICK else 20,
    # We pass some validation for
    # monitoring validation loss and metrics
    # at the end of each epoch
    validation_data=(x_val, y_val),
    verbose=2,
)
print(history.history)

# Evaluate the model on the test data using `evaluate`
print("Evaluate on test data")
results = model.evaluate(x_test, y_test, batch_size=128)
print("test loss, test acc:", results)

# Generate predictions (probabilities -- the output of the last layer)
# on new data using `predict`
print("Generate predictions for 3 samples")
predictions = model.predict(x_test[:3])
print("predictions shape:", predictions.shape)

"""
## Custom metrics
"""


def get_uncompiled_model():
    inputs = keras.Input(shape=(64,), name="digits")
    x = layers.Dense(64, activation="relu", name="dense_1")(inputs)
    x = layers.Dense(64, activation="relu", name="dense_2")(x)
    outputs = layers.Dense(10, activation="softmax", name="predictions")(x)
    model = keras.Model(inputs=inputs, outputs=outputs)
    return model


class CategoricalTruePositives(keras.metrics.Metric):
    def __init__(self, name="categorical_true_positives", **kwargs):
        super(CategoricalTruePositives, self).__init__(name=name, **kwargs)
        self.true_positives = self.add_weight(name="ctp", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = tf.reshape(tf.argmax(y_pred, axis=1), shape=(-1, 1))
        values = tf.cast(y_true, "int32") == tf.cast(y_pred, "int32")
        values = tf.cast(values, "float32")
        if sample_weight is not None:
            sample_weight = tf.cast(sample_weight, "float32")
            values = tf.multiply(values, sample_weight)
        self.true_positives.assign_add(tf.reduce_sum(values))

    def result(self):
        return self.true_positives

    def reset_states(self):
        # The state of the metric will be reset at the start of each epoch.
        self.true_positives.assign(0.0)


model = get_uncompiled_model()
model.compile(
    optimizer=keras.optimizers.RMSprop(learning_rate=1e-3),
    loss=keras.losses.SparseCategoricalCrossentropy(),
    metrics=[CategoricalTruePositives()],
)
ctp_history = model.fit(x_train, y_train, batch_size=64, epochs=1 if QUICK else 3, verbose=2)

"""
## Handling losses and metrics that don't fit the standard signature
"""


class ActivityRegularizationLayer(layers.Layer):
    def call(self, inputs):
        self.add_loss(tf.reduce_sum(inputs) * 0.1)
        return inputs  # Pass-through layer.


inputs = keras.Input(shape=(64,), name="digits")
x = layers.Dense(64, activation="relu", name="dense_1")(inputs)

# Insert activity regularization as a layer
x = ActivityRegularizationLayer()(x)

x = layers.Dense(64, activation="relu", name="dense_2")(x)
outputs = layers.Dense(10, name="predictions")(x)

model = keras.Model(inputs=inputs, outputs=outputs)
model.compile(
    optimizer=keras.optimizers.RMSprop(learning_rate=1e-3),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
)

# The displayed loss will be much higher than before
# due to the regularization component.
reg_history = model.fit(x_train, y_train, batch_size=64, epochs=1, verbose=2)

"""
You can do the same for logging metric values, using `add_metric()`:
"""


class MetricLoggingLayer(layers.Layer):
    def call(self, inputs):
        # The `aggregation` argument defines
        # how to aggregate the per-batch values
        # over each epoch:
        # in this case we simply average them.
        self.add_metric(
            keras.backend.std(inputs), name="std_of_activation", aggregation="mean"
        )
        return inputs  # Pass-through layer.


inputs = keras.Input(shape=(64,), name="digits")
x = layers.Dense(64, activation="relu", name="dense_1")(inputs)

# Insert std logging as a layer.
x = MetricLoggingLayer()(x)

x = layers.Dense(64, activation="relu", name="dense_2")(x)
outputs = layers.Dense(10, name="predictions")(x)

model = keras.Model(inputs=inputs, outputs=outputs)
model.compile(
    optimizer=keras.optimizers.RMSprop(learning_rate=1e-3),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
)
std_history = model.fit(x_train, y_train, batch_size=64, epochs=1, verbose=2)

"""
In the [Functional API](/guides/functional_api/),
you can also call `model.add_loss(loss_tensor)`,
or `model.add_metric(metric_tensor, name, aggregation)`.

Here's a simple example:
"""

inputs = keras.Input(shape=(64,), name="digits")
x1 = layers.Dense(64, activation="relu", name="dense_1")(inputs)
x2 = layers.Dense(64, activation="relu", name="dense_2")(x1)
outputs = layers.Dense(10, name="predictions")(x2)
model = keras.Model(inputs=inputs, outputs=outputs)

model.add_loss(tf.reduce_sum(x1) * 0.1)

model.add_metric(keras.backend.std(x1), name="std_of_activation", aggregation="mean")

model.compile(
    optimizer=keras.optimizers.RMSprop(1e-3),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
)
functional_history = model.fit(x_train, y_train, batch_size=64, epochs=1, verbose=2)

"""
## Using callbacks
"""

model = get_uncompiled_model()
model.compile(
    optimizer=keras.optimizers.RMSprop(learning_rate=1e-3),
    loss=keras.losses.SparseCategoricalCrossentropy(),
    metrics=[keras.metrics.SparseCategoricalAccuracy()],
)
callbacks = [
    keras.callbacks.EarlyStopping(
        # Stop training when `val_loss` is no longer improving
        monitor="val_loss",
        # "no longer improving" being defined as "no better than 1e-2 less"
        min_delta=1e-2,
        # "no longer improving" being further defined as "for at least 2 epochs"
        patience=2,
        verbose=1,
    )
]
cb_history = model.fit(
    x_train,
    y_train,
    epochs=2 if QUICK else 20,
    batch_size=64,
    callbacks=callbacks,
    validation_split=0.2,
    verbose=2,
)

report(history.history["loss"][0], history.history["loss"][-1], "test accuracy", results[1],
       ctp_last=ctp_history.history["categorical_true_positives"][-1],
       reg_loss=reg_history.history["loss"][-1],
       std_of_activation=std_history.history["std_of_activation"][-1],
       functional_add_loss=functional_history.history["loss"][-1],
       functional_std=functional_history.history["std_of_activation"][-1],
       early_stopping_epochs=len(cb_history.history["loss"]),
       early_stopping_val_acc=cb_history.history["val_sparse_categorical_accuracy"][-1])
