"""Optimizers (``tt.optimizers``)."""
from .base_optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD"]
