"""``tt.layers.experimental`` (TF 2.4's ``tf.keras.layers.experimental``)."""
from ..sync_batch_normalization import SyncBatchNormalization

__all__ = ["SyncBatchNormalization"]
