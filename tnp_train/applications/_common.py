"""What every architecture of ``tt.applications`` shares: argument checks, the input tensor,
the classifier top, and loading a weights file.

Mirrors ``tf.keras.applications`` (TF 2.4.4): the same argument validation and messages, the
same layer names. ``weights="imagenet"`` cannot download here: it asks for a local path.
"""
from __future__ import annotations

import os

from ..backend import config as backend_config
from ..layers.keras_tensor import KerasTensor

__all__ = ["check_weights_arg", "obtain_input_shape", "image_input", "source_inputs",
           "correct_pad", "validate_activation", "finish", "int_shape", "pooled_top",
           "notop_pooling", "setup"]


def int_shape(x):
    """The static shape of a KerasTensor, batch dimension included (``K.int_shape``)."""
    return tuple(x.shape)


def check_weights_arg(weights, include_top, classes, name):
    """TF's check of ``weights`` / ``classes``, except that ``"imagenet"`` (nothing to download
    here) is refused with a ValueError asking for a local file."""
    if weights == "imagenet":
        raise ValueError(
            f"{name}(weights='imagenet'): the ImageNet weights cannot be downloaded here. Pass "
            f"the path of a local weights file instead (the HDF5 file tf.keras.applications "
            f"downloads, e.g. from ~/.keras/models/), or weights=None for random initialization.")
    if weights is not None and not (isinstance(weights, (str, os.PathLike))
                                    and os.path.exists(weights)):
        raise ValueError(
            f"{name}: the `weights` argument should be either `None` (random initialization), "
            f"`imagenet` (pre-training on ImageNet, from a local file here), or the path to the "
            f"weights file to be loaded; got {weights!r}, which is not an existing file.")
    # TF refuses a non-1000-class top only for "imagenet"; a local file holds its own shapes,
    # which the loader checks layer by layer.
    del include_top, classes


def obtain_input_shape(input_shape, default_size, min_size, data_format, require_flatten,
                       weights=None):
    """``imagenet_utils.obtain_input_shape`` of TF 2.4: the input shape a model is built for,
    validated against ``min_size`` (ValueError naming the shape)."""
    if weights != "imagenet" and input_shape and len(input_shape) == 3:
        if data_format == "channels_first":
            if input_shape[0] not in {1, 3}:
                pass   # TF only warns here
            default_shape = (input_shape[0], default_size, default_size)
        else:
            default_shape = (default_size, default_size, input_shape[-1])
    else:
        default_shape = ((3, default_size, default_size) if data_format == "channels_first"
                         else (default_size, default_size, 3))
    if weights == "imagenet" and require_flatten and input_shape is not None:
        if tuple(input_shape) != default_shape:
            raise ValueError(f"When setting `include_top=True` and loading `imagenet` weights, "
                             f"`input_shape` should be {default_shape}.  Received: "
                             f"input_shape={input_shape}")
        return default_shape
    if input_shape:
        input_shape = tuple(input_shape)
        if data_format == "channels_first":
            if len(input_shape) != 3:
                raise ValueError("`input_shape` must be a tuple of three integers.")
            if input_shape[0] != 3 and weights == "imagenet":
                raise ValueError(f"The input must have 3 channels; Received "
                                 f"`input_shape={input_shape}`")
            spatial = input_shape[1:]
        else:
            if len(input_shape) != 3:
                raise ValueError("`input_shape` must be a tuple of three integers.")
            if input_shape[-1] != 3 and weights == "imagenet":
                raise ValueError(f"The input must have 3 channels; Received "
                                 f"`input_shape={input_shape}`")
            spatial = input_shape[:2]
        if any(d is not None and d < min_size for d in spatial):
            raise ValueError(f"Input size must be at least {min_size}x{min_size}; Received: "
                             f"input_shape={input_shape}")
    else:
        if require_flatten:
            input_shape = default_shape
        else:
            input_shape = (3, None, None) if data_format == "channels_first" else (None, None, 3)
    if require_flatten and None in input_shape:
        raise ValueError(f"If `include_top` is True, you should specify a static `input_shape`. "
                         f"Received: input_shape={input_shape}")
    return input_shape


