"""``tt.data.experimental`` (``tf.data.experimental``): the names TF 2.4 kept there."""
from .dataset import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset
from ._options import AutoShardPolicy, DistributeOptions, ThreadingOptions

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "cardinality",
           "AutoShardPolicy", "DistributeOptions", "ThreadingOptions"]


def cardinality(dataset):
    """``dataset.cardinality()`` (``tf.data.experimental.cardinality``)."""
    if not isinstance(dataset, Dataset):
        raise TypeError(f"cardinality: expected a Dataset, got {type(dataset).__name__}")
    return dataset.cardinality()
