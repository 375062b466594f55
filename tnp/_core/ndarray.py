"""``tnp.ndarray``: a thin wrapper over a backend array (``numpy.ndarray`` or ``cupy.ndarray``).

The wrapper holds the backend array (``_a``) and its device (``_dev``) and nothing else. Views
are backend views, so writes through a view show in its base. Results are wrapped by
:func:`wrap`; the operators are the ufuncs' own calls (``a + b`` is ``tnp.add(a, b)``).

Scalars are :class:`Scalar`, an immutable 0-d subclass that behaves as a NumPy 2 scalar.

This module holds the version counters, the wrapping helpers and the class; the operators are in
:mod:`.operators`, ``Scalar`` in :mod:`.scalar` and ``ndarray.flat``'s iterator in
:mod:`.flatiter`. Those import this module and register what it needs of them
(``register_scalar``...); ``Scalar`` and ``flatiter`` stay importable from here.
"""
from __future__ import annotations

import builtins
import copy as _copy_mod
import operator
import os as _os
import sys as _sys
import types as _types

import numpy as _np

from . import state as _state
from .listeners import PASS
from .devices import CPU, device as _device, get_default_device

__all__ = ["ndarray", "Scalar", "wrap", "unwrap", "to_backend", "bump_version", "version_of",
           "wrap_from", "wrap_args", "relate", "link_base", "set_view_base"]

_nda = _np.ndarray
_generic = _np.generic

# The optional C base (tnp/_core/_speedups.c) holds the two fields and does x[key], x.T and
# x.reshape(...) without a Python frame, and (see the end of this module) runs the operators,
# comparisons, conversions, len(), iteration and item assignment of host values in the type
# slots; without it (or with TNP_PURE_PYTHON=1) the same methods run in Python. Either way the
# behaviour is defined by the Python methods below.
_speedups = None
if not _os.environ.get("TNP_PURE_PYTHON"):
    try:
        from . import _speedups
    except ImportError:  # not compiled (no C compiler when installed): pure Python
        _speedups = None
    if _speedups is not None and not hasattr(_speedups, "wrap_from"):
        _speedups = None   # built from an older _speedups.c (not rebuilt since): pure Python

if _speedups is not None:
    _Base = _speedups.ArrayBase
    _new = _Base.__new__
else:
    class _Base:
        """The pure-Python base of :class:`ndarray`: its fields (``_basew``: see :func:`link_base`)."""
        __slots__ = ("_a", "_dev", "_basew")
    _new = object.__new__

SPEEDUPS = _speedups is not None

# What the modules built on this class register here when they are imported (tnp/_core/
# __init__.py imports them in order, each importing this module, never the reverse):
# tnp.Scalar and its constructor from a backend value (scalar.py), the reflected operator of a
# ufunc (operators.py), ndarray.flat's iterator (flatiter.py).
Scalar = None
_scalar_on = None
_REFLECTED: dict = {}
flatiter = None


def register_scalar(cls, scalar_on):
    global Scalar, _scalar_on
    Scalar, _scalar_on = cls, scalar_on


def register_operators(reflected):
    _REFLECTED.update(reflected)


def register_flatiter(cls):
    global flatiter
    flatiter = cls
_PYSCALARS = (int, float, complex, bool)
_HOOK = None  # the operation listeners' hook (see listeners.py), set by state.set_recording_hook
_state.register_hot_module(globals())

# Backend array types other than NumPy's, and the write counters of backend buffers: in
# versions.py (re-exported here, where the rest of tnp imports them from)
from .versions import (  # noqa: E402,F401  (the others import them from here)
    _gpu_types, _register_gpu_type, _root, _versions, bump_version, version_of,
)


# ---------------------------------------------------------------------------- wrapping
def _wrapper(cls, a, dev):
    """A new ``cls`` (tnp.ndarray, a subclass or Scalar) holding backend value ``a`` on ``dev``."""
    o = _new(cls)
    o._a = a
    o._dev = dev
    return o


def wrap(r, dev):
    """Wrap a backend result: arrays -> ndarray, NumPy scalars -> Scalar, tuples element-wise.
    (The C base replaces it with the same function in C: every fast path returns through it.)"""
    if type(r) is _nda:
        o = _new(ndarray)
        o._a = r
        o._dev = dev
        return o
    return _wrap_other(r, dev)


def _wrap_other(r, dev):
    if isinstance(r, _generic):
        # strings and records come back as NumPy returns them; ml_dtypes scalars (bfloat16,
        # whose dtype kind is also "V") are numbers and become Scalars
        if isinstance(r, (_np.str_, _np.bytes_, _np.void)):
            return r
        return _wrapper(Scalar, r, dev)
    t = type(r)
    # NumPy subclasses (memmap, matrix) keep the backend object
    if isinstance(r, _nda) or (_gpu_types and t in _gpu_types):
        return _wrapper(ndarray, r, dev)
    if t is tuple or t is list:
        return t(wrap(x, dev) for x in r)
    if isinstance(r, tuple) and hasattr(r, "_fields"):  # namedtuple results (linalg)
        return t(*(wrap(x, dev) for x in r))
    return r


