"""The Functional API, from https://keras.io/guides/functional_api/ (keras-io guides/
functional_api.py, fchollet, Keras 2 era, last modified 2020/04/12; the "Training, evaluation,
and inference", "Save and serialize", "Models with multiple inputs and outputs" and "A toy
ResNet model" sections).

Changes from the keras-io program (nothing else differs):
- imports: ``from _backend import ...`` replaces ``import tensorflow as tf``,
  ``from tensorflow import keras`` and ``from tensorflow.keras import layers``;
  ``keras.utils.plot_model`` (pydot) is left out;
- data: scikit-learn's 8x8 digits (``_data.digits``) replace MNIST (flattened: 64 features
  instead of 784, so ``keras.Input(shape=(64,))``) and CIFAR-10 (enlarged to 32x32 and repeated
  over 3 channels, so the toy ResNet keeps its (32, 32, 3) input); the multi-input section's
  dummy data is the guide's own ``np.random`` draws;
- epochs 2 -> 20 for the MNIST-style model, for the ~1,400 training images; the model is saved
  to a temporary folder;
- ``--quick``: 2 epochs on 256 images, 256 tickets and the toy ResNet on 128 images; the last
  line reports the result for compare.py.
"""
import os
import tempfile

import numpy as np
from _backend import keras, layers, QUICK, report
import _data

"""
## Training, evaluation, and inference
"""

inputs = keras.Input(shape=(64,))
dense = layers.Dense(64, activation="relu")
x = dense(inputs)
x = layers.Dense(64, activation="relu")(x)
outputs = layers.Dense(10)(x)
model = keras.Model(inputs=inputs, outputs=outputs, name="mnist_model")
model.summary()

(x_train, y_train), (x_test, y_test) = _data.digits()
if QUICK:
    x_train, y_train = x_train[:256], y_train[:256]

x_train = x_train.reshape(-1, 64).astype("float32") / 255
x_test = x_test.reshape(-1, 64).astype("float32") / 255

model.compile(
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    optimizer=keras.optimizers.RMSprop(),
    metrics=["accuracy"],
)

history = model.fit(x_train, y_train, batch_size=64, epochs=2 if QUICK else 20,
                    validation_split=0.2, verbose=2)

test_scores = model.evaluate(x_test, y_test, verbose=2)
print("Test loss:", test_scores[0])
print("Test accuracy:", test_scores[1])

"""
## Save and serialize
"""

path_to_my_model = os.path.join(tempfile.mkdtemp(), "path_to_my_model")
model.save(path_to_my_model)
del model
# Recreate the exact same model purely from the file:
model = keras.models.load_model(path_to_my_model)
reloaded_scores = model.evaluate(x_test, y_test, verbose=0)
print("Reloaded model's test accuracy:", reloaded_scores[1])

"""
## Manipulate complex graph topologies: models with multiple inputs and outputs
"""

num_tags = 12  # Number of unique issue tags
num_words = 10000  # Size of vocabulary obtained when preprocessing text data
num_departments = 4  # Number of departments for predictions

title_input = keras.Input(
    shape=(None,), name="title"
)  # Variable-length sequence of ints
body_input = keras.Input(shape=(None,), name="body")  # Variable-length sequence of ints
tags_input = keras.Input(
    shape=(num_tags,), name="tags"
)  # Binary vectors of size `num_tags`


# Embed each word in the title into a 64-dimensional vector
title_features = layers.Embedding(num_words, 64)(title_input)
# Embed each word in the text into a 64-dimensional vector
body_features = layers.Embedding(num_words, 64)(body_input)

# Reduce sequence of embedded words in the title into a single 128-dimensional vector
title_features = layers.LSTM(128)(title_features)
# Reduce sequence of embedded words in the body into a single 32-dimensional vector
body_features = layers.LSTM(32)(body_features)

# Merge all available features into a single large vector via concatenation
x = layers.concatenate([title_features, body_features, tags_input])

