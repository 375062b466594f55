"""EfficientNetB0-B7 (``tf.keras.applications.efficientnet``, TF 2.4.4): Tan & Le 2019.

The model starts with ``Rescaling(1/255)`` and ``Normalization`` (mean 0, variance 1 until a
weights file sets them), as in TF 2.4.4. A weights file is loaded as it is: TF 2.4.4's
ImageNet files need no change here (later TF multiplies by 1/sqrt(stddev) for them only when it
downloads them itself, weights="imagenet", which is refused here).
"""
from __future__ import annotations

import copy
import math

from .. import layers
from ..backend import config as backend_config
from . import imagenet_utils
from ._common import correct_pad, finish, pooled_top, setup
from ..layers.experimental.preprocessing import Normalization, Rescaling

__all__ = ["EfficientNetB0", "EfficientNetB1", "EfficientNetB2", "EfficientNetB3",
           "EfficientNetB4", "EfficientNetB5", "EfficientNetB6", "EfficientNetB7",
           "preprocess_input", "decode_predictions"]

# kernel_size, repeats, filters_in, filters_out, expand_ratio, strides (id_skip, se_ratio 0.25)
_STAGES = [(3, 1, 32, 16, 1, 1), (3, 2, 16, 24, 6, 2), (5, 2, 24, 40, 6, 2),
           (3, 3, 40, 80, 6, 2), (5, 3, 80, 112, 6, 1), (5, 4, 112, 192, 6, 2),
           (3, 1, 192, 320, 6, 1)]
DEFAULT_BLOCKS_ARGS = [
    {"kernel_size": k, "repeats": r, "filters_in": fi, "filters_out": fo, "expand_ratio": e,
     "id_skip": True, "strides": s, "se_ratio": 0.25} for k, r, fi, fo, e, s in _STAGES]

CONV_KERNEL_INITIALIZER = {"class_name": "VarianceScaling",
                           "config": {"scale": 2.0, "mode": "fan_out",
                                      "distribution": "truncated_normal"}}
DENSE_KERNEL_INITIALIZER = {"class_name": "VarianceScaling",
                            "config": {"scale": 1.0 / 3.0, "mode": "fan_out",
                                       "distribution": "uniform"}}


def EfficientNet(width_coefficient, depth_coefficient, default_size, dropout_rate=0.2,  # noqa: N802
                 drop_connect_rate=0.2, depth_divisor=8, activation="swish",
                 blocks_args="default", model_name="efficientnet", include_top=True,
                 weights="imagenet", input_tensor=None, input_shape=None, pooling=None,
                 classes=1000, classifier_activation="softmax"):
    """TF's ``efficientnet.EfficientNet`` with the given scaling coefficients."""
    if blocks_args == "default":
        blocks_args = DEFAULT_BLOCKS_ARGS
    img_input, _ = setup(model_name, weights, include_top, classes, input_tensor, input_shape,
                         default_size, 32)
    bn_axis = 3 if backend_config.image_data_format() == "channels_last" else 1

    def round_filters(filters, divisor=depth_divisor):
        filters *= width_coefficient
        new_filters = max(divisor, int(filters + divisor / 2) // divisor * divisor)
        if new_filters < 0.9 * filters:
            new_filters += divisor
        return int(new_filters)

    def round_repeats(repeats):
        return int(math.ceil(depth_coefficient * repeats))

    x = Rescaling(1.0 / 255.0)(img_input)
    x = Normalization(axis=bn_axis)(x)
    x = layers.ZeroPadding2D(padding=correct_pad(x, 3), name="stem_conv_pad")(x)
    x = layers.Conv2D(round_filters(32), 3, strides=2, padding="valid", use_bias=False,
                      kernel_initializer=CONV_KERNEL_INITIALIZER, name="stem_conv")(x)
    x = layers.BatchNormalization(axis=bn_axis, name="stem_bn")(x)
    x = layers.Activation(activation, name="stem_activation")(x)

    blocks_args = copy.deepcopy(blocks_args)
    b = 0
    blocks = float(sum(round_repeats(args["repeats"]) for args in blocks_args))
    for i, args in enumerate(blocks_args):
        args["filters_in"] = round_filters(args["filters_in"])
        args["filters_out"] = round_filters(args["filters_out"])
        for j in range(round_repeats(args.pop("repeats"))):
            if j > 0:
                args["strides"] = 1
                args["filters_in"] = args["filters_out"]
            x = block(x, activation, drop_connect_rate * b / blocks,
                      name=f"block{i + 1}{chr(j + 97)}_", **args)
            b += 1

    x = layers.Conv2D(round_filters(1280), 1, padding="same", use_bias=False,
                      kernel_initializer=CONV_KERNEL_INITIALIZER, name="top_conv")(x)
    x = layers.BatchNormalization(axis=bn_axis, name="top_bn")(x)
    x = layers.Activation(activation, name="top_activation")(x)
    if include_top:
        from ._common import validate_activation
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate, name="top_dropout")(x)
        validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation,
                         kernel_initializer=DENSE_KERNEL_INITIALIZER, name="predictions")(x)
    else:
        x = pooled_top(x, False, pooling, classes, classifier_activation, weights)
    return finish(img_input, input_tensor, x, model_name, weights)


