"""Timeseries classification from scratch, from
https://keras.io/examples/timeseries/timeseries_classification_from_scratch/ (keras-io
examples/timeseries/timeseries_classification_from_scratch.py, hfawaz, last modified
2020/07/21).

Changes from the keras-io program (nothing else differs):
- imports: ``from _backend import ...`` replaces ``from tensorflow import keras``; the
  matplotlib plots and ``keras.utils.plot_model`` (pydot) are left out;
- data: generated series replace the FordA download: 800 training and 400 test series of
  128 steps, class 1 a noisy sine of 6 cycles, class 0 of 5 cycles, random phase and amplitude
  (1 to 2), Gaussian noise of std 1 (labels -1/1 as in FordA's files); FordA has 3,601 series
  of 500 steps;
- epochs 500 -> 30 for the smaller data (the callbacks are unchanged); ``best_model.h5`` is
  written to a temporary folder;
- ``--quick``: 2 epochs on 128 series; the last line reports the result for compare.py.
"""
import os
import tempfile

import numpy as np
from _backend import keras, QUICK, report

"""
## Load the data: the FordA dataset
"""


def readucr(n, length=128, seed=0):
    # (generated) what FordA's TSV files hold: a label in {-1, 1} and the series
    rng = np.random.RandomState(seed)
    y = rng.choice([-1, 1], size=n)
    t = np.arange(length) / length
    cycles = np.where(y == 1, 6.0, 5.0)[:, None]
    phase = rng.uniform(0, 2 * np.pi, size=(n, 1))
    amplitude = rng.uniform(1.0, 2.0, size=(n, 1))
    x = amplitude * np.sin(2 * np.pi * cycles * t + phase) + rng.normal(size=(n, length))
    return x, y.astype(int)


x_train, y_train = readucr(128 if QUICK else 800, seed=1)
x_test, y_test = readucr(400, seed=2)

"""
## Standardize the data
"""

x_train = x_train.reshape((x_train.shape[0], x_train.shape[1], 1))
x_test = x_test.reshape((x_test.shape[0], x_test.shape[1], 1))

num_classes = len(np.unique(y_train))

idx = np.random.permutation(len(x_train))
x_train = x_train[idx]
y_train = y_train[idx]

y_train[y_train == -1] = 0
y_test[y_test == -1] = 0

"""
## Build a model
"""


def make_model(input_shape):
    input_layer = keras.layers.Input(input_shape)

    conv1 = keras.layers.Conv1D(filters=64, kernel_size=3, padding="same")(input_layer)
    conv1 = keras.layers.BatchNormalization()(conv1)
    conv1 = keras.layers.ReLU()(conv1)

    conv2 = keras.layers.Conv1D(filters=64, kernel_size=3, padding="same")(conv1)
    conv2 = keras.layers.BatchNormalization()(conv2)
    conv2 = keras.layers.ReLU()(conv2)

    conv3 = keras.layers.Conv1D(filters=64, kernel_size=3, padding="same")(conv2)
    conv3 = keras.layers.BatchNormalization()(conv3)
    conv3 = keras.layers.ReLU()(conv3)

    gap = keras.layers.GlobalAveragePooling1D()(conv3)

    output_layer = keras.layers.Dense(num_classes, activation="softmax")(gap)

    return keras.models.Model(inputs=input_layer, outputs=output_layer)


model = make_model(input_shape=x_train.shape[1:])

"""
## Train the model
"""

epochs = 2 if QUICK else 30
batch_size = 32

best_model_path = os.path.join(tempfile.mkdtemp(), "best_model.h5")
callbacks = [
    keras.callbacks.ModelCheckpoint(
        best_model_path, save_best_only=True, monitor="val_loss"
    ),
    keras.callbacks.ReduceLROnPlateau(
        monitor="val_loss", factor=0.5, patience=20, min_lr=0.0001
    ),
    keras.callbacks.EarlyStopping(monitor="val_loss", patience=50, verbose=1),
]
model.compile(
    optimizer="adam",
    loss="sparse_categorical_crossentropy",
    metrics=["sparse_categorical_accuracy"],
)
history = model.fit(
    x_train,
    y_train,
    batch_size=batch_size,
    epochs=epochs,
    callbacks=callbacks,
    validation_split=0.2,
    verbose=2,
)

"""
## Evaluate model on test data
"""

model = keras.models.load_model(best_model_path)

test_loss, test_acc = model.evaluate(x_test, y_test)

print("Test accuracy", test_acc)
print("Test loss", test_loss)

report(history.history["loss"][0], history.history["loss"][-1], "test accuracy", test_acc)
