"""Keras-style layers (``tt.layers``)."""
from .base import Layer
from .core import Dense, Input, InputLayer

__all__ = ["Layer", "Dense", "Input", "InputLayer"]
