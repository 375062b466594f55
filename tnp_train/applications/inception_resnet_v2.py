"""InceptionResNetV2 (``tf.keras.applications.inception_resnet_v2``, TF 2.4.4): Szegedy et al.
2016."""
from __future__ import annotations

from .. import layers
from ..backend import config as backend_config
from . import imagenet_utils
from ._common import finish, pooled_top, setup

__all__ = ["InceptionResNetV2", "preprocess_input", "decode_predictions"]


def _channel_axis():
    return 1 if backend_config.image_data_format() == "channels_first" else 3


def conv2d_bn(x, filters, kernel_size, strides=1, padding="same", activation="relu",
              use_bias=False, name=None):
    """Conv2D, then (without a bias) BatchNormalization without scale, then the activation."""
    x = layers.Conv2D(filters, kernel_size, strides=strides, padding=padding, use_bias=use_bias,
                      name=name)(x)
    if not use_bias:
        x = layers.BatchNormalization(axis=_channel_axis(), scale=False,
                                      name=None if name is None else name + "_bn")(x)
    if activation is not None:
        x = layers.Activation(activation, name=None if name is None else name + "_ac")(x)
    return x


def _scaled_residual(inputs, scale):
    return inputs[0] + inputs[1] * scale


def inception_resnet_block(x, scale, block_type, block_idx, activation="relu"):
    """One Inception-ResNet block (``block35``, ``block17`` or ``block8``): ``x + scale * r``."""
    if block_type == "block35":
        b0 = conv2d_bn(x, 32, 1)
        b1 = conv2d_bn(x, 32, 1)
        b1 = conv2d_bn(b1, 32, 3)
        b2 = conv2d_bn(x, 32, 1)
        b2 = conv2d_bn(b2, 48, 3)
        b2 = conv2d_bn(b2, 64, 3)
        branches = [b0, b1, b2]
    elif block_type == "block17":
        b0 = conv2d_bn(x, 192, 1)
        b1 = conv2d_bn(x, 128, 1)
        b1 = conv2d_bn(b1, 160, [1, 7])
        b1 = conv2d_bn(b1, 192, [7, 1])
        branches = [b0, b1]
    elif block_type == "block8":
        b0 = conv2d_bn(x, 192, 1)
        b1 = conv2d_bn(x, 192, 1)
        b1 = conv2d_bn(b1, 224, [1, 3])
        b1 = conv2d_bn(b1, 256, [3, 1])
        branches = [b0, b1]
    else:
        raise ValueError(f'Unknown Inception-ResNet block type. Expects "block35", "block17" or '
                         f'"block8", but got: {block_type}')
    block_name = f"{block_type}_{block_idx}"
    axis = _channel_axis()
    mixed = layers.Concatenate(axis=axis, name=block_name + "_mixed")(branches)
    up = conv2d_bn(mixed, x.shape[axis], 1, activation=None, use_bias=True,
                   name=block_name + "_conv")
    x = layers.Lambda(_scaled_residual, output_shape=x.shape[1:], arguments={"scale": scale},
                      name=block_name)([x, up])
    if activation is not None:
        x = layers.Activation(activation, name=block_name + "_ac")(x)
    return x


def InceptionResNetV2(include_top=True, weights="imagenet", input_tensor=None,  # noqa: N802
                      input_shape=None, pooling=None, classes=1000,
                      classifier_activation="softmax", **kwargs):
    """``tf.keras.applications.InceptionResNetV2``; ``weights`` is None or a local HDF5 path."""
    if kwargs:
        raise ValueError(f"Unknown argument(s): {kwargs}")
    img_input, _ = setup("InceptionResNetV2", weights, include_top, classes, input_tensor,
                         input_shape, 299, 75)
    axis = _channel_axis()
    x = conv2d_bn(img_input, 32, 3, strides=2, padding="valid")
    x = conv2d_bn(x, 32, 3, padding="valid")
    x = conv2d_bn(x, 64, 3)
    x = layers.MaxPooling2D(3, strides=2)(x)
    x = conv2d_bn(x, 80, 1, padding="valid")
    x = conv2d_bn(x, 192, 3, padding="valid")
    x = layers.MaxPooling2D(3, strides=2)(x)

    # mixed 5b (Inception-A): 35 x 35 x 320
    b0 = conv2d_bn(x, 96, 1)
    b1 = conv2d_bn(x, 48, 1)
    b1 = conv2d_bn(b1, 64, 5)
    b2 = conv2d_bn(x, 64, 1)
    b2 = conv2d_bn(b2, 96, 3)
    b2 = conv2d_bn(b2, 96, 3)
    bp = layers.AveragePooling2D(3, strides=1, padding="same")(x)
    bp = conv2d_bn(bp, 64, 1)
    x = layers.Concatenate(axis=axis, name="mixed_5b")([b0, b1, b2, bp])
    for i in range(1, 11):
        x = inception_resnet_block(x, scale=0.17, block_type="block35", block_idx=i)

    # mixed 6a (Reduction-A): 17 x 17 x 1088
    b0 = conv2d_bn(x, 384, 3, strides=2, padding="valid")
    b1 = conv2d_bn(x, 256, 1)
    b1 = conv2d_bn(b1, 256, 3)
    b1 = conv2d_bn(b1, 384, 3, strides=2, padding="valid")
    bp = layers.MaxPooling2D(3, strides=2, padding="valid")(x)
    x = layers.Concatenate(axis=axis, name="mixed_6a")([b0, b1, bp])
    for i in range(1, 21):
        x = inception_resnet_block(x, scale=0.1, block_type="block17", block_idx=i)

    # mixed 7a (Reduction-B): 8 x 8 x 2080
    b0 = conv2d_bn(x, 256, 1)
    b0 = conv2d_bn(b0, 384, 3, strides=2, padding="valid")
    b1 = conv2d_bn(x, 256, 1)
    b1 = conv2d_bn(b1, 288, 3, strides=2, padding="valid")
    b2 = conv2d_bn(x, 256, 1)
    b2 = conv2d_bn(b2, 288, 3)
    b2 = conv2d_bn(b2, 320, 3, strides=2, padding="valid")
    bp = layers.MaxPooling2D(3, strides=2, padding="valid")(x)
    x = layers.Concatenate(axis=axis, name="mixed_7a")([b0, b1, b2, bp])
    for i in range(1, 10):
        x = inception_resnet_block(x, scale=0.2, block_type="block8", block_idx=i)
    x = inception_resnet_block(x, scale=1.0, activation=None, block_type="block8", block_idx=10)
    x = conv2d_bn(x, 1536, 1, name="conv_7b")

    x = pooled_top(x, include_top, pooling, classes, classifier_activation, weights,
                   named_pools=False)
    return finish(img_input, input_tensor, x, "inception_resnet_v2", weights)


def preprocess_input(x, data_format=None):
    """``inception_resnet_v2.preprocess_input``: 'tf' mode (scaled to [-1, 1])."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5, class_index_path=None):
    """``inception_resnet_v2.decode_predictions`` (``class_index_path``: see imagenet_utils)."""
    return imagenet_utils.decode_predictions(preds, top=top, class_index_path=class_index_path)
