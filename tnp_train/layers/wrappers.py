"""Layer wrappers with TF 2.4 ``tf.keras.layers`` signatures: ``Wrapper`` (the base class) and
``TimeDistributed``. (``Bidirectional`` lives with the recurrent layers.)"""
from __future__ import annotations

import tnp

from .base import Layer
from .serialization import deserialize, serialize

__all__ = ["Wrapper", "TimeDistributed"]


class Wrapper(Layer):
    """Mirrors ``tf.keras.layers.Wrapper(layer)``: a layer that holds another one (tracked, so
    its weights are the wrapper's); the config nests the wrapped layer's."""

    def __init__(self, layer, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError(f"Please initialize `{type(self).__name__}` layer with a "
                             f"`tt.layers.Layer` instance. You passed: {layer!r}")
        super().__init__(**kwargs)
        self.layer = layer

    def build(self, input_shape=None):
        if not self.layer.built:
            self.layer._maybe_build(input_shape)
        super().build(input_shape)

    def get_config(self):
        return {**super().get_config(), "layer": serialize(self.layer)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        config["layer"] = deserialize(config["layer"], custom_objects=custom_objects)
        return Layer.from_config.__func__(cls, config)


def _map(fn, out):
    return [fn(o) for o in out] if isinstance(out, list) else fn(out)


class TimeDistributed(Wrapper):
    """Mirrors ``tf.keras.layers.TimeDistributed(layer)``: applies ``layer`` to every step of a
    (batch, steps, ...) input, as one call on the (batch * steps, ...) reshape. A mask reaches
    the inner layer reshaped the same way when its ``call`` takes one; outputs at masked steps
    are the inner layer's (TF's reshape path; its eager path repeats the last unmasked step's
    output instead)."""

    def __init__(self, layer, **kwargs):
        super().__init__(layer, **kwargs)
        self.supports_masking = True

    def _check(self, shape):
        if isinstance(shape, list) or len(shape) < 3:
            raise ValueError(f"`TimeDistributed` Layer ({self.name}) should be passed an input "
                             f"with at least 3 dimensions, received: {shape}")

    @staticmethod
    def _inner_shape(shape):
        b, t = shape[0], shape[1]
        return (None if b is None or t is None else b * t,) + tuple(shape[2:])

    def build(self, input_shape):
        shape = tuple(input_shape) if not isinstance(input_shape, list) else input_shape
        self._check(shape)
        super().build(self._inner_shape(shape))

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        self._check(shape)
        inner = self.layer.compute_output_shape(self._inner_shape(shape))
        return _map(lambda s: tuple(shape[:2]) + tuple(s[1:]), inner)

    def call(self, inputs, training=None, mask=None):
        x = inputs
        self._check(tuple(x.shape))
        b, t = x.shape[0], x.shape[1]
        kwargs = {}
        if self.layer._call_takes_training:
            kwargs["training"] = training
        if mask is not None and self.layer._call_takes_mask:
            m = tnp.asarray(mask)
            kwargs["mask"] = tnp.reshape(m, (b * t,) + tuple(m.shape[2:]))
        y = self.layer(tnp.reshape(x, (b * t,) + tuple(x.shape[2:])), **kwargs)
        return _map(lambda o: tnp.reshape(o, (b, t) + tuple(o.shape[1:])), y)

    def compute_mask(self, inputs, mask=None):
        b, t = inputs.shape[0], inputs.shape[1]
        inner_mask = None
        if mask is not None:
            m = tnp.asarray(mask)
            inner_mask = tnp.reshape(m, (b * t,) + tuple(m.shape[2:]))
        out = self.layer.compute_mask(tnp.reshape(inputs, (b * t,) + tuple(inputs.shape[2:])),
                                      inner_mask)
        if out is None:
            if mask is None:
                return None
            # the inner layer drops the mask: keep one per step, as TF
            m = tnp.asarray(mask)
            return tnp.any(m, axis=tuple(range(2, m.ndim))) if m.ndim > 2 else m
        return tnp.reshape(out, (b, t) + tuple(out.shape[1:]))
