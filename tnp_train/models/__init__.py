"""Models (``tt.models``): ``Model``, ``Sequential``, the functional API, saving and loading."""
from ..layers import serialization as _layer_serialization
from ..utils.serialization import register_builtins
from .model import Model
from .functional import Functional
from .sequential import Sequential
from .saving import (load_model, model_from_config, model_from_json, model_from_yaml,
                     save_model)

__all__ = ["Model", "Sequential", "Functional", "model_from_config", "model_from_json",
           "model_from_yaml", "load_model", "save_model", "clone_model"]

# a model nested in a model is a layer of it: layers.deserialize, a floor down, finds these
# classes in the registry
register_builtins("layer", {"Sequential": Sequential, "Functional": Functional, "Model": Model})


def clone_model(model, input_tensors=None, clone_function=None):
    """A new model of the same architecture with new layers (fresh weights); mirrors
    ``tf.keras.models.clone_model``. ``clone_function(layer)`` makes each new layer (default:
    ``layer.__class__.from_config(layer.get_config())``), so it can swap or change layers;
    ``input_tensors``: symbolic tensors (``tt.Input``) the clone is built on. A functional
    model's shared layers stay shared, and its ``add_loss``/``add_metric`` terms come along.
    A subclassed model is cloned from its config (no ``clone_function``)."""
    if clone_function is None and input_tensors is None:
        return _layer_serialization.deserialize(_layer_serialization.serialize(model))
    fn = clone_function or _clone_layer
    if isinstance(model, Sequential):
        return _clone_sequential(model, input_tensors, fn)
    if isinstance(model, Functional):
        return _clone_functional(model, input_tensors, fn)
    raise ValueError(f"clone_model: with clone_function or input_tensors the model must be a "
                     f"Sequential or functional model, got a subclassed "
                     f"{type(model).__name__}")


def _clone_layer(layer):
    return layer.__class__.from_config(layer.get_config())


def _symbolic_inputs(input_tensors, n, who):
    from ..layers.keras_tensor import KerasTensor
    from ..utils.tree import flatten
    flat = flatten(input_tensors)
    if len(flat) != n:
        raise ValueError(f"clone_model: {who} has {n} input(s), got {len(flat)} input tensors")
    for t in flat:
        if not isinstance(t, KerasTensor):
            raise ValueError(f"clone_model: input_tensors must be symbolic tensors "
                             f"(tt.Input(...)), got {type(t).__name__}")
    return flat


def _clone_sequential(model, input_tensors, fn):
    from ..layers.core import InputLayer
    layers = [fn(layer) for layer in model.layers if not isinstance(layer, InputLayer)]
    if input_tensors is None:
        shape = getattr(model, "_batch_input_shape", None)
        if shape is None:
            return Sequential(layers, name=model.name)
        from ..layers.core import Input
        first = Input(batch_shape=shape, dtype=model.layers[0].dtype if model.layers else None)
        return Sequential([first] + layers, name=model.name)
    (x,) = _symbolic_inputs(input_tensors, 1, model.name)
    if isinstance(x.node.layer, InputLayer):
        return Sequential([x] + layers, name=model.name)
    out = x
    for layer in layers:
        out = layer(out)
    return Functional(x, out, name=model.name)


def _clone_functional(model, input_tensors, fn):
    from ..layers.core import Input, InputLayer
    from ..layers.keras_tensor import KerasTensor
    from ..utils.tree import flatten, pack_sequence_as
    old_inputs = model._flat_inputs
    if input_tensors is None:
        new_inputs = [Input(batch_shape=t.shape, dtype=t.node.layer.get_config()["dtype"],
                            name=t.node.layer.name) for t in old_inputs]
    else:
        new_inputs = _symbolic_inputs(input_tensors, len(old_inputs), model.name)
    seen = {id(o): n for o, n in zip(old_inputs, new_inputs)}
    new_layers = {}
    for node in model._nodes:
        layer = node.layer
        if isinstance(layer, InputLayer):
            continue
        if id(layer) not in new_layers:       # a shared layer is cloned once
            new_layers[id(layer)] = fn(layer)
        leaves = flatten((node.args, node.kwargs))
        args, kwargs = pack_sequence_as((node.args, node.kwargs), [
            seen[id(v)] if isinstance(v, KerasTensor) else v for v in leaves])
        out = new_layers[id(layer)](*args, **dict(kwargs))
        for old, new in zip(flatten(node.outputs), flatten(out)):
            seen[id(old)] = new
    outputs = pack_sequence_as(model._nested_outputs,
                               [seen[id(t)] for t in flatten(model._nested_outputs)])
    inputs = pack_sequence_as(model._nested_inputs, new_inputs)
    clone = Functional(inputs, outputs, name=model.name)
    if model._ancillary:
        clone._attach_ancillary([seen[id(t)] for t in model._ancillary])
    return clone
