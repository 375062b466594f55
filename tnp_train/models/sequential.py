"""``Sequential``: a stack of layers, each feeding the next (``tf.keras.Sequential``).

With ``tt.Input`` first (or a first layer given ``input_shape=``) the model is built at once
(so ``set_weights`` and ``summary`` work before the first call); otherwise on the first call.
Building runs placeholders through the stack, which records every layer's output shape.
"""
from __future__ import annotations

from ..layers.base import Layer
from ..layers.core import InputLayer
from ..layers.keras_tensor import KerasTensor
from ..layers import serialization as _ser
from ..utils.serialization import get_registered_name
from .model import Model

__all__ = ["Sequential"]


class Sequential(Model):
    """Mirrors ``tf.keras.Sequential(layers=None, name=None)``."""

    def __init__(self, layers=None, name=None):
        Layer.__init__(self, name=name)
        self._init_trainer()
        self._input_layer = None
        self._stack = []
        self._mask_any = False
        for layer in layers or ():
            self.add(layer)

    @property
    def layers(self):
        return list(self._stack)

    def add(self, layer):
        """Append a layer (an ``Input``/``InputLayer`` first sets the input shape)."""
        if isinstance(layer, KerasTensor):
            if layer._node is None or not isinstance(layer._node.layer, InputLayer):
                raise TypeError(f"{self.name}.add: only a tt.Input tensor can be added, got "
                                f"{layer!r}")
            layer = layer._node.layer
        if isinstance(layer, InputLayer):
            if self._stack or self._input_layer is not None:
                raise ValueError(f"{self.name}: an Input can only come first")
            self._input_layer = layer
            self._batch_input_shape = (layer.batch_size,) + tuple(layer._dims)
            return
        if not isinstance(layer, Layer):
            raise TypeError(f"The added layer must be an instance of class Layer. Received: "
                            f"layer={layer!r} of type {type(layer).__name__}.")
        if any(layer is l for l in self._stack):
            raise ValueError(f"{self.name}: the layer {layer.name} is already in the model")
        if not self._stack and self._batch_input_shape is None and layer._batch_input_shape is not None:
            self._batch_input_shape = layer._batch_input_shape
        self._stack.append(layer)
        self._track_layer(layer, f"layer-{len(self._stack) - 1}")
        self._mask_any = self._mask_any or type(layer).compute_mask is not Layer.compute_mask
        if self._batch_input_shape is not None:
            self.built = False
            self._build_symbolic(self._batch_input_shape)

    def pop(self):
        """Remove the last layer."""
        if not self._stack:
            raise TypeError("There are no layers in the model.")
        layer = self._stack.pop()
        i = next(k for k, s in enumerate(self._sublayers) if s is layer)
        del self._sublayers[i], self._sublayer_keys[i]
        if self._batch_input_shape is not None and self._stack:
            self._build_symbolic(self._batch_input_shape)

    def _build_symbolic(self, batch_input_shape):
        dtype = self._input_layer._input_dtype if self._input_layer is not None else self.compute_dtype
        x = KerasTensor(tuple(batch_input_shape), dtype)
        for layer in self._stack:
            x = layer(x)
        self._output_shape_cache = x.shape if isinstance(x, KerasTensor) else None
        self.built = True

    def build(self, input_shape=None):
        if input_shape is None:
            input_shape = self._batch_input_shape
        if input_shape is None:
            raise ValueError("You must provide an `input_shape` argument.")
        input_shape = tuple(input_shape)
        self._batch_input_shape = (None,) + input_shape[1:]
        self._build_symbolic(self._batch_input_shape)

    def _convert_inputs(self, inputs):
        return inputs   # each layer casts to its own compute dtype

    def call(self, inputs, training=None, mask=None):
        x = inputs
        if not self._mask_any and mask is None:
            for layer in self._stack:
                x = layer(x, training=training)
            return x
        for layer in self._stack:
            kwargs = {"training": training}
            if mask is not None and layer._call_takes_mask:
                kwargs["mask"] = mask
            y = layer(x, **kwargs)
            mask = layer.compute_mask(x, mask)
            x = y
        return x

    def __call__(self, *args, **kwargs):
        if not self.built and args and not isinstance(args[0], KerasTensor):
            import numpy as _np
            shape = tuple(_np.shape(args[0]))
            self._batch_input_shape = (None,) + shape[1:]
            self._build_symbolic(self._batch_input_shape)
        return super().__call__(*args, **kwargs)

    @property
    def input_shape(self):
        return self._batch_input_shape

    def get_config(self):
        layers = []
        if self._input_layer is not None:
            layers.append({"class_name": "InputLayer", "config": self._input_layer.get_config()})
        layers += [{"class_name": get_registered_name(type(l)), "config": l.get_config()}
                   for l in self._stack]
        return {"name": self.name, "layers": layers}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        model = cls(name=config.get("name"))
        for spec in config["layers"]:
            model.add(_ser.deserialize(spec, custom_objects))
        return model
