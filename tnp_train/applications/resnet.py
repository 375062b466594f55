"""ResNet50/101/152 (``tf.keras.applications.resnet``, TF 2.4.4): He et al. 2015, v1 blocks."""
from __future__ import annotations

from .. import layers
from ..backend import config as backend_config
from . import imagenet_utils
from ._common import check_weights_arg, finish, image_input, obtain_input_shape, pooled_top

__all__ = ["ResNet50", "ResNet101", "ResNet152", "preprocess_input", "decode_predictions"]

_EPS = 1.001e-5


def _bn_axis():
    return 3 if backend_config.image_data_format() == "channels_last" else 1


def ResNet(stack_fn, preact, use_bias, model_name="resnet", include_top=True,  # noqa: N802
           weights="imagenet", input_tensor=None, input_shape=None, pooling=None, classes=1000,
           classifier_activation="softmax", **kwargs):
    """The ResNet trunk shared by v1 and v2 (TF's ``resnet.ResNet``)."""
    if kwargs:
        raise ValueError(f"Unknown argument(s): {kwargs}")
    check_weights_arg(weights, include_top, classes, model_name)
    input_shape = obtain_input_shape(input_shape, default_size=224, min_size=32,
                                     data_format=backend_config.image_data_format(),
                                     require_flatten=include_top, weights=weights)
    img_input = image_input(input_tensor, input_shape)
    bn_axis = _bn_axis()
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)), name="conv1_pad")(img_input)
    x = layers.Conv2D(64, 7, strides=2, use_bias=use_bias, name="conv1_conv")(x)
    if not preact:
        x = layers.BatchNormalization(axis=bn_axis, epsilon=_EPS, name="conv1_bn")(x)
        x = layers.Activation("relu", name="conv1_relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name="pool1_pad")(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    x = stack_fn(x)
    if preact:
        x = layers.BatchNormalization(axis=bn_axis, epsilon=_EPS, name="post_bn")(x)
        x = layers.Activation("relu", name="post_relu")(x)
    x = pooled_top(x, include_top, pooling, classes, classifier_activation, weights)
    return finish(img_input, input_tensor, x, model_name, weights)


def block1(x, filters, kernel_size=3, stride=1, conv_shortcut=True, name=None):
    """A v1 bottleneck: 1x1, kxk, 1x1 convolutions, BN after each, shortcut added last."""
    bn_axis = _bn_axis()
    if conv_shortcut:
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=name + "_0_conv")(x)
        shortcut = layers.BatchNormalization(axis=bn_axis, epsilon=_EPS, name=name + "_0_bn")(shortcut)
    else:
        shortcut = x
    x = layers.Conv2D(filters, 1, strides=stride, name=name + "_1_conv")(x)
    x = layers.BatchNormalization(axis=bn_axis, epsilon=_EPS, name=name + "_1_bn")(x)
    x = layers.Activation("relu", name=name + "_1_relu")(x)
    x = layers.Conv2D(filters, kernel_size, padding="same", name=name + "_2_conv")(x)
    x = layers.BatchNormalization(axis=bn_axis, epsilon=_EPS, name=name + "_2_bn")(x)
    x = layers.Activation("relu", name=name + "_2_relu")(x)
    x = layers.Conv2D(4 * filters, 1, name=name + "_3_conv")(x)
    x = layers.BatchNormalization(axis=bn_axis, epsilon=_EPS, name=name + "_3_bn")(x)
    x = layers.Add(name=name + "_add")([shortcut, x])
    return layers.Activation("relu", name=name + "_out")(x)


def stack1(x, filters, blocks, stride1=2, name=None):
    x = block1(x, filters, stride=stride1, name=name + "_block1")
    for i in range(2, blocks + 1):
        x = block1(x, filters, conv_shortcut=False, name=f"{name}_block{i}")
    return x


def block2(x, filters, kernel_size=3, stride=1, conv_shortcut=False, name=None):
    """A v2 (pre-activation) bottleneck; the stride sits on the 3x3 convolution."""
    bn_axis = _bn_axis()
    preact = layers.BatchNormalization(axis=bn_axis, epsilon=_EPS, name=name + "_preact_bn")(x)
    preact = layers.Activation("relu", name=name + "_preact_relu")(preact)
    if conv_shortcut:
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=name + "_0_conv")(preact)
    else:
        shortcut = layers.MaxPooling2D(1, strides=stride)(x) if stride > 1 else x
    x = layers.Conv2D(filters, 1, strides=1, use_bias=False, name=name + "_1_conv")(preact)
    x = layers.BatchNormalization(axis=bn_axis, epsilon=_EPS, name=name + "_1_bn")(x)
    x = layers.Activation("relu", name=name + "_1_relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name=name + "_2_pad")(x)
    x = layers.Conv2D(filters, kernel_size, strides=stride, use_bias=False,
                      name=name + "_2_conv")(x)
    x = layers.BatchNormalization(axis=bn_axis, epsilon=_EPS, name=name + "_2_bn")(x)
    x = layers.Activation("relu", name=name + "_2_relu")(x)
    x = layers.Conv2D(4 * filters, 1, name=name + "_3_conv")(x)
    return layers.Add(name=name + "_out")([shortcut, x])


def stack2(x, filters, blocks, stride1=2, name=None):
    x = block2(x, filters, conv_shortcut=True, name=name + "_block1")
    for i in range(2, blocks):
        x = block2(x, filters, name=f"{name}_block{i}")
    return block2(x, filters, stride=stride1, name=f"{name}_block{blocks}")


def _v1(depths):
    def stack_fn(x):
        x = stack1(x, 64, depths[0], stride1=1, name="conv2")
        x = stack1(x, 128, depths[1], name="conv3")
        x = stack1(x, 256, depths[2], name="conv4")
        return stack1(x, 512, depths[3], name="conv5")
    return stack_fn


def ResNet50(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,  # noqa: N802
             pooling=None, classes=1000, **kwargs):
    """``tf.keras.applications.ResNet50``; ``weights`` is None or a local HDF5 path here."""
    return ResNet(_v1((3, 4, 6, 3)), False, True, "resnet50", include_top, weights,
                  input_tensor, input_shape, pooling, classes, **kwargs)


def ResNet101(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,  # noqa: N802
              pooling=None, classes=1000, **kwargs):
    """``tf.keras.applications.ResNet101``; ``weights`` is None or a local HDF5 path here."""
    return ResNet(_v1((3, 4, 23, 3)), False, True, "resnet101", include_top, weights,
                  input_tensor, input_shape, pooling, classes, **kwargs)


def ResNet152(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,  # noqa: N802
              pooling=None, classes=1000, **kwargs):
    """``tf.keras.applications.ResNet152``; ``weights`` is None or a local HDF5 path here."""
    return ResNet(_v1((3, 8, 36, 3)), False, True, "resnet152", include_top, weights,
                  input_tensor, input_shape, pooling, classes, **kwargs)


def preprocess_input(x, data_format=None):
    """``resnet.preprocess_input``: 'caffe' mode (RGB to BGR, ImageNet means subtracted)."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="caffe")


def decode_predictions(preds, top=5, class_index_path=None):
    """``resnet.decode_predictions`` (``class_index_path``: see imagenet_utils)."""
    return imagenet_utils.decode_predictions(preds, top=top, class_index_path=class_index_path)
