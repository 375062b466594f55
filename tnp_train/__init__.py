"""tnp_train: training on top of tnp (modelled on TF 2.4's tf.keras and tf.GradientTape).

Tape autodiff through any tnp code (``GradientTape``, ``Variable``, ``custom_gradient``,
``stop_gradient``); Keras-style layers, models (``Sequential``, functional ``Model(inputs,
outputs)``, subclassed ``Model``) with ``compile``/``fit``/``evaluate``/``predict``; losses,
metrics, optimizers, callbacks; an input pipeline (``tt.data``); checkpoints (``tt.train``);
mixed precision (``tt.mixed_precision``).
"""
from .autodiff import (
    GradientTape, Variable, VariableAggregation, VariableSynchronization, custom_gradient,
    stop_gradient, variable_creator_scope)

from . import activations, backend, initializers, mixed_precision, utils  # noqa: E402
from . import layers, losses, optimizers  # noqa: E402
from . import models  # noqa: E402
from .layers import Input  # noqa: E402
from .models import Model, Sequential  # noqa: E402
from .utils.lazy import LazyModule as _Lazy  # noqa: E402

# packages at the level of the trainers, imported when first used
metrics = _Lazy("tnp_train.metrics")
regularizers = _Lazy("tnp_train.regularizers")
callbacks = _Lazy("tnp_train.callbacks")
data = _Lazy("tnp_train.data")
train = _Lazy("tnp_train.train")
nn = _Lazy("tnp_train.nn")
distribute = _Lazy("tnp_train.distribute")
profiler = _Lazy("tnp_train.profiler")
experimental = _Lazy("tnp_train.experimental")
wrappers = _Lazy("tnp_train.wrappers")
applications = _Lazy("tnp_train.applications")
constraints = _Lazy("tnp_train.constraints")
preprocessing = _Lazy("tnp_train.preprocessing")
datasets = _Lazy("tnp_train.datasets")

__version__ = "0.1.0"
__all__ = ["applications", "GradientTape", "Variable", "VariableAggregation", "VariableSynchronization",
           "variable_creator_scope",
           "custom_gradient", "stop_gradient", "Input", "Model", "Sequential", "activations", "backend",
           "experimental", "wrappers",
           "callbacks", "constraints", "data", "datasets", "distribute", "initializers", "layers", "losses", "metrics", "mixed_precision",
           "models", "nn", "optimizers", "preprocessing", "profiler", "regularizers", "train", "utils"]
