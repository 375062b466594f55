"""``LazyModule``: a module imported on first attribute access (breaks import cycles between
packages of the same level, such as the trainers and the metrics)."""
from __future__ import annotations

import importlib

__all__ = ["LazyModule"]


class LazyModule:
    __slots__ = ("_name", "_mod")

    def __init__(self, name):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_mod", None)

    def __getattr__(self, attr):
        mod = self._mod
        if mod is None:
            mod = importlib.import_module(self._name)
            object.__setattr__(self, "_mod", mod)
        return getattr(mod, attr)
