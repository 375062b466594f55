"""ResNet50V2/101V2/152V2 (``tf.keras.applications.resnet_v2``, TF 2.4.4): pre-activation
blocks (He et al. 2016)."""
from __future__ import annotations

from . import imagenet_utils
from .resnet import ResNet, stack2

__all__ = ["ResNet50V2", "ResNet101V2", "ResNet152V2", "preprocess_input", "decode_predictions"]


def _v2(depths):
    def stack_fn(x):
        x = stack2(x, 64, depths[0], name="conv2")
        x = stack2(x, 128, depths[1], name="conv3")
        x = stack2(x, 256, depths[2], name="conv4")
        return stack2(x, 512, depths[3], stride1=1, name="conv5")
    return stack_fn


def ResNet50V2(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,  # noqa: N802
               pooling=None, classes=1000, classifier_activation="softmax"):
    """``tf.keras.applications.ResNet50V2``; ``weights`` is None or a local HDF5 path here."""
    return ResNet(_v2((3, 4, 6, 3)), True, True, "resnet50v2", include_top, weights, input_tensor,
                  input_shape, pooling, classes, classifier_activation=classifier_activation)


def ResNet101V2(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,  # noqa: N802
                pooling=None, classes=1000, classifier_activation="softmax"):
    """``tf.keras.applications.ResNet101V2``; ``weights`` is None or a local HDF5 path here."""
    return ResNet(_v2((3, 4, 23, 3)), True, True, "resnet101v2", include_top, weights,
                  input_tensor, input_shape, pooling, classes,
                  classifier_activation=classifier_activation)


def ResNet152V2(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,  # noqa: N802
                pooling=None, classes=1000, classifier_activation="softmax"):
    """``tf.keras.applications.ResNet152V2``; ``weights`` is None or a local HDF5 path here."""
    return ResNet(_v2((3, 8, 36, 3)), True, True, "resnet152v2", include_top, weights,
                  input_tensor, input_shape, pooling, classes,
                  classifier_activation=classifier_activation)


def preprocess_input(x, data_format=None):
    """``resnet_v2.preprocess_input``: 'tf' mode (scaled to [-1, 1])."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5, class_index_path=None):
    """``resnet_v2.decode_predictions`` (``class_index_path``: see imagenet_utils)."""
    return imagenet_utils.decode_predictions(preds, top=top, class_index_path=class_index_path)
