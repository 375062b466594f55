"""tnp_train: training on top of tnp (modelled on TF 2.4's tf.keras and tf.GradientTape).

So far: tape autodiff through any tnp code (``GradientTape``, ``Variable``,
``custom_gradient``, ``stop_gradient``), and the first Keras-style pieces: ``Layer``, ``Dense``,
``Input``, ``Sequential``, the ``SGD`` optimizer, ``SparseCategoricalCrossentropy``. The rest of
the layers, ``compile``/``fit``, data, checkpoints, mixed precision, distribution strategies and
the profiler build on them.
"""
from .autodiff import (
    GradientTape, Variable, VariableAggregation, VariableSynchronization, custom_gradient,
    stop_gradient)

from . import activations, initializers, layers, losses, models, optimizers  # noqa: E402
from .layers import Input  # noqa: E402
from .models import Sequential  # noqa: E402

__version__ = "0.1.0"
__all__ = ["GradientTape", "Variable", "VariableAggregation", "VariableSynchronization",
           "custom_gradient", "stop_gradient", "Input", "Sequential", "activations",
           "initializers", "layers", "losses", "models", "optimizers"]
