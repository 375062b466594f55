"""``tf.keras.applications.resnet50`` (TF 2.4.4): ResNet50 and its preprocessing."""
from .resnet import ResNet50, decode_predictions, preprocess_input

__all__ = ["ResNet50", "preprocess_input", "decode_predictions"]
