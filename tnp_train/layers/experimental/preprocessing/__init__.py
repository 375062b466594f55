"""``tt.layers.experimental.preprocessing``: TF 2.4's
``tf.keras.layers.experimental.preprocessing`` (see ``docs/preprocessing.md``)."""
from ._base import PreprocessingLayer
from .categorical import CategoryCrossing, CategoryEncoding, Discretization, Hashing
from .image import (CenterCrop, RandomContrast, RandomCrop, RandomFlip, RandomHeight,
                    RandomRotation, RandomTranslation, RandomWidth, RandomZoom, Rescaling,
                    Resizing)
from .lookup import IntegerLookup, StringLookup
from .normalization import Normalization
from .text import TextVectorization

__all__ = ["PreprocessingLayer", "CategoryCrossing", "CategoryEncoding", "Discretization",
           "Hashing", "CenterCrop", "RandomContrast", "RandomCrop", "RandomFlip", "RandomHeight",
           "RandomRotation", "RandomTranslation", "RandomWidth", "RandomZoom", "Rescaling",
           "Resizing", "IntegerLookup", "StringLookup", "Normalization", "TextVectorization"]
