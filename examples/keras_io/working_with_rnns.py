"""Working with RNNs, from https://keras.io/guides/working_with_rnns/ (keras-io guides/
working_with_rnns.py, Scott Zhu and fchollet, Keras 2 era, last modified 2020/04/14; the
"Built-in RNN layers: a simple example", "Bidirectional RNNs" and "Performance optimization
and CuDNN kernels" sections).

Changes from the keras-io program (nothing else differs):
- imports: ``from _backend import ...`` replaces ``import tensorflow as tf``,
  ``from tensorflow import keras`` and ``from tensorflow.keras import layers``; the matplotlib
  plot of the sample is left out;
- data: scikit-learn's 8x8 digits (``_data.digits``: 8 time steps of 8 features) replace
  ``keras.datasets.mnist.load_data()`` (28 steps of 28), so ``input_dim = 8``;
- epochs 1 -> 20 in each ``fit`` for the ~1,400 training images;
- ``--quick``: 2 epochs on 256 images; the last line reports the result for compare.py.
"""
import numpy as np
from _backend import keras, layers, tf, QUICK, report
import _data

"""
## Built-in RNN layers: a simple example
"""

model = keras.Sequential()
# Add an Embedding layer expecting input vocab of size 1000, and
# output embedding dimension of size 64.
model.add(layers.Embedding(input_dim=1000, output_dim=64))

# Add a LSTM layer with 128 internal units.
model.add(layers.LSTM(128))

# Add a Dense layer with 10 units.
model.add(layers.Dense(10))

model.build(input_shape=(None, None))
model.summary()

"""
## Bidirectional RNNs
"""

model = keras.Sequential()

model.add(
    layers.Bidirectional(layers.LSTM(64, return_sequences=True), input_shape=(5, 10))
)
model.add(layers.Bidirectional(layers.LSTM(32)))
model.add(layers.Dense(10))

model.summary()

"""
## Performance optimization and CuDNN kernels
"""

batch_size = 64
# Each digits image batch is a tensor of shape (batch_size, 8, 8).
# Each input sequence will be of size (8, 8) (height is treated like time).
input_dim = 8

units = 64
output_size = 10  # labels are from 0 to 9

# Build the RNN model
def build_model(allow_cudnn_kernel=True):
    # CuDNN is only available at the layer level, and not at the cell level.
    # This means `LSTM(units)` will use the CuDNN kernel,
    # while RNN(LSTMCell(units)) will run on non-CuDNN kernel.
    if allow_cudnn_kernel:
        # The LSTM layer with default options uses CuDNN.
        lstm_layer = keras.layers.LSTM(units, input_shape=(None, input_dim))
    else:
        # Wrapping a LSTMCell in a RNN layer will not use CuDNN.
        lstm_layer = keras.layers.RNN(
            keras.layers.LSTMCell(units), input_shape=(None, input_dim)
        )
    model = keras.models.Sequential(
        [
            lstm_layer,
            keras.layers.BatchNormalization(),
            keras.layers.Dense(output_size),
        ]
    )
    return model


(x_train, y_train), (x_test, y_test) = _data.digits()
if QUICK:
    x_train, y_train = x_train[:256], y_train[:256]
x_train, x_test = x_train / 255.0, x_test / 255.0
sample, sample_label = x_train[0], y_train[0]

model = build_model(allow_cudnn_kernel=True)

model.compile(
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    optimizer="sgd",
    metrics=["accuracy"],
)


history = model.fit(
    x_train, y_train, validation_data=(x_test, y_test), batch_size=batch_size,
    epochs=2 if QUICK else 20, verbose=2
)

noncudnn_model = build_model(allow_cudnn_kernel=False)
noncudnn_model.set_weights(model.get_weights())
noncudnn_model.compile(
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    optimizer="sgd",
    metrics=["accuracy"],
)
noncudnn_history = noncudnn_model.fit(
    x_train, y_train, validation_data=(x_test, y_test), batch_size=batch_size,
    epochs=2 if QUICK else 20, verbose=2
)

with tf.device("CPU:0"):
    cpu_model = build_model(allow_cudnn_kernel=True)
    cpu_model.set_weights(model.get_weights())
    result = tf.argmax(cpu_model.predict_on_batch(tf.expand_dims(sample, 0)), axis=1)
    print(
        "Predicted result is: %s, target result is: %s" % (np.asarray(result), sample_label)
    )

report(history.history["loss"][0], history.history["loss"][-1], "val accuracy",
       history.history["val_accuracy"][-1],
       noncudnn_loss_start=noncudnn_history.history["loss"][0],
       noncudnn_loss_end=noncudnn_history.history["loss"][-1],
       noncudnn_val_accuracy=noncudnn_history.history["val_accuracy"][-1])
