"""The operators of ``tnp.ndarray`` and ``tnp.Scalar`` (``+``, ``@``, ``==``, ``-x``, ``divmod``...).

An operator is its ufunc: ``a + b`` calls the function that ``tnp.add(a, b)`` calls
(``two`` of :func:`.dispatch._ufunc_core`: one fast path, one device check and message, one GPU
device context), bound here when the ufunc is made (:func:`bind`). What an operator does of its
own is what NumPy's operators do differently from NumPy's ufuncs:

* it returns NotImplemented where NumPy's would, so that Python asks the other operand
  (:func:`_defers`: NEP 13's ``__array_ufunc__ = None``, or a higher ``__array_priority__``);
* a scalar on the host computes as its NumPy scalar does (:func:`_scalar_math`: ``s1 / s2`` warns
  "... in scalar divide", ``[0] * s`` repeats the list, ``s @ s`` is a TypeError);
* ``**``, ``@`` and the comparisons compute NumPy's operator, not the ufunc (``x ** 2`` squares,
  ``x @= y`` refuses a 1-d ``y``, ``arange(3) == "a"`` is all False where ``equal`` raises): the
  same call with another kernel (:data:`_KERNELS`);
* ``x += y`` writes into ``x`` as ``tnp.add(x, y, out=x)`` does, reported as ``inplace_add``; a
  scalar's ``s += y`` gives a new value, as NumPy's scalars.

They are installed on the classes when this module is imported (by :mod:`.ndarray`, once the
classes exist), before the C base points the type slots at its own fast paths.
"""
from __future__ import annotations

import operator

import numpy as _np

from . import state as _state
from .listeners import PASS
from .ndarray import _generic, _nda, _prefix_error, ndarray, register_operators, wrap_scalarize
from .scalar import Scalar

_HOOK = None  # set by state.set_recording_hook
_state.register_hot_module(globals())

# Python's name of an operator -> the ufunc it is (its registry name: what a tape sees)
_BINARY_NAMES = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "matmul": "matmul",
    "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
    "lshift": "left_shift", "rshift": "right_shift",
}
_COMPARE = {"eq": _np.equal, "ne": _np.not_equal, "lt": _np.less, "le": _np.less_equal,
            "gt": _np.greater, "ge": _np.greater_equal}
_UNARY = {"neg": ("negative", _np.negative), "pos": ("positive", _np.positive),
          "abs": ("absolute", _np.absolute), "invert": ("invert", _np.invert)}
# NumPy ufunc -> the reflected operator of its second operand (``a + b`` == ``b.__radd__(a)``)
_REFLECTED = {
    _np.add: "__radd__", _np.subtract: "__rsub__", _np.multiply: "__rmul__",
    _np.divide: "__rtruediv__", _np.floor_divide: "__rfloordiv__", _np.remainder: "__rmod__",
    _np.power: "__rpow__", _np.divmod: "__rdivmod__", _np.bitwise_and: "__rand__", _np.bitwise_or: "__ror__",
    _np.bitwise_xor: "__rxor__", _np.left_shift: "__rlshift__", _np.right_shift: "__rrshift__",
    _np.equal: "__eq__", _np.not_equal: "__ne__", _np.less: "__gt__", _np.less_equal: "__ge__",
    _np.greater: "__lt__", _np.greater_equal: "__le__",
}


def _in_place(r, out, ufunc, b):
    """What the backend's in-place operator on ``out`` gave: ``out``; a new array of its type
    where the backend has no in-place form (then the ufunc writes into ``out``); else what an
    ``__array_ufunc__`` of another library's object answered."""
    if r is not out and type(r) is type(out):
        return ufunc(out, b, out=out)
    return r


def _power_operator(a, b, out=None):
    """NumPy's ``a ** b`` (its operator squares, takes square roots and reciprocals for the
    exponents 2, 0.5 and -1: other last bits for complex values, warnings naming those ufuncs),
    and its ``a **= b`` where ``out`` is ``a``."""
    if out is None:
        return a ** b
    return _in_place(operator.ipow(out, b), out, _np.power, b)


