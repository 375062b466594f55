"""Parameter-server training over MPI: ``ParameterServerStrategy``, ``ClusterCoordinator`` and
``tt.distribute.Server`` (TF 2.4's), with closures that survive the loss of a worker under ULFM.

The pieces, bottom up: ``wire`` (frames: a JSON header and raw buffers), ``transport`` (MPI
point-to-point on a private communicator; threads of one process for ``local``), ``endpoint``
(requests, replies and the receiving thread of a rank), ``pickling`` (cloudpickle between the
ranks of a job, variables as handles), ``variables`` (``PSVariable``, ``ShardedVariable`` and
their client side), ``server`` (the ps and worker tasks, ``Server``), ``chief`` (the chief's
side), ``coordinator`` (``ClusterCoordinator``), ``strategy`` (``ParameterServerStrategy``) and
``local`` (a whole job in one process); ``model.fit`` under it is the trainers'
(``tnp_train.trainers.ps_fit``). See docs/distributed.md, "Parameter-server training".
"""
from .errors import CancelledError, UnavailableError

__all__ = ["CancelledError", "UnavailableError"]
