"""``Normalization`` (TF 2.4): ``(x - mean) / max(sqrt(variance), epsilon)`` per position of
``axis``, with ``mean``/``variance``/``count`` as non-trainable weights (so checkpoints and
``model.save`` carry an adapted state) set by ``adapt``."""
from __future__ import annotations

import numpy as _np

import tnp
from tnp.extend import is_floating

from ._base import PreprocessingLayer

__all__ = ["Normalization"]

_EPSILON = 1e-7   # Keras's backend.epsilon(), the floor TF 2.4 puts under the std


class Normalization(PreprocessingLayer):
    """Mirrors TF 2.4's ``Normalization(axis=-1)``: normalizes to mean 0, variance 1 per
    index of ``axis`` (an int or tuple; None: one mean and variance for all). TF 2.5's ``mean``
    and ``variance`` arguments are accepted too (then ``adapt`` is not needed)."""

    def __init__(self, axis=-1, mean=None, variance=None, **kwargs):
        super().__init__(**kwargs)
        if axis is None:
            axis = ()
        elif isinstance(axis, (int, _np.integer)):
            axis = (int(axis),)
        else:
            axis = tuple(int(a) for a in axis)
        if 0 in axis:
            raise ValueError("Normalization: the batch axis (0) may not be in axis")
        if (mean is None) != (variance is None):
            raise ValueError("Normalization: pass both mean and variance, or neither")
        self.axis = axis
        self._init_mean = None if mean is None else _np.asarray(mean, dtype=_np.float64)
        self._init_variance = None if variance is None else _np.asarray(variance, _np.float64)

    def _axes(self, ndim):
        out = []
        for a in self.axis:
            b = a + ndim if a < 0 else a
            if not 0 < b < ndim:
                raise ValueError(f"{self.name}: axis {a} is out of range (or the batch axis) "
                                 f"for inputs of rank {ndim}")
            out.append(b)
        return tuple(sorted(out))

    def build(self, input_shape):
        shape = tuple(input_shape)
        if len(shape) == 1:     # rank-1 inputs are one feature (TF 2.4 expands them)
            shape = shape + (1,)
        keep = self._axes(len(shape))
        for d in keep:
            if shape[d] is None:
                raise ValueError(f"{self.name}: all axes in axis must have known sizes, got "
                                 f"input shape {shape}")
        self._keep = keep
        self._bshape = tuple(shape[d] if d in keep else 1 for d in range(len(shape)))
        wshape = tuple(shape[d] for d in keep)
        self.mean = self.add_weight(name="mean", shape=wshape, initializer="zeros",
                                    trainable=False)
        self.variance = self.add_weight(name="variance", shape=wshape, initializer="ones",
                                        trainable=False)
        self.count = self.add_weight(name="count", shape=(), dtype="int64",
                                     initializer="zeros", trainable=False)
        if self._init_mean is not None:
            self.mean.assign(tnp.asarray(_np.broadcast_to(self._init_mean, wshape),
                                         dtype=self.mean.dtype))
            self.variance.assign(tnp.asarray(_np.broadcast_to(self._init_variance, wshape),
                                             dtype=self.variance.dtype))
        super().build(input_shape)

    # ------------------------------------------------------------------ adapt
    def _reset_state(self):
        self._n, self._m, self._m2 = 0, None, None

    def _update_state(self, batch):
        a = _np.asarray(batch, dtype=_np.float64)
        if a.ndim <= 1:     # TF 2.4 reads rank-1 data as one feature
            a = a.reshape(-1, 1)
        if not self.built:
            self._maybe_build((None,) + a.shape[1:])
        keep = self._keep
        if a.ndim != len(self._bshape) or any(a.shape[d] != self._bshape[d] for d in keep):
            raise ValueError(f"{self.name}.adapt: a batch of shape {a.shape} does not fit the "
                             f"layer built for shape {self._bshape} on axis {self.axis}")
        red = tuple(d for d in range(a.ndim) if d not in keep)
        n = int(_np.prod([a.shape[d] for d in red])) if red else 1
        mean = a.mean(axis=red)
        m2 = ((a - mean.reshape(self._bshape)) ** 2).sum(axis=red)
        if self._m is None:
            self._n, self._m, self._m2 = n, mean, m2
            return
        # Chan et al.'s pairwise update: batches combine exactly as one pass over all data
        tot = self._n + n
        delta = mean - self._m
        self._m = self._m + delta * (n / tot)
        self._m2 = self._m2 + m2 + delta ** 2 * (self._n * n / tot)
        self._n = tot

    def _finalize_state(self):
        self.mean.assign(tnp.asarray(self._m, dtype=self.mean.dtype))
        self.variance.assign(tnp.asarray(self._m2 / self._n, dtype=self.variance.dtype))
        self.count.assign(tnp.asarray(self._n, dtype="int64"))
        del self._n, self._m, self._m2

    # ------------------------------------------------------------------ call
    def call(self, inputs):
        if not is_floating(inputs.dtype):     # integers normalize as floats (TF 2.4 casts)
            inputs = inputs.astype(self.compute_dtype)
        if inputs.ndim == 1:
            inputs = tnp.expand_dims(inputs, 1)
        if inputs.ndim != len(self._bshape) or tuple(inputs.shape[d] for d in self._keep) != \
                tuple(self._bshape[d] for d in self._keep):
            raise ValueError(f"{self.name}: inputs of shape {tuple(inputs.shape)} do not fit the "
                             f"layer built for shape {self._bshape} on axis {self.axis}")
        mean = tnp.reshape(self.mean, self._bshape).astype(inputs.dtype)
        std = tnp.sqrt(tnp.reshape(self.variance, self._bshape).astype(inputs.dtype))
        return (inputs - mean) / tnp.maximum(std, _EPSILON)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + ((1,) if len(input_shape) == 1 else ())

    def get_config(self):
        cfg = {**super().get_config(), "axis": list(self.axis) if len(self.axis) != 1 else
               self.axis[0]}
        if not self.axis:
            cfg["axis"] = None
        if self._init_mean is not None:
            cfg["mean"] = self._init_mean.tolist()
            cfg["variance"] = self._init_variance.tolist()
        return cfg