def block(inputs, activation="swish", drop_rate=0.0, name="", filters_in=32, filters_out=16,
          kernel_size=3, strides=1, expand_ratio=1, se_ratio=0.0, id_skip=True):
    """An inverted residual block: expand, depthwise, squeeze-and-excite, project, then the
    skip connection with drop-connect (Dropout with one draw per sample)."""
    bn_axis = 3 if backend_config.image_data_format() == "channels_last" else 1
    filters = filters_in * expand_ratio
    if expand_ratio != 1:
        x = layers.Conv2D(filters, 1, padding="same", use_bias=False,
                          kernel_initializer=CONV_KERNEL_INITIALIZER,
                          name=name + "expand_conv")(inputs)
        x = layers.BatchNormalization(axis=bn_axis, name=name + "expand_bn")(x)
        x = layers.Activation(activation, name=name + "expand_activation")(x)
    else:
        x = inputs
    if strides == 2:
        x = layers.ZeroPadding2D(padding=correct_pad(x, kernel_size),
                                 name=name + "dwconv_pad")(x)
        conv_pad = "valid"
    else:
        conv_pad = "same"
    x = layers.DepthwiseConv2D(kernel_size, strides=strides, padding=conv_pad, use_bias=False,
                               depthwise_initializer=CONV_KERNEL_INITIALIZER,
                               name=name + "dwconv")(x)
    x = layers.BatchNormalization(axis=bn_axis, name=name + "bn")(x)
    x = layers.Activation(activation, name=name + "activation")(x)
    if 0 < se_ratio <= 1:
        filters_se = max(1, int(filters_in * se_ratio))
        se = layers.GlobalAveragePooling2D(name=name + "se_squeeze")(x)
        se_shape = (filters, 1, 1) if bn_axis == 1 else (1, 1, filters)
        se = layers.Reshape(se_shape, name=name + "se_reshape")(se)
        se = layers.Conv2D(filters_se, 1, padding="same", activation=activation,
                           kernel_initializer=CONV_KERNEL_INITIALIZER,
                           name=name + "se_reduce")(se)
        se = layers.Conv2D(filters, 1, padding="same", activation="sigmoid",
                           kernel_initializer=CONV_KERNEL_INITIALIZER,
                           name=name + "se_expand")(se)
        x = layers.multiply([x, se], name=name + "se_excite")
    x = layers.Conv2D(filters_out, 1, padding="same", use_bias=False,
                      kernel_initializer=CONV_KERNEL_INITIALIZER, name=name + "project_conv")(x)
    x = layers.BatchNormalization(axis=bn_axis, name=name + "project_bn")(x)
    if id_skip and strides == 1 and filters_in == filters_out:
        if drop_rate > 0:
            x = layers.Dropout(drop_rate, noise_shape=(None, 1, 1, 1), name=name + "drop")(x)
        x = layers.add([x, inputs], name=name + "add")
    return x


def _variant(width, depth, size, dropout, model_name):
    def build(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
              pooling=None, classes=1000, classifier_activation="softmax", **kwargs):
        return EfficientNet(width, depth, size, dropout, model_name=model_name,
                            include_top=include_top, weights=weights, input_tensor=input_tensor,
                            input_shape=input_shape, pooling=pooling, classes=classes,
                            classifier_activation=classifier_activation, **kwargs)
    build.__name__ = build.__qualname__ = "EfficientNet" + model_name[-2:].upper()
    build.__doc__ = (f"``tf.keras.applications.{build.__name__}`` (default input {size}x{size});"
                     f" ``weights`` is None or a local HDF5 path here.")
    return build


EfficientNetB0 = _variant(1.0, 1.0, 224, 0.2, "efficientnetb0")
EfficientNetB1 = _variant(1.0, 1.1, 240, 0.2, "efficientnetb1")
EfficientNetB2 = _variant(1.1, 1.2, 260, 0.3, "efficientnetb2")
EfficientNetB3 = _variant(1.2, 1.4, 300, 0.3, "efficientnetb3")
EfficientNetB4 = _variant(1.4, 1.8, 380, 0.4, "efficientnetb4")
EfficientNetB5 = _variant(1.6, 2.2, 456, 0.4, "efficientnetb5")
EfficientNetB6 = _variant(1.8, 2.6, 528, 0.5, "efficientnetb6")
EfficientNetB7 = _variant(2.0, 3.1, 600, 0.5, "efficientnetb7")


def preprocess_input(x, data_format=None):
    """``efficientnet.preprocess_input``: returns ``x`` unchanged (the model rescales)."""
    del data_format
    return x


def decode_predictions(preds, top=5, class_index_path=None):
    """``efficientnet.decode_predictions`` (``class_index_path``: see imagenet_utils)."""
    return imagenet_utils.decode_predictions(preds, top=top, class_index_path=class_index_path)