def _matmul_operator(a, b, out=None):
    """NumPy's ``a @ b``, and its ``a @= b`` where ``out`` is ``a`` (which refuses what would
    change ``a``'s shape: a 1-d ``b``)."""
    if out is None:
        return a @ b
    return _in_place(operator.imatmul(out, b), out, _np.matmul, b)


# ufuncs whose operators compute NumPy's operator rather than the ufunc (see the docstring)
_KERNELS = {"power": _power_operator, "matmul": _matmul_operator,
            **{u.__name__: getattr(operator, n) for n, u in _COMPARE.items()}}

_binders: dict = {}   # ufunc name -> the operators' binders, until the ufunc is made


def bind(name, u, two):
    """Called by :func:`.dispatch.make_ufunc` when ufunc ``name`` (``u``, two-operand call
    ``two``) is made: from then on its operators call it."""
    if name in _KERNELS:
        from .dispatch import _ufunc_core

        impl, two = _ufunc_core(name, _KERNELS[name])
        impl._public = u     # what a subclass's __array_ufunc__ receives, as from the ufunc
    for b in _binders.pop(name, ()):
        b(u, two)


# ---------------------------------------------------------------------------- NumPy's rules
# types NumPy never defers to (it looks no special method up on Python's basic types)
_BASIC = frozenset({int, float, complex, bool, str, bytes, list, tuple, dict, set, frozenset,
                    type(None), slice, type(Ellipsis), type(NotImplemented)})
_NONE = object()
_SCALAR_PRIORITY = -1000000.0   # NumPy's NPY_SCALAR_PRIORITY: an object without a priority


def _defers(self, other, inplace=False):
    """Whether ``self OP other`` gives NotImplemented so that Python asks ``other``: NumPy's
    ``binop_should_defer``. An object whose ``__array_ufunc__`` is None (NEP 13; not for an
    in-place operator, whose ufunc then raises), else one with a higher ``__array_priority__``
    that is no subclass of ``self``'s class."""
    t = type(other)
    if t in _BASIC or t is type(self) or t is _nda or isinstance(other, _generic):
        return False
    f = getattr(t, "__array_ufunc__", _NONE)
    if f is not _NONE:
        return f is None and not inplace
    if isinstance(other, type(self)):
        return False
    try:
        p = float(getattr(other, "__array_priority__", _SCALAR_PRIORITY))
    except (TypeError, ValueError):
        p = _SCALAR_PRIORITY
    return type(self).__array_priority__ < p


_UFUNC = object()


def _scalar_operand(self, other):
    """What the scalar math of host scalar ``self`` meets in ``self OP other``: the host scalar
    of a tnp scalar on ``self``'s device, ``other`` itself where it is no tnp value; ``_UFUNC``
    where the ufunc computes (``self`` no host scalar, tnp arrays, values on other devices)."""
    if not isinstance(self._a, _generic):
        return _UFUNC
    if isinstance(other, ndarray):
        if type(other) is Scalar and other._dev is self._dev and isinstance(other._a, _generic):
            return other._a
        return _UFUNC
    return other


def _scalar_result(r, dev):
    """A result of NumPy's scalar math as a tnp value: NumPy's arrays and scalars wrapped, and a
    Python complex (``1j * np.float64(2)`` is Python's complex multiplication: float64 is a
    float) as NumPy's complex128 of that value, which a tape can follow; anything else (a list
    repeated, ``s == None``'s Python bool) as it is."""
    if type(r) is complex:
        r = _np.complex128(r)
    elif not isinstance(r, (_nda, _generic)):
        return r
    return wrap_scalarize(r, dev)


def _scalar_math(name, result, dev, pyfn, *args):
    """``pyfn(*args)`` on host values, as between NumPy scalars ("overflow encountered in scalar
    multiply"; Python's rules), as a tnp value on ``dev``; an error names the operation."""
    try:
        return result(pyfn(*args), dev)
    except Exception as e:
        _prefix_error(e, name)
        raise


# the operands an operator takes without asking :func:`_defers` (the common ones)
_PLAIN = frozenset({ndarray, Scalar, float, int, bool, complex})


