"""Customizing what happens in ``fit()``, from
https://keras.io/guides/customizing_what_happens_in_fit/ (keras-io guides/
customizing_what_happens_in_fit.py, fchollet, Keras 2 era, last modified 2020/04/15; every
section but the closing GAN).

Changes from the keras-io program (nothing else differs):
- imports: ``from _backend import ...`` replaces ``import tensorflow as tf`` and
  ``from tensorflow import keras``; under tnp_train ``tf.GradientTape`` is ``tt.GradientTape``;
- data: a generated linear regression (``y = x @ w + 0.1 * noise``, x standard normal, fixed
  NumPy seed) replaces
  the guide's ``np.random.random`` inputs and targets, which have nothing to learn (the final
  metric would only measure initialisation); shapes are the guide's (1000, 32) -> (1000, 1);
- epochs 3 -> 100 so that every model reaches the noise floor;
- ``--quick``: 2 epochs; the last line reports the result for compare.py.
"""
"""
## Setup
"""

from _backend import keras, tf, QUICK, report
import numpy as np

EPOCHS = 2 if QUICK else 100

# the generated data (the guide uses np.random.random((1000, 32)) and np.random.random((1000, 1)))
_rng = np.random.RandomState(1234)
_w = _rng.normal(size=(32, 1)) / np.sqrt(32)
x = _rng.normal(size=(1000, 32))
y = x @ _w + 0.1 * _rng.normal(size=(1000, 1))
x, y = x.astype("float32"), y.astype("float32")

"""
## A first simple example
"""


class CustomModel(keras.Model):
    def train_step(self, data):
        # Unpack the data. Its structure depends on your model and
        # on what you pass to `fit()`.
        x, y = data

        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)  # Forward pass
            # Compute the loss value
            # (the loss function is configured in `compile()`)
            loss = self.compiled_loss(y, y_pred, regularization_losses=self.losses)

        # Compute gradients
        trainable_vars = self.trainable_variables
        gradients = tape.gradient(loss, trainable_vars)
        # Update weights
        self.optimizer.apply_gradients(zip(gradients, trainable_vars))
        # Update metrics (includes the metric that tracks the loss)
        self.compiled_metrics.update_state(y, y_pred)
        # Return a dict mapping metric names to current value
        return {m.name: m.result() for m in self.metrics}


# Construct and compile an instance of CustomModel
inputs = keras.Input(shape=(32,))
outputs = keras.layers.Dense(1)(inputs)
model = CustomModel(inputs, outputs)
model.compile(optimizer="adam", loss="mse", metrics=["mae"])

# Just use `fit` as usual
history = model.fit(x, y, epochs=EPOCHS, verbose=2)

"""
## Going lower-level
"""

loss_tracker = keras.metrics.Mean(name="loss")
mae_metric = keras.metrics.MeanAbsoluteError(name="mae")


class CustomModel(keras.Model):
    def train_step(self, data):
        x, y = data

        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)  # Forward pass
            # Compute our own loss
            loss = keras.losses.mean_squared_error(y, y_pred)

        # Compute gradients
        trainable_vars = self.trainable_variables
        gradients = tape.gradient(loss, trainable_vars)

        # Update weights
        self.optimizer.apply_gradients(zip(gradients, trainable_vars))

        # Compute our own metrics
        loss_tracker.update_state(loss)
        mae_metric.update_state(y, y_pred)
        return {"loss": loss_tracker.result(), "mae": mae_metric.result()}

    @property
    def metrics(self):
        # We list our `Metric` objects here so that `reset_states()` can be
        # called automatically at the start of each epoch
        # or at the start of `evaluate()`.
        # If you don't implement this property, you have to call
        # `reset_states()` yourself at the time of your choosing.
        return [loss_tracker, mae_metric]


# Construct an instance of CustomModel
inputs = keras.Input(shape=(32,))
outputs = keras.layers.Dense(1)(inputs)
model = CustomModel(inputs, outputs)

# We don't passs a loss or metrics here.
model.compile(optimizer="adam")

# Just use `fit` as usual -- you can use callbacks, etc.
lower_history = model.fit(x, y, epochs=EPOCHS, verbose=2)

"""
## Supporting `sample_weight` & `class_weight`
"""


class CustomModel(keras.Model):
    def train_step(self, data):
        # Unpack the data. Its structure depends on your model and
        # on what you pass to `fit()`.
        if len(data) == 3:
            x, y, sample_weight = data
        else:
            sample_weight = None
            x, y = data

        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)  # Forward pass
            # Compute the loss value.
            # The loss function is configured in `compile()`.
            loss = self.compiled_loss(
                y,
                y_pred,
                sample_weight=sample_weight,
                regularization_losses=self.losses,
            )

        # Compute gradients
        trainable_vars = self.trainable_variables
        gradients = tape.gradient(loss, trainable_vars)

        # Update weights
        self.optimizer.apply_gradients(zip(gradients, trainable_vars))

        # Update the metrics.
        # Metrics are configured in `compile()`.
        self.compiled_metrics.update_state(y, y_pred, sample_weight=sample_weight)

        # Return a dict mapping metric names to current value.
        # Note that it will include the loss (tracked in self.metrics).
        return {m.name: m.result() for m in self.metrics}


# Construct and compile an instance of CustomModel
inputs = keras.Input(shape=(32,))
outputs = keras.layers.Dense(1)(inputs)
model = CustomModel(inputs, outputs)
model.compile(optimizer="adam", loss="mse", metrics=["mae"])

# You can now use sample_weight argument
sw = np.random.RandomState(5).random_sample((1000, 1))
sw_history = model.fit(x, y, sample_weight=sw, epochs=EPOCHS, verbose=2)

"""
## Providing your own evaluation step
"""


class CustomModel(keras.Model):
    def test_step(self, data):
        # Unpack the data
        x, y = data
        # Compute predictions
        y_pred = self(x, training=False)
        # Updates the metrics tracking the loss
        self.compiled_loss(y, y_pred, regularization_losses=self.losses)
        # Update the metrics.
        self.compiled_metrics.update_state(y, y_pred)
        # Return a dict mapping metric names to current value.
        # Note that it will include the loss (tracked in self.metrics).
        return {m.name: m.result() for m in self.metrics}


# Construct an instance of CustomModel
inputs = keras.Input(shape=(32,))
outputs = keras.layers.Dense(1)(inputs)
model = CustomModel(inputs, outputs)
model.compile(loss="mse", metrics=["mae"])

# Evaluate with our custom test_step
eval_result = model.evaluate(x, y)

report(history.history["loss"][0], history.history["loss"][-1], "train mae",
       history.history["mae"][-1],
       lower_loss_start=lower_history.history["loss"][0],
       lower_loss_end=lower_history.history["loss"][-1],
       lower_mae=lower_history.history["mae"][-1],
       sw_loss_start=sw_history.history["loss"][0], sw_loss_end=sw_history.history["loss"][-1],
       sw_mae=sw_history.history["mae"][-1])
