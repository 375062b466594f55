"""tnp_train: training on top of tnp (modelled on TF 2.4's tf.keras and tf.GradientTape).

So far: tape autodiff through any tnp code (``GradientTape``, ``Variable``,
``custom_gradient``, ``stop_gradient``). Layers, models, optimizers, data, checkpoints, mixed
precision, distribution strategies and the profiler build on it.
"""
from .autodiff import (
    GradientTape, Variable, VariableAggregation, VariableSynchronization, custom_gradient,
    stop_gradient)

__version__ = "0.1.0"
__all__ = ["GradientTape", "Variable", "VariableAggregation", "VariableSynchronization",
           "custom_gradient", "stop_gradient"]
