"""Session state of the backend (``tf.keras.backend`` of TF 2.4, which has no session under
eager execution): the layer-name and uid counters, the learning phase, name scopes."""
from __future__ import annotations

import contextlib
import warnings

import numpy as _np

import tnp

from ..layers.base import reset_names
from ..mixed_precision.policy import set_global_policy
from ._common import symbolic_ops
from .manipulation import switch

__all__ = ["clear_session", "get_uid", "in_test_phase", "in_train_phase", "learning_phase",
           "learning_phase_scope", "manual_variable_initialization", "name_scope",
           "reset_uids", "set_learning_phase"]

_state = {"learning_phase": None, "manual_init": False}
_uids: dict = {}


def clear_session():
    """Reset layer-name counters (so new models are named ``dense``, ``dense_1``... again), the
    uids, the learning phase and the global dtype policy."""
    reset_names()
    _uids.clear()
    _state["learning_phase"] = None
    set_global_policy(None)


def get_uid(prefix=""):
    """1, 2, 3... per ``prefix`` (``tf.keras.backend.get_uid``)."""
    _uids[prefix] = _uids.get(prefix, 0) + 1
    return _uids[prefix]


def reset_uids():
    """Forget the ``get_uid`` counters."""
    _uids.clear()


def manual_variable_initialization(value):
    """Recorded for compatibility: eager variables are always initialised when made."""
    _state["manual_init"] = bool(value)


@contextlib.contextmanager
def name_scope(name):
    """A no-op scope (TF's name scopes name graph ops; tnp has no graph)."""
    if not isinstance(name, str):
        raise TypeError(f"name_scope: name must be a string, got {name!r}")
    yield name


def learning_phase():
    """0 (inference) unless set by ``set_learning_phase``/``learning_phase_scope``; as TF 2.4's
    eager default. tnp_train's layers take ``training`` from their call."""
    lp = _state["learning_phase"]
    return 0 if lp is None else lp


def _check_phase(value):
    if value not in (0, 1):
        raise ValueError("Expected learning phase to be 0 or 1.")


def set_learning_phase(value):
    """Set the learning phase (deprecated in TF 2.4 too: a warning)."""
    warnings.warn("`tf.keras.backend.set_learning_phase` is deprecated and will be removed "
                  "after 2020-10-11. To update it, simply pass a True/False value to the "
                  "`training` argument of the `__call__` method of your layer or model.",
                  DeprecationWarning, stacklevel=2)
    _check_phase(value)
    _state["learning_phase"] = value


@contextlib.contextmanager
def learning_phase_scope(value):
    """The learning phase is ``value`` inside the block (deprecated in TF 2.4 too)."""
    warnings.warn("`tf.keras.backend.learning_phase_scope` is deprecated and will be removed "
                  "after 2020-10-11. To update it, simply pass a True/False value to the "
                  "`training` argument of the `__call__` method of your layer or model.",
                  DeprecationWarning, stacklevel=3)
    _check_phase(value)
    before = _state["learning_phase"]
    _state["learning_phase"] = value
    try:
        yield value
    finally:
        _state["learning_phase"] = before


def in_train_phase(x, alt, training=None):
    """``x`` in the training phase, ``alt`` otherwise (either may be a callable); ``training``
    defaults to ``learning_phase()``."""
    if training is None:
        training = learning_phase()
    if isinstance(training, (tnp.ndarray, _np.ndarray)):
        if training.ndim:
            return switch(training, x() if callable(x) else x, alt() if callable(alt) else alt)
        training = bool(training)
    if training == 1 or training is True:
        return x() if callable(x) else x
    if training == 0 or training is False:
        return alt() if callable(alt) else alt
    return switch(training, x, alt)


def in_test_phase(x, alt, training=None):
    """``x`` in the test phase, ``alt`` otherwise."""
    return in_train_phase(alt, x, training=training)


symbolic_ops(globals())
