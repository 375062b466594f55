"""tt.wrappers.scikit_learn (TF 2.4's KerasClassifier / KerasRegressor): the wrapper equals the
model it builds (same seed: same predictions, accuracy and loss), labels map to classes_ and
back, parameters are checked, and scikit-learn's clone / cross_val_score / GridSearchCV accept
the wrappers (skipped without scikit-learn)."""
import numpy as np
import pytest

import tnp_train as tt
from tnp_train.wrappers.scikit_learn import KerasClassifier, KerasRegressor

RNG = np.random.default_rng(0)
X = RNG.standard_normal((60, 4)).astype("float32")
LABELS = np.array(["cat", "dog", "eel"])[(X[:, 0] > 0).astype(int) + (X[:, 1] > 1).astype(int)]


def build_classifier(units=8, loss="sparse_categorical_crossentropy"):
    tt.utils.set_random_seed(0)
    model = tt.Sequential([tt.Input((4,)), tt.layers.Dense(units, activation="relu"),
                           tt.layers.Dense(3, activation="softmax")])
    model.compile(tt.optimizers.Adam(0.05), loss, metrics=["accuracy"])
    return model


def build_regressor(units=8):
    tt.utils.set_random_seed(0)
    model = tt.Sequential([tt.Input((4,)), tt.layers.Dense(units, activation="relu"),
                           tt.layers.Dense(1)])
    model.compile(tt.optimizers.Adam(0.05), "mse")
    return model


def test_classifier_equals_the_model_it_builds():
    clf = KerasClassifier(build_classifier, units=6, epochs=5, batch_size=16, verbose=0)
    clf.fit(X, LABELS)
    assert list(clf.classes_) == ["cat", "dog", "eel"] and clf.n_classes_ == 3
    ref = build_classifier(units=6)
    y_idx = np.searchsorted(clf.classes_, LABELS)
    ref.fit(X, y_idx, epochs=5, batch_size=16, verbose=0)
    proba = np.asarray(ref.predict(X, verbose=0))
    np.testing.assert_allclose(clf.predict_proba(X), proba, rtol=1e-6)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[proba.argmax(-1)])
    acc = ref.evaluate(X, y_idx, verbose=0)[1]
    assert clf.score(X, LABELS) == pytest.approx(acc)


def test_classifier_one_hot_for_categorical_crossentropy():
    clf = KerasClassifier(build_classifier, loss="categorical_crossentropy", epochs=2,
                          verbose=0)
    clf.fit(X, LABELS)
    assert 0.0 <= clf.score(X, LABELS) <= 1.0


def test_regressor_predict_squeezes_and_score_is_minus_loss():
    y = X @ np.array([1.0, -1.0, 0.5, 0.0], "float32")
    reg = KerasRegressor(build_regressor, epochs=3, verbose=0)
    reg.fit(X, y)
    pred = reg.predict(X)
    assert pred.shape == (60,)
    mse = float(np.mean((np.asarray(reg.model.predict(X, verbose=0))[:, 0] - y) ** 2))
    assert reg.score(X, y) == pytest.approx(-mse, rel=1e-5)


def test_params_are_checked_and_round_trip():
    with pytest.raises(ValueError, match="not_a_param is not a legal parameter"):
        KerasClassifier(build_classifier, not_a_param=1)
    clf = KerasClassifier(build_classifier, units=4, epochs=1)
    assert clf.get_params()["units"] == 4 and clf.get_params()["build_fn"] is build_classifier
    clf.set_params(units=5)
    assert clf.sk_params["units"] == 5
    with pytest.raises(ValueError, match="Invalid shape for y"):
        clf.fit(X, np.zeros((60, 1, 2)))
    clf.fit(X, LABELS, verbose=0)
    no_acc = KerasClassifier(lambda: _no_accuracy(), epochs=1, verbose=0)
    no_acc.fit(X, LABELS)
    with pytest.raises(ValueError, match="not configured to compute accuracy"):
        no_acc.score(X, LABELS)


def _no_accuracy():
    model = tt.Sequential([tt.Input((4,)), tt.layers.Dense(3, activation="softmax")])
    model.compile("sgd", "sparse_categorical_crossentropy")
    return model


def test_scikit_learn_clone_cross_val_and_grid_search():
    sklearn = pytest.importorskip("sklearn")
    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV, cross_val_score
    clf = KerasClassifier(build_classifier, epochs=2, batch_size=16, verbose=0)
    assert clone(clf).get_params()["epochs"] == 2
    scores = cross_val_score(clf, X, LABELS, cv=3)
    assert scores.shape == (3,) and np.all((0 <= scores) & (scores <= 1))
    grid = GridSearchCV(clf, {"units": [2, 6]}, cv=2).fit(X, LABELS)
    assert grid.best_params_["units"] in (2, 6)
    del sklearn
