"""tnp: a NumPy-compatible array package on NumPy (CPU) and CuPy (NVIDIA GPU).

``import tnp as np`` runs NumPy programs unchanged; ``tnp.ndarray`` wraps a backend array,
``tnp.device``/``x.to_device`` move data between devices, and every operation can be recorded
by a gradient tape (``tnp_train.GradientTape``). The namespace is imported section by section in
the order of NumPy's reference.
"""
from __future__ import annotations

import sys as _sys

import numpy as _np

from .version import version as __version__

# ---- core: array, scalars, devices, dtypes, configuration -------------------------------
from ._core.ndarray import ndarray, Scalar, flatiter
from ._core.dispatch import ufunc, REGISTRY
from ._core.devices import (Device, device, default_device, get_default_device,
                            set_default_device, synchronize)
from ._core.dtypes import finfo, iinfo, SCALAR_TYPES as _SCALAR_TYPES
from ._core.array_api import __array_namespace_info__, __array_api_version__
from . import config

for _n in _SCALAR_TYPES:
    if hasattr(_np, _n):
        globals()[_n] = getattr(_np, _n)
int_ = _np.int_
uint = _np.uint
float_ = _np.float64
complex_ = _np.complex128
ScalarType = _np.ScalarType
sctypeDict = _np.sctypeDict
typecodes = _np.typecodes
True_ = _np.True_
False_ = _np.False_
little_endian = _np.little_endian
matrix = _np.matrix          # NumPy's matrix class (CPU only; see docs/differences.md)
bmat = _np.bmat
asmatrix = _np.asmatrix
memmap = _np.memmap
recarray = _np.recarray
record = _np.record

# ---- constants ----------------------------------------------------------------------------
e = _np.e
pi = _np.pi
inf = _np.inf
nan = _np.nan
euler_gamma = _np.euler_gamma
newaxis = None

# ---- sections, in NumPy's reference order -----------------------------------------------------
from ._creation import *  # noqa: F401,F403,E402
from ._manipulation import *  # noqa: F401,F403,E402
from ._math import *  # noqa: F401,F403,E402
from ._logic import *  # noqa: F401,F403,E402
from ._indexing import *  # noqa: F401,F403,E402
from ._sorting import *  # noqa: F401,F403,E402
from ._statistics import *  # noqa: F401,F403,E402
from ._sets import *  # noqa: F401,F403,E402
from ._io import *  # noqa: F401,F403,E402
from ._misc import *  # noqa: F401,F403,E402
from . import linalg, fft, random, lib, emath  # noqa: E402
from .linalg import _products as _lp  # noqa: E402

globals().update(_lp)
del _lp

from ._core import methods as _methods  # noqa: E402

_methods.install()
del _methods

from . import _handover  # noqa: E402

_handover.install()

# ---- compiled code: tnp.jit (tnp.vectorize, NumPy's name, is with the functional routines) --
from ._jit import jit, vmap  # noqa: E402

if "numba" in _sys.modules:
    # Numba's entry point (pyproject.toml) loads tnp._numba when Numba starts compiling; an
    # uninstalled checkout has no entry point, so register now if Numba is already here
    try:
        from . import _numba  # noqa: F401
    except Exception:  # a Numba tnp cannot extend: jitted functions just do not take tnp arrays
        pass

# Imported on first use, as NumPy imports its own heavy parts: ml_dtypes (bfloat16) alone takes
# most of a second, numpy.testing a tenth.
_LAZY_SUBMODULES = ("testing", "typing", "version") + tuple(
    n for n in _handover.MODULES if "." not in n and n != "distutils")  # (NumPy's: import only)


def __getattr__(name):
    if name == "bfloat16":
        from ._core.dtypes import __getattr__ as _dtypes_getattr

        v = globals()["bfloat16"] = _dtypes_getattr("bfloat16")
        return v
    if name == "test":
        return _np.test   # NumPy's own test runner, as before
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"tnp.{name}")
    try:
        getattr(_np, name)
    except AttributeError as e:
        # NumPy's words for what NumPy 2 removed (``np.Inf``: "...use `np.inf` instead.")
        msg = str(e).replace("module 'numpy'", "module 'tnp'")
        raise AttributeError(msg) from None
    raise AttributeError(f"module 'tnp' has no attribute {name!r}")


def __dir__():   # the names dir(numpy) lists
    return sorted(set(globals()) | {"bfloat16", *_LAZY_SUBMODULES} - {"matlib", "matrixlib", "version"})