# Stick a logistic regression for priority prediction on top of the features
priority_pred = layers.Dense(1, name="priority")(x)
# Stick a department classifier on top of the features
department_pred = layers.Dense(num_departments, name="department")(x)

# Instantiate an end-to-end model predicting both priority and department
model = keras.Model(
    inputs=[title_input, body_input, tags_input],
    outputs=[priority_pred, department_pred],
)

model.compile(
    optimizer=keras.optimizers.RMSprop(1e-3),
    loss={
        "priority": keras.losses.BinaryCrossentropy(from_logits=True),
        "department": keras.losses.CategoricalCrossentropy(from_logits=True),
    },
    loss_weights=[1.0, 0.2],
)

n_tickets = 256 if QUICK else 1280
# Dummy input data
title_data = np.random.randint(num_words, size=(n_tickets, 10))
body_data = np.random.randint(num_words, size=(n_tickets, 100))
tags_data = np.random.randint(2, size=(n_tickets, num_tags)).astype("float32")

# Dummy target data
priority_targets = np.random.random(size=(n_tickets, 1))
dept_targets = np.random.randint(2, size=(n_tickets, num_departments))

ticket_history = model.fit(
    {"title": title_data, "body": body_data, "tags": tags_data},
    {"priority": priority_targets, "department": dept_targets},
    epochs=2,
    batch_size=32,
    verbose=2,
)

"""
## A toy ResNet model
"""

inputs = keras.Input(shape=(32, 32, 3), name="img")
x = layers.Conv2D(32, 3, activation="relu")(inputs)
x = layers.Conv2D(64, 3, activation="relu")(x)
block_1_output = layers.MaxPooling2D(3)(x)

x = layers.Conv2D(64, 3, activation="relu", padding="same")(block_1_output)
x = layers.Conv2D(64, 3, activation="relu", padding="same")(x)
block_2_output = layers.add([x, block_1_output])

x = layers.Conv2D(64, 3, activation="relu", padding="same")(block_2_output)
x = layers.Conv2D(64, 3, activation="relu", padding="same")(x)
block_3_output = layers.add([x, block_2_output])

x = layers.Conv2D(64, 3, activation="relu")(block_3_output)
x = layers.GlobalAveragePooling2D()(x)
x = layers.Dense(256, activation="relu")(x)
x = layers.Dropout(0.5)(x)
outputs = layers.Dense(10)(x)

model = keras.Model(inputs, outputs, name="toy_resnet")
model.summary()

(x_train, y_train), (x_test, y_test) = _data.digits(side=32)
x_train = np.repeat(x_train[..., None], 3, axis=-1)
x_test = np.repeat(x_test[..., None], 3, axis=-1)
y_train, y_test = y_train[:, None], y_test[:, None]   # CIFAR-10's labels are (n, 1)

x_train = x_train.astype("float32") / 255.0
x_test = x_test.astype("float32") / 255.0
y_train = keras.utils.to_categorical(y_train, 10)
y_test = keras.utils.to_categorical(y_test, 10)

model.compile(
    optimizer=keras.optimizers.RMSprop(1e-3),
    loss=keras.losses.CategoricalCrossentropy(from_logits=True),
    metrics=["acc"],
)
# We restrict the data to the first 1000 samples so as to limit execution time
# on Colab. Try to train on the entire dataset until convergence!
n_images = 128 if QUICK else 1000
resnet_history = model.fit(x_train[:n_images], y_train[:n_images], batch_size=64, epochs=1,
                           validation_split=0.2, verbose=2)

report(history.history["loss"][0], history.history["loss"][-1], "test accuracy",
       test_scores[1], reloaded_test_accuracy=reloaded_scores[1],
       ticket_loss_start=ticket_history.history["loss"][0],
       ticket_loss_end=ticket_history.history["loss"][-1],
       resnet_loss=resnet_history.history["loss"][-1],
       resnet_val_acc=resnet_history.history["val_acc"][-1])
