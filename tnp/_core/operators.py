"""The operators of ``tnp.ndarray`` and ``tnp.Scalar`` (``+``, ``@``, ``==``, ``-x``, ``divmod``...).

Each comes from a factory: a fast path for the common shapes of call (another tnp array on the
same device, or a Python scalar), NumPy's scalar math between two host scalars, and
:func:`_binary_slow` for the rest. They are installed on the classes when this module is imported
(by :mod:`.ndarray`, once the classes exist); a ``Scalar``'s in-place operators return a new value.
"""
from __future__ import annotations

import operator

import numpy as _np

from . import state as _state
from .ndarray import (
    _PYSCALARS, _device_mismatch, _generic, _gpu_types, _nda, _new, _prefix_error,
    _subclass_template, bump_version, ndarray, to_backend, wrap_like, wrap_scalarize,
)
from .scalar import Scalar
from .listeners import PASS

_HOOK = None  # set by state.set_recording_hook
_state.register_hot_module(globals())


# ---------------------------------------------------------------------------- operators
def _overrides_ufunc(x):
    """Whether ``x`` is an instance of a tnp subclass with its own ``__array_ufunc__``."""
    t = type(x)
    return t is not ndarray and t is not Scalar and isinstance(x, ndarray) and \
        t.__array_ufunc__ is not ndarray.__array_ufunc__


def _ufunc_named(name):
    from .dispatch import _UFUNCS

    return _UFUNCS[name]


def _binary_slow(name, fn, a, b, reflected):
    """Everything the fast path does not take: NumPy arrays, lists, subclasses, other types."""
    if not isinstance(b, ndarray) and hasattr(b, "__array_ufunc__") and b.__array_ufunc__ is None:
        return NotImplemented
    if _overrides_ufunc(a) or _overrides_ufunc(b):
        # as NumPy's operators: the ufunc is called, and it defers to the subclass's override
        if isinstance(b, ndarray) and type(b).__array_ufunc__ is None:
            return NotImplemented
        u = _ufunc_named(name)
        return u(b, a) if reflected else u(a, b)
    if not isinstance(b, (ndarray, _nda, _generic, list, tuple, *_PYSCALARS)) and b is not None:
        if not hasattr(b, "__array__") and not hasattr(b, "__array_interface__"):
            # let the other operand try (e.g. a Python object defining __radd__), as NumPy does
            # for objects it cannot turn into arrays... but NumPy computes with object dtype;
            # follow NumPy: try, and give NotImplemented only on failure.
            try:
                _np.asarray(b)
            except Exception:
                return NotImplemented
    dev = a._dev
    if isinstance(b, ndarray):
        if b._dev is not dev:
            _device_mismatch(name, a, b)
        bb = b._a
    elif hasattr(b, "__array__") and not isinstance(b, (_nda, _generic)) and not _gpu_types:
        bb = _np.asarray(b)
    else:
        bb = to_backend(b, dev)
    try:
        r = fn(bb, a._a) if reflected else fn(a._a, bb)
    except Exception as e:
        _prefix_error(e, name)
        raise
    tmpl = _subclass_template(a, b)
    out = wrap_like(r, dev, tmpl) if tmpl is not None else wrap_scalarize(r, dev)
    return out


