"""VGG16 (``tf.keras.applications.vgg16``, TF 2.4.4): Simonyan & Zisserman 2014."""
from __future__ import annotations

from .. import layers
from . import imagenet_utils
from ._common import finish, notop_pooling, setup, validate_activation

__all__ = ["VGG16", "preprocess_input", "decode_predictions"]


def build_vgg(convs_per_block, model_name, include_top, weights, input_tensor, input_shape,
              pooling, classes, classifier_activation):
    """VGG's five blocks of 3x3 convolutions, each closed by a 2x2 max pool; then the
    fully-connected top (Flatten, fc1, fc2, predictions)."""
    img_input, _ = setup(model_name, weights, include_top, classes, input_tensor, input_shape,
                         224, 32)
    x = img_input
    for b, (n, filters) in enumerate(zip(convs_per_block, (64, 128, 256, 512, 512)), start=1):
        for c in range(1, n + 1):
            x = layers.Conv2D(filters, (3, 3), activation="relu", padding="same",
                              name=f"block{b}_conv{c}")(x)
        x = layers.MaxPooling2D((2, 2), strides=(2, 2), name=f"block{b}_pool")(x)
    if include_top:
        x = layers.Flatten(name="flatten")(x)
        x = layers.Dense(4096, activation="relu", name="fc1")(x)
        x = layers.Dense(4096, activation="relu", name="fc2")(x)
        validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = notop_pooling(x, pooling, named=False)
    return finish(img_input, input_tensor, x, model_name, weights)


def VGG16(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,  # noqa: N802
          pooling=None, classes=1000, classifier_activation="softmax"):
    """``tf.keras.applications.VGG16``; ``weights`` is None or a local HDF5 path here."""
    return build_vgg((2, 2, 3, 3, 3), "vgg16", include_top, weights, input_tensor, input_shape,
                     pooling, classes, classifier_activation)


def preprocess_input(x, data_format=None):
    """``vgg16.preprocess_input``: 'caffe' mode (RGB to BGR, ImageNet means subtracted)."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="caffe")


def decode_predictions(preds, top=5, class_index_path=None):
    """``vgg16.decode_predictions`` (``class_index_path``: see imagenet_utils)."""
    return imagenet_utils.decode_predictions(preds, top=top, class_index_path=class_index_path)
