"""``tt.distribute.experimental.coordinator`` (TF 2.4's): ``ClusterCoordinator``,
``RemoteValue``, ``PerWorkerValues``; and the errors TF raises from them (``tf.errors``'
``UnavailableError`` and ``CancelledError``). The implementation is in
``tnp_train.distribute.ps``."""
from ..ps.coordinator import (Attempt, ClusterCoordinator, PerWorkerDistributedDataset,
                              PerWorkerDistributedIterator, PerWorkerValues, RemoteValue)
from ..ps.errors import CancelledError, UnavailableError

__all__ = ["ClusterCoordinator", "PerWorkerValues", "RemoteValue", "UnavailableError",
           "CancelledError", "Attempt", "PerWorkerDistributedDataset",
           "PerWorkerDistributedIterator"]
