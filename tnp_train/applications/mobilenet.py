"""MobileNet (``tf.keras.applications.mobilenet``, TF 2.4.4): Howard et al. 2017."""
from __future__ import annotations

from .. import layers
from ..backend import config as backend_config
from . import imagenet_utils
from ._common import finish, notop_pooling, setup, validate_activation

__all__ = ["MobileNet", "preprocess_input", "decode_predictions"]


def _channel_axis():
    return 1 if backend_config.image_data_format() == "channels_first" else -1


def _rows_cols(input_shape):
    if backend_config.image_data_format() == "channels_first":
        return input_shape[1], input_shape[2]
    return input_shape[0], input_shape[1]


def MobileNet(input_shape=None, alpha=1.0, depth_multiplier=1, dropout=1e-3,  # noqa: N802
              include_top=True, weights="imagenet", input_tensor=None, pooling=None,
              classes=1000, classifier_activation="softmax", **kwargs):
    """``tf.keras.applications.MobileNet``; ``weights`` is None or a local HDF5 path here."""
    if kwargs:
        raise ValueError(f"Unknown argument(s): {kwargs}")
    default_size = 224
    if input_shape is not None:
        rows, cols = _rows_cols(input_shape)
        if rows == cols and rows in (128, 160, 192, 224):
            default_size = rows
    img_input, input_shape = setup("MobileNet", weights, include_top, classes, input_tensor,
                                   input_shape, default_size, 32)
    rows, _ = _rows_cols(input_shape)
    x = _conv_block(img_input, 32, alpha, strides=(2, 2))
    plan = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1),
            (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1)]
    for block_id, (filters, stride) in enumerate(plan, start=1):
        x = _depthwise_conv_block(x, filters, alpha, depth_multiplier, strides=(stride, stride),
                                  block_id=block_id)
    if include_top:
        shape = ((int(1024 * alpha), 1, 1) if backend_config.image_data_format() == "channels_first"
                 else (1, 1, int(1024 * alpha)))
        x = layers.GlobalAveragePooling2D()(x)
        x = layers.Reshape(shape, name="reshape_1")(x)
        x = layers.Dropout(dropout, name="dropout")(x)
        x = layers.Conv2D(classes, (1, 1), padding="same", name="conv_preds")(x)
        x = layers.Reshape((classes,), name="reshape_2")(x)
        validate_activation(classifier_activation, weights)
        x = layers.Activation(activation=classifier_activation, name="predictions")(x)
    else:
        x = notop_pooling(x, pooling, named=False)
    return finish(img_input, input_tensor, x, "mobilenet_%0.2f_%s" % (alpha, rows), weights)


def _conv_block(inputs, filters, alpha, kernel=(3, 3), strides=(1, 1)):
    filters = int(filters * alpha)
    x = layers.Conv2D(filters, kernel, padding="same", use_bias=False, strides=strides,
                      name="conv1")(inputs)
    x = layers.BatchNormalization(axis=_channel_axis(), name="conv1_bn")(x)
    return layers.ReLU(6.0, name="conv1_relu")(x)


def _depthwise_conv_block(inputs, pointwise_conv_filters, alpha, depth_multiplier=1,
                          strides=(1, 1), block_id=1):
    """Depthwise 3x3 (padded asymmetrically when strided, as TF), BN, ReLU6, then pointwise."""
    axis = _channel_axis()
    pointwise_conv_filters = int(pointwise_conv_filters * alpha)
    if strides == (1, 1):
        x = inputs
    else:
        x = layers.ZeroPadding2D(((0, 1), (0, 1)), name="conv_pad_%d" % block_id)(inputs)
    x = layers.DepthwiseConv2D((3, 3), padding="same" if strides == (1, 1) else "valid",
                               depth_multiplier=depth_multiplier, strides=strides,
                               use_bias=False, name="conv_dw_%d" % block_id)(x)
    x = layers.BatchNormalization(axis=axis, name="conv_dw_%d_bn" % block_id)(x)
    x = layers.ReLU(6.0, name="conv_dw_%d_relu" % block_id)(x)
    x = layers.Conv2D(pointwise_conv_filters, (1, 1), padding="same", use_bias=False,
                      strides=(1, 1), name="conv_pw_%d" % block_id)(x)
    x = layers.BatchNormalization(axis=axis, name="conv_pw_%d_bn" % block_id)(x)
    return layers.ReLU(6.0, name="conv_pw_%d_relu" % block_id)(x)


def preprocess_input(x, data_format=None):
    """``mobilenet.preprocess_input``: 'tf' mode (scaled to [-1, 1])."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5, class_index_path=None):
    """``mobilenet.decode_predictions`` (``class_index_path``: see imagenet_utils)."""
    return imagenet_utils.decode_predictions(preds, top=top, class_index_path=class_index_path)