# ---------------------------------------------------------------------------- identity and views
# NumPy answers some calls with one of their inputs (``asarray(x) is x``) and makes views whose
# ``.base`` is the array they were made of. A tnp wrapper is not its backend array, so both are
# decided here, where a result is wrapped: an operation whose backend result *is* an input's
# backend value answers with that input itself; a view keeps (in the ``_basew`` field) the tnp
# array its ``.base`` answers with. Both cost pointer comparisons where the result is made, no
# dictionary (the C base does the same for the fast paths, in C).
_BASEW = _Base.__dict__["_basew"]   # set through the slot: Scalar and Variable guard __setattr__


def _basew_of(w):
    return getattr(w, "_basew", None)   # (unset in the pure-Python build until linked)


def _owns_memory(w):
    return _basew_of(w) is None and getattr(w._a, "base", None) is None


def link_base(o, src):
    """If new tnp array ``o`` is a view made of tnp array ``src`` (its backend array is ``src``'s,
    or its backend base is ``src``'s array or that array's base), make ``o.base`` answer as NumPy
    sets a view's base: ``src``, collapsed through arrays that do not own their memory while they
    are of ``o``'s type. Returns whether it linked."""
    r, sa = o._a, src._a
    arrays = (_nda, *_gpu_types)
    if not (isinstance(r, arrays) and isinstance(sa, arrays)):
        return False
    b = r.base
    if not (r is sa or (b is not None and (b is sa or b is sa.base))):
        return False
    set_view_base(o, src)
    return True


def set_view_base(o, src):
    """Make ``o.base`` answer as NumPy's base of a view ``o`` made of ``src``: ``src``, collapsed
    through arrays that do not own their memory while they are of ``o``'s type."""
    w = src
    while not _owns_memory(w):
        nxt = w.base
        if not isinstance(nxt, ndarray) or type(nxt) is not type(o):
            break
        w = nxt
    _BASEW.__set__(o, w)


def wrap_from(r, dev, src):
    """Wrap backend result ``r`` of an operation on tnp array ``src`` (a method): ``src`` itself
    where ``r`` is its backend value, else a new array of ``src``'s kind (``wrap_like``) whose
    ``.base`` is linked to ``src`` when it is a view. (The C base replaces it with the same
    function in C.)"""
    if r is src._a:
        return src
    o = wrap(r, dev) if type(src) is ndarray else wrap_like(r, dev, src)
    if isinstance(o, ndarray) and getattr(r, "base", None) is not None:
        link_base(o, src)
    return o


def relate(res, args):
    """A function's wrapped result ``res`` as NumPy relates it to the call's arguments: the
    argument itself where ``res`` holds an argument's own backend value and is of its type; a
    view's ``.base`` linked to the argument it was made of. Tuples and lists element-wise."""
    if isinstance(res, ndarray):
        ra = res._a
        for a in args:
            if isinstance(a, ndarray) and a._a is ra:
                if type(a) is type(res):
                    return a
                link_base(res, a)      # another kind of array over the same memory: a view
                return res
        if getattr(ra, "base", None) is not None:
            for a in args:
                if isinstance(a, ndarray) and link_base(res, a):
                    break
        return res
    t = type(res)
    if t is tuple or t is list:
        return t([relate(e, args) for e in res])
    return res


def wrap_args(r, dev, args):
    """``relate(wrap(r, dev), args)``: the fast path of a function call (the C base replaces it
    with the same function in C)."""
    return relate(wrap(r, dev), args)


def wrap_scalarize(r, dev):
    """As :func:`wrap`, but a 0-d GPU result becomes a Scalar (NumPy returns scalars there)."""
    if _gpu_types and type(r) in _gpu_types and r.ndim == 0:
        return _wrapper(Scalar, r, dev)
    return wrap(r, dev)


def wrap_like(r, dev, template):
    """Wrap ``r`` as an instance of ``type(template)`` (ndarray subclasses), as NumPy's
    ``__array_wrap__``/``__array_finalize__`` do."""
    cls = type(template)
    if type(r) is tuple and cls is not ndarray and cls is not Scalar:   # divmod, frexp, modf
        return tuple(wrap_like(e, dev, template) for e in r)
    if cls is ndarray or cls is Scalar or not cls._subclass_results or \
            not (type(r) is _nda or (_gpu_types and type(r) in _gpu_types)):
        return wrap_scalarize(r, dev)
    o = _wrapper(cls, r, dev)
    o.__array_finalize__(template)
    return o


def to_backend(x, dev):
    """The backend array for ``x`` on ``dev``: tnp arrays are unwrapped (devices must match),
    NumPy arrays move to ``dev``, Python scalars and other objects pass through."""
    if isinstance(x, ndarray):
        if x._dev is not dev:
            raise ValueError(f"array on device {x._dev} used where device {dev} is required")
        return x._a
    if dev.kind == "gpu" and isinstance(x, (_nda, _generic, list, tuple)):
        return dev.backend.xp.asarray(x)
    return x