def image_input(input_tensor, input_shape):
    """The model's input: ``tt.Input(shape=input_shape)``, or ``input_tensor`` itself when it is
    a KerasTensor (as TF; a concrete tensor cannot start a graph here: TypeError)."""
    from ..layers import Input
    if input_tensor is None:
        return Input(shape=input_shape)
    if not isinstance(input_tensor, KerasTensor):
        raise TypeError(f"input_tensor must be a KerasTensor (the output of tt.Input or of a "
                        f"layer called on one); got {type(input_tensor).__name__}")
    return input_tensor


def source_inputs(tensor):
    """The ``tt.Input`` tensors ``tensor`` was computed from (``layer_utils.get_source_inputs``)."""
    from ..layers.core import InputLayer
    found, seen, stack = [], set(), [tensor]
    while stack:
        t = stack.pop()
        node = t.node
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node.layer, InputLayer):
            found.append(t)
        else:
            stack.extend(reversed(node.inputs))
    return found[0] if len(found) == 1 else found


def correct_pad(inputs, kernel_size):
    """``imagenet_utils.correct_pad``: the ZeroPadding2D padding for a stride-2 'valid' conv."""
    img_dim = 2 if backend_config.image_data_format() == "channels_first" else 1
    input_size = int_shape(inputs)[img_dim:img_dim + 2]
    if isinstance(kernel_size, int):
        kernel_size = (kernel_size, kernel_size)
    if input_size[0] is None:
        adjust = (1, 1)
    else:
        adjust = (1 - input_size[0] % 2, 1 - input_size[1] % 2)
    correct = (kernel_size[0] // 2, kernel_size[1] // 2)
    return ((correct[0] - adjust[0], correct[0]), (correct[1] - adjust[1], correct[1]))


def validate_activation(classifier_activation, weights):
    """TF's rule: with pre-trained weights, the top's activation is ``None`` or softmax."""
    if weights is None:
        return
    from .. import activations
    if classifier_activation not in {None, "softmax"} and \
            activations.get(classifier_activation) is not activations.get("softmax"):
        raise ValueError(f"Only `None` and `softmax` activations are allowed for the "
                         f"`classifier_activation` argument when using pretrained weights, with "
                         f"`include_top=True`; Received: {classifier_activation}")


def finish(img_input, input_tensor, x, name, weights):
    """The model from the graph: its inputs are the sources of ``input_tensor`` when one was
    given (as TF); then the weights file, if any, is loaded by layer name."""
    from ..models import Model
    inputs = source_inputs(input_tensor) if input_tensor is not None else img_input
    model = Model(inputs, x, name=name)
    if weights is not None:
        from ._weights import load_h5_weights
        load_h5_weights(model, weights)
    return model


def pooled_top(x, include_top, pooling, classes, classifier_activation, weights,
               dense_name="predictions", named_pools=True, top_pool_name="avg_pool"):
    """The common head: GlobalAveragePooling2D (named ``top_pool_name``) + Dense when
    ``include_top``, else the optional pooling (``avg_pool`` / ``max_pool``, or unnamed)."""
    from .. import layers
    if include_top:
        x = layers.GlobalAveragePooling2D(name=top_pool_name)(x)
        validate_activation(classifier_activation, weights)
        return layers.Dense(classes, activation=classifier_activation, name=dense_name)(x)
    return notop_pooling(x, pooling, named_pools)


def notop_pooling(x, pooling, named=True):
    """``pooling="avg"|"max"`` without the top; some TF architectures leave the layer unnamed."""
    from .. import layers
    if pooling == "avg":
        return layers.GlobalAveragePooling2D(name="avg_pool" if named else None)(x)
    if pooling == "max":
        return layers.GlobalMaxPooling2D(name="max_pool" if named else None)(x)
    return x


def setup(name, weights, include_top, classes, input_tensor, input_shape, default_size, min_size):
    """The steps every architecture starts with: check ``weights``, settle the input shape,
    make the input. Returns ``(img_input, input_shape)``."""
    check_weights_arg(weights, include_top, classes, name)
    input_shape = obtain_input_shape(input_shape, default_size=default_size, min_size=min_size,
                                     data_format=backend_config.image_data_format(),
                                     require_flatten=include_top, weights=weights)
    return image_input(input_tensor, input_shape), input_shape
