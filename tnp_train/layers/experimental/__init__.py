"""``tt.layers.experimental`` (TF 2.4's ``tf.keras.layers.experimental``)."""
from ..einsum_dense import EinsumDense, RandomFourierFeatures
from ..sync_batch_normalization import SyncBatchNormalization
from . import preprocessing  # noqa: F401  (tt.layers.experimental.preprocessing)

__all__ = ["SyncBatchNormalization", "EinsumDense", "RandomFourierFeatures"]