def _make_binary(name, fn, pyfn=None, inplace_fn=None):
    # ``pyfn`` (the ``operator`` function): between two host scalars, NumPy's scalar math, as
    # NumPy computes ``s1 / s2``; it differs from the ufunc in its warnings and errors
    # ("overflow encountered in scalar multiply"; int overflow warns) and in Python's own
    # rules (``1j + np.float64(1)`` is a Python complex)
    def op(self, other):
        if _HOOK is not None:
            h = _HOOK(name, (self, other), {}, op)
            if h is not PASS:
                return h
        ts = type(self)
        t = type(other)
        if ts is ndarray or ts is Scalar:
            try:
                if t is ndarray or t is Scalar:
                    if other._dev is not self._dev:
                        _device_mismatch(name, self, other)
                    if t is Scalar and ts is Scalar and pyfn is not None and \
                            isinstance(self._a, _generic) and isinstance(other._a, _generic):
                        r = pyfn(self._a, other._a)
                    else:
                        r = fn(self._a, other._a)
                elif t is float or t is int or t is bool or t is complex:
                    if ts is Scalar and pyfn is not None and isinstance(self._a, _generic):
                        r = pyfn(self._a, other)
                    else:
                        r = fn(self._a, other)
                elif ts is Scalar and pyfn is not None and isinstance(other, _generic) and \
                        isinstance(self._a, _generic):
                    r = pyfn(self._a, other)
                else:
                    return _binary_slow(name, fn, self, other, False)
            except Exception as e:
                _prefix_error(e, name)
                raise
            if type(r) is _nda:
                o = _new(ndarray)
                o._a = r
                o._dev = self._dev
            else:
                o = wrap_scalarize(r, self._dev)
            return o
        return _binary_slow(name, fn, self, other, False)

    def rop(self, other):
        if _HOOK is not None:
            h = _HOOK(name, (other, self), {}, rop, (self, other), {})
            if h is not PASS:
                return h
        t = type(other)
        if (t is float or t is int or t is bool or t is complex or isinstance(other, _generic)) \
                and type(self) is Scalar and pyfn is not None and isinstance(self._a, _generic):
            try:
                r = pyfn(other, self._a)
            except Exception as e:
                _prefix_error(e, name)
                raise
            return wrap_scalarize(r, self._dev)
        if (t is float or t is int or t is bool or t is complex) and type(self) in (ndarray, Scalar):
            r = fn(other, self._a)
            return wrap_scalarize(r, self._dev)
        return _binary_slow(name, fn, self, other, True)

    def iop(self, other):
        if _HOOK is not None:  # an in-place write: a tape refuses it in ``before``
            h = _HOOK("inplace_" + name, (self, other), {}, iop)
            if h is not PASS:
                return h
        t = type(other)
        if type(self) is not ndarray and _overrides_ufunc(self):
            return _ufunc_named(name)(self, other, out=self)
        if t is ndarray or t is Scalar:
            if other._dev is not self._dev:
                _device_mismatch(name, self, other)
            o = other._a
        elif t is float or t is int or t is bool or t is complex:
            o = other
        else:
            if _overrides_ufunc(other):
                return _ufunc_named(name)(self, other, out=self)
            o = to_backend(_np.asarray(other) if not isinstance(other, ndarray) and hasattr(other, "__array__") else other, self._dev)
        try:
            if inplace_fn is None:
                fn(self._a, o, out=self._a)
            else:
                inplace_fn(self._a, o)
        except Exception as e:
            _prefix_error(e, name)
            raise
        bump_version(self._a)
        return self

    op.__name__ = f"__{name}__"
    rop.__name__ = f"__r{name}__"
    iop.__name__ = f"__i{name}__"
    return op, rop, iop


def _make_unary(name, fn, pyfn=None):
    def op(self):
        if _HOOK is not None:
            h = _HOOK(name, (self,), {}, op)
            if h is not PASS:
                return h
        if type(self) is not ndarray and _overrides_ufunc(self):
            return _ufunc_named(name)(self)
        if pyfn is not None and type(self) is Scalar and isinstance(self._a, _generic):
            r = pyfn(self._a)  # NumPy's scalar math ("overflow encountered in scalar negative")
        else:
            r = fn(self._a)
        return wrap_like(r, self._dev, self)

    op.__name__ = f"__{name}__"
    return op


_BINARY = {
    "add": _np.add, "sub": _np.subtract, "mul": _np.multiply, "truediv": _np.true_divide,
    "floordiv": _np.floor_divide, "mod": _np.remainder, "pow": _np.power, "matmul": _np.matmul,
    "and": _np.bitwise_and, "or": _np.bitwise_or, "xor": _np.bitwise_xor,
    "lshift": _np.left_shift, "rshift": _np.right_shift,
}
# registry names of the operators (what the tape sees): the ufunc each one is
_BINARY_NAMES = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "matmul": "matmul",
    "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
    "lshift": "left_shift", "rshift": "right_shift",
}
# NumPy ufunc -> the reflected operator of its second operand (``a + b`` == ``b.__radd__(a)``)
_REFLECTED = {
    _np.add: "__radd__", _np.subtract: "__rsub__", _np.multiply: "__rmul__",
    _np.divide: "__rtruediv__", _np.floor_divide: "__rfloordiv__", _np.remainder: "__rmod__",
    _np.power: "__rpow__", _np.divmod: "__rdivmod__", _np.bitwise_and: "__rand__", _np.bitwise_or: "__ror__",
    _np.bitwise_xor: "__rxor__", _np.left_shift: "__rlshift__", _np.right_shift: "__rrshift__",
    _np.equal: "__eq__", _np.not_equal: "__ne__", _np.less: "__gt__", _np.less_equal: "__ge__",
    _np.greater: "__lt__", _np.greater_equal: "__le__",
}
_COMPARE = {"eq": _np.equal, "ne": _np.not_equal, "lt": _np.less, "le": _np.less_equal,
            "gt": _np.greater, "ge": _np.greater_equal}
