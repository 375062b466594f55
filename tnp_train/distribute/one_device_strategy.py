"""``OneDeviceStrategy`` (TF 2.4's ``one_device_strategy``): every variable made in its scope
and every computation of ``run`` on one device; distributed batches are moved there."""
from __future__ import annotations

import re

import tnp
from tnp.extend import device_of

from .distribute_lib import Strategy, StrategyExtended

__all__ = ["OneDeviceStrategy", "parse_device"]

_TF_DEVICE = re.compile(r"^(?:.*/)?(?:device:)?(cpu|gpu)(?::(\d+))?$", re.IGNORECASE)


def parse_device(spec, who="OneDeviceStrategy"):
    """A ``tnp.Device`` from a device given as TF writes it (``"/gpu:0"``, ``"GPU:1"``,
    ``"/job:localhost/replica:0/task:0/device:CPU:0"``), as tnp does (``"cpu"``, ``"cpu:1"``,
    ``"gpu:0"``), or a ``tnp.Device`` or array (its device)."""
    if isinstance(spec, tnp.Device):
        return spec
    if isinstance(spec, tnp.ndarray):
        return device_of(spec)
    if not isinstance(spec, str):
        raise TypeError(f"{who}: a device must be a string such as '/gpu:0' or a tnp.Device, "
                        f"got {type(spec).__name__}")
    m = _TF_DEVICE.match(spec.strip())
    if m is None:
        raise ValueError(f"{who}: cannot parse device {spec!r} (expected e.g. '/cpu:0', "
                         f"'/gpu:1' or '/job:localhost/replica:0/task:0/device:GPU:0')")
    kind, idx = m.group(1).lower(), m.group(2) or "0"
    try:
        dev = tnp.device(f"{kind}:{idx}")
    except Exception as e:              # tnp says why (no such device)
        raise ValueError(f"{who}: device {spec!r} is not available: {e}") from None
    if dev.is_gpu and dev not in tnp.__array_namespace_info__().devices():
        raise ValueError(f"{who}: device {spec!r} is not available (this process sees "
                         f"{[str(d) for d in tnp.__array_namespace_info__().devices()]})")
    return dev


class _SingleDeviceExtended(StrategyExtended):
    """One replica on ``device``: variables are placed there (the strategy's creator), or on
    ``parameter_device`` when given."""

    def __init__(self, container_strategy, communicator=None, device=None,
                 parameter_device=None):
        super().__init__(container_strategy, communicator=communicator, device=device)
        self._parameter_device = parameter_device

    def _variable_creator(self, next_creator, **kwargs):
        if kwargs.get("device") is None:
            kwargs["device"] = self._parameter_device or self._device
        v = next_creator(**kwargs)
        self._record_created(v)
        return v


class OneDeviceStrategy(Strategy):
    """Mirrors ``tf.distribute.OneDeviceStrategy(device)``: one replica on ``device`` (TF's
    names like ``"/gpu:0"`` or tnp's like ``"cpu:1"``)."""

    def __init__(self, device):
        dev = parse_device(device)
        super().__init__(_SingleDeviceExtended(self, communicator=None, device=dev))
        self._device_spec = device

    def __repr__(self):
        return f"<tt.distribute.OneDeviceStrategy device={self._extended.local_devices[0]}>"
