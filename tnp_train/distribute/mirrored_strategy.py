"""``MirroredStrategy`` (TF 2.4's ``mirrored_strategy``): synchronous training on the devices of
one process, one replica per device, variables mirrored on each.

This step supports one device per process (a replica on that device, as ``OneDeviceStrategy``
with MirroredStrategy's API); several devices in one process (one replica per device, each in
its own thread, NCCL between GPUs) come with a later step and are refused with
NotImplementedError meanwhile. Several processes are ``MultiWorkerMirroredStrategy``'s job.
"""
from __future__ import annotations

import tnp

from .cross_device_ops import CrossDeviceOps
from .distribute_lib import Strategy
from .one_device_strategy import _SingleDeviceExtended, parse_device

__all__ = ["MirroredStrategy"]


def _all_gpus():
    """The GPUs tnp can use (none without CuPy or a GPU)."""
    return [d for d in tnp.__array_namespace_info__().devices() if d.kind == "gpu"]


class MirroredStrategy(Strategy):
    """Mirrors ``tf.distribute.MirroredStrategy(devices=None, cross_device_ops=None)``:
    ``devices`` defaults to every GPU, else the CPU. Only one device is supported in this
    version (NotImplementedError for more)."""

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
            raise NotImplementedError(
                f"MirroredStrategy: several devices in one process ({[str(d) for d in devs]}) "
                f"are not supported yet (one replica per device, in threads, comes with a later "
                f"step); give one device, or run one process per device under "
                f"MultiWorkerMirroredStrategy (mpiexec -n {len(devs)})")
        super().__init__(_SingleDeviceExtended(self, communicator=None, device=devs[0]))
        self._cross_device_ops = cross_device_ops
        if cross_device_ops is not None:
            cross_device_ops._bind(None, 1)

    def __repr__(self):
        return f"<tt.distribute.MirroredStrategy devices=[{self._extended._device}]>"