def unwrap(x):
    """Backend array of a tnp array; anything else unchanged."""
    return x._a if isinstance(x, ndarray) else x


def _prefix_error(e, name):
    """Name the operation in a NumPy error's traceback (a note), keeping the exception's type
    and its message: ``str(e)`` is NumPy's, so a program that prints an error (``except
    LinAlgError as e: print(e)``) prints what it prints under NumPy."""
    if hasattr(e, "add_note"):
        note = f"(in tnp.{name})"
        if note not in getattr(e, "__notes__", ()):
            e.add_note(note)


def device_mismatch(opname, d1, d2):
    """Raise the one error of an operation given tnp arrays on two devices (operators, ufuncs
    and functions alike)."""
    raise ValueError(f"{opname}: operands are on different devices ({d1} and {d2}); "
                     f"move one with .to_device() first")


def _index_key(key, dev):
    """Unwrap tnp arrays inside an index (tuples included); move NumPy index arrays to ``dev``."""
    t = type(key)
    if t is tuple:
        return tuple(_index_key(k, dev) for k in key)
    if isinstance(key, ndarray):
        if key._dev is not dev:
            raise IndexError(f"index array on device {key._dev} used to index an array on {dev}")
        return key._a
    if dev.kind == "gpu" and isinstance(key, (_nda, list)):
        return dev.backend.xp.asarray(key)
    return key


def _shape_arg(shape):
    if isinstance(shape, ndarray):
        return tuple(shape.tolist())
    if isinstance(shape, (list, tuple)):
        return tuple(operator.index(s) for s in shape)
    return shape


def _rebuild(data, dev_name, cls, state):
    dev = _device(dev_name)
    o = _wrapper(cls, data if dev.kind == "cpu" else dev.backend.xp.asarray(data), dev)
    if cls is not ndarray and cls is not Scalar:
        o.__array_finalize__(None)   # a new instance, as NumPy's unpickling makes one...
    if state:
        o.__dict__.update(state)     # ...then its attributes (which NumPy's would drop)
    return o


def _of_backend(name, settable=False):
    """A property: ``x.<name>`` is the backend array's (``numpy.ndarray.<name>``)."""
    doc = f"``numpy.ndarray.{name}`` of the backend array."
    if not settable:
        return property(operator.attrgetter("_a." + name), doc=doc)

    def set_(self, value):
        setattr(self._a, name, value)

    return property(operator.attrgetter("_a." + name), set_, doc=doc)


def _complex_part(name):
    """``x.real`` / ``x.imag``: a view of that part, as NumPy's (reported to the operation
    listeners as ``name``); assigning to it writes into ``x``."""
    def get(self):
        if _HOOK is not None:
            h = _HOOK(name, (self,), {}, get)
            if h is not PASS:
                return h
        return wrap_from(getattr(self._a, name), self._dev, self)

    def set_(self, value):
        setattr(self._a, name, to_backend(value, self._dev))
        bump_version(self._a)

    return property(get, set_, doc=f"The {name} part of the values (a view).")


_repr_classes: dict = {}
# dtype kinds whose __array_interface__ NumPy reads back as another dtype: structured (padding
# fields appear), void and ml_dtypes ('V': bfloat16 comes back as V2), StringDType ('T': none)
_NO_INTERFACE_KINDS = "VT"


def _class_name(cls):
    return "tnp.ndarray" if cls is ndarray else f"{cls.__module__}.{cls.__qualname__}"


def _named_numpy_class(name):
    """A bare ``numpy.ndarray`` subclass called ``name`` (NumPy prints its views as ``name(...)``)."""
    c = _repr_classes.get(name)
    if c is None:
        c = _repr_classes[name] = builtins.type(name, (_nda,), {})
    return c


def _as_host(a):
    if isinstance(a, (_nda, _generic)):
        return a
    return a.get()


def _holder_refcount():
    """``sys.getrefcount(self)`` inside a method called on an object that one variable holds
    (it differs between Python versions)."""
    class _Probe:
        def resize(self, *new_shape, refcheck=True):
            return _sys.getrefcount(self)

    p = _Probe()
    return p.resize(1)


_ONE_HOLDER = _holder_refcount()


