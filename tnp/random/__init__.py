"""``tnp.random``: mirrors ``numpy.random``.

On the CPU every stream is NumPy's own, so after ``tnp.random.seed(0)`` (or with
``tnp.random.default_rng(0)``) the numbers are exactly NumPy's. On a GPU the module-level
functions use ``cupy.random`` (its own streams); ``Generator``/``RandomState`` draw on the host
and copy to the device. Functions accept ``device=`` to choose where the result lives.
"""
from __future__ import annotations

import numpy as _np

from .._core.dispatch import make_function, _call, register
from .._core.ndarray import ndarray, bump_version

SECTION = "random"

_CLASSES = {"RandomState", "Generator", "BitGenerator", "MT19937", "PCG64", "PCG64DXSM",
            "Philox", "SFC64", "SeedSequence", "default_rng"}
_META = {"seed", "get_state", "set_state", "get_bit_generator", "set_bit_generator"}
_INPLACE = {"shuffle"}

__all__ = []
for _n in _np.random.__all__:
    if _n in _CLASSES or not callable(getattr(_np.random, _n)):
        continue
    kind = "meta" if _n in _META else "inplace" if _n in _INPLACE else "creation"
    globals()[_n] = make_function(f"random.{_n}", SECTION, kind=kind)
    __all__.append(_n)

# public in numpy.random though missing from its __all__: the legacy functions' bit generator
for _n in ("get_bit_generator", "set_bit_generator"):
    if hasattr(_np.random, _n):
        globals()[_n] = make_function(f"random.{_n}", SECTION, kind="meta")

# bit generators and seed sequences hold no arrays: NumPy's serve unchanged
BitGenerator = _np.random.BitGenerator
MT19937 = _np.random.MT19937
PCG64 = _np.random.PCG64
PCG64DXSM = _np.random.PCG64DXSM
Philox = _np.random.Philox
SFC64 = _np.random.SFC64
SeedSequence = _np.random.SeedSequence
__all__ += ["BitGenerator", "MT19937", "PCG64", "PCG64DXSM", "Philox", "SFC64", "SeedSequence"]


def _on_host(backend):
    """Generator/RandomState draw NumPy's streams on the host by design (then copy to a GPU)."""
    return None


class _RandomProxy:
    """Shared by Generator and RandomState: NumPy's object draws, results come back as tnp."""

    __slots__ = ("_impl",)
    _in_place = ("shuffle",)

    def __getattr__(self, name):
        attr = getattr(self._impl, name)
        if not callable(attr) or name.startswith("_") or name in ("get_state", "set_state", "seed",
                                                                  "spawn", "bit_generator"):
            return attr
        qual = f"random.{type(self).__name__}.{name}"

        if name in self._in_place or name == "permuted" :
            def method(x, *args, **kwargs):
                out = kwargs.get("out")
                r = _call(qual, attr, _on_host, (x,) + args, kwargs, creation=False, host_ok=True)
                target = x if name != "permuted" else out
                if isinstance(target, ndarray):
                    bump_version(target._a)
                return r
        else:
            def method(*args, **kwargs):
                return _call(qual, attr, _on_host, args, kwargs, creation=True, host_ok=True)
        method.__name__ = name
        method.__doc__ = getattr(attr, "__doc__", None)
        return method

    def __repr__(self):
        return repr(self._impl)

    def __getstate__(self):
        return self._impl

    def __setstate__(self, impl):
        object.__setattr__(self, "_impl", impl)

    def __reduce__(self):
        return (_rebuild_proxy, (type(self), self._impl))


def _rebuild_proxy(cls, impl):
    o = object.__new__(cls)
    o._impl = impl
    return o


class Generator(_RandomProxy):
    """Mirrors ``numpy.random.Generator``: same streams on the CPU, results as tnp arrays."""

    __slots__ = ()

    def __init__(self, bit_generator):
        self._impl = _np.random.Generator(bit_generator)

    @property
    def bit_generator(self):
        return self._impl.bit_generator

    def spawn(self, n_children):
        return [_rebuild_proxy(Generator, g) for g in self._impl.spawn(n_children)]


class RandomState(_RandomProxy):
    """Mirrors ``numpy.random.RandomState`` (the legacy generator), results as tnp arrays."""

    __slots__ = ()

    def __init__(self, seed=None):
        if isinstance(seed, ndarray):
            seed = _np.asarray(seed)
        self._impl = _np.random.RandomState(seed)


def default_rng(seed=None):
    """Mirrors ``numpy.random.default_rng``: a :class:`Generator` over PCG64."""
    if isinstance(seed, Generator):
        return seed
    if isinstance(seed, ndarray):
        seed = _np.asarray(seed)
    return _rebuild_proxy(Generator, _np.random.default_rng(seed))


register("random.default_rng", default_rng, _np.random.default_rng, SECTION, "meta")
__all__ += ["Generator", "RandomState", "default_rng"]
