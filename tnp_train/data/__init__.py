"""``tt.data``: input pipelines (modelled on ``tf.data`` of TF 2.4).

``Dataset`` (sources ``from_tensor_slices``, ``from_tensors``, ``from_generator``, ``range``,
``zip``; transformations ``map``, ``filter``, ``batch``, ``shuffle``, ``prefetch``, ...),
``TensorSpec`` (an element's type), ``AUTOTUNE``, ``INFINITE_CARDINALITY`` and
``UNKNOWN_CARDINALITY``. See docs/data.md.
"""
from .dataset import (
    AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset, DatasetSpec, Iterator)
from ._structure import TensorSpec
from . import experimental

__all__ = ["Dataset", "Iterator", "TensorSpec", "DatasetSpec", "AUTOTUNE",
           "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "experimental"]