class ndarray(_Base):
    """An N-dimensional array on a device; mirrors ``numpy.ndarray``.

    ``tnp.ndarray(shape, dtype=float, buffer=None, offset=0, strides=None, order=None)`` builds
    one as ``numpy.ndarray`` does (on the CPU). Subclass it as you would ``numpy.ndarray``
    (``__array_finalize__`` is honoured by views, indexing, ufuncs and methods).
    """

    __slots__ = ("__weakref__",)   # _a (backend array) and _dev (device) are the base's
    __array_priority__ = 100.0  # win over numpy.ndarray in mixed binary operations
    # Results computed from a subclass instance are instances of the subclass (as NumPy's
    # __array_wrap__ does). A subclass that is a container rather than a kind of array (a
    # training Variable) sets this to False and its results are plain tnp arrays.
    _subclass_results = True

    def __new__(cls, shape, dtype=float, buffer=None, offset=0, strides=None, order=None):
        a = _nda(shape, dtype, buffer=unwrap(buffer), offset=offset, strides=strides, order=order)
        o = _wrapper(cls, a, CPU)
        if cls is not ndarray:
            o.__array_finalize__(None)
        return o

    def __array_finalize__(self, obj):
        """Hook for subclasses, called with the source array when a view or result is made."""

    # ------------------------------------------------------------------ basic attributes
    # the backend array's own, read by a C attribute getter (cheaper than a Python method)
    shape = _of_backend("shape", settable=True)
    dtype, ndim, size, itemsize, nbytes, strides, flags, data, ctypes = map(_of_backend, (
        "dtype", "ndim", "size", "itemsize", "nbytes", "strides", "flags", "data", "ctypes"))

    @property
    def base(self):
        """The array this one is a view of, or None; mirrors ``numpy.ndarray.base``: the tnp
        array the view was made of (collapsed to the one that owns the memory, as NumPy does),
        the same object each time, kept alive by the view. For a view whose source array is not
        known (made of a NumPy array) a tnp array over that memory, made once."""
        w = _basew_of(self)
        if w is not None:
            return w
        b = getattr(self._a, "base", None)
        if b is None or not isinstance(b, (_nda, *_gpu_types)):
            return b
        w = wrap(b, self._dev)
        _BASEW.__set__(self, w)
        return w

    device = property(operator.attrgetter("_dev"), doc="The device the array lives on.")

    @property
    def _version(self):
        """Write count of this array's buffer (shared with its views); the tape reads it."""
        return version_of(self._a)

    def _T_py(self):
        if _HOOK is not None:
            h = _HOOK("transpose", (self,), {}, ndarray._T_py)
            if h is not PASS:
                return h
        return wrap_from(self._a.T, self._dev, self)

    @property
    def mT(self):
        if _HOOK is not None:
            h = _HOOK("matrix_transpose", (self,), {}, ndarray.mT.fget)
            if h is not PASS:
                return h
        if self._a.ndim < 2:
            raise ValueError(f"matrix transpose with ndim < 2 is undefined (array has shape {self.shape})")
        return wrap_from(self._a.swapaxes(-1, -2), self._dev, self)

    real = _complex_part("real")
    imag = _complex_part("imag")

    @property
    def flat(self):
        return flatiter(self)

    @flat.setter
    def flat(self, value):
        self._a.flat = to_backend(value, self._dev)
        bump_version(self._a)

    # ------------------------------------------------------------------ indexing
    def _getitem_py(self, key):
        if _HOOK is not None:
            h = _HOOK("getitem", (self, key), {}, ndarray._getitem_py)
            if h is not PASS:
                return h
        tk = type(key)
        if tk is int or tk is slice:
            r = self._a[key]
        elif tk is ndarray or tk is Scalar:
            if key._dev is not self._dev:
                raise IndexError(f"index array on device {key._dev} used to index an array on {self._dev}")
            r = self._a[key._a]
        else:
            r = self._a[_index_key(key, self._dev)]
        if type(r) is _nda and type(self) is ndarray:   # the common case, checked first
            return wrap_from(r, self._dev, self)
        if self._a.dtype.kind == "O" and not isinstance(r, (_nda, *_gpu_types)):
            return r  # an element of an object array: the Python object itself, as NumPy returns it
        return wrap_from(r, self._dev, self)

    def __setitem__(self, key, value):
        if _HOOK is not None:  # an in-place write: a tape refuses it in ``before``
            h = _HOOK("setitem", (self, key, value), {}, ndarray.__setitem__)
            if h is not PASS:
                return h
        dev = self._dev
        if type(value) is ndarray or type(value) is Scalar:
            if value._dev is not dev:
                raise ValueError(f"setitem: value on device {value._dev} assigned into an array on {dev}")
            v = value._a
        else:
            v = to_backend(value, dev) if not isinstance(value, _PYSCALARS) else value
        self._a[_index_key(key, dev)] = v
        bump_version(self._a)

    def __delitem__(self, key):
        raise ValueError("cannot delete array elements")   # NumPy's words

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")  # at iter(), as NumPy
        return (self[i] for i in range(len(self._a)))

    def __contains__(self, value):
        return bool((self == value).any())

    def __class_getitem__(cls, item):
        """``tnp.ndarray[shape, dtype]`` in annotations: a ``types.GenericAlias``, as
        ``numpy.ndarray[...]`` gives (one or two arguments)."""
        if isinstance(item, tuple) and len(item) > 2:
            raise TypeError(f"Too many arguments for {_class_name(cls)}")
        return _types.GenericAlias(cls, item)

    # ------------------------------------------------------------------ memory protocols
    @property
    def __array_interface__(self):
        """The NumPy array interface of the array's memory (arrays on ``cpu`` only), so code
        that reads it (``PIL.Image.fromarray``) works without a copy. Scalars, arrays on other
        devices and dtypes whose interface NumPy would read back as another dtype have none
        (AttributeError)."""
        a = self._a
        if isinstance(a, _nda) and self._dev is CPU:   # (cpu:N stands for memory elsewhere)
            if a.dtype.kind not in _NO_INTERFACE_KINDS:
                return a.__array_interface__
            raise AttributeError(
                f"__array_interface__: a tnp array of dtype {a.dtype} has none (NumPy would read "
                f"it back as another dtype); use numpy.asarray(x)")
        if isinstance(a, _generic):
            raise AttributeError("__array_interface__: tnp scalars have none; use numpy.asarray(s)")
        raise AttributeError(f"__array_interface__: the array is on {self._dev}, not in host "
                             f"memory (a GPU array has __cuda_array_interface__); use "
                             f"x.to_device('cpu')")

    # ------------------------------------------------------------------ conversions
    def __array__(self, dtype=None, copy=None):
        a = self._a
        if not isinstance(a, (_nda, _generic)):
            if copy is False:
                raise ValueError(f"cannot give a zero-copy NumPy view of an array on {self._dev}; "
                                 f"use .to_device('cpu') or allow a copy")
            a = a.get()
        elif isinstance(a, _generic):
            a = _np.asarray(a)
            if copy is False:  # a scalar always becomes a new array
                raise ValueError("cannot give a zero-copy NumPy view of a scalar")
        if dtype is not None and a.dtype != _np.dtype(dtype):
            if copy is False:
                raise ValueError(f"__array__: converting {a.dtype} to {_np.dtype(dtype)} needs a copy")
            return a.astype(dtype)
        if copy:
            return a.copy()
        return a

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        from .dispatch import numpy_ufunc_to_tnp, ufunc_overrides

        if ufunc_overrides(inputs, kwargs):  # as NumPy's: it cannot handle overrides itself
            return NotImplemented
        if method == "__call__" and len(inputs) == 2 and not kwargs and type(inputs[1]) is Scalar \
                and isinstance(inputs[0], _generic) and isinstance(inputs[1]._a, _generic):
            # ``np.float32(1) / s``: NumPy's scalar operator handed over to us; answer with its
            # scalar math, as for two NumPy scalars (through the reflected operator)
            m = _REFLECTED.get(ufunc)
            if m is not None:
                return getattr(inputs[1], m)(inputs[0])
        tu = numpy_ufunc_to_tnp(ufunc)
        if tu is None:
            return NotImplemented
        return getattr(tu, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        from .dispatch import call_numpy_function

        return call_numpy_function(func, types, args, kwargs)

    def __array_namespace__(self, *, api_version=None):
        if api_version is not None and api_version not in (
                "2021.12", "2022.12", "2023.12", "2024.12", "2025.12"):
            raise ValueError(f"tnp does not implement array API version {api_version!r}")
        import tnp

        return tnp

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        a = self._a
        if isinstance(a, _generic):
            a = _np.asarray(a)
        kw = {}
        if stream is not None:
            kw["stream"] = stream
        if max_version is not None:
            kw["max_version"] = max_version
        if dl_device is not None:
            kw["dl_device"] = dl_device
        if copy is not None:
            kw["copy"] = copy
        return a.__dlpack__(**kw)

    def __dlpack_device__(self):
        a = self._a
        if isinstance(a, _generic):
            a = _np.asarray(a)
        return a.__dlpack_device__()

    @property
    def __cuda_array_interface__(self):
        if self._dev.kind != "gpu":
            raise AttributeError(f"__cuda_array_interface__: array is on {self._dev}, not a GPU")
        return self._a.__cuda_array_interface__

    def to_device(self, device, /, *, stream=None):
        """A copy of this array on ``device`` (itself when it is there already)."""
        dev = _device(device)
        if dev is self._dev:
            return self
        a = self._a
        if dev.kind == "gpu":
            xp = dev.backend.xp
            with xp.cuda.Device(dev.index):
                b = xp.asarray(_as_host(a))
        else:
            b = _np.array(_as_host(a), copy=True)
        if isinstance(self, Scalar):  # a host scalar holds a NumPy scalar, not a 0-d array
            return _scalar_on(b[()] if dev.kind == "cpu" else b, dev)
        return wrap_like(b, dev, self)

    def numpy(self):
        """A NumPy array with this array's values (a view on the CPU, a copy from a GPU)."""
        return self.__array__()

    def get(self):
        """As CuPy's ``get()``: the values as a NumPy array."""
        return _np.array(_as_host(self._a)) if not isinstance(self._a, _generic) else self._a

    def __bool__(self):
        return bool(self._a)

    def __int__(self):
        return int(self._a)

    def __float__(self):
        return float(self._a)

    def __complex__(self):
        return complex(self._a)

    def __index__(self):
        return operator.index(self._a)

    def __round__(self, ndigits=None):
        if self._a.ndim == 0:
            return round(_as_host(self._a)[()], ndigits) if not isinstance(self._a, _generic) else round(self._a, ndigits)
        return self.round(ndigits or 0)

    def __format__(self, spec):
        return format(_as_host(self._a), spec)

    def __repr__(self):
        a = _as_host(self._a)
        cls = type(self)
        if cls is not ndarray and type(a) is _nda:
            # as NumPy prints a subclass: its name, and the lines wrapped for that prefix
            a = a.view(_named_numpy_class(cls.__name__))
        return repr(a)

    def __str__(self):
        return str(_as_host(self._a))

    def __reduce__(self):
        state = getattr(self, "__dict__", None) or None
        return (_rebuild, (_as_host(self._a), str(self._dev), type(self), state))

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        a = self._a
        if a.dtype.kind == "O":
            b = _copy_mod.deepcopy(a, memo)
        else:
            b = a.copy()
        o = wrap_like(b, self._dev, self)
        d = getattr(self, "__dict__", None)
        if d:
            o.__dict__.update(_copy_mod.deepcopy(d, memo))
        return o

    __hash__ = None

    # ------------------------------------------------------------------ methods with their own behaviour
    def item(self, *args):
        return _as_host(self._a).item(*args) if not isinstance(self._a, _generic) else self._a.item(*args)

    def tolist(self):
        return _as_host(self._a).tolist()

    def tobytes(self, order="C"):
        return _as_host(self._a).tobytes(order)

    def tofile(self, fid, sep="", format="%s"):
        _as_host(self._a).tofile(fid, sep, format)

    def dump(self, file):
        raise NotImplementedError("ndarray.dump writes a pickle; tnp never writes pickles. Use tnp.save")

    def fill(self, value):
        if _HOOK is not None:
            h = _HOOK("setitem", (self, Ellipsis, value), {}, ndarray.fill, (self, value), {})
            if h is not PASS:
                return h
        self._a.fill(unwrap(value))
        bump_version(self._a)

    def view(self, dtype=None, type=None):
        if _HOOK is not None:
            h = _HOOK("view", (self,), {"dtype": dtype}, ndarray.view, (self, dtype, type), {})
            if h is not PASS:
                return h
        if type is None and isinstance(dtype, builtins.type) and issubclass(dtype, (ndarray, _nda)):
            dtype, type = None, dtype
        if type is not None and issubclass(type, _nda):
            # NumPy's own classes (``x.view(np.recarray)``, np.matrix): a NumPy object on the
            # host, as ``np.recarray(...)`` makes (a view of the same memory on the CPU)
            h = _as_host(self._a)
            h = _np.asarray(h) if isinstance(h, _generic) else h
            return h.view(type) if dtype is None else h.view(dtype, type)
        r = self._a.view() if dtype is None else self._a.view(dtype)
        cls = builtins.type(self) if type is None else type
        if cls is Scalar or not cls._subclass_results:
            cls = ndarray
        o = _wrapper(cls, r, self._dev)
        if r.base is not None:
            link_base(o, self)
        if cls is not ndarray:
            o.__array_finalize__(self)
        return o

    def _reshape_py(self, *shape, order="C", copy=None):
        """A view (or copy) with a new shape; mirrors ``numpy.ndarray.reshape``."""
        if _HOOK is not None:
            h = _HOOK("reshape", (self, shape[0] if len(shape) == 1 else shape),
                      {} if order == "C" else {"order": order}, ndarray._reshape_py,
                      (self, *shape), {"order": order, "copy": copy})
            if h is not PASS:
                return h
        a = self._a
        if order == "C" and copy is None:
            try:
                r = a.reshape(*shape)
            except TypeError:
                r = a.reshape(_shape_arg(shape[0] if len(shape) == 1 else shape))
        else:
            s = _shape_arg(shape[0] if len(shape) == 1 else shape)
            r = a.reshape(s, order=order) if copy is None else a.reshape(s, order=order, copy=copy)
        return wrap_from(r, self._dev, self)

    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        if _HOOK is not None:
            h = _HOOK("transpose", (self, tuple(axes) if axes else None), {}, ndarray.transpose,
                      (self, axes) if axes else (self,), {})
            if h is not PASS:
                return h
        r = self._a.transpose(axes) if axes else self._a.transpose()
        return wrap_from(r, self._dev, self)

    def astype(self, dtype, *args, **kwargs):
        """A copy cast to ``dtype``; mirrors ``numpy.ndarray.astype(dtype, order='K',
        casting='unsafe', subok=True, copy=True)`` and takes the array API's ``device=``."""
        if _HOOK is not None:
            h = _HOOK("astype", (self, dtype), {}, ndarray.astype, (self, dtype, *args), kwargs)
            if h is not PASS:
                return h
        if type(dtype) is str and dtype[:1] in "bfiu" and "ml_dtypes" not in _sys.modules:
            from .dtypes import dtype_from_name
            dtype = dtype_from_name(dtype)      # "bfloat16" loads ml_dtypes on first use
        if not args and not kwargs and type(self) is ndarray:
            return wrap(self._a.astype(dtype), self._dev)
        return self._astype(dtype, *args, **kwargs)

    def _astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True, device=None):
        if device is not None:
            return self.to_device(device).astype(dtype, order=order, casting=casting, copy=copy)
        a = self._a
        r = a.astype(dtype, order=order, casting=casting, copy=copy)
        if r is a:
            return self
        return wrap_like(r, self._dev, self) if subok else wrap_scalarize(r, self._dev)

    def sort(self, axis=-1, kind=None, order=None, *, stable=None):
        kw = {"kind": kind, "order": order}
        if stable is not None:
            kw["stable"] = stable
        if _HOOK is not None:  # an in-place write (a tape records the permutation)
            h = _HOOK("inplace_sort", (self,), {"axis": axis}, ndarray.sort, (self, axis), kw)
            if h is not PASS:
                return h
        self._a.sort(axis, **kw)
        bump_version(self._a)

    def partition(self, kth, axis=-1, kind="introselect", order=None):
        if _HOOK is not None:
            h = _HOOK("inplace_partition", (self, kth), {"axis": axis}, ndarray.partition,
                      (self, kth, axis, kind, order), {})
            if h is not PASS:
                return h
        self._a.partition(unwrap(kth), axis, kind, order)
        bump_version(self._a)

    def resize(self, *new_shape, refcheck=True):
        if len(new_shape) == 1 and isinstance(new_shape[0], (tuple, list)):
            new_shape = tuple(new_shape[0])
        a = self._a
        if type(a) is _nda and a.base is None and a.flags.owndata:
            # NumPy refuses to resize an array with a weak reference, and the version counter
            # holds one after any write: resize a fresh copy instead and keep the count going.
            # References: this wrapper, ``a`` and getrefcount's argument; more are views/users.
            # The wrapper is what users hold (NumPy's own check counts the array's references):
            # a NumPy array made from its __array_interface__ holds the wrapper, not ``a``, and
            # would be left pointing at freed memory.
            if refcheck and (_sys.getrefcount(a) > 3 or _sys.getrefcount(self) > _ONE_HOLDER):
                raise ValueError("cannot resize an array that references or is referenced\n"
                                 "by another object in this way.\nUse the np.resize function "
                                 "to get a new resized copy or\n set refcheck=False to disable this check")
            b = a.copy(order="K")
            b.resize(new_shape, refcheck=False)
            n = version_of(a)
            self._a = b
            bump_version(b)
            _versions[id(b)][0] = n + 1
            return
        a.resize(new_shape, refcheck=refcheck)
        bump_version(a)

    def put(self, indices, values, mode="raise"):
        if _HOOK is not None:
            h = _HOOK("inplace_put", (self, indices, values), {"mode": mode}, ndarray.put,
                      (self, indices, values, mode), {})
            if h is not PASS:
                return h
        self._a.put(to_backend(indices, self._dev), to_backend(values, self._dev), mode)
        bump_version(self._a)

    @property
    def itemset(self):   # raised at lookup, so hasattr(x, "itemset") is False, as in NumPy 2
        raise AttributeError("`itemset` was removed from the ndarray class in NumPy 2.0. "
                             "Use `arr[index] = value` instead.")

    def setflags(self, write=None, align=None, uic=None):
        self._a.setflags(write=write, align=align, uic=uic)

    def setfield(self, val, dtype, offset=0):
        self._a.setfield(unwrap(val), dtype, offset)
        bump_version(self._a)

    def getfield(self, dtype, offset=0):
        return wrap_from(self._a.getfield(dtype, offset), self._dev, self)

    def byteswap(self, inplace=False):
        r = self._a.byteswap(inplace)
        if inplace:
            bump_version(self._a)
            return self
        return wrap_like(r, self._dev, self)

    def copy(self, order="C"):
        if _HOOK is not None:
            h = _HOOK("copy", (self,), {}, ndarray.copy, (self, order), {})
            if h is not PASS:
                return h
        r = self._a.copy(order)
        if type(self) is ndarray:
            return wrap(r, self._dev)
        o = wrap_like(r, self._dev, self)
        if type(self) is not Scalar:
            d = getattr(self, "__dict__", None)
            if d:
                o.__dict__.update(d)
        return o

    def __setstate__(self, state):
        raise TypeError("tnp arrays are unpickled through their __reduce__")


