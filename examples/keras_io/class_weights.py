"""Class weights on a rare-positive problem.

One positive in about twenty-five. Trained plainly, the network can score 96% accuracy by
leaning towards "negative" and misses many positives. With each class weighted by the inverse
of its frequency, both classes count equally in the loss. The same network is trained both
ways from the same starting weights; the price of the higher recall is precision.

Covers: fit(class_weight=...), a sigmoid output with binary cross-entropy, Recall, Precision
and AUC metrics, get_weights / set_weights to restart from the same point, evaluate.
"""
import numpy as np

from _backend import QUICK, keras, layers, report


def transactions(n, train_size, seed):
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split

    x, y = make_classification(n_samples=n, n_features=20, n_informative=6, n_redundant=4,
                               weights=[0.96], flip_y=0.0, class_sep=0.7, random_state=seed)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, train_size=train_size, stratify=y, random_state=seed)
    # scaled with the training split's statistics only, as for data not seen yet
    mu, sd = x_train.mean(0), x_train.std(0)

    def scaled(a):
        return ((a - mu) / sd).astype("float32")

    def column(labels):
        return labels.astype("float32")[:, None]

    return scaled(x_train), column(y_train), scaled(x_test), column(y_test)


def compile_model(model):
    # a fresh optimizer each time, so a second run does not inherit the first one's moments
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="binary_crossentropy",
                  metrics=[keras.metrics.Recall(name="recall"),
                           keras.metrics.Precision(name="precision"),
                           keras.metrics.AUC(name="auc")])
    return model


def build_model(features=20, hidden=32):
    return compile_model(keras.Sequential([keras.Input(shape=(features,)),
                                           layers.Dense(hidden, activation="relu"),
                                           layers.Dense(hidden, activation="relu"),
                                           layers.Dense(1, activation="sigmoid")]))


def balanced_weights(labels):
    counts = np.bincount(labels.astype("int64").ravel())
    # n / (2 * count): each class's weights sum to n / 2, and the average weight stays 1, so
    # the learning rate means the same as without weights
    return {c: len(labels) / (len(counts) * k) for c, k in enumerate(counts)}


def main():
    # a large test split: recall is measured on the few positives only
    x_train, y_train, x_test, y_test = transactions(6000 if QUICK else 30000,
                                                    train_size=0.4 if QUICK else 0.3, seed=0)
    epochs = 6 if QUICK else 20
    model = build_model(hidden=16 if QUICK else 32)
    start = model.get_weights()
    runs = {}
    for label, weights in (("plain", None), ("weighted", balanced_weights(y_train))):
        compile_model(model).set_weights(start)
        history = model.fit(x_train, y_train, batch_size=128, epochs=epochs, verbose=0,
                            class_weight=weights)
        runs[label] = (history.history, model.evaluate(x_test, y_test, verbose=0,
                                                       return_dict=True))
    (fit_w, test_w), (_, test_p) = runs["weighted"], runs["plain"]
    return report(fit_w["loss"][0], fit_w["loss"][-1], "test recall, weighted",
                  test_w["recall"], precision_weighted=test_w["precision"],
                  auc_weighted=test_w["auc"], recall_plain=test_p["recall"],
                  precision_plain=test_p["precision"], auc_plain=test_p["auc"],
                  positives=y_test.sum(), negatives=len(y_test) - y_test.sum())


if __name__ == "__main__":
    main()
