"""Merge layers: ``Add``, ``Subtract``, ``Multiply``, ``Average``, ``Maximum``, ``Minimum``,
``Concatenate``, ``Dot`` and their function forms (TF 2.4 signatures). Each takes a list of
inputs; elementwise merges broadcast as Keras's do."""
from __future__ import annotations

import functools

import tnp

from .base import Layer

__all__ = ["Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate", "Dot",
           "add", "subtract", "multiply", "average", "maximum", "minimum", "concatenate", "dot"]


class _Merge(Layer):
    _min_inputs = 2

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def _check(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) < self._min_inputs:
            n = len(inputs) if isinstance(inputs, (list, tuple)) else 1
            raise ValueError(f"A merge layer ({type(self).__name__} {self.name}) should be called "
                             f"on a list of at least {self._min_inputs} inputs. Got {n} inputs.")

    def build(self, input_shape):
        self._check(input_shape)
        super().build(input_shape)

    def call(self, inputs):
        self._check(inputs)
        try:
            return self._merge(list(inputs))
        except ValueError as e:
            raise ValueError(f"{type(self).__name__} ({self.name}): inputs of shapes "
                             f"{[tuple(x.shape) for x in inputs]} cannot be merged: {e}") from None

    def compute_mask(self, inputs, mask=None):
        if mask is None or all(m is None for m in mask):
            return None
        ms = [m for m in mask if m is not None]
        return functools.reduce(tnp.logical_and, ms)


class Add(_Merge):
    """Elementwise sum of the inputs."""

    def _merge(self, xs):
        return functools.reduce(lambda a, b: a + b, xs)


class Subtract(_Merge):
    """``inputs[0] - inputs[1]`` (exactly two inputs)."""

    def _check(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError(f"A `Subtract` layer ({self.name}) should be called on exactly 2 "
                             f"inputs")

    def _merge(self, xs):
        return xs[0] - xs[1]


class Multiply(_Merge):
    """Elementwise product of the inputs."""

    def _merge(self, xs):
        return functools.reduce(lambda a, b: a * b, xs)


class Average(_Merge):
    """Elementwise mean of the inputs."""

    def _merge(self, xs):
        return functools.reduce(lambda a, b: a + b, xs) / len(xs)


class Maximum(_Merge):
    def _merge(self, xs):
        return functools.reduce(tnp.maximum, xs)


class Minimum(_Merge):
    def _merge(self, xs):
        return functools.reduce(tnp.minimum, xs)


class Concatenate(_Merge):
    """Concatenates the inputs along ``axis`` (default -1)."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = int(axis)

    def _merge(self, xs):
        return tnp.concatenate(xs, axis=self.axis)

    def compute_output_shape(self, input_shape):
        shapes = [list(s) for s in input_shape]
        out = list(shapes[0])
        ax = self.axis % len(out)
        for s in shapes[1:]:
            if len(s) != len(out) or any(a != b and a is not None and b is not None
                                         for i, (a, b) in enumerate(zip(s, out)) if i != ax):
                raise ValueError(f"A Concatenate layer requires inputs with matching shapes except "
                                 f"for the concatenation axis. Received: input_shape={input_shape}")
        out[ax] = None if any(s[ax] is None for s in shapes) else sum(s[ax] for s in shapes)
        return tuple(out)

    def compute_mask(self, inputs, mask=None):
        if mask is None or all(m is None for m in mask):
            return None
        if self.axis % inputs[0].ndim == inputs[0].ndim - 1:
            full = [m if m is not None else tnp.ones(x.shape[:-1], dtype=bool)
                    for x, m in zip(inputs, mask)]
            return functools.reduce(tnp.logical_and, full)
        return None

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


class Dot(_Merge):
    """Dot products between samples of two inputs along ``axes`` (``normalize`` for cosine)."""

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        self.axes = tuple(axes) if isinstance(axes, (list, tuple)) else (int(axes), int(axes))
        self.normalize = bool(normalize)

    def _check(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError(f"A `Dot` layer ({self.name}) should be called on exactly 2 inputs")

    def _merge(self, xs):
        a, b = xs
        ax = [x % y.ndim for x, y in zip(self.axes, (a, b))]
        if self.normalize:
            a = a / tnp.sqrt(tnp.maximum(tnp.sum(a * a, axis=ax[0], keepdims=True), 1e-12))
            b = b / tnp.sqrt(tnp.maximum(tnp.sum(b * b, axis=ax[1], keepdims=True), 1e-12))
        if a.shape[ax[0]] != b.shape[ax[1]]:
            raise ValueError(f"Dimension incompatibility {a.shape[ax[0]]} != {b.shape[ax[1]]}")
        # batched tensordot: move the contracted axes last, then einsum over the batch
        a2 = tnp.moveaxis(a, ax[0], -1)
        b2 = tnp.moveaxis(b, ax[1], -1)
        la, lb = a2.ndim - 2, b2.ndim - 2
        letters = "cdefghijklmnopqrstuvwxyz"
        sa, sb = letters[:la], letters[la:la + lb]
        out = tnp.einsum(f"b{sa}z,b{sb}z->b{sa}{sb}", a2, b2)
        return out if out.ndim > 1 else tnp.expand_dims(out, -1)

    def get_config(self):
        return {**super().get_config(), "axes": list(self.axes), "normalize": self.normalize}


def _fn(cls):
    def f(inputs, **kwargs):
        return cls(**kwargs)(inputs)
    f.__name__ = cls.__name__.lower()
    f.__doc__ = f"Functional form of :class:`{cls.__name__}`."
    return f


add, subtract, multiply, average = _fn(Add), _fn(Subtract), _fn(Multiply), _fn(Average)
maximum, minimum, concatenate = _fn(Maximum), _fn(Minimum), _fn(Concatenate)


def dot(inputs, axes, normalize=False, **kwargs):
    """Functional form of :class:`Dot`."""
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)
