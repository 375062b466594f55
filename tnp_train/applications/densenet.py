"""DenseNet121/169/201 (``tf.keras.applications.densenet``, TF 2.4.4): Huang et al. 2017."""
from __future__ import annotations

from .. import layers
from ..backend import config as backend_config
from . import imagenet_utils
from ._common import finish, pooled_top, setup

__all__ = ["DenseNet121", "DenseNet169", "DenseNet201", "preprocess_input", "decode_predictions"]

_EPS = 1.001e-5
_NAMES = {(6, 12, 24, 16): "densenet121", (6, 12, 32, 32): "densenet169",
          (6, 12, 48, 32): "densenet201"}


def _bn_axis():
    return 3 if backend_config.image_data_format() == "channels_last" else 1


def dense_block(x, blocks, name):
    for i in range(blocks):
        x = conv_block(x, 32, name=f"{name}_block{i + 1}")
    return x


def transition_block(x, reduction, name):
    axis = _bn_axis()
    x = layers.BatchNormalization(axis=axis, epsilon=_EPS, name=name + "_bn")(x)
    x = layers.Activation("relu", name=name + "_relu")(x)
    x = layers.Conv2D(int(x.shape[axis] * reduction), 1, use_bias=False, name=name + "_conv")(x)
    return layers.AveragePooling2D(2, strides=2, name=name + "_pool")(x)


def conv_block(x, growth_rate, name):
    """BN-ReLU-1x1 conv, BN-ReLU-3x3 conv; the new ``growth_rate`` channels are concatenated."""
    axis = _bn_axis()
    x1 = layers.BatchNormalization(axis=axis, epsilon=_EPS, name=name + "_0_bn")(x)
    x1 = layers.Activation("relu", name=name + "_0_relu")(x1)
    x1 = layers.Conv2D(4 * growth_rate, 1, use_bias=False, name=name + "_1_conv")(x1)
    x1 = layers.BatchNormalization(axis=axis, epsilon=_EPS, name=name + "_1_bn")(x1)
    x1 = layers.Activation("relu", name=name + "_1_relu")(x1)
    x1 = layers.Conv2D(growth_rate, 3, padding="same", use_bias=False, name=name + "_2_conv")(x1)
    return layers.Concatenate(axis=axis, name=name + "_concat")([x, x1])


def DenseNet(blocks, include_top=True, weights="imagenet", input_tensor=None,  # noqa: N802
             input_shape=None, pooling=None, classes=1000, classifier_activation="softmax"):
    """TF's ``densenet.DenseNet`` with ``blocks`` building blocks in the four dense blocks."""
    img_input, _ = setup("DenseNet", weights, include_top, classes, input_tensor, input_shape,
                         224, 32)
    axis = _bn_axis()
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)))(img_input)
    x = layers.Conv2D(64, 7, strides=2, use_bias=False, name="conv1/conv")(x)
    x = layers.BatchNormalization(axis=axis, epsilon=_EPS, name="conv1/bn")(x)
    x = layers.Activation("relu", name="conv1/relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)))(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1")(x)
    x = dense_block(x, blocks[0], name="conv2")
    x = transition_block(x, 0.5, name="pool2")
    x = dense_block(x, blocks[1], name="conv3")
    x = transition_block(x, 0.5, name="pool3")
    x = dense_block(x, blocks[2], name="conv4")
    x = transition_block(x, 0.5, name="pool4")
    x = dense_block(x, blocks[3], name="conv5")
    x = layers.BatchNormalization(axis=axis, epsilon=_EPS, name="bn")(x)
    x = layers.Activation("relu", name="relu")(x)
    x = pooled_top(x, include_top, pooling, classes, classifier_activation, weights)
    return finish(img_input, input_tensor, x, _NAMES.get(tuple(blocks), "densenet"), weights)


def DenseNet121(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,  # noqa: N802
                pooling=None, classes=1000, classifier_activation="softmax"):
    """``tf.keras.applications.DenseNet121`` (``classifier_activation`` as in later TF)."""
    return DenseNet([6, 12, 24, 16], include_top, weights, input_tensor, input_shape, pooling,
                    classes, classifier_activation)


def DenseNet169(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,  # noqa: N802
                pooling=None, classes=1000, classifier_activation="softmax"):
    """``tf.keras.applications.DenseNet169`` (``classifier_activation`` as in later TF)."""
    return DenseNet([6, 12, 32, 32], include_top, weights, input_tensor, input_shape, pooling,
                    classes, classifier_activation)


def DenseNet201(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,  # noqa: N802
                pooling=None, classes=1000, classifier_activation="softmax"):
    """``tf.keras.applications.DenseNet201`` (``classifier_activation`` as in later TF)."""
    return DenseNet([6, 12, 48, 32], include_top, weights, input_tensor, input_shape, pooling,
                    classes, classifier_activation)


def preprocess_input(x, data_format=None):
    """``densenet.preprocess_input``: 'torch' mode (to [0, 1], then ImageNet mean and std)."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="torch")


def decode_predictions(preds, top=5, class_index_path=None):
    """``densenet.decode_predictions`` (``class_index_path``: see imagenet_utils)."""
    return imagenet_utils.decode_predictions(preds, top=top, class_index_path=class_index_path)
