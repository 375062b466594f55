"""``tt.distribute.experimental`` (TF 2.4's ``tf.distribute.experimental`` without
``TPUStrategy``): communication options (with ``Compression``, Horovod's, beyond TF), the
deprecated ``MultiWorkerMirroredStrategy`` alias,
``ValueContext``, ``CentralStorageStrategy``, and parameter-server training
(``ParameterServerStrategy``, ``coordinator``)."""
from ..collective_all_reduce_strategy import (
    ExperimentalMultiWorkerMirroredStrategy as MultiWorkerMirroredStrategy)
from ..collective_util import (CollectiveCommunication, CollectiveHints,
                               CommunicationImplementation, CommunicationOptions, Compression)
from ..distribute_lib import ValueContext
from .. import elastic
from ..elastic import enable_elastic_training
from . import coordinator, partitioners
from ._pending import CentralStorageStrategy
from .parameter_server_strategy import ParameterServerStrategy

__all__ = ["coordinator", "partitioners", "CentralStorageStrategy", "CollectiveCommunication",
           "CollectiveHints", "CommunicationImplementation", "CommunicationOptions",
           "Compression", "MultiWorkerMirroredStrategy", "ParameterServerStrategy", "ValueContext",
           "elastic", "enable_elastic_training"]
