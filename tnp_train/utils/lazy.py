"""Importing on first use: ``LazyModule`` (a module imported on first attribute access; breaks
import cycles between packages of the same level, such as the trainers and the metrics) and
``lazy_attributes`` (a package's PEP 562 hooks, so that importing the package does not import
what its names come from)."""
from __future__ import annotations

import importlib
import sys

__all__ = ["LazyModule", "lazy_attributes", "forward_attributes"]

# package -> {public name: the module (of a higher room) that defines it}
_FORWARDED: dict = {}


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
        elif name in _FORWARDED.get(package, ()):
            value = getattr(importlib.import_module(_FORWARDED[package][name]), name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(module, name, value)
        return value

    def __dir__():
        return sorted(set(vars(module)) | set(names) | submodules |
                      set(_FORWARDED.get(package, ())))

    return __getattr__, __dir__


def forward_attributes(package, module_name, names):
    """Make each of ``names`` an attribute of ``package`` that is the object of that name in
    ``module_name``, imported on first access. The package module ``tnp_train`` declares these,
    as it declares the serialization providers: a lower room's namespace then shows a higher
    room's object under TF's later name (``tt.utils.text_dataset_from_directory``, TF 2.6+, is
    ``tt.preprocessing.text_dataset_from_directory``) without the lower room importing it."""
    _FORWARDED.setdefault(package, {}).update(dict.fromkeys(names, module_name))
