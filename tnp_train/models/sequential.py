"""``Sequential``: a stack of layers, each feeding the next (``tf.keras.Sequential``).

With ``tt.Input`` first (or a first layer given ``input_shape=``) the model is built at once
(so ``set_weights`` and ``summary`` work before the first call); otherwise on the first call.
Building runs the symbolic input through the stack, one node per layer (each ``add`` calls the
new layer on the last output), so ``model.inputs``/``outputs`` and every ``layer.output`` form
one graph, as in Keras: ``tt.Model(model.inputs, [l.output for l in model.layers])`` extracts
features.
"""
from __future__ import annotations

from ..layers.base import Layer, _bump_held
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
        self._sym_input = self._sym_output = None   # the graph of the stack, once built
        self._sym_nodes = []                        # the nodes that graph gave the layers
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
            if layer.node is None or not isinstance(layer.node.layer, InputLayer):
                raise TypeError(f"{self.name}.add: only a tt.Input tensor can be added, got "
                                f"{layer!r}")
            layer = layer.node.layer
        if isinstance(layer, InputLayer):
            if self._stack or self._input_layer is not None:
                raise ValueError(f"{self.name}: an Input can only come first")
            self._input_layer = layer
            self._batch_input_shape = layer.output.shape
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
        if self._sym_output is not None:
            self._extend_symbolic(layer)
        elif self._batch_input_shape is not None:
            self.built = False
            self._build_symbolic(self._batch_input_shape)

    def pop(self):
        """Remove the last layer."""
        if not self._stack:
            raise TypeError("There are no layers in the model.")
        layer = self._stack.pop()
        i = next(k for k, s in enumerate(self._sublayers) if s is layer)
        del self._sublayers[i], self._sublayer_keys[i]
        _bump_held()
        if self._batch_input_shape is not None and (self._stack or self._sym_input is not None):
            self._build_symbolic(self._batch_input_shape)

    def _build_symbolic(self, batch_input_shape):
        # a rebuild (pop, build) first takes back the nodes the last one gave the layers
        for node in self._sym_nodes:
            node.detach()
        self._sym_nodes = []
        if self._input_layer is not None and \
                tuple(batch_input_shape) == self._input_layer.output.shape:
            x = self._input_layer.output
        else:
            from ..layers.core import Input
            dtype = self._input_layer.get_config()["dtype"] if self._input_layer is not None \
                else self.compute_dtype
            x = Input(batch_shape=tuple(batch_input_shape), dtype=dtype)
        self._sym_input = self._sym_output = x
        for layer in self._stack:
            self._extend_symbolic(layer)
        self.built = True

    def _extend_symbolic(self, layer):
        x = layer(self._sym_output)
        if isinstance(x, KerasTensor):
            self._sym_nodes.append(x.node)
            self._sym_output = x
            self._output_shape_cache = x.shape
        else:       # a layer of several outputs: no single output to go on from
            self._sym_output = None
            self._output_shape_cache = None

    def _graph(self, what):
        if self._sym_input is None or self._sym_output is None:
            raise AttributeError(f"{self.name}: the model has no {what} yet: start it with "
                                 f"tt.Input(shape), or build or call it")
        return self._sym_input, self._sym_output

    @property
    def inputs(self):
        """``[the symbolic input]`` of the stack (Keras's ``model.inputs``)."""
        return [self._graph("inputs")[0]]

    @property
    def outputs(self):
        """``[the last layer's symbolic output]`` (Keras's ``model.outputs``)."""
        return [self._graph("outputs")[1]]

    @property
    def input(self):
        return self._graph("input")[0]

    @property
    def output(self):
        return self._graph("output")[1]

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
            if mask is not None and layer.call_takes_mask:
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