def _buffer_check(x):
    """Raise where tnp array ``x`` exports no buffer (``__buffer__``, and the C base for what it
    does not decide itself). ``numpy.asarray`` reads a buffer before it asks ``__array__``, so
    what NumPy would read back differently gives none: scalars (TypeError: NumPy would make a
    read-only 0-d array, where ``numpy.asarray`` of a NumPy scalar is writable) and structured,
    void and ml_dtypes arrays (BufferError: field titles and padding lost, bfloat16 unknown);
    ``__array__`` is exact. Arrays on other devices have no host memory (TypeError naming the
    device): GPUs, and the fake ``cpu:N`` devices, which stand for memory elsewhere."""
    a = x._a
    if x._dev is not CPU:
        raise TypeError(f"a tnp array on {x._dev} has no buffer: its memory is not in the host's; "
                        f"copy it with x.to_device('cpu') first")
    if isinstance(a, _nda):
        if a.dtype.kind == "V":
            raise BufferError(f"a tnp array of dtype {a.dtype} exports no buffer (NumPy would read "
                              f"it back as another dtype); use memoryview(numpy.asarray(x))")
        return None
    if isinstance(a, _generic):   # (the C base gives scalars no buffer slot: a TypeError too)
        raise TypeError("a tnp scalar exports no buffer; use memoryview(numpy.asarray(s))")
    raise TypeError(f"a tnp array on {x._dev} has no buffer: its memory is not in the host's; "
                    f"copy it with x.to_device('cpu') first")


