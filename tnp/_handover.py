"""NumPy's submodules that tnp has no implementation of, importable from tnp as from NumPy.

``import tnp.ma``, ``from tnp.lib import recfunctions``, ``tnp.polynomial.chebyshev``: each is a
*handover module* in front of NumPy's module. Its functions take tnp arrays (handed to NumPy as
NumPy arrays: views on the CPU, host copies from a GPU) and give back tnp arrays where NumPy
returns a plain ``numpy.ndarray`` (on the device of the arguments) and tnp scalars where it
returns a NumPy number. NumPy's own classes and their instances stay NumPy's: masked arrays,
record and character arrays, ``matrix``, ``Polynomial`` (they live on the CPU). Classes,
constants, exceptions and NumPy's messages for removed names come through unchanged.

These calls are reported to the operation listeners under the module's name
(``ma.masked_where``), so a gradient tape that meets one on a watched array raises LookupError
at ``gradient`` rather than dropping the gradient.

The list follows NumPy's public submodules (``pkgutil`` over ``numpy``, less the private ones and
the ones tnp implements: ``linalg``, ``fft``, ``random``, ``testing``, ``emath``, ``typing``,
``lib``, ``lib.stride_tricks``, ``lib.scimath``, ``version``).
"""
from __future__ import annotations

import functools
import importlib
import sys
import types
from importlib.machinery import ModuleSpec

import numpy as _np

# tnp name (after "tnp.") -> NumPy module. A handed-over package's submodules follow it
# (tnp.ma.core is NumPy's numpy.ma.core).
MODULES = {
    "ma": "numpy.ma",
    "polynomial": "numpy.polynomial",
    "char": "numpy.char",
    "strings": "numpy.strings",
    "rec": "numpy.rec",
    "exceptions": "numpy.exceptions",
    "dtypes": "numpy.dtypes",
    "ctypeslib": "numpy.ctypeslib",
    "matlib": "numpy.matlib",
    "matrixlib": "numpy.matrixlib",
    "core": "numpy.core",
    "f2py": "numpy.f2py",
    "distutils": "numpy.distutils",   # (NumPy has it on Python < 3.12 only)
    "lib.array_utils": "numpy.lib.array_utils",
    "lib.format": "numpy.lib.format",
    "lib.introspect": "numpy.lib.introspect",
    "lib.mixins": "numpy.lib.mixins",
    "lib.npyio": "numpy.lib.npyio",
    "lib.recfunctions": "numpy.lib.recfunctions",
    "lib.user_array": "numpy.lib.user_array",
    "testing.overrides": "numpy.testing.overrides",
    "testing.print_coercion_tables": "numpy.testing.print_coercion_tables",
    "linalg.lapack_lite": "numpy.linalg.lapack_lite",
    "random.bit_generator": "numpy.random.bit_generator",
    "random.mtrand": "numpy.random.mtrand",
}


def numpy_name(tnp_rest):
    """The NumPy module behind ``tnp.<tnp_rest>``, or None if tnp does not hand it over."""
    if tnp_rest in MODULES:
        return MODULES[tnp_rest]
    head, _, tail = tnp_rest.rpartition(".")
    while head:
        if head in MODULES:
            return MODULES[head] + tnp_rest[len(head):]
        head, _, _ = head.rpartition(".")
    return None


def _is_array_function(obj):
    # NumPy's dispatched functions (numpy.char.array...) are objects of their own type
    return type(obj).__name__ == "_ArrayFunctionDispatcher"


def _wrap_result(r, dev):
    from ._core.ndarray import _nda, _generic, wrap, wrap_scalarize

    t = type(r)
    if t is _nda:
        if dev.kind == "cpu":
            return wrap(r, dev)
        return wrap(dev.backend.xp.asarray(r), dev)
    if isinstance(r, _generic):
        if isinstance(r, (_np.str_, _np.bytes_, _np.void)) or dev.kind == "cpu":
            return wrap(r, dev)
        return wrap_scalarize(dev.backend.xp.asarray(r), dev)
    if t is tuple or t is list:
        return t(_wrap_result(x, dev) for x in r)
    if isinstance(r, tuple) and hasattr(r, "_fields"):
        return t(*(_wrap_result(x, dev) for x in r))
    return r  # NumPy's subclasses (masked, record, char arrays, matrix) and other objects