# ---------------------------------------------------------------------------- the factories
def _make_binary(name, pyfn, ipyfn=None, result=_scalar_result, compare=False):
    """``__op__``, ``__rop__`` and ``__iop__`` of ufunc ``name``, and a scalar's ``__iop__``;
    ``pyfn`` and ``ipyfn``, Python's operator and its in-place form, are the scalar math of host
    scalars."""
    two = None   # the ufunc's two-operand call, bound when it is made

    def forward(scalar_fn):
        def op(self, other):
            if type(other) not in _PLAIN and _defers(self, other):
                return NotImplemented
            if compare and type(self) is Scalar and isinstance(other, ndarray) and \
                    not isinstance(other, Scalar):
                # Python asks the right operand first when its class is a subclass: ``x > s``
                # is ``s.__lt__(x)``, which leaves it to ``x``'s own ``x > s``, the call that
                # ``tnp.greater(x, s)`` makes
                return NotImplemented
            if _HOOK is not None:
                h = _HOOK(name, (self, other), {}, op)
                if h is not PASS:
                    return h
            if type(self) is Scalar:
                b = _scalar_operand(self, other)
                if b is not _UFUNC:
                    return _scalar_math(name, result, self._dev, scalar_fn, self._a, b)
            return two(self, other)
        return op

    def rop(self, other):
        if type(other) not in _PLAIN and _defers(self, other):
            return NotImplemented
        if _HOOK is not None:
            h = _HOOK(name, (other, self), {}, rop, (self, other), {})
            if h is not PASS:
                return h
        if type(self) is Scalar:
            b = _scalar_operand(self, other)
            if b is not _UFUNC:
                return _scalar_math(name, result, self._dev, pyfn, b, self._a)
        return two(other, self)

    def iop(self, other):
        if type(other) not in _PLAIN and _defers(self, other, inplace=True):
            return NotImplemented
        if _HOOK is not None:  # an in-place write: a tape refuses it in ``before``
            h = _HOOK("inplace_" + name, (self, other), {}, iop)
            if h is not PASS:
                return h
        return two(self, other, self)

    def binder(u, two_):
        nonlocal two
        two = two_

    _binders.setdefault(name, []).append(binder)
    # a scalar is immutable: ``s += y`` is ``s = s + y``, as NumPy's scalars (whose errors name
    # the in-place operator: "unsupported operand type(s) for //=")
    return forward(pyfn), rop, iop, forward(ipyfn or pyfn)


def _make_unary(name, pyfn):
    """``__op__`` of the unary ufunc ``name``: the ufunc, or ``pyfn`` (Python's operator) on a
    host scalar."""
    u = None   # the ufunc, bound when it is made

    def op(self):
        if _HOOK is not None:
            h = _HOOK(name, (self,), {}, op)
            if h is not PASS:
                return h
        if type(self) is Scalar and isinstance(self._a, _generic):
            # NumPy's scalar math ("overflow encountered in scalar negative")
            return _scalar_math(name, wrap_scalarize, self._dev, pyfn, self._a)
        return u(self)

    def binder(u_, two):
        nonlocal u
        u = u_

    _binders.setdefault(name, []).append(binder)
    op.__name__ = f"__{name}__"
    return op


def _pair_result(r, dev):
    return tuple(_scalar_result(x, dev) for x in r)


def _install():
    for py, uf in _BINARY_NAMES.items():
        fn = getattr(operator, py, None) or getattr(operator, py + "_")
        op, rop, iop, sop = _make_binary(uf, fn, getattr(operator, "i" + fn.__name__.strip("_")))
        for cls, method, f in ((ndarray, f"__{py}__", op), (ndarray, f"__r{py}__", rop),
                               (ndarray, f"__i{py}__", iop), (Scalar, f"__i{py}__", sop)):
            f.__name__ = f.__qualname__ = method
            setattr(cls, method, f)
    op, rop, _, _ = _make_binary("divmod", divmod, result=_pair_result)
    ndarray.__divmod__, ndarray.__rdivmod__ = op, rop
    for py, uf in _COMPARE.items():
        op = _make_binary(uf.__name__, getattr(operator, py), compare=True)[0]
        op.__name__ = op.__qualname__ = f"__{py}__"
        setattr(ndarray, f"__{py}__", op)
    for py, (uf, _) in _UNARY.items():
        setattr(ndarray, f"__{py}__", _make_unary(uf, getattr(operator, py)))


_install()
register_operators(_REFLECTED)
