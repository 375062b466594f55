"""Devices: where an array's data lives.

``cpu`` is NumPy on the host. ``gpu:N`` is CuPy on CUDA device N. ``cpu:1`` (and ``cpu:N``) are
*fake* CPU devices, as array-api-strict has: the data is a NumPy array, but tnp treats the array
as living elsewhere, so the device rules (two devices in one operation is an error; NumPy arrays
and Python scalars move to the array's device) can be tested without a GPU.

Devices are interned: ``tnp.device("cpu") is tnp.device("cpu")``, so the hot path compares them
with ``is``.
"""
from __future__ import annotations

import contextvars
import threading

from .backend import backend_name_from_env, cupy_backend, cupy_unavailable_reason, numpy_backend

__all__ = ["Device", "device", "default_device", "get_default_device", "set_default_device",
           "synchronize", "CPU"]


class Device:
    """A place where arrays live (``tnp.device('cpu')``, ``tnp.device('gpu:0')``)."""

    __slots__ = ("kind", "index", "_backend", "__weakref__")

    def __init__(self, kind, index):
        self.kind = kind
        self.index = index
        self._backend = numpy_backend if kind == "cpu" else None

    @property
    def backend(self):
        b = self._backend
        if b is None:
            b = cupy_backend()
            if b is None:
                raise RuntimeError(f"device {self} is not available: {cupy_unavailable_reason()}")
            self._backend = b
        return b

    @property
    def is_gpu(self):
        return self.kind == "gpu"

    @property
    def name(self):
        return str(self)

    def __str__(self):
        return self.kind if (self.kind == "cpu" and self.index == 0) else f"{self.kind}:{self.index}"

    def __repr__(self):
        return f"device({str(self)!r})"

    def __reduce__(self):
        return (device, (str(self),))

    def __enter__(self):
        tok = _default.set(self)
        _tokens.stack = getattr(_tokens, "stack", [])
        _tokens.stack.append(tok)
        return self

    def __exit__(self, *exc):
        _default.reset(_tokens.stack.pop())
        return False

    def synchronize(self):
        """Wait for all work queued on this device (no-op on the CPU)."""
        if self.kind == "gpu":
            cp = self.backend.xp
            with cp.cuda.Device(self.index):
                cp.cuda.Device(self.index).synchronize()


_tokens = threading.local()
_registry: dict = {}
_lock = threading.Lock()


def _parse(spec):
    s = spec.strip().lower()
    if s in ("cuda", "gpu"):
        s = "gpu:0"
    if s.startswith("cuda:"):
        s = "gpu:" + s[5:]
    kind, _, idx = s.partition(":")
    if kind not in ("cpu", "gpu"):
        raise ValueError(f"unknown device {spec!r}: expected 'cpu', 'cpu:N' or 'gpu:N'")
    try:
        index = int(idx) if idx else 0
    except ValueError:
        raise ValueError(f"unknown device {spec!r}: the index must be an integer") from None
    if index < 0:
        raise ValueError(f"unknown device {spec!r}: the index must be >= 0")
    return kind, index


def device(spec="cpu"):
    """The device named ``spec``: ``'cpu'``, ``'cpu:1'`` (a fake second CPU), ``'gpu:0'``/``'cuda:0'``."""
    if isinstance(spec, Device):
        return spec
    if not isinstance(spec, str):
        # a CuPy Device object or similar
        ident = getattr(spec, "id", None)
        if ident is not None:
            return device(f"gpu:{int(ident)}")
        raise TypeError(f"device() expects a string like 'cpu' or 'gpu:0', got {type(spec).__name__}")
    key = _parse(spec)
    d = _registry.get(key)
    if d is None:
        with _lock:
            d = _registry.setdefault(key, Device(*key))
    return d


CPU = device("cpu")


def _initial_default():
    name = backend_name_from_env()
    if name == "numpy":
        return CPU
    if name == "cupy":
        if cupy_backend() is None:
            raise RuntimeError(f"TNP_BACKEND=cupy but CuPy cannot run: {cupy_unavailable_reason()}")
        return device("gpu:0")
    return device("gpu:0") if cupy_backend() is not None else CPU  # auto


_process_default = [None]
_default: contextvars.ContextVar = contextvars.ContextVar("tnp_default_device", default=None)


def get_default_device():
    """The device new arrays are created on (``with tnp.default_device(d)`` changes it)."""
    d = _default.get()
    if d is None:
        d = _process_default[0]
        if d is None:
            d = _process_default[0] = _initial_default()
    return d


def set_default_device(spec):
    """Set the process-wide default device (what ``TNP_BACKEND`` chose at import)."""
    _process_default[0] = device(spec)


def default_device(spec):
    """Context manager: arrays created inside live on ``spec`` (``with tnp.default_device('gpu:0'):``)."""
    return device(spec)


def synchronize(dev=None):
    """Wait until queued GPU work has finished (no-op on the CPU), like ``torch.cuda.synchronize``."""
    if dev is None:
        dev = get_default_device()
    device(dev).synchronize()
