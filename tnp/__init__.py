"""tnp: a NumPy-compatible array package on NumPy (CPU) and CuPy (NVIDIA GPU).

``import tnp as np`` runs NumPy programs unchanged; ``tnp.ndarray`` wraps a backend array,
``tnp.device``/``x.to_device`` move data between devices, and every operation can be recorded
by a gradient tape (``tnp_train.GradientTape``). The namespace is imported section by section in
the order of NumPy's reference.
"""
from __future__ import annotations

import numpy as _np

__version__ = "0.1.0"

# ---- core: array, scalars, devices, dtypes, configuration -------------------------------
from ._core.ndarray import ndarray, Scalar, flatiter
from ._core.dispatch import ufunc, REGISTRY
from ._core.devices import (Device, device, default_device, get_default_device,
                            set_default_device, synchronize)
from ._core.dtypes import bfloat16, finfo, iinfo, SCALAR_TYPES as _SCALAR_TYPES
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
exceptions = _np.exceptions
dtypes = _np.dtypes

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

from . import testing  # noqa: E402,F401


# Submodules that hand over to NumPy on the CPU (masked arrays, polynomial classes, string and
# record arrays) and NumPy's tooling modules, imported on first use as NumPy does.
_NUMPY_SUBMODULES = ("ma", "polynomial", "char", "strings", "rec", "ctypeslib", "typing",
                     "f2py", "core", "test")


def __getattr__(name):
    if name in ("rec", "char"):  # their functions test for numpy.ndarray: given NumPy arrays
        from ._misc import _handover_module
        return _handover_module(name)
    if name in _NUMPY_SUBMODULES:
        return getattr(_np, name)
    raise AttributeError(f"module 'tnp' has no attribute {name!r}")
