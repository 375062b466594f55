"""Text classification from scratch, from
https://keras.io/examples/nlp/text_classification_from_scratch/ (keras-io examples/nlp/
text_classification_from_scratch.py, Mark Omernick and fchollet, last modified 2020/05/17).

Changes from the keras-io program (nothing else differs):
- imports: ``from _backend import ...`` replaces ``import tensorflow as tf`` and the
  ``tensorflow.keras`` imports; under tnp_train ``tf.strings.lower`` / ``regex_replace`` are
  NumPy string functions, ``tf.data`` is ``tt.data``, ``tf.keras`` is ``tnp_train``;
- data: ``text_dataset_from_directory("aclImdb/...")`` (the IMDB download) is replaced by a
  function of the same shape over generated reviews (``_data.reviews``: 1,000 training reviews,
  20% of them for validation, 500 test reviews, with IMDB's ``<br />`` tags and punctuation);
  the directory listing, ``cat`` and ``rm -r`` shell steps are left out;
- ``sequence_length`` 500 -> 100 (the generated reviews have at most ~80 words); epochs 3 -> 8
  for the 800 training reviews (IMDB has 20,000);
- ``--quick``: 2 epochs on 128 reviews; the result line for compare.py is printed after the
  test-set evaluation (the end-to-end model's accuracy on strings is the same number).
"""
from _backend import tf, QUICK, report
import numpy as np
import _data

"""
## Load the data: IMDB movie review sentiment classification
"""


def text_dataset_from_directory(directory, batch_size=32, validation_split=None, subset=None,
                                seed=None):
    # (generated data) the same (string, int32 label) batches the directory loader yields
    texts, labels = _data.reviews(128 if QUICK else (500 if directory.endswith("test") else 1000),
                                  seed=1 if directory.endswith("test") else 0)
    if validation_split:
        n_val = int(len(texts) * validation_split)
        split = len(texts) - n_val
        rows = slice(0, split) if subset == "training" else slice(split, None)
        texts, labels = texts[rows], labels[rows]
    print(f"Found {len(texts)} files belonging to 2 classes.")
    return tf.data.Dataset.from_tensor_slices((texts, labels)).batch(batch_size)


batch_size = 32
raw_train_ds = text_dataset_from_directory(
    "aclImdb/train",
    batch_size=batch_size,
    validation_split=0.2,
    subset="training",
    seed=1337,
)
raw_val_ds = text_dataset_from_directory(
    "aclImdb/train",
    batch_size=batch_size,
    validation_split=0.2,
    subset="validation",
    seed=1337,
)
raw_test_ds = text_dataset_from_directory(
    "aclImdb/test", batch_size=batch_size
)

print(
    "Number of batches in raw_train_ds: %d"
    % tf.data.experimental.cardinality(raw_train_ds)
)
print(
    "Number of batches in raw_val_ds: %d" % tf.data.experimental.cardinality(raw_val_ds)
)
print(
    "Number of batches in raw_test_ds: %d"
    % tf.data.experimental.cardinality(raw_test_ds)
)

# It's important to take a look at your raw data to ensure your normalization
# and tokenization will work as expected. We can do that by taking a few
# examples from the training set and looking at them.
# This is one of the places where eager execution shines:
# we can just evaluate these tensors using .numpy()
# instead of needing to evaluate them in a Session/Graph context.
for text_batch, label_batch in raw_train_ds.take(1):
    for i in range(5):
        print(text_batch.numpy()[i])
        print(label_batch.numpy()[i])

"""
## Prepare the data
"""

from _backend import TextVectorization
import string
import re


# Having looked at our data above, we see that the raw text contains HTML break
# tags of the form '<br />'. These tags will not be removed by the default
# standardizer (which doesn't strip HTML). Because of this, we will need to
# create a custom standardization function.
def custom_standardization(input_data):
    lowercase = tf.strings.lower(input_data)
    stripped_html = tf.strings.regex_replace(lowercase, "<br />", " ")
    return tf.strings.regex_replace(
        stripped_html, "[%s]" % re.escape(string.punctuation), ""
    )


# Model constants.
max_features = 20000
embedding_dim = 128
sequence_length = 100

# Now that we have our custom standardization, we can instantiate our text
# vectorization layer. We are using this layer to normalize, split, and map
# strings to integers, so we set our 'output_mode' to 'int'.
# Note that we're using the default split function,
# and the custom standardization defined above.
# We also set an explicit maximum sequence length, since the CNNs later in our
# model won't support ragged sequences.
vectorize_layer = TextVectorization(
    standardize=custom_standardization,
    max_tokens=max_features,
    output_mode="int",
    output_sequence_length=sequence_length,
)

# Now that the vocab layer has been created, call `adapt` on a text-only
# dataset to create the vocabulary. You don't have to batch, but for very large
# datasets this means you're not keeping spare copies of the dataset in memory.

# Let's make a text-only dataset (no labels):
text_ds = raw_train_ds.map(lambda x, y: x)
# Let's call `adapt`:
vectorize_layer.adapt(text_ds)

"""
## Two options to vectorize the data
"""


def vectorize_text(text, label):
    text = tf.expand_dims(text, -1)
    return vectorize_layer(text), label


# Vectorize the data.
train_ds = raw_train_ds.map(vectorize_text)
val_ds = raw_val_ds.map(vectorize_text)
test_ds = raw_test_ds.map(vectorize_text)

# Do async prefetching / buffering of the data for best performance on GPU.
train_ds = train_ds.cache().prefetch(buffer_size=10)
val_ds = val_ds.cache().prefetch(buffer_size=10)
test_ds = test_ds.cache().prefetch(buffer_size=10)

"""
## Build a model
"""

from _backend import layers

# A integer input for vocab indices.
inputs = tf.keras.Input(shape=(None,), dtype="int64")

# Next, we add a layer to map those vocab indices into a space of dimensionality
# 'embedding_dim'.
x = layers.Embedding(max_features, embedding_dim)(inputs)
x = layers.Dropout(0.5)(x)

# Conv1D + global max pooling
x = layers.Conv1D(128, 7, padding="valid", activation="relu", strides=3)(x)
x = layers.Conv1D(128, 7, padding="valid", activation="relu", strides=3)(x)
x = layers.GlobalMaxPooling1D()(x)

# We add a vanilla hidden layer:
x = layers.Dense(128, activation="relu")(x)
x = layers.Dropout(0.5)(x)

# We project onto a single unit output layer, and squash it with a sigmoid:
predictions = layers.Dense(1, activation="sigmoid", name="predictions")(x)

model = tf.keras.Model(inputs, predictions)

# Compile the model with binary crossentropy loss and an adam optimizer.
model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])

"""
## Train the model
"""

epochs = 2 if QUICK else 8

# Fit the model using the train and test datasets.
history = model.fit(train_ds, validation_data=val_ds, epochs=epochs, verbose=2)

"""
## Evaluate the model on the test set
"""

test_results = model.evaluate(test_ds)
report(history.history["loss"][0], history.history["loss"][-1], "test accuracy", test_results[1])

"""
## Make an end-to-end model
"""

# A string input
inputs = tf.keras.Input(shape=(1,), dtype="string")
# Turn strings into vocab indices
indices = vectorize_layer(inputs)
# Turn vocab indices into predictions
outputs = model(indices)

# Our end to end model
end_to_end_model = tf.keras.Model(inputs, outputs)
end_to_end_model.compile(
    loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"]
)

# Test it with `raw_test_ds`, which yields strings
end_to_end_results = end_to_end_model.evaluate(raw_test_ds)
print("end-to-end test accuracy:", end_to_end_results[1])
