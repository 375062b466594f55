"""``MirroredStrategy`` (TF 2.4's ``mirrored_strategy``): synchronous training on the devices of
one process, one replica per device, variables mirrored on each.

With several devices each replica runs in its own thread (``strategy.run`` hands the function
to every replica thread and waits); a variable made in the scope is a ``MirroredVariable`` (or
a ``SyncOnReadVariable`` for ON_READ state) with a copy on every device; the replicas' gradients
are summed over a thread group (on the host; between GPUs the same, staged through it, until an
NCCL path exists) and every replica applies the same update to its copy. On the CPU,
``MirroredStrategy(["cpu:0", "cpu:1"])`` runs two replicas on tnp's two CPU devices, which
refuse to be mixed as two GPUs would. Several processes are ``MultiWorkerMirroredStrategy``'s
job.
"""
from __future__ import annotations

import tnp

from .cross_device_ops import CrossDeviceOps
from .distribute_lib import Strategy, StrategyExtended
from .distributed_variables import make_distributed
from .gradient_reduction import AllReduceGradients, PerReplicaGradients
from .one_device_strategy import _SingleDeviceExtended, parse_device

__all__ = ["MirroredStrategy"]


def _all_gpus():
    """The GPUs tnp can use (none without CuPy or a GPU)."""
    return [d for d in tnp.__array_namespace_info__().devices() if d.kind == "gpu"]


def mirror_variable(ext, next_creator, kwargs, before_mirror=None):
    """A variable made by ``next_creator(**kwargs)`` on the first of ``ext``'s local devices
    and mirrored on the others (``before_mirror(primary)`` first: a broadcast from worker 0)."""
    init = kwargs.get("initial_value")
    if callable(init) and not isinstance(init, tnp.ndarray):
        kwargs["initial_value"] = init()
    devices = ext.local_devices
    kwargs["device"] = devices[0]
    with tnp.default_device(devices[0]):
        primary = next_creator(**kwargs)
    if before_mirror is not None:
        before_mirror(primary)
    return make_distributed(primary, devices, ext)


class MirroredExtended(StrategyExtended):
    """The extended object of a :class:`MirroredStrategy` over several devices."""

    def __init__(self, container_strategy, devices, cross_device_ops=None):
        super().__init__(container_strategy, communicator=None, devices=devices)
        self._num_replicas_in_sync = self._num_local
        self._cross_device_ops = cross_device_ops

    def _variable_creator(self, next_creator, **kwargs):
        v = mirror_variable(self, next_creator, kwargs)
        self._record_created(v)
        return v

    def _new_gradient_aggregator(self):
        n = self._num_replicas_in_sync
        return PerReplicaGradients(self, lambda comm: AllReduceGradients(comm, n))


class MirroredStrategy(Strategy):
    """Mirrors ``tf.distribute.MirroredStrategy(devices=None, cross_device_ops=None)``:
    ``devices`` defaults to every GPU, else the CPU; one replica per device (threads when
    there are several)."""

    def __init__(self, devices=None, cross_device_ops=None):
        if cross_device_ops is not None and not isinstance(cross_device_ops, CrossDeviceOps):
            raise ValueError(f"MirroredStrategy: cross_device_ops must be an instance of "
                             f"tt.distribute.CrossDeviceOps, got "
                             f"{type(cross_device_ops).__name__}")
        if devices is None:
            devs = _all_gpus() or [tnp.device("cpu")]
        else:
            if isinstance(devices, (str, tnp.Device)):
                devices = [devices]
            devs = [parse_device(d, "MirroredStrategy") for d in devices]
            if not devs:
                raise ValueError("MirroredStrategy: `devices` must not be empty")
        seen = set()
        for d in devs:
            if d in seen:
                raise ValueError(f"MirroredStrategy: no duplicates allowed in `devices` argument: "
                                 f"{[str(x) for x in devs]}")
            seen.add(d)
        if len(devs) > 1:
            super().__init__(MirroredExtended(self, devs, cross_device_ops))
        else:
            super().__init__(_SingleDeviceExtended(self, communicator=None, device=devs[0]))
        self._cross_device_ops = cross_device_ops
        if cross_device_ops is not None:
            cross_device_ops._bind(None, len(devs))

    def __repr__(self):
        devs = ", ".join(str(d) for d in self._extended.local_devices)
        return f"<tt.distribute.MirroredStrategy devices=[{devs}]>"