_UNARY = {"neg": ("negative", _np.negative), "pos": ("positive", _np.positive),
          "abs": ("absolute", _np.absolute), "invert": ("invert", _np.invert)}


def _power_inplace(a, b):
    """``a **= b`` as NumPy's in-place operator computes it (see the loop below)."""
    if operator.ipow(a, b) is not a:   # NumPy's __ipow__ declined: write the result in place
        _np.power(a, b, out=a)


for _n, _f in _BINARY.items():
    # ``**`` is NumPy's operator, not its power ufunc: the operator takes exponents 2, -1 and
    # 0.5 to square, reciprocal and sqrt (other last bits for complex values; the warnings name
    # those ufuncs)
    _inplace = None
    if _n == "pow":
        _f, _inplace = operator.pow, _power_inplace
    _op, _rop, _iop = _make_binary(_BINARY_NAMES[_n], _f,
                                   None if _n == "matmul" else getattr(operator, _n, None)
                                   or getattr(operator, _n + "_"), _inplace)
    setattr(ndarray, f"__{_n}__", _op)
    setattr(ndarray, f"__r{_n}__", _rop)
    setattr(ndarray, f"__i{_n}__", _iop)
for _n, _f in _COMPARE.items():
    # the backend's own operator, not the ufunc: NumPy's ``==``/``!=`` give all-False/all-True
    # where the ufunc has no loop (``arange(3) == "a"``)
    setattr(ndarray, f"__{_n}__", _make_binary(_f.__name__, getattr(operator, _n))[0])
for _n, (_reg, _f) in _UNARY.items():
    setattr(ndarray, f"__{_n}__", _make_unary(_reg, _f, getattr(operator, _n)))


def _host_scalar_pair(self, other):
    """``other`` as a host scalar when ``self`` and it are both host scalars (else None)."""
    if type(self) is not Scalar or not isinstance(self._a, _generic):
        return None
    t = type(other)
    if t is Scalar:
        return other._a if isinstance(other._a, _generic) and other._dev is self._dev else None
    return other if t in _PYSCALARS or isinstance(other, _generic) else None


def _scalar_divmod(self, other, a, b):
    if _HOOK is not None:
        h = _HOOK("divmod", (self, other) if a is self._a else (other, self), {}, _scalar_divmod,
                  (self, other, a, b), {})
        if h is not PASS:
            return h
    r = divmod(a, b)  # NumPy's scalar math ("divide by zero encountered in scalar divmod")
    return tuple(wrap_scalarize(x, self._dev) for x in r)


def _divmod(self, other):
    # NumPy's divmod(a, b) is the divmod ufunc (one pass, its own warnings); on scalars, scalar math
    b = _host_scalar_pair(self, other)
    if b is not None:
        return _scalar_divmod(self, other, self._a, b)
    return _ufunc_named("divmod")(self, other)


def _rdivmod(self, other):
    b = _host_scalar_pair(self, other)
    if b is not None:
        return _scalar_divmod(self, other, b, self._a)
    return _ufunc_named("divmod")(other, self)


ndarray.__divmod__ = _divmod
ndarray.__rdivmod__ = _rdivmod


def _inplace_as_new(name):
    f = getattr(ndarray, f"__{name}__")

    def iop(self, other):
        return f(self, other)

    iop.__name__ = f"__i{name}__"
    return iop


for _n in _BINARY:
    setattr(Scalar, f"__i{_n}__", _inplace_as_new(_n))
