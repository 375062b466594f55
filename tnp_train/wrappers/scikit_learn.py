"""``KerasClassifier`` and ``KerasRegressor`` (TF 2.4's ``tf.keras.wrappers.scikit_learn``):
a model-building function wrapped as a scikit-learn estimator (``fit``, ``predict``,
``predict_proba``, ``score``, ``get_params``/``set_params``, so ``clone``, pipelines, grid
search and cross-validation work). scikit-learn itself is not needed to use them.

Parameters given to the constructor go to ``build_fn`` where it takes them, and to
``fit``/``predict``/``evaluate`` where those do; any other name is a ValueError, as in TF.
"""
from __future__ import annotations

import copy
import inspect
import types

import numpy as np

__all__ = ["KerasClassifier", "KerasRegressor"]


def _to_categorical(y, num_classes):
    out = np.zeros((len(y), num_classes), dtype="float32")
    out[np.arange(len(y)), np.asarray(y, dtype=np.int64)] = 1.0
    return out


def _arg_names(fn):
    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return set()


class BaseWrapper:
    """The part of TF 2.4's ``BaseWrapper`` both wrappers share."""

    def __init__(self, build_fn=None, **sk_params):
        self.build_fn = build_fn
        self.sk_params = sk_params
        self.check_params(sk_params)

    def _fn(self):
        if self.build_fn is None:
            return self.__call__
        if isinstance(self.build_fn, (types.FunctionType, types.MethodType)):
            return self.build_fn
        return self.build_fn.__call__

    _estimator_type = None

    def __sklearn_tags__(self):
        # scikit-learn >= 1.6 reads an estimator's kind from its tags (TF 2.4's wrappers
        # predate them): imported only when scikit-learn asks
        from sklearn.base import BaseEstimator
        tags = BaseEstimator.__sklearn_tags__(self)
        tags.target_tags.required = True
        if self._estimator_type == "classifier":
            from sklearn.utils import ClassifierTags
            tags.estimator_type, tags.classifier_tags = "classifier", ClassifierTags()
        elif self._estimator_type == "regressor":
            from sklearn.utils import RegressorTags
            tags.estimator_type, tags.regressor_tags = "regressor", RegressorTags()
        return tags

    def check_params(self, params):
        from ..models import Sequential
        legal = set()
        for fn in (Sequential.fit, Sequential.predict, Sequential.evaluate, self._fn()):
            legal |= _arg_names(fn)
        for name in params:
            if name not in legal and name != "nb_epoch":
                raise ValueError(f"{name} is not a legal parameter")

    def get_params(self, **params):
        res = copy.deepcopy(self.sk_params)
        res.update({"build_fn": self.build_fn})
        return res

    def set_params(self, **params):
        self.check_params(params)
        self.sk_params.update(params)
        return self

    def filter_sk_params(self, fn, override=None):
        override = override or {}
        names = _arg_names(fn)
        res = {k: v for k, v in self.sk_params.items() if k in names}
        res.update(override)
        return res

    def fit(self, x, y, **kwargs):
        fn = self._fn()
        self.model = fn(**self.filter_sk_params(fn))
        from ..models import Sequential
        if _loss_name(self.model) == "categorical_crossentropy" and np.ndim(y) != 2:
            y = _to_categorical(y, len(np.unique(y)) if not hasattr(self, "n_classes_")
                                else self.n_classes_)
        fit_args = self.filter_sk_params(Sequential.fit)
        fit_args.update(kwargs)
        return self.model.fit(x, y, **fit_args)


def _loss_name(model):
    """The loss ``compile`` was given: its ``__name__`` for a function, as TF reads it."""
    loss = (getattr(model, "_compile_config", None) or {}).get("loss")
    return getattr(loss, "__name__", loss) if not isinstance(loss, str) else loss


class KerasClassifier(BaseWrapper):
    """Mirrors ``tf.keras.wrappers.scikit_learn.KerasClassifier(build_fn=None, **sk_params)``:
    labels are mapped to ``0..n_classes-1`` (``classes_``) for training and back for
    ``predict``; ``score`` is the model's accuracy (compile with ``metrics=["accuracy"]``)."""

    _estimator_type = "classifier"

    def fit(self, x, y, **kwargs):
        y = np.array(y)
        if y.ndim == 2 and y.shape[1] > 1:
            self.classes_ = np.arange(y.shape[1])
        elif (y.ndim == 2 and y.shape[1] == 1) or y.ndim == 1:
            self.classes_ = np.unique(y)
            y = np.searchsorted(self.classes_, y)
        else:
            raise ValueError(f"Invalid shape for y: {y.shape}")
        self.n_classes_ = len(self.classes_)
        return super().fit(x, y, **kwargs)

    def _proba(self, x, **kwargs):
        from ..models import Sequential
        kwargs = self.filter_sk_params(Sequential.predict, kwargs)
        return np.asarray(self.model.predict(x, **kwargs))

    def predict(self, x, **kwargs):
        proba = self._proba(x, **kwargs)
        if proba.shape[-1] > 1:
            classes = proba.argmax(axis=-1)
        else:
            classes = (proba > 0.5).astype("int32")
        return self.classes_[classes]

    def predict_proba(self, x, **kwargs):
        probs = self._proba(x, **kwargs)
        if probs.shape[1] == 1:
            probs = np.hstack([1 - probs, probs])
        return probs

    def score(self, x, y, **kwargs):
        from ..models import Sequential
        y = np.searchsorted(self.classes_, y)
        kwargs = self.filter_sk_params(Sequential.evaluate, kwargs)
        if _loss_name(self.model) == "categorical_crossentropy" and np.ndim(y) != 2:
            y = _to_categorical(y, self.n_classes_)
        kwargs.setdefault("verbose", 0)
        outputs = self.model.evaluate(x, y, **kwargs)
        outputs = outputs if isinstance(outputs, list) else [outputs]
        for name, output in zip(self.model.metrics_names, outputs):
            if name in ("accuracy", "acc"):
                return float(output)
        raise ValueError("The model is not configured to compute accuracy. You should pass "
                         "`metrics=[\"accuracy\"]` to the `model.compile()` method.")


class KerasRegressor(BaseWrapper):
    """Mirrors ``tf.keras.wrappers.scikit_learn.KerasRegressor(build_fn=None, **sk_params)``:
    ``predict`` squeezes the model's output; ``score`` is minus the loss."""

    _estimator_type = "regressor"

    def predict(self, x, **kwargs):
        from ..models import Sequential
        kwargs = self.filter_sk_params(Sequential.predict, kwargs)
        return np.squeeze(np.asarray(self.model.predict(x, **kwargs)))

    def score(self, x, y, **kwargs):
        from ..models import Sequential
        kwargs = self.filter_sk_params(Sequential.evaluate, kwargs)
        kwargs.setdefault("verbose", 0)
        loss = self.model.evaluate(x, y, **kwargs)
        return -float(loss[0] if isinstance(loss, list) else loss)
