"""Simple MNIST convnet, from https://keras.io/examples/vision/mnist_convnet/
(keras-io examples/vision/mnist_convnet.py, fchollet, last modified 2020/04/21).

Changes from the keras-io program (nothing else differs):
- imports: ``from _backend import ...`` replaces ``from tensorflow import keras`` and
  ``from tensorflow.keras import layers`` (``--backend tf`` runs the same file on tf-keras);
- data: scikit-learn's 8x8 digits enlarged to 16x16 (``_data.digits``) replace
  ``keras.datasets.mnist.load_data()``, so ``input_shape`` is (16, 16, 1);
- epochs 15 -> 12 and batch_size 128 -> 32 for the ~1,400 training images (MNIST has 60,000);
- ``--quick``: 2 epochs on 256 images; the last line reports the result for compare.py.
"""

"""
## Setup
"""

import numpy as np
from _backend import keras, layers, QUICK, report
import _data

"""
## Prepare the data
"""

# Model / data parameters
num_classes = 10
input_shape = (16, 16, 1)

# Load the data and split it between train and test sets
(x_train, y_train), (x_test, y_test) = _data.digits(side=16)
if QUICK:
    x_train, y_train = x_train[:256], y_train[:256]

# Scale images to the [0, 1] range
x_train = x_train.astype("float32") / 255
x_test = x_test.astype("float32") / 255
# Make sure images have shape (16, 16, 1)
x_train = np.expand_dims(x_train, -1)
x_test = np.expand_dims(x_test, -1)
print("x_train shape:", x_train.shape)
print(x_train.shape[0], "train samples")
print(x_test.shape[0], "test samples")


# convert class vectors to binary class matrices
y_train = keras.utils.to_categorical(y_train, num_classes)
y_test = keras.utils.to_categorical(y_test, num_classes)

"""
## Build the model
"""

model = keras.Sequential(
    [
        keras.Input(shape=input_shape),
        layers.Conv2D(32, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Flatten(),
        layers.Dropout(0.5),
        layers.Dense(num_classes, activation="softmax"),
    ]
)

model.summary()

"""
## Train the model
"""

batch_size = 32
epochs = 2 if QUICK else 12

model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])

history = model.fit(x_train, y_train, batch_size=batch_size, epochs=epochs, validation_split=0.1,
                    verbose=2)

"""
## Evaluate the trained model
"""

score = model.evaluate(x_test, y_test, verbose=0)
print("Test loss:", score[0])
print("Test accuracy:", score[1])
report(history.history["loss"][0], history.history["loss"][-1], "test accuracy", score[1])
