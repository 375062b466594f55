"""InceptionV3 (``tf.keras.applications.inception_v3``, TF 2.4.4): Szegedy et al. 2015."""
from __future__ import annotations

from .. import layers
from ..backend import config as backend_config
from . import imagenet_utils
from ._common import finish, pooled_top, setup

__all__ = ["InceptionV3", "preprocess_input", "decode_predictions"]


def _channel_axis():
    return 1 if backend_config.image_data_format() == "channels_first" else 3


def conv2d_bn(x, filters, num_row, num_col, padding="same", strides=(1, 1), name=None):
    """Conv2D (no bias) + BatchNormalization (no scale) + ReLU, named ``name_conv``/``name_bn``/
    ``name`` when ``name`` is given (auto-named otherwise, as in TF)."""
    x = layers.Conv2D(filters, (num_row, num_col), strides=strides, padding=padding,
                      use_bias=False, name=None if name is None else name + "_conv")(x)
    x = layers.BatchNormalization(axis=_channel_axis(), scale=False,
                                  name=None if name is None else name + "_bn")(x)
    return layers.Activation("relu", name=name)(x)


def _avg_branch(x, filters):
    p = layers.AveragePooling2D((3, 3), strides=(1, 1), padding="same")(x)
    return conv2d_bn(p, filters, 1, 1)


def InceptionV3(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,  # noqa: N802
                pooling=None, classes=1000, classifier_activation="softmax"):
    """``tf.keras.applications.InceptionV3``; ``weights`` is None or a local HDF5 path here."""
    img_input, _ = setup("InceptionV3", weights, include_top, classes, input_tensor, input_shape,
                         299, 75)
    axis = _channel_axis()
    x = conv2d_bn(img_input, 32, 3, 3, strides=(2, 2), padding="valid")
    x = conv2d_bn(x, 32, 3, 3, padding="valid")
    x = conv2d_bn(x, 64, 3, 3)
    x = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    x = conv2d_bn(x, 80, 1, 1, padding="valid")
    x = conv2d_bn(x, 192, 3, 3, padding="valid")
    x = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)

    # mixed 0, 1, 2: 35 x 35
    for i, pool_filters in enumerate((32, 64, 64)):
        b1 = conv2d_bn(x, 64, 1, 1)
        b5 = conv2d_bn(x, 48, 1, 1)
        b5 = conv2d_bn(b5, 64, 5, 5)
        b3 = conv2d_bn(x, 64, 1, 1)
        b3 = conv2d_bn(b3, 96, 3, 3)
        b3 = conv2d_bn(b3, 96, 3, 3)
        bp = _avg_branch(x, pool_filters)
        x = layers.concatenate([b1, b5, b3, bp], axis=axis, name=f"mixed{i}")

    # mixed 3: 17 x 17
    b3 = conv2d_bn(x, 384, 3, 3, strides=(2, 2), padding="valid")
    bd = conv2d_bn(x, 64, 1, 1)
    bd = conv2d_bn(bd, 96, 3, 3)
    bd = conv2d_bn(bd, 96, 3, 3, strides=(2, 2), padding="valid")
    bp = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    x = layers.concatenate([b3, bd, bp], axis=axis, name="mixed3")

    # mixed 4, 5, 6, 7: 17 x 17
    for i, width in enumerate((128, 160, 160, 192)):
        b1 = conv2d_bn(x, 192, 1, 1)
        b7 = conv2d_bn(x, width, 1, 1)
        b7 = conv2d_bn(b7, width, 1, 7)
        b7 = conv2d_bn(b7, 192, 7, 1)
        bd = conv2d_bn(x, width, 1, 1)
        bd = conv2d_bn(bd, width, 7, 1)
        bd = conv2d_bn(bd, width, 1, 7)
        bd = conv2d_bn(bd, width, 7, 1)
        bd = conv2d_bn(bd, 192, 1, 7)
        bp = _avg_branch(x, 192)
        x = layers.concatenate([b1, b7, bd, bp], axis=axis, name=f"mixed{4 + i}")

    # mixed 8: 8 x 8
    b3 = conv2d_bn(x, 192, 1, 1)
    b3 = conv2d_bn(b3, 320, 3, 3, strides=(2, 2), padding="valid")
    b7 = conv2d_bn(x, 192, 1, 1)
    b7 = conv2d_bn(b7, 192, 1, 7)
    b7 = conv2d_bn(b7, 192, 7, 1)
    b7 = conv2d_bn(b7, 192, 3, 3, strides=(2, 2), padding="valid")
    bp = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    x = layers.concatenate([b3, b7, bp], axis=axis, name="mixed8")

    # mixed 9, 10: 8 x 8
    for i in range(2):
        b1 = conv2d_bn(x, 320, 1, 1)
        b3 = conv2d_bn(x, 384, 1, 1)
        b3_1 = conv2d_bn(b3, 384, 1, 3)
        b3_2 = conv2d_bn(b3, 384, 3, 1)
        b3 = layers.concatenate([b3_1, b3_2], axis=axis, name=f"mixed9_{i}")
        bd = conv2d_bn(x, 448, 1, 1)
        bd = conv2d_bn(bd, 384, 3, 3)
        bd_1 = conv2d_bn(bd, 384, 1, 3)
        bd_2 = conv2d_bn(bd, 384, 3, 1)
        bd = layers.concatenate([bd_1, bd_2], axis=axis)
        bp = _avg_branch(x, 192)
        x = layers.concatenate([b1, b3, bd, bp], axis=axis, name=f"mixed{9 + i}")

    x = pooled_top(x, include_top, pooling, classes, classifier_activation, weights,
                   named_pools=False)
    return finish(img_input, input_tensor, x, "inception_v3", weights)


def preprocess_input(x, data_format=None):
    """``inception_v3.preprocess_input``: 'tf' mode (scaled to [-1, 1])."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5, class_index_path=None):
    """``inception_v3.decode_predictions`` (``class_index_path``: see imagenet_utils)."""
    return imagenet_utils.decode_predictions(preds, top=top, class_index_path=class_index_path)
