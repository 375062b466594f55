"""``tnp.Scalar``: an immutable 0-d ``tnp.ndarray`` that behaves as a NumPy 2 scalar.

Its operators are installed by :mod:`.operators`.
"""
from __future__ import annotations

import numpy as _np

from .devices import CPU, device as _device
from .ndarray import _generic, _wrapper, ndarray, register_scalar, unwrap


def _scalar_on(a, dev):
    return _wrapper(Scalar, a, dev)


def _immutable(self, *args, **kwargs):
    raise TypeError(f"'{type(_as_host_scalar(self)).__name__}' object does not support item assignment"
                    if args else "tnp scalars are immutable")


def _as_host_scalar(s):
    a = s._a
    return a if isinstance(a, _generic) else a.get()[()]


class Scalar(ndarray):
    """An immutable 0-d value, as a NumPy 2 scalar (``np.float64(6.0)``), that stays a tnp value.

    Reductions to 0-d and integer indexing return these. They print, hash, format and convert as
    NumPy scalars do; differences: ``isinstance(s, float)`` is False (NumPy's ``float64``
    subclasses ``float``), and ``type(s)`` is ``tnp.Scalar`` rather than ``numpy.float64``.
    """

    __slots__ = ()

    def __new__(cls, value, dtype=None):
        a = _np.asarray(unwrap(value), dtype=dtype)
        if a.ndim != 0:
            raise ValueError(f"Scalar needs a 0-d value, got shape {a.shape}")
        if dtype is None and a.dtype == object:
            # a Fraction or Decimal, as the statistics module hands its result to the type of
            # its data (``type(x)(Fraction(3, 2))``): a number, as ``np.float64(v)`` makes one
            import numbers

            v = a[()]
            if isinstance(v, numbers.Rational) and v.denominator == 1:
                a = _np.asarray(int(v))
            elif isinstance(v, numbers.Real) or type(v).__name__ == "Decimal":
                a = _np.asarray(float(v))
        return _scalar_on(a[()], CPU)

    def __hash__(self):
        return hash(_as_host_scalar(self))

    def __repr__(self):
        return repr(_as_host_scalar(self))

    def __str__(self):
        return str(_as_host_scalar(self))

    def __format__(self, spec):
        return format(_as_host_scalar(self), spec)

    def __reduce__(self):
        return (_scalar_on_name, (_as_host_scalar(self), str(self._dev)))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __setitem__(self, key, value):
        raise TypeError(f"'{type(_as_host_scalar(self)).__name__}' object does not support item assignment")

    def __delitem__(self, key):
        raise TypeError(f"'{type(_as_host_scalar(self)).__name__}' object does not support item deletion")

    def fill(self, value):
        raise TypeError("tnp scalars are immutable")

    sort = partition = resize = put = setfield = _immutable

    @property
    def shape(self):
        return ()

    @property
    def dtype(self):
        return self._a.dtype

    @property
    def ndim(self):
        return 0

    @property
    def size(self):
        return 1

    @property
    def base(self):
        return None

    def __len__(self):
        raise TypeError(f"object of type '{type(_as_host_scalar(self)).__name__}' has no len()")

    def __iter__(self):
        raise TypeError(f"'{type(_as_host_scalar(self)).__name__}' object is not iterable")

    def item(self, *args):
        return _as_host_scalar(self).item(*args)

    def is_integer(self):
        return _as_host_scalar(self).is_integer()

    def as_integer_ratio(self):
        return _as_host_scalar(self).as_integer_ratio()

    @property
    def numerator(self):  # integer scalars only, as NumPy's (numbers.Integral)
        return _as_host_scalar(self).numerator

    @property
    def denominator(self):
        return _as_host_scalar(self).denominator

    def __trunc__(self):
        import math

        return math.trunc(_as_host_scalar(self))

    def __floor__(self):
        import math

        return math.floor(_as_host_scalar(self))

    def __ceil__(self):
        import math

        return math.ceil(_as_host_scalar(self))

    def __round__(self, ndigits=None):
        r = round(_as_host_scalar(self), ndigits)
        if isinstance(r, _generic):  # round(s, n) stays a scalar of s's dtype, as NumPy's
            return _scalar_on(r if self._dev.kind == "cpu" else self._dev.backend.xp.asarray(r), self._dev)
        return r


def _scalar_on_name(value, dev_name):
    dev = _device(dev_name)
    a = value if dev.kind == "cpu" else dev.backend.xp.asarray(value)
    return _scalar_on(a, dev)


register_scalar(Scalar, _scalar_on)
