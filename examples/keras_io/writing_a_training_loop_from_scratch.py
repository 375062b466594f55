"""Writing a training loop from scratch, from
https://keras.io/guides/writing_a_training_loop_from_scratch/ (keras-io guides/
writing_a_training_loop_from_scratch.py, fchollet, last modified 2020/04/15; every section but
the closing GAN).

Changes from the keras-io program (nothing else differs):
- imports: ``from _backend import ...`` replaces ``import tensorflow as tf``,
  ``from tensorflow import keras`` and ``from tensorflow.keras import layers``; under tnp_train
  ``tf.GradientTape`` is ``tt.GradientTape``, ``tf.data`` is ``tt.data`` and ``@tf.function``
  runs the step eagerly (``tt.function`` is not there yet);
- data: scikit-learn's 8x8 digits (``_data.digits``, 64 raw 0-255 pixels, as the guide feeds
  MNIST's raw pixels) replace ``keras.datasets.mnist.load_data()``; the validation reserve is
  287 samples instead of 10,000 and ``keras.Input(shape=(64,))``;
- epochs 2 -> 20 in each loop, and the logging interval 200 -> 10 batches, for the ~1,150
  training images;
- added: the guide's validation samples are also in its training dataset (built before the
  split), so its validation accuracy measures training data; the test split's accuracy is
  computed after the last loop (``test_step`` over ``x_test``) and is the compared metric;
- added: the guide defines the activity-regularized ``train_step`` (``loss_value +=
  sum(model.losses)``) without running it; here it runs for the same epochs;
- ``--quick``: 2 epochs per loop; the last line reports the result for compare.py.
"""
"""
## Setup
"""

from _backend import keras, layers, tf, QUICK, report
import numpy as np
import _data

EPOCHS = 2 if QUICK else 20

"""
## Using the `GradientTape`: a first end-to-end example
"""

inputs = keras.Input(shape=(64,), name="digits")
x1 = layers.Dense(64, activation="relu")(inputs)
x2 = layers.Dense(64, activation="relu")(x1)
outputs = layers.Dense(10, name="predictions")(x2)
model = keras.Model(inputs=inputs, outputs=outputs)

# Instantiate an optimizer.
optimizer = keras.optimizers.SGD(learning_rate=1e-3)
# Instantiate a loss function.
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

# Prepare the training dataset.
batch_size = 64
(x_train, y_train), (x_test, y_test) = _data.digits()
x_train = np.reshape(x_train, (-1, 64))
x_test = np.reshape(x_test, (-1, 64))
train_dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train))
train_dataset = train_dataset.shuffle(buffer_size=1024).batch(batch_size)

first_losses = []
epochs = EPOCHS
for epoch in range(epochs):
    print("\nStart of epoch %d" % (epoch,))

    # Iterate over the batches of the dataset.
    for step, (x_batch_train, y_batch_train) in enumerate(train_dataset):

        # Open a GradientTape to record the operations run
        # during the forward pass, which enables auto-differentiation.
        with tf.GradientTape() as tape:

            # Run the forward pass of the layer.
            # The operations that the layer applies
            # to its inputs are going to be recorded
            # on the GradientTape.
            logits = model(x_batch_train, training=True)  # Logits for this minibatch

            # Compute the loss value for this minibatch.
            loss_value = loss_fn(y_batch_train, logits)

        # Use the gradient tape to automatically retrieve
        # the gradients of the trainable variables with respect to the loss.
        grads = tape.gradient(loss_value, model.trainable_weights)

        # Run one step of gradient descent by updating
        # the value of the variables to minimize the loss.
        optimizer.apply_gradients(zip(grads, model.trainable_weights))
        first_losses.append(float(loss_value))

        # Log every 10 batches.
        if step % 10 == 0:
            print(
                "Training loss (for one batch) at step %d: %.4f"
                % (step, float(loss_value))
            )
            print("Seen so far: %s samples" % ((step + 1) * 64))

"""
## Low-level handling of metrics
"""

# Get model
inputs = keras.Input(shape=(64,), name="digits")
x = layers.Dense(64, activation="relu", name="dense_1")(inputs)
x = layers.Dense(64, activation="relu", name="dense_2")(x)
outputs = layers.Dense(10, name="predictions")(x)
model = keras.Model(inputs=inputs, outputs=outputs)

# Instantiate an optimizer to train the model.
optimizer = keras.optimizers.SGD(learning_rate=1e-3)
# Instantiate a loss function.
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

# Prepare the metrics.
train_acc_metric = keras.metrics.SparseCategoricalAccuracy()
val_acc_metric = keras.metrics.SparseCategoricalAccuracy()

# Prepare the training dataset.
batch_size = 64
train_dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train))
train_dataset = train_dataset.shuffle(buffer_size=1024).batch(batch_size)

# Prepare the validation dataset.
# Reserve 287 samples for validation.
x_val = x_train[-287:]
y_val = y_train[-287:]
x_train = x_train[:-287]
y_train = y_train[:-287]
val_dataset = tf.data.Dataset.from_tensor_slices((x_val, y_val))
val_dataset = val_dataset.batch(64)

import time

