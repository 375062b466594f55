"""Imbalanced classification: credit card fraud detection, from
https://keras.io/examples/structured_data/imbalanced_classification/ (keras-io examples/
structured_data/imbalanced_classification.py, fchollet, last modified 2020/04/17).

Changes from the keras-io program (nothing else differs):
- imports: ``from _backend import ...`` replaces ``from tensorflow import keras``;
- data: scikit-learn's ``make_classification`` (20,000 rows, 30 features, 5% positives,
  ``random_state=0``) replaces reading Kaggle's creditcard.csv (284,807 rows, 0.17% positives:
  too few positives in a small validation split to measure recall to 1 point);
- the checkpoints go to a temporary folder instead of the working directory;
- ``--quick``: 2 epochs; the last line reports the result for compare.py.
"""
import os
import tempfile

import numpy as np
from _backend import keras, QUICK, report

"""
## First, vectorize the CSV data
"""

from sklearn.datasets import make_classification

all_features, all_targets = make_classification(
    n_samples=20000, n_features=30, n_informative=8, n_redundant=4, weights=[0.95],
    class_sep=0.8, flip_y=0.0, random_state=0)
features = np.array(all_features, dtype="float32")
targets = np.array(all_targets, dtype="uint8").reshape(-1, 1)
print("features.shape:", features.shape)
print("targets.shape:", targets.shape)

"""
## Prepare a validation set
"""

num_val_samples = int(len(features) * 0.2)
train_features = features[:-num_val_samples]
train_targets = targets[:-num_val_samples]
val_features = features[-num_val_samples:]
val_targets = targets[-num_val_samples:]

print("Number of training samples:", len(train_features))
print("Number of validation samples:", len(val_features))

"""
## Analyze class imbalance in the targets
"""

counts = np.bincount(train_targets[:, 0])
print(
    "Number of positive samples in training data: {} ({:.2f}% of total)".format(
        counts[1], 100 * float(counts[1]) / len(train_targets)
    )
)

weight_for_0 = 1.0 / counts[0]
weight_for_1 = 1.0 / counts[1]

"""
## Normalize the data using training set statistics
"""

mean = np.mean(train_features, axis=0)
train_features -= mean
val_features -= mean
std = np.std(train_features, axis=0)
train_features /= std
val_features /= std

"""
## Build a binary classification model
"""

model = keras.Sequential(
    [
        keras.layers.Dense(
            256, activation="relu", input_shape=(train_features.shape[-1],)
        ),
        keras.layers.Dense(256, activation="relu"),
        keras.layers.Dropout(0.3),
        keras.layers.Dense(256, activation="relu"),
        keras.layers.Dropout(0.3),
        keras.layers.Dense(1, activation="sigmoid"),
    ]
)
model.summary()

"""
## Train the model with `class_weight` argument
"""

metrics = [
    keras.metrics.FalseNegatives(name="fn"),
    keras.metrics.FalsePositives(name="fp"),
    keras.metrics.TrueNegatives(name="tn"),
    keras.metrics.TruePositives(name="tp"),
    keras.metrics.Precision(name="precision"),
    keras.metrics.Recall(name="recall"),
]

model.compile(
    optimizer=keras.optimizers.Adam(1e-2), loss="binary_crossentropy", metrics=metrics
)

checkpoint_dir = tempfile.mkdtemp()
callbacks = [keras.callbacks.ModelCheckpoint(
    os.path.join(checkpoint_dir, "fraud_model_at_epoch_{epoch}.h5"))]
class_weight = {0: weight_for_0, 1: weight_for_1}

history = model.fit(
    train_features,
    train_targets,
    batch_size=2048,
    epochs=2 if QUICK else 30,
    verbose=2,
    callbacks=callbacks,
    validation_data=(val_features, val_targets),
    class_weight=class_weight,
)
print("checkpoints written:", len(os.listdir(checkpoint_dir)))

h = history.history
report(h["loss"][0], h["loss"][-1], "val recall", h["val_recall"][-1],
       val_precision=h["val_precision"][-1], val_tp=h["val_tp"][-1], val_fp=h["val_fp"][-1],
       val_fn=h["val_fn"][-1], checkpoints=len(os.listdir(checkpoint_dir)))
