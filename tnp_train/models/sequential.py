"""``Sequential``: a stack of layers, each feeding the next (``tf.keras.Sequential``)."""
from __future__ import annotations

from ..layers.base import Layer
from ..layers.core import InputLayer

__all__ = ["Sequential"]


class Sequential(Layer):
    """Mirrors ``tf.keras.Sequential(layers=None, name=None)``. With an ``Input`` first (or a
    first layer given ``input_shape=``), the model is built at once, so ``set_weights`` works
    before the first call."""

    def __init__(self, layers=None, name=None):
        super().__init__(name=name)
        self._input_shape = None
        self.layers = []
        for layer in layers or ():
            self.add(layer)

    def add(self, layer):
        """Append a layer (an ``Input`` sets the input shape and builds what follows)."""
        if isinstance(layer, InputLayer):
            if self.layers:
                raise ValueError(f"{self.name}: an Input can only come first")
            self._input_shape = (layer.batch_size,) + tuple(layer.input_shape)
            return
        if not isinstance(layer, Layer):
            raise TypeError(f"{self.name}.add: expected a Layer, got {type(layer).__name__}")
        if not self.layers and self._input_shape is None and layer._input_shape_arg is not None:
            self._input_shape = (None,) + layer._input_shape_arg
        self.layers.append(layer)
        self._sublayers.append(layer)
        if self._input_shape is not None:
            self._build_from(self._input_shape)

    def _build_from(self, input_shape):
        """Build every layer by running a zero batch of one through the stack."""
        import tnp

        shape = (1,) + tuple(input_shape[1:])
        x = tnp.zeros(shape, dtype=self.dtype)
        for layer in self.layers:
            x = layer(x)
        self.built = True

    def build(self, input_shape):
        self._build_from(input_shape)

    def call(self, inputs, training=None):
        x = inputs
        for layer in self.layers:
            x = layer(x, training=training)
        return x

    def get_config(self):
        return {"name": self.name, "layers": [
            {"class_name": type(l).__name__, "config": l.get_config()} for l in self.layers]}
