"""MobileNetV3Small/Large (``tf.keras.applications.mobilenet_v3``): Howard et al. 2019.

The graph is tf-keras 2.x's (the reference this project measures against), not TF 2.4.4's,
which differs in three places: 2.4.4 rescales the input by 1/255 (the published weights expect
[-1, 1], which later TF fixed: 1/127.5 - 1, as here), squeezes with GlobalAveragePooling2D +
Reshape where later TF keeps the dimensions, and applies ``Conv_2`` before the pooling of the
top (kept without the top) where later TF applies it after (only with the top). The parameter
count with the top is the same. ``include_preprocessing`` is later TF's argument.
"""
from __future__ import annotations

from .. import layers
from ..backend import config as backend_config
from ..layers.base import unique_name
from ..layers.core import TFOpLambda
from . import imagenet_utils
from ._common import (check_weights_arg, correct_pad, finish, image_input, int_shape,
                      validate_activation)
from ..layers.experimental.preprocessing import Rescaling
from .mobilenet_v2 import _make_divisible, input_shape_from, spatial_of

__all__ = ["MobileNetV3Small", "MobileNetV3Large", "preprocess_input", "decode_predictions"]


def _channel_axis():
    return 1 if backend_config.image_data_format() == "channels_first" else -1


def _add3(a):
    return a + 3.0


def _times_sixth(a):
    return a * (1.0 / 6.0)


def relu(x):
    return layers.ReLU()(x)


def hard_sigmoid(x):
    # x + 3. and * (1/6) on KerasTensors are TFOpLambda layers named as TF names them
    x = TFOpLambda(_add3, name=unique_name("tf.__operators__.add"))(x)
    x = layers.ReLU(6.0)(x)
    return TFOpLambda(_times_sixth, name=unique_name("tf.math.multiply"))(x)


def hard_swish(x):
    return layers.Multiply()([x, hard_sigmoid(x)])


def _depth(v):
    return _make_divisible(v, 8)


def _se_block(inputs, filters, se_ratio, prefix):
    x = layers.GlobalAveragePooling2D(keepdims=True, name=prefix + "squeeze_excite/AvgPool")(inputs)
    x = layers.Conv2D(_depth(filters * se_ratio), kernel_size=1, padding="same",
                      name=prefix + "squeeze_excite/Conv")(x)
    x = layers.ReLU(name=prefix + "squeeze_excite/Relu")(x)
    x = layers.Conv2D(filters, kernel_size=1, padding="same",
                      name=prefix + "squeeze_excite/Conv_1")(x)
    x = hard_sigmoid(x)
    return layers.Multiply(name=prefix + "squeeze_excite/Mul")([inputs, x])


def _bn(name):
    return layers.BatchNormalization(axis=_channel_axis(), epsilon=1e-3, momentum=0.999,
                                     name=name)


def _inverted_res_block(x, expansion, filters, kernel_size, stride, se_ratio, activation,
                        block_id):
    shortcut = x
    prefix = "expanded_conv/"
    infilters = int_shape(x)[_channel_axis()]
    if block_id:
        prefix = f"expanded_conv_{block_id}/"
        x = layers.Conv2D(_depth(infilters * expansion), kernel_size=1, padding="same",
                          use_bias=False, name=prefix + "expand")(x)
        x = _bn(prefix + "expand/BatchNorm")(x)
        x = activation(x)
    if stride == 2:
        x = layers.ZeroPadding2D(padding=correct_pad(x, kernel_size),
                                 name=prefix + "depthwise/pad")(x)
    x = layers.DepthwiseConv2D(kernel_size, strides=stride,
                               padding="same" if stride == 1 else "valid", use_bias=False,
                               name=prefix + "depthwise")(x)
    x = _bn(prefix + "depthwise/BatchNorm")(x)
    x = activation(x)
    if se_ratio:
        x = _se_block(x, _depth(infilters * expansion), se_ratio, prefix)
    x = layers.Conv2D(filters, kernel_size=1, padding="same", use_bias=False,
                      name=prefix + "project")(x)
    x = _bn(prefix + "project/BatchNorm")(x)
    if stride == 1 and infilters == filters:
        x = layers.Add(name=prefix + "Add")([shortcut, x])
    return x


