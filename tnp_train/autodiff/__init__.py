"""Tape autodiff through any tnp code: ``GradientTape``, ``Variable``, ``custom_gradient``,
``stop_gradient``, ``paused``, ``variable_creator_scope``; the VJP registry and
finite-difference checks."""
from .tape import GradientTape, custom_gradient, paused, stop_gradient
from .variables import (
    Variable, VariableAggregation, VariableSynchronization, variable_creator_scope)
from . import registry
from . import vjps  # noqa: F401  (fills the registry)
from .check import check_grads

__all__ = ["GradientTape", "Variable", "VariableAggregation", "VariableSynchronization",
           "variable_creator_scope", "custom_gradient", "stop_gradient", "paused", "check_grads",
           "registry"]
