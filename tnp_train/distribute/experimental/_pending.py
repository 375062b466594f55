"""TF names whose machinery comes with later steps: constructing them says so."""
from __future__ import annotations

from ..distribute_lib import Strategy
from ..one_device_strategy import _SingleDeviceExtended, parse_device

__all__ = ["CentralStorageStrategy", "not_yet"]


def not_yet(name, why):
    raise NotImplementedError(f"tt.distribute.{name} is not implemented yet: {why}")


class CentralStorageStrategy(Strategy):
    """Mirrors ``tf.distribute.experimental.CentralStorageStrategy(compute_devices=None,
    parameter_device=None)``: with one compute device, variables and computation on it
    (variables on ``parameter_device`` when given); several compute devices in one process
    are not implemented yet."""

    def __init__(self, compute_devices=None, parameter_device=None):
        if compute_devices is None:
            compute_devices = ["cpu"]
        elif isinstance(compute_devices, str):
            compute_devices = [compute_devices]
        devs = [parse_device(d, "CentralStorageStrategy") for d in compute_devices]
        if len(devs) != 1:
            not_yet("experimental.CentralStorageStrategy with several compute devices",
                    f"one replica per device in threads comes with a later step (got "
                    f"{[str(d) for d in devs]})")
        param = devs[0] if parameter_device is None else \
            parse_device(parameter_device, "CentralStorageStrategy")
        super().__init__(_SingleDeviceExtended(self, communicator=None, device=devs[0],
                                               parameter_device=param))

    def __repr__(self):
        return (f"<tt.distribute.experimental.CentralStorageStrategy "
                f"device={self._extended.local_devices[0]}>")
