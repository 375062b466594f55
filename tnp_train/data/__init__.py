"""``tt.data``: input pipelines (modelled on ``tf.data`` of TF 2.4).

``Dataset`` (sources ``from_tensor_slices``, ``from_tensors``, ``from_generator``, ``range``,
``zip``, ``list_files``; transformations ``map``, ``filter``, ``batch``, ``shuffle``,
``prefetch``, ...), ``TextLineDataset``, ``TFRecordDataset``, ``FixedLengthRecordDataset``,
``Options`` (``ds.with_options``), ``TensorSpec`` (an element's type), ``IteratorSpec``,
``AUTOTUNE``, ``INFINITE_CARDINALITY`` and ``UNKNOWN_CARDINALITY``. See
docs/data.md.
"""
from .dataset import (
    AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset, DatasetSpec, Iterator)
from ._structure import TensorSpec
from ._options import Options
from ._files import TextLineDataset
from ._tfrecord import TFRecordDataset
from ._readers import FixedLengthRecordDataset
from ._optional import IteratorSpec
from . import experimental

__all__ = ["Dataset", "Iterator", "IteratorSpec", "TensorSpec", "DatasetSpec", "TextLineDataset",
           "TFRecordDataset", "FixedLengthRecordDataset", "Options",
           "AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "experimental"]
