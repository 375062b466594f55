"""``tt.layers.experimental`` (TF 2.4's ``tf.keras.layers.experimental``)."""
from ..sync_batch_normalization import SyncBatchNormalization
from . import preprocessing  # noqa: F401  (tt.layers.experimental.preprocessing)

__all__ = ["SyncBatchNormalization"]
