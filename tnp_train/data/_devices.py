"""``copy_to_device`` and ``prefetch_to_device`` (``tf.data.experimental`` of TF 2.4): the
elements moved to another tnp device (``"/gpu:0"``, ``"/cpu:0"``, ``"gpu:1"``, a
``tnp.Device``), the latter produced ahead on a background thread. String components stay
on the CPU (a GPU holds no strings, as in TF)."""
from __future__ import annotations

import re

import tnp
from tnp import ndarray as _ndarray

from ..sparse import SparseTensor as _SparseTensor
from ..utils import tree as _tree
from ._rows import AUTOTUNE, _int_arg
from ._threads import PrefetchIterator
from ._transformations import _Unary

__all__ = ["copy_to_device", "prefetch_to_device", "device_of_name"]

_TF_DEVICE = re.compile(r"^(?:.*/)?(?:device:)?(cpu|gpu)(?::(\d+))?$", re.IGNORECASE)


def device_of_name(spec, op):
    """The ``tnp.Device`` a TF device name (``"/gpu:0"``, ``"/job:x/.../device:CPU:0"``) or a
    tnp one (``"cpu"``, ``"gpu:1"``) names; ValueError for one this process lacks."""
    if isinstance(spec, tnp.Device):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"{op}: a device must be a string such as '/gpu:0', got "
                        f"{type(spec).__name__}")
    m = _TF_DEVICE.match(spec.strip())
    if m is None:
        raise ValueError(f"{op}: cannot parse device {spec!r} (expected e.g. '/cpu:0' or "
                         "'/gpu:0')")
    dev = tnp.device(f"{m.group(1).lower()}:{m.group(2) or '0'}")
    devices = tnp.__array_namespace_info__().devices()
    if dev.is_gpu and dev not in devices:
        raise ValueError(f"{op}: device {spec!r} is not available (this process sees "
                         f"{[str(d) for d in devices]})")
    return dev


def _move(element, device):
    def leaf(x):
        if isinstance(x, _ndarray) and x.dtype.kind not in "SUO" and x.device != device:
            return x.to_device(device)
        if isinstance(x, _SparseTensor) and x.values.device != device:
            return _SparseTensor(x.indices, x.values.to_device(device), x.dense_shape)
        return x
    if isinstance(element, _ndarray):
        return leaf(element)
    return _tree.map_structure(leaf, element)


class CopyToDeviceDataset(_Unary):
    """The parent's elements with every numeric component on ``device``; with a
    ``buffer_size``, produced that many elements ahead on a background thread."""

    def __init__(self, parent, device, buffer_size=0):
        super().__init__(parent)
        self._device = device
        self._buffer = buffer_size

    def _moved(self):
        dev = self._device
        return (_move(e, dev) for e in self._parent._iter_elements())

    def _iter_elements(self):
        if self._buffer:
            return PrefetchIterator(self._moved, self._buffer, name="tt.data.prefetch_to_device")
        return self._moved()


def copy_to_device(target_device, source_device="/cpu:0"):
    """``tf.data.experimental.copy_to_device``: a transformation putting every element's
    arrays on ``target_device``."""
    device = device_of_name(target_device, "copy_to_device")
    device_of_name(source_device, "copy_to_device")
    return lambda ds: CopyToDeviceDataset(ds, device)


def prefetch_to_device(device, buffer_size=None):
    """``tf.data.experimental.prefetch_to_device``: the elements put on ``device`` and
    produced up to ``buffer_size`` (AUTOTUNE/None: 2) ahead on a background thread; the last
    transformation of a pipeline, as in TF."""
    dev = device_of_name(device, "prefetch_to_device")
    if buffer_size is None:
        buffer_size = AUTOTUNE
    size = _int_arg(buffer_size, "buffer_size", "prefetch_to_device", minimum=1,
                    allow_minus_one=True)
    if size == AUTOTUNE:
        size = 2
    return lambda ds: CopyToDeviceDataset(ds, dev, size)
