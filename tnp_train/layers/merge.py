"""Merge layers: ``Add``, ``Subtract``, ``Multiply``, ``Average``, ``Maximum``, ``Minimum``,
``Concatenate``, ``Dot`` and their function forms (TF 2.4 signatures). Each takes a list of
inputs; elementwise merges broadcast as Keras's do: the batch sizes must agree, the other axes
broadcast right-aligned, and an input of lower rank gets its new axes after the batch axis
(NumPy's broadcasting would put them first, mixing samples when the batch size happens to
match another axis)."""
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

    def _elementwise_shape(self, shapes):
        """The output shape of an elementwise merge of ``shapes`` (TF's rule), or ValueError."""
        batches = {s[0] for s in shapes if s[0] is not None}
        if len(batches) > 1:
            raise ValueError(f"{type(self).__name__} ({self.name}): can not merge tensors with "
                             f"different batch sizes. Got tensors with shapes: {shapes}")
        out = list(shapes[0][1:])
        for s in shapes[1:]:
            a, b = (out, list(s[1:])) if len(out) >= len(s) - 1 else (list(s[1:]), out)
            lead = a[:len(a) - len(b)]
            for i, j in zip(a[len(a) - len(b):], b):
                if i is None or j is None:
                    lead.append(None)
                elif i == 1 or j == 1 or i == j:
                    lead.append(j if i == 1 else i)
                else:
                    raise ValueError(f"{type(self).__name__} ({self.name}): operands could not be "
                                     f"broadcast together with shapes {shapes}")
            out = lead
        return (batches.pop() if batches else None,) + tuple(out)

    def compute_output_shape(self, input_shape):
        self._check(input_shape)
        return self._elementwise_shape([tuple(s) for s in input_shape])

    def _align(self, xs):
        """The inputs checked, those of lower rank given axes after the batch axis (TF)."""
        self._elementwise_shape([tuple(x.shape) for x in xs])
        nd = max(x.ndim for x in xs)
        return [x if x.ndim == nd else
                tnp.reshape(x, (x.shape[0],) + (1,) * (nd - x.ndim) + tuple(x.shape[1:]))
                for x in xs]

    def call(self, inputs):
        self._check(inputs)
        xs = [x if isinstance(x, tnp.ndarray) else tnp.asarray(x) for x in inputs]
        try:
            return self._merge(self._align(xs))
        except ValueError as e:
            raise ValueError(f"{type(self).__name__} ({self.name}): inputs of shapes "
                             f"{[tuple(x.shape) for x in xs]} cannot be merged: {e}") from None

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
    """Elementwise maximum of the inputs."""

    def _merge(self, xs):
        return functools.reduce(tnp.maximum, xs)


class Minimum(_Merge):
    """Elementwise minimum of the inputs."""

    def _merge(self, xs):
        return functools.reduce(tnp.minimum, xs)


class Concatenate(_Merge):
    """Concatenates the inputs along ``axis`` (default -1)."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = int(axis)

    def _align(self, xs):
        return xs

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
        """TF's rule: each input's mask (all True when it has none, an axis added when it has
        one axis less than the input) concatenated along ``axis``, then ``all`` over the last
        axis. Computed piece by piece (``all`` over the last axis first), which is the same
        wherever TF's concatenation succeeds and also serves an unmasked input next to a
        masked one along a non-last axis, which TF refuses."""
        if mask is None or all(m is None for m in mask):
            return None
        nd = inputs[0].ndim
        pieces = []
        for x, m in zip(inputs, mask):
            if m is None:
                pieces.append(tnp.ones(tuple(x.shape[:-1]), dtype=bool, device=x.device))
            else:
                m = tnp.asarray(m)
                pieces.append(tnp.all(m, axis=-1) if m.ndim == x.ndim else m)
        if self.axis % nd == nd - 1:
            return functools.reduce(tnp.logical_and, pieces)
        return tnp.concatenate(pieces, axis=self.axis % nd)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


class Dot(_Merge):
    """Dot products between samples of two inputs along ``axes`` (``normalize`` for cosine)."""

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        if isinstance(axes, (list, tuple)):
            if len(axes) != 2:
                raise ValueError(f"Dot: invalid format for `axes`: should contain two elements, "
                                 f"got {axes!r}")
            if not all(isinstance(a, int) for a in axes):
                raise ValueError(f"Dot: invalid format for `axes`: list elements should be "
                                 f"\"int\", got {axes!r}")
            self.axes = tuple(axes)
        elif isinstance(axes, int):
            self.axes = axes
        else:
            raise TypeError(f"Dot: invalid type for `axes`: should be a list or an int, got "
                            f"{axes!r}")
        self.normalize = bool(normalize)

    def _check(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError(f"A `Dot` layer ({self.name}) should be called on exactly 2 inputs")

    def _axes_for(self, shapes):
        pair = self.axes if isinstance(self.axes, tuple) else (self.axes, self.axes)
        out = []
        for a, s in zip(pair, shapes):
            if not -len(s) <= a < len(s) or a % len(s) == 0:
                raise ValueError(f"Dot ({self.name}): axis {a} does not name a non-batch axis of "
                                 f"an input of shape {tuple(s)}")
            out.append(a % len(s))
        if shapes[0][out[0]] is not None and shapes[1][out[1]] is not None and \
                shapes[0][out[0]] != shapes[1][out[1]]:
            raise ValueError(f"Dot ({self.name}): dimension incompatibility "
                             f"{shapes[0][out[0]]} != {shapes[1][out[1]]}. Layer shapes: "
                             f"{tuple(shapes[0])}, {tuple(shapes[1])}")
        return out

    def _align(self, xs):
        if xs[0].shape[0] != xs[1].shape[0]:
            raise ValueError(f"Dot ({self.name}): the batch sizes differ: shapes "
                             f"{tuple(xs[0].shape)} and {tuple(xs[1].shape)}")
        return xs

    def compute_output_shape(self, input_shape):
        self._check(input_shape)
        s1, s2 = (list(s) for s in input_shape)
        a1, a2 = self._axes_for((s1, s2))
        s1.pop(a1)
        s2.pop(a2)
        out = s1 + s2[1:]
        return tuple(out + [1] if len(out) == 1 else out)

    def compute_mask(self, inputs, mask=None):
        return None

    def _merge(self, xs):
        a, b = xs
        ax = self._axes_for((a.shape, b.shape))
        if self.normalize:
            a = a / tnp.sqrt(tnp.maximum(tnp.sum(a * a, axis=ax[0], keepdims=True), 1e-12))
            b = b / tnp.sqrt(tnp.maximum(tnp.sum(b * b, axis=ax[1], keepdims=True), 1e-12))
        # batched tensordot: move the contracted axes last, then einsum over the batch
        a2 = tnp.moveaxis(a, ax[0], -1)
        b2 = tnp.moveaxis(b, ax[1], -1)
        la, lb = a2.ndim - 2, b2.ndim - 2
        letters = "cdefghijklmnopqrstuvwxyz"
        sa, sb = letters[:la], letters[la:la + lb]
        out = tnp.einsum(f"b{sa}z,b{sb}z->b{sa}{sb}", a2, b2)
        return out if out.ndim > 1 else tnp.expand_dims(out, -1)

    def get_config(self):
        axes = list(self.axes) if isinstance(self.axes, tuple) else self.axes
        return {**super().get_config(), "axes": axes, "normalize": self.normalize}


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