def handover_function(fn, name):
    """``fn`` (a NumPy function) taking tnp arrays and giving tnp arrays; see the module doc."""
    from ._core import dispatch as _d
    from ._core.devices import CPU
    from ._core.listeners import PASS

    def f(*args, **kwargs):
        if _d._HOOK is not None:
            r = _d._HOOK(name, args, kwargs, f)
            if r is not PASS:
                return r
        ctx = _d._Ctx(name)
        uargs = tuple(_d._unwrap(a, ctx) for a in args)
        ukw = {k: _d._unwrap(v, ctx) for k, v in kwargs.items()} if kwargs else {}
        dev = ctx.dev or CPU
        if dev.kind != "cpu":
            uargs = _d._host(uargs)
            ukw = _d._host(ukw)
        try:
            r = fn(*uargs, **ukw)
        except Exception as e:
            _d._prefix_error(e, name)
            raise
        return _wrap_result(r, dev)

    if isinstance(fn, types.FunctionType):
        functools.update_wrapper(f, fn)
    else:
        f.__name__ = f.__qualname__ = getattr(fn, "__name__", name.rsplit(".", 1)[-1])
        f.__doc__ = getattr(fn, "__doc__", None)
        f.__wrapped__ = fn
    f.__module__ = "tnp." + name.rsplit(".", 1)[0] if "." in name else "tnp"
    return f


class HandoverModule(types.ModuleType):
    """``tnp.<name>``: NumPy's module ``numpy_module`` taking and giving tnp arrays."""

    def __init__(self, name, numpy_module):
        super().__init__(name, numpy_module.__doc__)
        self._numpy_module = numpy_module
        if hasattr(numpy_module, "__path__"):
            self.__path__ = []   # a package: its submodules are found by HandoverFinder

    def __getattr__(self, attr):
        if attr.startswith("__") and attr != "__all__" and \
                attr not in getattr(self._numpy_module, "__all__", ()):
            # (a dunder NumPy exports by name, as numpy.matlib's __array_namespace_info__,
            # is handed over like any other name)
            raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r}")
        value = getattr(self._numpy_module, attr)   # NumPy's AttributeError and messages
        rest = self.__name__[len("tnp."):]
        if isinstance(value, types.ModuleType):
            sub = f"{rest}.{attr}"
            if value.__name__.startswith("numpy.") and numpy_name(sub) == value.__name__:
                value = importlib.import_module(f"tnp.{sub}")
            return value   # (modules outside the handover, such as the standard library's)
        if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, _np.ufunc)) or \
                _is_array_function(value):
            value = handover_function(value, f"{rest}.{attr}")
        setattr(self, attr, value)
        return value

    def __dir__(self):
        return sorted(set(dir(self._numpy_module)) | set(self.__dict__))

    def __repr__(self):
        return f"<module {self.__name__!r} (NumPy's {self._numpy_module.__name__}, taking tnp arrays)>"


class HandoverFinder:
    """Makes ``import tnp.<name>`` give the handover module of the NumPy module behind it (a
    meta path finder and its loader; importlib.abc is not imported for them, it costs more
    than the rest of this module)."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("tnp."):
            return None
        np_name = numpy_name(fullname[4:])
        if np_name is None:
            return None
        try:
            np_mod = importlib.import_module(np_name)
        except ImportError:
            return None
        spec = ModuleSpec(fullname, self, is_package=hasattr(np_mod, "__path__"))
        spec.loader_state = np_mod
        return spec

    def create_module(self, spec):
        return HandoverModule(spec.name, spec.loader_state)

    def exec_module(self, module):
        pass


_FINDER = HandoverFinder()


def install():
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)