def MobileNetV3(stack_fn, last_point_ch, input_shape=None, alpha=1.0, model_type="large",  # noqa: N802
                minimalistic=False, include_top=True, weights="imagenet", input_tensor=None,
                classes=1000, pooling=None, dropout_rate=0.2, classifier_activation="softmax",
                include_preprocessing=True):
    """The MobileNetV3 trunk shared by Small and Large."""
    name = "MobileNetV3" + model_type.capitalize()
    check_weights_arg(weights, include_top, classes, name)
    input_shape = input_shape_from(input_shape, input_tensor, name)
    if input_shape is None:
        input_shape = (None, None, 3)
    rows, cols = spatial_of(input_shape)
    if rows and cols and (rows < 32 or cols < 32):
        raise ValueError(f"Input size must be at least 32x32; Received `input_shape="
                         f"{input_shape}`")
    img_input = image_input(input_tensor, input_shape)
    axis = _channel_axis()
    if minimalistic:
        kernel, activation, se_ratio = 3, relu, None
    else:
        kernel, activation, se_ratio = 5, hard_swish, 0.25

    x = img_input
    if include_preprocessing:
        x = Rescaling(scale=1.0 / 127.5, offset=-1.0)(x)
    x = layers.Conv2D(16, kernel_size=3, strides=(2, 2), padding="same", use_bias=False,
                      name="Conv")(x)
    x = _bn("Conv/BatchNorm")(x)
    x = activation(x)
    x = stack_fn(x, kernel, activation, se_ratio)
    last_conv_ch = _depth(int_shape(x)[axis] * 6)
    if alpha > 1.0:
        last_point_ch = _depth(last_point_ch * alpha)
    x = layers.Conv2D(last_conv_ch, kernel_size=1, padding="same", use_bias=False,
                      name="Conv_1")(x)
    x = _bn("Conv_1/BatchNorm")(x)
    x = activation(x)
    if include_top:
        x = layers.GlobalAveragePooling2D(keepdims=True)(x)
        x = layers.Conv2D(last_point_ch, kernel_size=1, padding="same", use_bias=True,
                          name="Conv_2")(x)
        x = activation(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate)(x)
        x = layers.Conv2D(classes, kernel_size=1, padding="same", name="Logits")(x)
        x = layers.Flatten()(x)
        validate_activation(classifier_activation, weights)
        x = layers.Activation(activation=classifier_activation, name="Predictions")(x)
    elif pooling == "avg":
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
    elif pooling == "max":
        x = layers.GlobalMaxPooling2D(name="max_pool")(x)
    return finish(img_input, input_tensor, x, "MobilenetV3" + model_type, weights)


# The inverted residual blocks: (expansion, filters before alpha, kernel size, stride,
# squeeze-excite, ReLU); a kernel size of None is the model's (5, or 3 when minimalistic),
# squeeze-excite uses the model's ratio, and the blocks without ReLU use the model's activation
# (hard swish, or ReLU when minimalistic).
_SMALL_BLOCKS = (
    (1, 16, 3, 2, True, True), (72.0 / 16, 24, 3, 2, False, True),
    (88.0 / 24, 24, 3, 1, False, True), (4, 40, None, 2, True, False),
    (6, 40, None, 1, True, False), (6, 40, None, 1, True, False), (3, 48, None, 1, True, False),
    (3, 48, None, 1, True, False), (6, 96, None, 2, True, False), (6, 96, None, 1, True, False),
    (6, 96, None, 1, True, False))
_LARGE_BLOCKS = (
    (1, 16, 3, 1, False, True), (4, 24, 3, 2, False, True), (3, 24, 3, 1, False, True),
    (3, 40, None, 2, True, True), (3, 40, None, 1, True, True), (3, 40, None, 1, True, True),
    (6, 80, 3, 2, False, False), (2.5, 80, 3, 1, False, False), (2.3, 80, 3, 1, False, False),
    (2.3, 80, 3, 1, False, False), (6, 112, 3, 1, True, False), (6, 112, 3, 1, True, False),
    (6, 160, None, 2, True, False), (6, 160, None, 1, True, False),
    (6, 160, None, 1, True, False))


def _stack(blocks, alpha):
    """The ``stack_fn`` of ``MobileNetV3`` that builds ``blocks``."""
    def stack_fn(x, kernel, activation, se_ratio):
        for block_id, (expansion, filters, k, stride, se, plain_relu) in enumerate(blocks):
            x = _inverted_res_block(x, expansion, _depth(filters * alpha),
                                    kernel if k is None else k, stride,
                                    se_ratio if se else None,
                                    relu if plain_relu else activation, block_id)
        return x
    return stack_fn


def MobileNetV3Small(input_shape=None, alpha=1.0, minimalistic=False, include_top=True,  # noqa: N802
                     weights="imagenet", input_tensor=None, classes=1000, pooling=None,
                     dropout_rate=0.2, classifier_activation="softmax",
                     include_preprocessing=True):
    """``tf.keras.applications.MobileNetV3Small`` (see the module's note on TF versions)."""
    return MobileNetV3(_stack(_SMALL_BLOCKS, alpha), 1024, model_type="small", **locals())


def MobileNetV3Large(input_shape=None, alpha=1.0, minimalistic=False, include_top=True,  # noqa: N802
                     weights="imagenet", input_tensor=None, classes=1000, pooling=None,
                     dropout_rate=0.2, classifier_activation="softmax",
                     include_preprocessing=True):
    """``tf.keras.applications.MobileNetV3Large`` (see the module's note on TF versions)."""
    return MobileNetV3(_stack(_LARGE_BLOCKS, alpha), 1280, model_type="large", **locals())


def preprocess_input(x, data_format=None):
    """``mobilenet_v3.preprocess_input``: returns ``x`` unchanged (the model rescales)."""
    del data_format
    return x


def decode_predictions(preds, top=5, class_index_path=None):
    """``mobilenet_v3.decode_predictions`` (``class_index_path``: see imagenet_utils)."""
    return imagenet_utils.decode_predictions(preds, top=top, class_index_path=class_index_path)