if _speedups is None and _sys.version_info >= (3, 12):
    def _buffer(self, flags, /):
        _buffer_check(self)
        return memoryview(self._a)   # the caller asks this view for ``flags`` (writable...)

    ndarray.__buffer__ = _buffer
# Before Python 3.12 a class written in Python cannot export a buffer: without the C base
# (TNP_PURE_PYTHON=1, or no C compiler at install) memoryview(x) raises TypeError there.


# x[key], x.T and x.reshape(...): the C base's fast paths call back the Python methods for
# anything but the plain case; without the C base the Python methods are the methods
if _speedups is None:
    ndarray.__getitem__ = ndarray._getitem_py
    ndarray.T = property(ndarray._T_py, doc="The transposed array (a view).")
    ndarray.reshape = ndarray._reshape_py
else:
    _speedups.install(ndarray, _nda, ndarray._getitem_py, ndarray._T_py, ndarray._reshape_py,
                      _buffer_check, _generic, CPU)
    _state.add_hook_listener(_speedups.set_hook)


def _layout_ok():
    """Whether the C base reads NumPy's array struct (ndim, shape, base, dtype) as NumPy does."""
    samples = [_np.arange(6.0), _np.arange(6).reshape(2, 3)[1], _np.array(3.5),
               _np.zeros(2, dtype=object), _np.arange(4, dtype=_np.complex64)[::2]]
    for a in samples:
        nd, d0, base, dt, kind = _speedups.array_head(a)
        if (nd, d0, kind) != (a.ndim, a.shape[0] if a.ndim else None, a.dtype.kind) or \
                base is not a.base or dt is not a.dtype:
            return False
    return True


