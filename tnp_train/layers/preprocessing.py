"""The preprocessing layers under their TF 2.6+ names (``tt.layers.StringLookup``, as
``tf_keras.layers.StringLookup``): TF 2.4's ``layers.experimental.preprocessing`` classes, and,
where tf_keras 2.x changed a default, a subclass with tf_keras's default, so that a program
written for tf_keras gets tf_keras's numbers:

==================  ==========================  ==========================
layer               TF 2.4 (experimental)       tf_keras 2.x (here)
==================  ==========================  ==========================
StringLookup        ``mask_token=""``           ``mask_token=None``
IntegerLookup       ``mask_value=0``            ``mask_token=None``
TextVectorization   ``pad_to_max_tokens=True``  ``pad_to_max_tokens=False``
CategoryEncoding    ``output_mode="binary"``    ``output_mode="multi_hot"`` (the same)
==================  ==========================  ==========================

Every other layer here is the experimental class itself. A config records every argument, so
either class reads the other's config to the same layer.
"""
from .experimental import preprocessing as _experimental
from .experimental.preprocessing import (CategoryEncoding, CenterCrop, Discretization,  # noqa: F401
                                         Hashing, Normalization, RandomContrast, RandomCrop,
                                         RandomFlip, RandomHeight, RandomRotation,
                                         RandomTranslation, RandomWidth, RandomZoom, Rescaling,
                                         Resizing)

__all__ = ["CategoryEncoding", "CenterCrop", "Discretization", "Hashing", "IntegerLookup",
           "Normalization", "RandomContrast", "RandomCrop", "RandomFlip", "RandomHeight",
           "RandomRotation", "RandomTranslation", "RandomWidth", "RandomZoom", "Rescaling",
           "Resizing", "StringLookup", "TextVectorization"]


class StringLookup(_experimental.StringLookup):
    """Mirrors ``tf_keras.layers.StringLookup(max_tokens=None, num_oov_indices=1,
    mask_token=None, oov_token="[UNK]", vocabulary=None, ..., invert=False)``: TF 2.4's
    experimental class with tf_keras's ``mask_token=None`` (index 0 is the OOV token)."""

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token="[UNK]",
                 vocabulary=None, encoding=None, invert=False, **kwargs):
        super().__init__(max_tokens=max_tokens, num_oov_indices=num_oov_indices,
                         mask_token=mask_token, oov_token=oov_token, vocabulary=vocabulary,
                         encoding=encoding, invert=invert, **kwargs)


class IntegerLookup(_experimental.IntegerLookup):
    """Mirrors ``tf_keras.layers.IntegerLookup(max_tokens=None, num_oov_indices=1,
    mask_token=None, oov_token=-1, vocabulary=None, ..., invert=False)``: TF 2.4's experimental
    class with tf_keras's names and ``mask_token=None`` (index 0 is the OOV value)."""

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token=-1,
                 vocabulary=None, invert=False, **kwargs):
        for old, new in (("max_values", "max_tokens"), ("mask_value", "mask_token"),
                         ("oov_value", "oov_token")):
            if old in kwargs:
                raise TypeError(f"IntegerLookup: {old!r} is TF 2.4's name; tf_keras's "
                                f"layers.IntegerLookup takes {new!r} (TF 2.4's class is "
                                f"layers.experimental.preprocessing.IntegerLookup)")
        super().__init__(max_values=max_tokens, num_oov_indices=num_oov_indices,
                         mask_value=mask_token, oov_value=oov_token, vocabulary=vocabulary,
                         invert=invert, **kwargs)

    _NEW_NAMES = {"max_values": "max_tokens", "mask_value": "mask_token",
                  "oov_value": "oov_token"}

    def get_config(self):
        return {self._NEW_NAMES.get(k, k): v for k, v in super().get_config().items()}

    @classmethod
    def from_config(cls, config):
        # a TF 2.4 config (the experimental class's names) reads as the same layer
        return super().from_config({cls._NEW_NAMES.get(k, k): v for k, v in config.items()})


class TextVectorization(_experimental.TextVectorization):
    """Mirrors ``tf_keras.layers.TextVectorization``: TF 2.4's experimental class with
    tf_keras's ``pad_to_max_tokens=False``."""

    def __init__(self, max_tokens=None, standardize="lower_and_strip_punctuation",
                 split="whitespace", ngrams=None, output_mode="int",
                 output_sequence_length=None, pad_to_max_tokens=False, vocabulary=None,
                 idf_weights=None, **kwargs):
        super().__init__(max_tokens=max_tokens, standardize=standardize, split=split,
                         ngrams=ngrams, output_mode=output_mode,
                         output_sequence_length=output_sequence_length,
                         pad_to_max_tokens=pad_to_max_tokens, vocabulary=vocabulary,
                         idf_weights=idf_weights, **kwargs)
