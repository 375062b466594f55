"""VGG19 (``tf.keras.applications.vgg19``, TF 2.4.4)."""
from __future__ import annotations

from .vgg16 import build_vgg, decode_predictions, preprocess_input

__all__ = ["VGG19", "preprocess_input", "decode_predictions"]


def VGG19(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,  # noqa: N802
          pooling=None, classes=1000, classifier_activation="softmax"):
    """``tf.keras.applications.VGG19``; ``weights`` is None or a local HDF5 path here."""
    return build_vgg((2, 2, 4, 4, 4), "vgg19", include_top, weights, input_tensor, input_shape,
                     pooling, classes, classifier_activation)
