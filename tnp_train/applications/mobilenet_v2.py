"""MobileNetV2 (``tf.keras.applications.mobilenet_v2``, TF 2.4.4): Sandler et al. 2018."""
from __future__ import annotations

from .. import layers
from ..backend import config as backend_config
from . import imagenet_utils
from ._common import (correct_pad, finish, image_input, int_shape, obtain_input_shape,
                      check_weights_arg, pooled_top)

__all__ = ["MobileNetV2", "preprocess_input", "decode_predictions"]


def _make_divisible(v, divisor, min_value=None):
    """Round ``v`` to a multiple of ``divisor``, never more than 10% down (TF-slim's rule)."""
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def spatial_of(shape_3d):
    """(rows, cols) of an input shape without the batch dimension."""
    if backend_config.image_data_format() == "channels_first":
        return shape_3d[1], shape_3d[2]
    return shape_3d[0], shape_3d[1]


def input_shape_from(input_shape, input_tensor, name):
    """MobileNetV2/V3's handling of ``input_shape`` with ``input_tensor``: they must agree, and
    the shape is taken from the tensor when not given."""
    from ..layers.keras_tensor import KerasTensor
    if input_tensor is not None and not isinstance(input_tensor, KerasTensor):
        raise ValueError(f"{name}: input_tensor: {input_tensor!r} is type: "
                         f"{type(input_tensor)} which is not a valid type")
    if input_shape is not None and input_tensor is not None:
        if spatial_of(int_shape(input_tensor)[1:])[1] != spatial_of(input_shape)[1]:
            raise ValueError(f"{name}: input_shape: {input_shape} and input_tensor: "
                             f"{input_tensor} do not meet the same shape requirements")
    if input_shape is None and input_tensor is not None:
        rows, cols = spatial_of(int_shape(input_tensor)[1:])
        # TF swaps rows and cols here (input_shape = (cols, rows, 3)); kept for equal shapes
        first = backend_config.image_data_format() == "channels_first"
        return (3, cols, rows) if first else (cols, rows, 3)
    return input_shape


def MobileNetV2(input_shape=None, alpha=1.0, include_top=True, weights="imagenet",  # noqa: N802
                input_tensor=None, pooling=None, classes=1000, classifier_activation="softmax",
                **kwargs):
    """``tf.keras.applications.MobileNetV2``; ``weights`` is None or a local HDF5 path here."""
    if kwargs:
        raise ValueError(f"Unknown argument(s): {kwargs}")
    check_weights_arg(weights, include_top, classes, "MobileNetV2")
    default_size = 224
    shape_for_size = input_shape_from(input_shape, input_tensor, "MobileNetV2")
    if shape_for_size is not None:
        rows, cols = spatial_of(shape_for_size)
        if rows == cols and rows in (96, 128, 160, 192, 224):
            default_size = rows
    input_shape = obtain_input_shape(input_shape, default_size=default_size, min_size=32,
                                     data_format=backend_config.image_data_format(),
                                     require_flatten=include_top, weights=weights)
    rows, _ = spatial_of(input_shape)
    img_input = image_input(input_tensor, input_shape)
    axis = 1 if backend_config.image_data_format() == "channels_first" else -1

    x = layers.Conv2D(_make_divisible(32 * alpha, 8), kernel_size=3, strides=(2, 2),
                      padding="same", use_bias=False, name="Conv1")(img_input)
    x = layers.BatchNormalization(axis=axis, epsilon=1e-3, momentum=0.999, name="bn_Conv1")(x)
    x = layers.ReLU(6.0, name="Conv1_relu")(x)
    plan = [(16, 1, 1), (24, 2, 6), (24, 1, 6), (32, 2, 6), (32, 1, 6), (32, 1, 6), (64, 2, 6),
            (64, 1, 6), (64, 1, 6), (64, 1, 6), (96, 1, 6), (96, 1, 6), (96, 1, 6), (160, 2, 6),
            (160, 1, 6), (160, 1, 6), (320, 1, 6)]
    for block_id, (filters, stride, expansion) in enumerate(plan):
        x = _inverted_res_block(x, filters=filters, alpha=alpha, stride=stride,
                                expansion=expansion, block_id=block_id)
    last_block_filters = _make_divisible(1280 * alpha, 8) if alpha > 1.0 else 1280
    x = layers.Conv2D(last_block_filters, kernel_size=1, use_bias=False, name="Conv_1")(x)
    x = layers.BatchNormalization(axis=axis, epsilon=1e-3, momentum=0.999, name="Conv_1_bn")(x)
    x = layers.ReLU(6.0, name="out_relu")(x)
    x = pooled_top(x, include_top, pooling, classes, classifier_activation, weights,
                   named_pools=False, top_pool_name=None)
    return finish(img_input, input_tensor, x, "mobilenetv2_%0.2f_%s" % (alpha, rows), weights)


def _inverted_res_block(inputs, expansion, stride, alpha, filters, block_id):
    """Expand (1x1), depthwise 3x3, project (1x1, linear); residual when shapes allow."""
    axis = 1 if backend_config.image_data_format() == "channels_first" else -1
    in_channels = int_shape(inputs)[axis]
    pointwise_filters = _make_divisible(int(filters * alpha), 8)
    x = inputs
    prefix = f"block_{block_id}_"
    if block_id:
        x = layers.Conv2D(expansion * in_channels, kernel_size=1, padding="same", use_bias=False,
                          activation=None, name=prefix + "expand")(x)
        x = layers.BatchNormalization(axis=axis, epsilon=1e-3, momentum=0.999,
                                      name=prefix + "expand_BN")(x)
        x = layers.ReLU(6.0, name=prefix + "expand_relu")(x)
    else:
        prefix = "expanded_conv_"
    if stride == 2:
        x = layers.ZeroPadding2D(padding=correct_pad(x, 3), name=prefix + "pad")(x)
    x = layers.DepthwiseConv2D(kernel_size=3, strides=stride, activation=None, use_bias=False,
                               padding="same" if stride == 1 else "valid",
                               name=prefix + "depthwise")(x)
    x = layers.BatchNormalization(axis=axis, epsilon=1e-3, momentum=0.999,
                                  name=prefix + "depthwise_BN")(x)
    x = layers.ReLU(6.0, name=prefix + "depthwise_relu")(x)
    x = layers.Conv2D(pointwise_filters, kernel_size=1, padding="same", use_bias=False,
                      activation=None, name=prefix + "project")(x)
    x = layers.BatchNormalization(axis=axis, epsilon=1e-3, momentum=0.999,
                                  name=prefix + "project_BN")(x)
    if in_channels == pointwise_filters and stride == 1:
        return layers.Add(name=prefix + "add")([inputs, x])
    return x


def preprocess_input(x, data_format=None):
    """``mobilenet_v2.preprocess_input``: 'tf' mode (scaled to [-1, 1])."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5, class_index_path=None):
    """``mobilenet_v2.decode_predictions`` (``class_index_path``: see imagenet_utils)."""
    return imagenet_utils.decode_predictions(preds, top=top, class_index_path=class_index_path)