# NumPy's numeric scalar types: the C base makes these into Scalars itself (the others, strings,
# records, ml_dtypes, go through wrap_scalarize)
# (the most common first: the C base scans them in order; numpy.bool_ must be the first)
_NUMERIC_SCALAR_TYPES = tuple(dict.fromkeys(_np.dtype(c).type for c in "?dlqfiDFbBhHIgLQeGmM"))

def install_speedups():
    """Put the C base's slots and functions in place, once tnp.Scalar and the operators exist
    (tnp/_core/__init__.py calls it after importing scalar and operators).

    Python-level speed (issue 17, item 5): integer indexing and iteration give Scalars made in
    C, and the operators, comparisons, conversions, len() and item assignment of ndarray and
    Scalar run in C for host operands; the Python methods above stay the definition (the C slots
    call them for everything else), and are what the pure-Python build runs. The slots are
    patched after the operators are set on the classes: setting a dunder resets its slot."""
    global wrap, bump_version, wrap_from, wrap_args
    global _wrap_in_python, _bump_version_in_python, _wrap_from_in_python, _wrap_args_in_python
    if _speedups is None or not hasattr(_speedups, "patch_slots"):
        return
    _speedups.install_scalars(Scalar, _NUMERIC_SCALAR_TYPES, wrap_scalarize, _versions, bump_version,
                              _layout_ok(), _wrap_other)
    # the same functions in C (every fast path returns through wrap; every write bumps a
    # version); the Python ones are kept for the test that compares them
    _wrap_in_python, _bump_version_in_python = wrap, bump_version
    wrap, bump_version = _speedups.wrap, _speedups.bump_version
    # identity and views' .base (see link_base): the C versions hand what they do not decide
    # (subclasses, GPU arrays, tuples) to the Python ones, kept for the test that compares them
    _speedups.install_identity(wrap_from, wrap_args)
    _wrap_from_in_python, _wrap_args_in_python = wrap_from, wrap_args
    wrap_from, wrap_args = _speedups.wrap_from, _speedups.wrap_args
    _speedups.patch_slots(ndarray, "array")
    _speedups.patch_slots(Scalar, "scalar")
    # A scalar has no __array_interface__; the C base says so without a Python frame, which
    # numpy.array([s1, s2, ...]) meets once per element on its way to __array__...
    Scalar.__array_interface__ = _Base.__dict__["__array_interface__"]
    _speedups.drop_buffer(Scalar)   # ...nor a buffer, which NumPy would ask for first