epochs = EPOCHS
for epoch in range(epochs):
    print("\nStart of epoch %d" % (epoch,))
    start_time = time.time()

    # Iterate over the batches of the dataset.
    for step, (x_batch_train, y_batch_train) in enumerate(train_dataset):
        with tf.GradientTape() as tape:
            logits = model(x_batch_train, training=True)
            loss_value = loss_fn(y_batch_train, logits)
        grads = tape.gradient(loss_value, model.trainable_weights)
        optimizer.apply_gradients(zip(grads, model.trainable_weights))

        # Update training metric.
        train_acc_metric.update_state(y_batch_train, logits)

        # Log every 10 batches.
        if step % 10 == 0:
            print(
                "Training loss (for one batch) at step %d: %.4f"
                % (step, float(loss_value))
            )
            print("Seen so far: %d samples" % ((step + 1) * 64))

    # Display metrics at the end of each epoch.
    train_acc = train_acc_metric.result()
    print("Training acc over epoch: %.4f" % (float(train_acc),))

    # Reset training metrics at the end of each epoch
    train_acc_metric.reset_states()

    # Run a validation loop at the end of each epoch.
    for x_batch_val, y_batch_val in val_dataset:
        val_logits = model(x_batch_val, training=False)
        # Update val metrics
        val_acc_metric.update_state(y_batch_val, val_logits)
    val_acc = val_acc_metric.result()
    val_acc_metric.reset_states()
    print("Validation acc: %.4f" % (float(val_acc),))
    print("Time taken: %.2fs" % (time.time() - start_time))

"""
## Speeding-up your training step with `tf.function`
"""


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss_value = loss_fn(y, logits)
    grads = tape.gradient(loss_value, model.trainable_weights)
    optimizer.apply_gradients(zip(grads, model.trainable_weights))
    train_acc_metric.update_state(y, logits)
    return loss_value


@tf.function
def test_step(x, y):
    val_logits = model(x, training=False)
    val_acc_metric.update_state(y, val_logits)


import time

epochs = EPOCHS
for epoch in range(epochs):
    print("\nStart of epoch %d" % (epoch,))
    start_time = time.time()

    # Iterate over the batches of the dataset.
    for step, (x_batch_train, y_batch_train) in enumerate(train_dataset):
        loss_value = train_step(x_batch_train, y_batch_train)

        # Log every 10 batches.
        if step % 10 == 0:
            print(
                "Training loss (for one batch) at step %d: %.4f"
                % (step, float(loss_value))
            )
            print("Seen so far: %d samples" % ((step + 1) * 64))

    # Display metrics at the end of each epoch.
    train_acc = train_acc_metric.result()
    print("Training acc over epoch: %.4f" % (float(train_acc),))

    # Reset training metrics at the end of each epoch
    train_acc_metric.reset_states()

    # Run a validation loop at the end of each epoch.
    for x_batch_val, y_batch_val in val_dataset:
        test_step(x_batch_val, y_batch_val)

    val_acc = val_acc_metric.result()
    val_acc_metric.reset_states()
    print("Validation acc: %.4f" % (float(val_acc),))
    print("Time taken: %.2fs" % (time.time() - start_time))

final_val_acc = float(val_acc)
# (added: accuracy on the held-out test split)
for x_batch_test, y_batch_test in tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(64):
    test_step(x_batch_test, y_batch_test)
test_acc = float(val_acc_metric.result())
val_acc_metric.reset_states()
print("Test acc: %.4f" % (test_acc,))

"""
## Low-level handling of losses tracked by the model
"""


class ActivityRegularizationLayer(layers.Layer):
    def call(self, inputs):
        self.add_loss(1e-2 * tf.reduce_sum(inputs))
        return inputs


inputs = keras.Input(shape=(64,), name="digits")
x = layers.Dense(64, activation="relu")(inputs)
# Insert activity regularization as a layer
x = ActivityRegularizationLayer()(x)
x = layers.Dense(64, activation="relu")(x)
outputs = layers.Dense(10, name="predictions")(x)

model = keras.Model(inputs=inputs, outputs=outputs)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss_value = loss_fn(y, logits)
        # Add any extra losses created during the forward pass.
        loss_value += sum(model.losses)
    grads = tape.gradient(loss_value, model.trainable_weights)
    optimizer.apply_gradients(zip(grads, model.trainable_weights))
    train_acc_metric.update_state(y, logits)
    return loss_value


# (added: run the regularized step, which the guide only defines)
reg_losses = []
for epoch in range(EPOCHS):
    for step, (x_batch_train, y_batch_train) in enumerate(train_dataset):
        reg_losses.append(float(train_step(x_batch_train, y_batch_train)))
reg_acc = float(train_acc_metric.result())
train_acc_metric.reset_states()
print("Regularized model: last loss %.4f, training acc over last epochs %.4f"
      % (reg_losses[-1], reg_acc))

report(np.mean(first_losses[:5]), np.mean(first_losses[-5:]), "test accuracy", test_acc,
       val_acc=final_val_acc,
       reg_loss_start=np.mean(reg_losses[:5]), reg_loss_end=np.mean(reg_losses[-5:]),
       reg_train_acc=reg_acc)
