"""Importing on first use: ``LazyModule`` (a module imported on first attribute access; breaks
import cycles between packages of the same level, such as the trainers and the metrics) and
``lazy_attributes`` (a package's PEP 562 hooks, so that importing the package does not import
what its names come from)."""
from __future__ import annotations

import importlib
import sys

__all__ = ["LazyModule", "lazy_attributes"]


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


def lazy_attributes(package, names, submodules=()):
    """``(__getattr__, __dir__)`` for the package ``package`` (PEP 562): ``names`` maps a public
    name to the submodule that defines it, ``submodules`` are submodules reached as attributes;
    each is imported on first access and then kept in the package, so later look-ups are plain
    attribute reads."""
    module = sys.modules[package]
    submodules = frozenset(submodules)

    def __getattr__(name):
        if name in names:
            value = getattr(importlib.import_module(f"{package}.{names[name]}"), name)
        elif name in submodules:
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(module, name, value)
        return value

    def __dir__():
        return sorted(set(vars(module)) | set(names) | submodules)

    return __getattr__, __dir__
