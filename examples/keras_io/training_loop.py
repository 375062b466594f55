"""A training loop written out by hand, with no fit.

Four overlapping classes in 20 dimensions (a few labels deliberately wrong) are learnt by
an MLP with dropout and L2 penalties. Everything fit would do is done here in plain Python:
batching, the gradient step, the penalties, metric bookkeeping, a learning-rate schedule and
early stopping that goes back to the best epoch's weights.

Covers: GradientTape with model(..., training=True), optimizer.apply_gradients,
model.losses (the kernel regularizers), metric objects updated and reset by hand, the
optimizer's learning rate set between epochs, get_weights / set_weights.
"""
import math

import numpy as np

from _backend import QUICK, keras, layers, report, tf
import _data

LEARNING_RATE = 2e-3


def blobs(n, seed):
    from sklearn.datasets import make_classification

    x, y = make_classification(n_samples=n, n_features=20, n_informative=8, n_redundant=2,
                               n_classes=4, n_clusters_per_class=2, class_sep=1.2,
                               flip_y=0.03, random_state=seed)
    return x.astype("float32"), y.astype("int32")


def build_model(hidden=64, dropout=0.2, l2=1e-4):
    penalty = keras.regularizers.l2(l2)
    inputs = keras.Input(shape=(20,))
    h = layers.Dense(hidden, activation="relu", kernel_regularizer=penalty)(inputs)
    h = layers.Dropout(dropout)(h)
    h = layers.Dense(hidden, activation="relu", kernel_regularizer=penalty)(h)
    return keras.Model(inputs, layers.Dense(4)(h))


def train(model, optimizer, x, y, x_val, y_val, epochs, batch_size=64, patience=4, seed=0):
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    mean_loss = keras.metrics.Mean()
    accuracy = keras.metrics.SparseCategoricalAccuracy()
    # the loop's own generator: the batches do not depend on the backend's random state
    shuffler = np.random.RandomState(seed)
    log = {"loss": [], "accuracy": [], "val_loss": [], "val_accuracy": []}
    best_loss, best_weights, since_best = math.inf, model.get_weights(), 0
    for epoch in range(epochs):
        optimizer.learning_rate = LEARNING_RATE * 0.5 * (1 + math.cos(math.pi * epoch / epochs))
        order = shuffler.permutation(len(x))
        for start in range(0, len(x), batch_size):
            batch = order[start:start + batch_size]
            with tf.GradientTape() as tape:
                logits = model(x[batch], training=True)
                loss = loss_fn(y[batch], logits) + sum(model.losses)
            grads = tape.gradient(loss, model.trainable_weights)
            optimizer.apply_gradients(zip(grads, model.trainable_weights))
            mean_loss.update_state(loss)
            accuracy.update_state(y[batch], logits)
        log["loss"].append(float(mean_loss.result()))
        log["accuracy"].append(float(accuracy.result()))
        mean_loss.reset_states()
        accuracy.reset_states()

        val_logits = model(x_val, training=False)
        accuracy.update_state(y_val, val_logits)
        log["val_loss"].append(float(loss_fn(y_val, val_logits)))
        log["val_accuracy"].append(float(accuracy.result()))
        accuracy.reset_states()
        if log["val_loss"][-1] < best_loss:
            best_loss, best_weights, since_best = log["val_loss"][-1], model.get_weights(), 0
        else:
            since_best += 1
            if since_best > patience:
                break
    model.set_weights(best_weights)
    return log


def main():
    x, y = blobs(4000 if QUICK else 10000, seed=0)
    x_train, y_train = x[:-3000], y[:-3000]
    x_val, y_val = x[-3000:-2000], y[-3000:-2000]
    x_test, y_test = x[-2000:], y[-2000:]
    model = build_model(hidden=32 if QUICK else 64)
    log = train(model, keras.optimizers.Adam(LEARNING_RATE), x_train, y_train, x_val, y_val,
                epochs=4 if QUICK else 30)
    guess = np.asarray(model(x_test, training=False)).argmax(axis=1)
    return report(log["loss"][0], log["loss"][-1], "test accuracy", np.mean(guess == y_test),
                  epochs_run=len(log["loss"]), best_val_loss=min(log["val_loss"]),
                  chance=_data.majority_rate(y_test), n_eval=len(y_test))


if __name__ == "__main__":
    main()
