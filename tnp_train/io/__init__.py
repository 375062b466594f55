"""``tt.io``: TFRecord files and ``tf.train.Example`` parsing (``tf.io`` of TF 2.4).

``TFRecordWriter`` and ``TFRecordOptions`` write TFRecord files (read them with
``tt.data.TFRecordDataset``); ``parse_single_example`` and ``parse_example`` parse serialized
``tt.train.Example`` records with ``FixedLenFeature``, ``VarLenFeature`` and
``FixedLenSequenceFeature``. Needs the ``protobuf`` and ``crc32c`` packages
(``pip install tnp[tfrecord]``), imported when first used. See docs/data.md.
"""
from .tfrecord import TFRecordOptions, TFRecordWriter
from ._parsing import (FixedLenFeature, FixedLenSequenceFeature, VarLenFeature, parse_example,
                       parse_single_example)

__all__ = ["TFRecordWriter", "TFRecordOptions", "parse_single_example", "parse_example",
           "FixedLenFeature", "VarLenFeature", "FixedLenSequenceFeature"]
