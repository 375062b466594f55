"""Xception (``tf.keras.applications.xception``, TF 2.4.4): Chollet 2017."""
from __future__ import annotations

from .. import layers
from ..backend import config as backend_config
from . import imagenet_utils
from ._common import finish, pooled_top, setup

__all__ = ["Xception", "preprocess_input", "decode_predictions"]


def Xception(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,  # noqa: N802
             pooling=None, classes=1000, classifier_activation="softmax"):
    """``tf.keras.applications.Xception``; ``weights`` is None or a local HDF5 path here."""
    img_input, _ = setup("Xception", weights, include_top, classes, input_tensor, input_shape,
                         299, 71)
    axis = 1 if backend_config.image_data_format() == "channels_first" else -1

    def bn(name=None):
        return layers.BatchNormalization(axis=axis, name=name)

    def sep(filters, name):
        return layers.SeparableConv2D(filters, (3, 3), padding="same", use_bias=False, name=name)

    def strided_residual(x, filters):
        r = layers.Conv2D(filters, (1, 1), strides=(2, 2), padding="same", use_bias=False)(x)
        return layers.BatchNormalization(axis=axis)(r)

    x = layers.Conv2D(32, (3, 3), strides=(2, 2), use_bias=False, name="block1_conv1")(img_input)
    x = bn("block1_conv1_bn")(x)
    x = layers.Activation("relu", name="block1_conv1_act")(x)
    x = layers.Conv2D(64, (3, 3), use_bias=False, name="block1_conv2")(x)
    x = bn("block1_conv2_bn")(x)
    x = layers.Activation("relu", name="block1_conv2_act")(x)

    # entry flow: block 2 has no leading ReLU (the stem's is already there)
    for block, filters in ((2, 128), (3, 256), (4, 728)):
        residual = strided_residual(x, filters)
        p = f"block{block}"
        if block != 2:
            x = layers.Activation("relu", name=p + "_sepconv1_act")(x)
        x = sep(filters, p + "_sepconv1")(x)
        x = bn(p + "_sepconv1_bn")(x)
        x = layers.Activation("relu", name=p + "_sepconv2_act")(x)
        x = sep(filters, p + "_sepconv2")(x)
        x = bn(p + "_sepconv2_bn")(x)
        x = layers.MaxPooling2D((3, 3), strides=(2, 2), padding="same", name=p + "_pool")(x)
        x = layers.add([x, residual])

    # middle flow
    for i in range(8):
        residual = x
        p = f"block{i + 5}"
        for k in (1, 2, 3):
            x = layers.Activation("relu", name=f"{p}_sepconv{k}_act")(x)
            x = sep(728, f"{p}_sepconv{k}")(x)
            x = bn(f"{p}_sepconv{k}_bn")(x)
        x = layers.add([x, residual])

    # exit flow
    residual = strided_residual(x, 1024)
    x = layers.Activation("relu", name="block13_sepconv1_act")(x)
    x = sep(728, "block13_sepconv1")(x)
    x = bn("block13_sepconv1_bn")(x)
    x = layers.Activation("relu", name="block13_sepconv2_act")(x)
    x = sep(1024, "block13_sepconv2")(x)
    x = bn("block13_sepconv2_bn")(x)
    x = layers.MaxPooling2D((3, 3), strides=(2, 2), padding="same", name="block13_pool")(x)
    x = layers.add([x, residual])
    x = sep(1536, "block14_sepconv1")(x)
    x = bn("block14_sepconv1_bn")(x)
    x = layers.Activation("relu", name="block14_sepconv1_act")(x)
    x = sep(2048, "block14_sepconv2")(x)
    x = bn("block14_sepconv2_bn")(x)
    x = layers.Activation("relu", name="block14_sepconv2_act")(x)

    x = pooled_top(x, include_top, pooling, classes, classifier_activation, weights,
                   named_pools=False)
    return finish(img_input, input_tensor, x, "xception", weights)


def preprocess_input(x, data_format=None):
    """``xception.preprocess_input``: 'tf' mode (scaled to [-1, 1])."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5, class_index_path=None):
    """``xception.decode_predictions`` (``class_index_path``: see imagenet_utils)."""
    return imagenet_utils.decode_predictions(preds, top=top, class_index_path=class_index_path)
